"""The GitHub adapter and App auth, against the loopback GitHub over real HTTP."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from core.config import Settings
from core.github.adapter import GitHubAdapter
from core.github.app import GitHubApp, GitHubAppConfigError, default_push_url_template
from core.github.errors import (
    GitHubAlreadyDone,
    GitHubAuthError,
    GitHubNotFoundError,
    GitHubPermissionError,
    GitHubPushError,
    GitHubValidationError,
    RetryableGitHubError,
)
from core.github.records import Annotation, CheckAction, CheckOutput, can_write
from tests.gitrepo import GitRepo
from tests.loopback_github import LoopbackGitHub
from workers.engine.git import Repository

REPO = "acme/fork"
MARKER = "<!-- forksync:issue:sig-123 -->"


@pytest.fixture
def gh(loopback_github: LoopbackGitHub) -> LoopbackGitHub:
    return loopback_github


@pytest.fixture
def port(gh: LoopbackGitHub) -> GitHubAdapter:
    adapter: GitHubAdapter = gh.adapter(gh.installation)
    return adapter


def annotations(n: int) -> tuple[Annotation, ...]:
    return tuple(
        Annotation("src/a.py", i + 1, i + 1, "failure", f"test {i} failed", title=f"t{i}") for i in range(n)
    )


def writes(gh: LoopbackGitHub, fragment: str) -> list[tuple[str, str, int]]:
    return [r for r in gh.requests if r[0] in ("POST", "PATCH") and fragment in r[1]]


# --------------------------------------------------------------------------- check runs


def test_check_run_with_120_annotations_is_sent_in_batches_of_50(
    gh: LoopbackGitHub, port: GitHubAdapter
) -> None:
    """120 annotations → one create + two updates (50/50/20); all kept; none refused by the 50 limit."""
    sha = gh.head(REPO, "main")
    assert sha
    run = port.create_check_run(
        REPO,
        name="L1",
        head_sha=sha,
        status="in_progress",
        output=CheckOutput("L1 failed", "3 suites", "details", annotations(120)),
        actions=[CheckAction("Retry", "Run L1 again", "retry")],
    )
    stored = gh.state.annotations[run.id]
    assert len(stored) == 120 and [a["message"] for a in stored] == [f"test {i} failed" for i in range(120)]
    assert [r[2] for r in writes(gh, "/check-runs")] == [201, 200, 200]
    assert gh.state.check_runs[REPO][run.id]["actions"][0]["identifier"] == "retry"
    assert run.status == "in_progress" and run.conclusion is None


def test_update_check_run_completes_it_and_appends_annotations(
    gh: LoopbackGitHub, port: GitHubAdapter
) -> None:
    """update_check_run sets conclusion/output; 60 more annotations go in two PATCHes; status → completed."""
    sha = gh.head(REPO, "main") or ""
    run = port.create_check_run(REPO, name="L1", head_sha=sha)
    done = port.update_check_run(
        REPO,
        run.id,
        conclusion="failure",
        output=CheckOutput("2 failures", "summary", annotations=annotations(60)),
    )
    assert (done.status, done.conclusion) == ("completed", "failure")
    stored = gh.state.check_runs[REPO][run.id]
    assert stored["output"]["title"] == "2 failures" and len(gh.state.annotations[run.id]) == 60
    assert len(writes(gh, f"/check-runs/{run.id}")) == 2


def test_list_check_runs_for_a_ref_filters_by_name(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """list_check_runs reads the runs of a sha (or branch), optionally by name; other shas excluded."""
    sha = gh.head(REPO, "main") or ""
    port.create_check_run(REPO, name="L1", head_sha=sha)
    port.create_check_run(
        REPO, name="coverage", head_sha=sha, conclusion="neutral", output=CheckOutput("ok", "ok")
    )
    port.create_check_run(REPO, name="L1", head_sha="f" * 40)
    assert sorted(r.name for r in port.list_check_runs(REPO, sha)) == ["L1", "coverage"]
    assert [r.name for r in port.list_check_runs(REPO, "main", name="coverage")] == ["coverage"]


# --------------------------------------------------------------------------- pull requests


def test_ensure_pull_request_creates_once_and_updates_on_rerun(
    gh: LoopbackGitHub, port: GitHubAdapter
) -> None:
    """First call opens a (draft) PR; a rerun with a new body updates it; never a second PR."""
    gh.commit(REPO, {"x.py": "1\n"}, branch="forksync/bundle-1")
    first, created = port.ensure_pull_request(
        REPO,
        head="forksync/bundle-1",
        base="main",
        title="[Cherry-pick][BUNDLE] 2 commits",
        body="v1",
        draft=True,
    )
    second, created_again = port.ensure_pull_request(
        REPO,
        head="forksync/bundle-1",
        base="main",
        title="[Cherry-pick][BUNDLE] 3 commits",
        body="v2",
        draft=True,
    )
    assert created and not created_again
    assert first.number == second.number and second.body == "v2" and second.draft
    assert len(gh.state.pulls[REPO]) == 1
    assert [r for r in gh.requests if r[:2] == ("POST", f"/repos/{REPO}/pulls")] == [
        ("POST", f"/repos/{REPO}/pulls", 201)
    ]


def test_unchanged_rerun_makes_no_write(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """A rerun with identical title and body finds the PR and writes nothing."""
    gh.commit(REPO, {"x.py": "1\n"}, branch="topic")
    port.ensure_pull_request(REPO, head="topic", base="main", title="T", body="B")
    before = len(writes(gh, "/pulls"))
    port.ensure_pull_request(REPO, head="topic", base="main", title="T", body="B")
    assert len(writes(gh, "/pulls")) == before


def test_create_race_already_exists_falls_back_to_update(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """If the create answers 422 "already exists" (another worker won), the PR is found and updated."""
    gh.commit(REPO, {"x.py": "1\n"}, branch="race")
    # The other worker's PR exists, but our listing misses it (GitHub's listing lags a moment).
    gh.add_pull(REPO, "race", title="theirs", author="forksync[bot]")
    original = port.find_pull_request
    calls = {"n": 0}

    def lagging(repo: str, head: str, base: str | None = None) -> object:
        calls["n"] += 1
        return None if calls["n"] == 1 else original(repo, head, base)

    port.find_pull_request = lagging  # type: ignore[method-assign,assignment]
    pr, created = port.ensure_pull_request(REPO, head="race", base="main", title="ours", body="b")
    assert not created and pr.title == "ours" and len(gh.state.pulls[REPO]) == 1


def test_get_pull_request_reads_head_merged_and_association(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """get_pull_request returns head sha/ref, merged and the author's association."""
    sha = gh.commit(REPO, {"y.py": "2\n"}, branch="feature")
    number = gh.add_pull(REPO, "feature", author="alice", author_association="MEMBER")
    pr = port.get_pull_request(REPO, number)
    assert (pr.head_sha, pr.head_ref, pr.base_ref, pr.merged, pr.author, pr.author_association) == (
        sha,
        "feature",
        "main",
        False,
        "alice",
        "MEMBER",
    )


