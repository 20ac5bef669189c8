"""The loopback GitHub answers in GitHub's shapes: its JSON carries every key the real recordings do."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import requests

from tests.datafiles import REST_RECORDINGS
from tests.loopback_github import LoopbackGitHub

RECORDINGS = REST_RECORDINGS
REPO = "acme/fork"


def recorded_body(name: str, index: int = 0) -> Any:
    """The response body of exchange ``index`` of a recording (10 lines per exchange, blank between)."""
    lines = (RECORDINGS / name).read_text().split("\n")
    exchanges, i = [], 0
    while i + 9 < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        exchanges.append(lines[i : i + 10])
        i += 11
    return json.loads(exchanges[index][9])


# Keys of old recordings that today's API no longer sends: plain issues once carried a
# "pull_request" object of null URLs; now the key is absent (the adapter relies on that).
OBSOLETE = {"Repository.testCreateIssue.txt": {"pull_request"}}


def keys(body: Any) -> set[str]:
    return set(body[0] if isinstance(body, list) else body)


def call(gh: LoopbackGitHub, method: str, path: str, body: Any = None, auth: str | None = None) -> Any:
    token = auth or gh.token_for(gh.installation)
    resp = requests.request(
        method, gh.url + path, json=body, timeout=10, headers={"Authorization": f"token {token}"}
    )
    assert resp.status_code < 300, resp.text
    return resp.json()


def seeded(gh: LoopbackGitHub) -> dict[str, Any]:
    sha = gh.head(REPO, "main")
    gh.commit(REPO, {"f.py": "x\n"}, branch="feature")
    issue = gh.add_issue(REPO, "t", "b")
    gh.set_permission(REPO, "alice", "write")
    return {"sha": sha, "issue": issue}


def react(gh: LoopbackGitHub, issue: int) -> Any:
    comment = call(gh, "POST", f"/repos/{REPO}/issues/{issue}/comments", {"body": "x"})
    return call(gh, "POST", f"/repos/{REPO}/issues/comments/{comment['id']}/reactions", {"content": "eyes"})


CASES: list[tuple[str, int, Callable[[LoopbackGitHub, dict[str, Any]], Any]]] = [
    (
        "CheckRun.testCreateCheckRunCompleted.txt",
        0,
        lambda gh, s: call(
            gh,
            "POST",
            f"/repos/{REPO}/check-runs",
            {
                "name": "L1",
                "head_sha": s["sha"],
                "conclusion": "success",
                "output": {"title": "t", "summary": "s"},
            },
        ),
    ),
    (
        "CheckRun.testGetCheckRunsForRef.txt",
        0,
        lambda gh, s: call(gh, "GET", f"/repos/{REPO}/commits/{s['sha']}/check-runs"),
    ),
    (
        "Issue.testCreateComment.txt",
        0,
        lambda gh, s: call(gh, "POST", f"/repos/{REPO}/issues/{s['issue']}/comments", {"body": "hi"}),
    ),
    ("IssueComment.testCreateReaction.txt", 0, lambda gh, s: react(gh, s["issue"])),
    (
        "Repository.testCreateIssue.txt",
        0,
        lambda gh, s: call(gh, "POST", f"/repos/{REPO}/issues", {"title": "t"}),
    ),
    (
        "Repository.testCreatePull.txt",
        0,
        lambda gh, s: call(
            gh, "POST", f"/repos/{REPO}/pulls", {"title": "t", "head": "feature", "base": "main"}
        ),
    ),
    (
        "PullRequest.testEditWithAllArguments.txt",
        0,
        lambda gh, s: call(
            gh, "PATCH", f"/repos/{REPO}/pulls/{gh.add_pull(REPO, 'feature')}", {"title": "t2"}
        ),
    ),
    (
        "Repository.testCollaboratorPermission.txt",
        0,
        lambda gh, s: call(gh, "GET", f"/repos/{REPO}/collaborators/alice/permission"),
    ),
    ("Repository.testGetContents.txt", 1, lambda gh, s: call(gh, "GET", f"/repos/{REPO}/contents/README.md")),
]


@pytest.mark.parametrize(("recording", "index", "request_"), CASES, ids=[c[0] for c in CASES])
def test_loopback_answer_has_every_recorded_key(
    loopback_github: LoopbackGitHub,
    recording: str,
    index: int,
    request_: Callable[[LoopbackGitHub, dict[str, Any]], Any],
) -> None:
    """For each recorded real exchange, the loopback's answer to the same request has all its top-level keys."""
    expected = keys(recorded_body(recording, index)) - OBSOLETE.get(recording, set())
    got = keys(request_(loopback_github, seeded(loopback_github)))
    assert expected - got == set()


def test_access_token_and_installation_shapes(loopback_github: LoopbackGitHub) -> None:
    """App endpoints (JWT): the token and repo-installation answers carry the recorded keys."""
    app = loopback_github.app()
    jwt = app._integration.auth.token  # the App JWT PyGithub would send
    token_body = requests.post(
        f"{loopback_github.url}/app/installations/{loopback_github.installation}/access_tokens",
        headers={"Authorization": f"Bearer {jwt}"},
        json={},
        timeout=10,
    )
    inst_body = requests.get(
        f"{loopback_github.url}/repos/{REPO}/installation",
        headers={"Authorization": f"Bearer {jwt}"},
        timeout=10,
    )
    assert token_body.status_code == 201 and inst_body.status_code == 200
    assert keys(recorded_body("GithubIntegration.testGetAccessToken.txt")) <= keys(token_body.json())
    assert keys(recorded_body("GithubIntegration.testGetRepoInstallation.txt")) <= keys(inst_body.json())


def test_bad_jwt_is_refused_like_github(loopback_github: LoopbackGitHub) -> None:
    """A JWT the App did not sign → 401 with GitHub's error shape (message, documentation_url)."""
    resp = requests.post(
        f"{loopback_github.url}/app/installations/{loopback_github.installation}/access_tokens",
        headers={"Authorization": "Bearer not.a.jwt"},
        json={},
        timeout=10,
    )
    assert resp.status_code == 401
    assert keys(recorded_body("GithubIntegration.testGetAccessTokenWithExpiredJWT.txt")) <= keys(resp.json())