# --------------------------------------------------------------------------- issues and comments


def test_issue_is_found_by_marker_updated_closed_and_reopened(
    gh: LoopbackGitHub, port: GitHubAdapter
) -> None:
    """ensure_issue creates once; reruns update the same issue; close; a recurrence reopens it."""
    gh.add_issue(REPO, "unrelated", "no marker here")
    issue, created = port.ensure_issue(
        REPO, marker=MARKER, title="L2 failure: t1", body="first", labels=["forksync"]
    )
    assert created and issue.body.startswith(MARKER) and issue.labels == ("forksync",)
    again, created_again = port.ensure_issue(REPO, marker=MARKER, title="L2 failure: t1", body="second")
    assert not created_again and again.number == issue.number and "second" in again.body
    closed = port.close_issue(REPO, issue.number, comment="recovered")
    assert closed.state == "closed"
    reopened, _ = port.ensure_issue(REPO, marker=MARKER, title="L2 failure: t1", body="third")
    assert reopened.state == "open" and reopened.number == issue.number
    assert sum(1 for i in gh.state.issues[REPO].values() if MARKER in (i["body"] or "")) == 1
    assert [c["body"] for c in gh.state.comments[REPO].values()] == ["recovered"]


def _reads(gh: LoopbackGitHub, before: int) -> list[str]:
    return [path for method, path, _status in gh.requests[before:] if method == "GET"]


def test_marker_issue_is_found_by_search_in_one_request(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """Among 250 issues (9 pages of 30), the marked one is found by one search, not by reading them all."""
    number = gh.add_issue(REPO, "L2 failure: t1", f"{MARKER}\nbody")
    for n in range(250):
        gh.add_issue(REPO, f"other {n}", "no marker here")
    before = len(gh.requests)
    found = port.find_issue(REPO, MARKER)
    assert found is not None and found.number == number
    assert _reads(gh, before) == ["/search/issues"]


def test_a_search_miss_or_refusal_falls_back_to_reading_the_issues(
    gh: LoopbackGitHub, port: GitHubAdapter
) -> None:
    """Search lags behind writes and has its own rate limit: a refused search still finds the issue
    by reading the issues, and a true miss reads them before saying none (so nothing is opened twice)."""
    number = gh.add_issue(REPO, "L2 failure: t1", f"{MARKER}\nbody")
    gh.fail(403, path="/search/issues", message="API rate limit exceeded for search")
    before = len(gh.requests)
    found = port.find_issue(REPO, MARKER)
    assert found is not None and found.number == number
    assert _reads(gh, before) == ["/search/issues", f"/repos/{REPO}/issues"]
    before = len(gh.requests)
    assert port.find_issue(REPO, "<!-- forksync:l2:absent -->") is None
    assert _reads(gh, before) == ["/search/issues", f"/repos/{REPO}/issues"]


def test_a_marker_quoted_in_an_issue_body_is_not_the_bots_issue(
    gh: LoopbackGitHub, port: GitHubAdapter
) -> None:
    """Search finds an issue that quotes the marker mid-body; only a leading marker counts."""
    gh.add_issue(REPO, "user quoting", f"I saw this:\n\n{MARKER}\nin a bot issue")
    assert port.find_issue(REPO, MARKER) is None


def test_marker_in_a_pull_request_body_is_not_an_issue(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """find_issue skips pull requests even when their body carries the marker."""
    gh.commit(REPO, {"z": "1"}, branch="b")
    number = gh.add_pull(REPO, "b", body=f"{MARKER}\nPR")
    assert gh.state.issues[REPO][number]["is_pull"]
    assert port.find_issue(REPO, MARKER) is None


def test_labels_are_added(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """add_labels adds to an issue's labels without removing others."""
    number = gh.add_issue(REPO, "t", labels=["bug"])
    port.add_labels(REPO, number, ["forksync", "l2"])
    assert gh.state.issues[REPO][number]["labels"] == ["bug", "forksync", "l2"]


def test_comment_upsert_edits_in_place(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """upsert_comment posts once, then edits the marked comment; unmarked comments untouched."""
    number = gh.add_issue(REPO, "t")
    plain = port.create_comment(REPO, number, "a human-looking note")
    first, posted = port.upsert_comment(REPO, number, marker="<!-- forksync:status -->", body="v1")
    second, posted_again = port.upsert_comment(REPO, number, marker="<!-- forksync:status -->", body="v2")
    assert posted and not posted_again and first.id == second.id and second.body.endswith("v2")
    assert gh.state.comments[REPO][plain.id]["body"] == "a human-looking note"
    assert port.find_comment(REPO, number, "<!-- forksync:status -->") == second


def test_reaction_on_comment_is_recorded_once(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """add_reaction puts the reaction on the comment; repeating it does not duplicate it; unknown → error."""
    number = gh.add_issue(REPO, "t")
    comment = port.create_comment(REPO, number, "/retest")
    port.add_reaction(REPO, comment.id, "eyes")
    port.add_reaction(REPO, comment.id, "eyes")
    assert [r["content"] for r in gh.state.reactions[comment.id]] == ["eyes"]
    with pytest.raises(GitHubValidationError):
        port.add_reaction(REPO, comment.id, "thumbsup")


# --------------------------------------------------------------------------- permissions and files


@pytest.mark.parametrize(
    ("role", "writer"),
    [("admin", True), ("maintain", True), ("write", True), ("triage", False), ("read", False)],
)
def test_permission_reports_the_role(
    gh: LoopbackGitHub, port: GitHubAdapter, role: str, writer: bool
) -> None:
    """permission() returns the collaborator's role; can_write() is true for write and above only."""
    gh.set_permission(REPO, "alice", role)
    assert port.permission(REPO, "alice") == role
    assert can_write(port.permission(REPO, "alice")) is writer


def test_non_collaborator_on_private_repo_has_no_permission(gh: LoopbackGitHub) -> None:
    """A stranger on a private repository has role none (and cannot write)."""
    gh.add_repo("acme/private", private=True, files={"a": "1"})
    iid = gh.add_installation(["acme/private"])
    assert gh.adapter(iid).permission("acme/private", "mallory") == "none"


def test_read_file_at_ref_and_absent_file(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """read_file returns the text at a ref, the default branch without one, and None when absent."""
    gh.commit(REPO, {".github/forksync.yml": "bundle:\n  max_commits: 5\n"}, branch="cfg")
    assert port.read_file(REPO, ".github/forksync.yml", ref="cfg") == "bundle:\n  max_commits: 5\n"
    assert port.read_file(REPO, ".github/forksync.yml") is None  # not on main
    assert port.read_file(REPO, "README.md") == "fork of upstream\n"


# --------------------------------------------------------------------------- pushes


def local_clone(gh: LoopbackGitHub, tmp_path: Path, make_repo: Callable[[str], GitRepo]) -> GitRepo:
    work = make_repo("work")
    work.git("fetch", "-q", str(gh.bare(REPO)), "main:main-up")
    work.git("reset", "-q", "--hard", "main-up")
    work.commit("pick one", {"picked.py": "print('hi')\n"})
    return work


def test_push_branch_with_installation_token(
    gh: LoopbackGitHub, port: GitHubAdapter, tmp_path: Path, make_repo: Callable[[str], GitRepo]
) -> None:
    """push_branch pushes over smart HTTP with the token; the branch appears at the sha; token never on disk."""
    work = local_clone(gh, tmp_path, make_repo)
    sha = work.head()
    port.push_branch(REPO, Repository(work.path), sha, "forksync/bundle-1")
    assert gh.head(REPO, "forksync/bundle-1") == sha
    tokens = list(gh.state.tokens)
    assert tokens
    for path in work.path.rglob("*"):
        if path.is_file() and path.stat().st_size < 1_000_000:
            data = path.read_bytes()
            assert not any(t.encode() in data for t in tokens), path


def test_non_fast_forward_push_is_refused_unless_forced(
    gh: LoopbackGitHub, port: GitHubAdapter, tmp_path: Path, make_repo: Callable[[str], GitRepo]
) -> None:
    """Pushing a diverged history is a GitHubPushError; with force=True it replaces the branch."""
    work = local_clone(gh, tmp_path, make_repo)
    port.push_branch(REPO, Repository(work.path), work.head(), "topic")
    gh.commit(REPO, {"other.py": "x"}, branch="topic")  # someone else moved it
    with pytest.raises(GitHubPushError) as info:
        port.push_branch(REPO, Repository(work.path), work.head(), "topic")
    assert "topic" in str(info.value)
    port.push_branch(REPO, Repository(work.path), work.head(), "topic", force=True)
    assert gh.head(REPO, "topic") == work.head()


def test_push_with_refused_token_is_auth_error_without_the_token(
    gh: LoopbackGitHub, tmp_path: Path, make_repo: Callable[[str], GitRepo]
) -> None:
    """A push the server refuses (401) is GitHubAuthError; the token appears in no message."""
    work = local_clone(gh, tmp_path, make_repo)
    adapter = GitHubAdapter(
        gh.app().client(gh.installation),
        token=lambda: "ghs_not_a_real_token",
        push_url_template=gh.push_url_template,
    )
    with pytest.raises(GitHubAuthError) as info:
        adapter.push_branch(REPO, Repository(work.path), work.head(), "x")
    assert "ghs_not_a_real_token" not in str(info.value) and gh.head(REPO, "x") is None


# --------------------------------------------------------------------------- fault classification


def test_502_is_retryable_and_pygithub_does_not_retry_itself(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """A 502 → RetryableGitHubError after exactly one request (PyGithub's own retry is off)."""
    number = gh.add_issue(REPO, "t")
    port.create_comment(REPO, number, "warm-up")  # mint the token first
    gh.fail(502, method="POST", path="/comments")
    before = len(gh.requests)
    with pytest.raises(RetryableGitHubError) as info:
        port.create_comment(REPO, number, "hello")
    assert info.value.status == 502 and len(gh.requests) == before + 1
    assert [c["body"] for c in gh.state.comments[REPO].values()] == ["warm-up"]


def test_secondary_rate_limit_honours_retry_after(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """403 with Retry-After: 7 → RetryableGitHubError(retry_after_s=7)."""
    gh.secondary_rate_limit(retry_after=7, path="/permission")
    with pytest.raises(RetryableGitHubError) as info:
        port.permission(REPO, "alice")
    assert info.value.retry_after_s == 7 and info.value.status == 403


def test_exhausted_rate_limit_waits_until_reset(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """403 with x-ratelimit-remaining 0 → wait until x-ratelimit-reset (about 30 s here)."""
    gh.rate_limit_exhausted(reset_in=30, path="/contents")
    with pytest.raises(RetryableGitHubError) as info:
        port.read_file(REPO, "README.md")
    assert 25 <= info.value.retry_after_s <= 31


def test_validation_422_is_a_clear_error(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """A 422 that is not "already exists" → GitHubValidationError naming the action and GitHub's message."""
    with pytest.raises(GitHubValidationError) as info:
        port.create_check_run(REPO, name="L1", head_sha="a" * 40, status="completed")  # no conclusion
    assert "conclusion" in str(info.value) and "check run" in str(info.value)


def test_already_exists_422_is_information(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """A 422 "already exists" is GitHubAlreadyDone, not a failure class of its own."""
    gh.fail(422, method="POST", path="/issues", message="Validation Failed: Reference already exists")
    with pytest.raises(GitHubAlreadyDone):
        port.create_comment(REPO, gh.add_issue(REPO, "t"), "x")


def test_404_for_a_repo_outside_the_installation(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """A repository the installation does not cover → GitHubNotFoundError with a remedy naming it."""
    gh.add_repo("other/repo", files={"a": "1"})
    with pytest.raises(GitHubNotFoundError) as info:
        port.create_comment("other/repo", 1, "x")
    assert "installed on other/repo" in str(info.value)


def test_plain_403_is_a_permission_error(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """A 403 without rate-limit signs → GitHubPermissionError telling to grant the App's permissions."""
    gh.fail(403, path="/check-runs", message="Resource not accessible by integration")
    with pytest.raises(GitHubPermissionError) as info:
        port.create_check_run(REPO, name="L1", head_sha="a" * 40)
    assert "permission" in str(info.value)


def test_slow_answer_is_retryable_timeout(gh: LoopbackGitHub) -> None:
    """An answer slower than the client timeout → RetryableGitHubError, not a hang."""
    port = gh.adapter(gh.installation, timeout=1)
    port.permission(REPO, "alice")  # mint the token
    gh.slow(2.0, path="/permission")
    with pytest.raises(RetryableGitHubError, match="did not answer"):
        port.permission(REPO, "alice")


# --------------------------------------------------------------------------- App auth


def test_installation_token_is_cached_then_refreshed_before_expiry(gh: LoopbackGitHub) -> None:
    """One mint serves many calls; once the clock passes expiry minus the margin, a new token is minted."""
    now = [time.time()]
    app = gh.app(clock=lambda: now[0])
    port = app.adapter(gh.installation)
    port.permission(REPO, "a")
    port.permission(REPO, "b")
    assert gh.state.tokens_minted == 1
    now[0] += gh.token_ttl_s - 200  # inside the 300 s refresh margin
    port.permission(REPO, "c")
    assert gh.state.tokens_minted == 2
    now[0] = time.time()  # back to the present: the fresh token is reused again
    port.permission(REPO, "d")
    assert gh.state.tokens_minted == 2


def test_tokens_are_per_installation(gh: LoopbackGitHub) -> None:
    """Two installations get two different tokens."""
    gh.add_repo("acme/other", files={"a": "1"})
    other = gh.add_installation(["acme/other"])
    app = gh.app()
    assert app.installation_token(gh.installation) != app.installation_token(other)
    assert gh.state.tokens_minted == 2


def test_token_refused_by_github_is_reminted_once(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """When GitHub says 401 for a cached token (revoked/expired early), the adapter mints a new one and succeeds."""
    port.permission(REPO, "a")
    gh.expire_tokens()
    assert port.permission(REPO, "a") == "read"
    assert gh.state.tokens_minted == 2


def test_installation_for_repo(gh: LoopbackGitHub) -> None:
    """installation_for_repo finds the App's installation id (for payloads that carry none)."""
    assert gh.app().installation_for_repo(REPO) == gh.installation
    with pytest.raises(GitHubNotFoundError):
        gh.app().installation_for_repo("nobody/none")


def test_private_key_never_in_logs_or_errors(gh: LoopbackGitHub, caplog: pytest.LogCaptureFixture) -> None:
    """With DEBUG logging, through success and failure, the private key appears in no log or message."""
    caplog.set_level(logging.DEBUG)
    key_body = "".join(gh.private_key_pem.strip().splitlines()[1:-1])[:64]
    messages = []
    app = gh.app()
    messages.append(repr(app))
    app.adapter(gh.installation).permission(REPO, "a")
    wrong = GitHubApp("999", gh.private_key_pem, gh.api_url)  # GitHub refuses: unknown App
    with pytest.raises(GitHubAuthError) as info:
        wrong.installation_token(gh.installation)
    messages.append(str(info.value))
    with pytest.raises(GitHubAppConfigError) as bad:
        GitHubApp("1", gh.private_key_pem.replace(key_body[10:40], "A" * 30), gh.api_url)
    messages.append(str(bad.value))
    messages.append(repr(Settings.from_mapping(gh.settings())))
    text = caplog.text + "\n".join(messages)
    assert key_body not in text and key_body[:40] not in text and "PRIVATE KEY-----\n" not in text
    assert "installation" in caplog.text.lower()  # logging did happen


def test_missing_app_settings_are_a_clear_error() -> None:
    """GitHubApp.from_settings without id/key says which settings to set."""
    with pytest.raises(GitHubAppConfigError, match="GITHUB_APP_ID"):
        GitHubApp.from_settings(Settings.from_mapping({}))
    with pytest.raises(GitHubAppConfigError, match="numeric"):
        GitHubApp("abc", "x")


def test_push_url_template_follows_the_api_url() -> None:
    """github.com for the public API; the host for GitHub Enterprise (/api/v3)."""
    assert default_push_url_template("https://api.github.com") == "https://github.com/{repo}.git"
    assert default_push_url_template("https://ghe.example.com/api/v3") == "https://ghe.example.com/{repo}.git"


def test_get_and_list_comments(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """get_comment reads one comment by id (with its issue number); list_comments lists in order; 404 → NotFound."""
    number = gh.add_issue(REPO, "t")
    first = port.create_comment(REPO, number, "one")
    second = port.create_comment(REPO, number, "two")
    assert port.get_comment(REPO, second.id) == second
    assert [c.body for c in port.list_comments(REPO, number)] == ["one", "two"]
    assert port.list_comments(REPO, number)[0] == first
    with pytest.raises(GitHubNotFoundError):
        port.get_comment(REPO, 999_999)


def test_merged_pull_request_reads_as_merged(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """After gh.merge (a maintainer merges), the PR reads merged and closed, and main moved to its head."""
    sha = gh.commit(REPO, {"m.py": "1\n"}, branch="to-merge")
    number = gh.add_pull(REPO, "to-merge")
    gh.merge(REPO, number)
    pr = port.get_pull_request(REPO, number)
    assert pr.merged and pr.state == "closed" and gh.head(REPO, "main") == sha


def test_app_lists_installations_and_their_repositories(gh: LoopbackGitHub) -> None:
    """GET /app/installations (JWT) and GET /installation/repositories (token) answer like GitHub."""
    import requests
    from github import Auth, GithubIntegration

    gh.add_repo("acme/second", files={"a": "1"})
    other = gh.add_installation(["acme/second"])
    integration = GithubIntegration(auth=Auth.AppAuth(gh.app_id, gh.private_key_pem), base_url=gh.api_url)
    assert sorted(i.id for i in integration.get_installations()) == sorted([gh.installation, other])
    token = gh.app().installation_token(other)
    answer = requests.get(
        f"{gh.api_url}/installation/repositories", headers={"Authorization": f"token {token}"}, timeout=10
    ).json()
    assert [r["full_name"] for r in answer["repositories"]] == ["acme/second"] and answer["total_count"] == 1


def test_oversized_output_is_cut_visibly_and_too_many_actions_refused(
    gh: LoopbackGitHub, port: GitHubAdapter
) -> None:
    """A 100k-character text fits GitHub's 65,535 limit with a visible note; 4 actions → a clear error, no request."""
    sha = gh.head(REPO, "main") or ""
    run = port.create_check_run(
        REPO, name="L1", head_sha=sha, conclusion="failure", output=CheckOutput("t", "s", "x" * 100_000)
    )
    text = gh.state.check_runs[REPO][run.id]["output"]["text"]
    assert len(text) <= 65_535 and "cut by forksync" in text
    before = len(gh.requests)
    actions = [CheckAction(f"b{i}", "d", f"id{i}") for i in range(4)]
    with pytest.raises(GitHubValidationError, match="at most 3 actions"):
        port.create_check_run(REPO, name="L1", head_sha=sha, actions=actions)
    assert len(gh.requests) == before
    with pytest.raises(ValueError, match="identifier"):
        CheckAction("Retry", "Run again", "x" * 21)


def test_5xx_while_minting_a_token_is_retryable(gh: LoopbackGitHub) -> None:
    """A 502 from the access-token endpoint → RetryableGitHubError (the task retries), no token cached."""
    app = gh.app()
    gh.fail(502, path="/access_tokens")
    with pytest.raises(RetryableGitHubError):
        app.installation_token(gh.installation)
    assert app.installation_token(gh.installation).startswith("ghs_")


def test_close_pull_request_goes_through_the_pulls_api(gh: LoopbackGitHub, port: GitHubAdapter) -> None:
    """close_pull_request comments, then closes with PATCH /pulls/N (not the issues API)."""
    gh.commit(REPO, {"x.py": "x\n"}, branch="to-close")
    number = gh.add_pull(REPO, "to-close")
    info = port.close_pull_request(REPO, number, comment="superseded")
    assert info.state == "closed" and gh.state.issues[REPO][number]["state"] == "closed"
    assert [c["body"] for c in gh.state.comments[REPO].values() if c["issue_number"] == number] == [
        "superseded"
    ]
    assert writes(gh, f"/pulls/{number}") and not [
        r for r in writes(gh, f"/issues/{number}") if r[0] == "PATCH"
    ]


def test_installed_repositories_follows_every_page(gh: LoopbackGitHub) -> None:
    """Every (installation, repo) pair, across installations and past GitHub's page of 100."""
    names = [f"acme/r{i:03d}" for i in range(101)]
    for name in names:
        gh.add_repo(name, files={"a": "1"})
    big = gh.add_installation(names)
    pairs = list(gh.app().installed_repositories())
    assert sorted(r for i, r in pairs if i == big) == names
    assert (gh.installation, REPO) in pairs


def test_5xx_while_listing_installed_repositories_is_retryable(gh: LoopbackGitHub) -> None:
    """A GitHub blip during the beat poll's listing is retried (RetryableGitHubError), not a failure."""
    app = gh.app()
    app.installation_token(gh.installation)  # the 502 must hit the listing itself
    gh.fail(502, path="/installation/repositories")
    with pytest.raises(RetryableGitHubError):
        list(app.installed_repositories())
    gh.fail(503, path="/app/installations")
    with pytest.raises(RetryableGitHubError):
        list(app.installed_repositories())


def test_push_errors_read_statuses_outside_the_remotes_url() -> None:
    """git names the remote in its messages: a loopback port such as 40357 or 40123 is not a 403 or a
    401 (the non-fast-forward push test failed whenever the OS handed out such a port), while the
    status git reports for the URL still classifies the push."""
    from core.github.adapter import _classify_push

    def rejected(port: int) -> str:
        url = f"http://127.0.0.1:{port}/git/acme/fork.git"
        return (
            f"To {url}\nerror: failed to push some refs to '{url}'\n"
            "hint: Updates were rejected because the remote contains work that you do not\n"
        )

    for port in (40357, 40123, 50231, 36403):
        error = _classify_push(rejected(port), REPO, "topic", ())
        assert type(error) is GitHubPushError and "moved on GitHub" in error.remedy, (port, error)
    refused = "fatal: unable to access 'http://127.0.0.1:40123/git/acme/fork.git/': The requested URL returned error: 403"
    assert type(_classify_push(refused, REPO, "topic", ())) is GitHubPermissionError
    unauthorised = (
        "fatal: unable to access 'http://127.0.0.1:40357/x.git/': The requested URL returned error: 401"
    )
    assert type(_classify_push(unauthorised, REPO, "topic", ())) is GitHubAuthError
    flaky = "error: RPC failed; HTTP 502 curl 22 The requested URL returned error: 502"
    assert isinstance(_classify_push(flaky, REPO, "topic", ()), RetryableGitHubError)
