"""Loopback GitHub: a real HTTP server on 127.0.0.1 that speaks the REST subset forksync uses.

Use it through the ``loopback_github`` fixture (tests/fixtures/github.py)::

    def test_something(loopback_github):
        gh = loopback_github                      # a LoopbackGitHub, already serving
        gh.add_repo("acme/fork", files={".github/forksync.yml": "bundle: {max_commits: 5}\\n"})
        gh.set_permission("acme/fork", "alice", "write")
        inst = gh.add_installation(["acme/fork"])  # installation id (int)
        port = gh.adapter(inst)                   # core.github.adapter.GitHubAdapter pointed at this server
        port.create_comment("acme/fork", 1, "hi") # ... or drive it from a Celery task
        assert gh.state.comments["acme/fork"][...]["body"] == "hi"

What it holds (``gh.state``, plain dicts in GitHub's JSON field names, guarded by ``gh.lock``):
repos, installations and access tokens, issues and pull requests (one number sequence per
repo, as on GitHub; ``state.issues[repo][n]`` / ``state.pulls[repo][n]``), labels, comments
(``state.comments[repo][comment_id]``, each with ``issue_number``), reactions
(``state.reactions[comment_id]``), check runs (``state.check_runs[repo][id]``, annotations in
``state.annotations[id]``), collaborator permissions (``state.permissions[repo][login]``).
Every request is logged in ``gh.requests`` as ``(method, path, status)``.

Seeding and acting as people do: ``add_repo(repo, files=, default_branch=, private=)``,
``commit(repo, {path: text or None}, branch=)`` (returns the sha), ``head(repo, branch)``,
``add_issue(repo, title, body, author=, labels=)``, ``add_pull(repo, head_branch, base=, author=,
author_association=, draft=)``, ``merge(repo, number)``, ``set_permission(repo, login, role)``,
``add_installation(repos)``, ``token_for(installation_id)``, ``expire_tokens()``.

Each fake repository is a real bare git repository (``gh.bare(repo)``): file contents and
branch heads are read from it, and it is served over git's smart HTTP (``git http-backend``)
at ``gh.git_url(repo)`` (template ``gh.push_url_template``). Pushes must authenticate like
GitHub's: HTTP Basic ``x-access-token:<installation token>``.

Authentication is checked as GitHub does it: ``/app/...`` endpoints need an RS256 App JWT
signed with ``gh.private_key_pem`` for ``gh.app_id``; everything else an unexpired
installation token whose installation covers the repository (401 Bad credentials, 404
otherwise). ``gh.token_for(installation_id)`` mints a token for tests that skip App auth.

Fault injection, consumed in order by matching requests: ``gh.fail(status, times=1,
method=None, path=None, headers=None, message=None)`` (502, 422...), ``gh.secondary_rate_limit
(retry_after=7)`` (403 + Retry-After), ``gh.rate_limit_exhausted(reset_in=30)`` (403 +
x-ratelimit-remaining 0 + x-ratelimit-reset), ``gh.slow(seconds)``. Response shapes follow
GitHub's REST API and the recordings in tests/data/github-rest-recordings, so PyGithub
parses them unchanged.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import re
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

APP_SLUG = "forksync"
APP_BOT_LOGIN = f"{APP_SLUG}[bot]"
PERMISSIONS = ("admin", "maintain", "write", "triage", "read", "none")
# role -> the coarse "permission" GitHub reports beside role_name
_COARSE = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
    "none": "none",
}


_KEY: list[rsa.RSAPrivateKey] = []


def _app_key() -> rsa.RSAPrivateKey:
    """One RSA key per test process: generating 2048-bit keys costs ~0.1-0.5 s each."""
    if not _KEY:
        _KEY.append(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    return _KEY[0]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Reply(Exception):
    """Raised inside a handler to answer with a status and a GitHub-shaped body."""

    def __init__(self, status: int, body: Any = None, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = dict(headers or {})


def _error(status: int, message: str, **extra: Any) -> _Reply:
    body = {"message": message, "documentation_url": "https://docs.github.com/rest", **extra}
    return _Reply(status, body)


def _validation(message: str, resource: str, field_: str, code: str = "custom") -> _Reply:
    return _error(
        422,
        "Validation Failed",
        errors=[{"resource": resource, "field": field_, "code": code, "message": message}],
    )


@dataclass
class Fault:
    status: int
    times: int = 1
    method: str | None = None
    path: str | None = None  # substring of the request path
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "Server Error"
    delay_s: float = 0.0  # a slow answer; status 0 means "then answer normally"

    def matches(self, method: str, path: str) -> bool:
        return (self.method is None or self.method == method) and (self.path is None or self.path in path)


@dataclass
class State:
    """Everything the fake GitHub knows; dict fields use GitHub's JSON names."""

    repos: dict[str, dict[str, Any]] = field(default_factory=dict)
    installations: dict[int, set[str]] = field(default_factory=dict)
    tokens: dict[str, dict[str, Any]] = field(default_factory=dict)  # token -> installation_id, expires
    tokens_minted: int = 0
    issues: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)
    pulls: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)
    labels: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    comments: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)
    reactions: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    check_runs: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)
    annotations: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    permissions: dict[str, dict[str, str]] = field(default_factory=dict)
    # repo -> branch -> the status check contexts its protection requires
    protection: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    next_number: dict[str, int] = field(default_factory=dict)
    oauth_codes: dict[str, str] = field(default_factory=dict)  # one-time code -> login
    user_tokens: dict[str, str] = field(default_factory=dict)  # user-to-server token -> login


class LoopbackGitHub:
    """The fake GitHub; start with :meth:`start` (the fixture does), stop with :meth:`close`."""

    def __init__(self, root: Path, app_id: int = 4242, token_ttl_s: int = 3600) -> None:
        self.root = root
        self.git_root = root / "git"
        self.git_root.mkdir(parents=True, exist_ok=True)
        self.app_id = app_id
        self.token_ttl_s = token_ttl_s
        key = _app_key()
        self.private_key_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        ).decode()
        self._public_key = key.public_key()
        self.state = State()
        self.lock = threading.RLock()
        self.faults: list[Fault] = []
        self.requests: list[tuple[str, str, int]] = []
        self._ids = itertools.count(1000)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""
        self.installation = 0  # the fixture's default installation (covers acme/fork)
        self.oauth_credentials: tuple[str, str] | None = None
        self.browser_login: str | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> LoopbackGitHub:
        handler = type("Handler", (_Handler,), {"gh": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    @property
    def api_url(self) -> str:
        return self.url

    @property
    def push_url_template(self) -> str:
        return f"{self.url}/git/{{repo}}.git"

    def git_url(self, repo: str) -> str:
        return self.push_url_template.format(repo=repo)

    def settings(self, **extra: str) -> dict[str, str]:
        """Environment-style settings (for ``Settings.from_mapping``) pointing at this server."""
        return {
            "GITHUB_APP_ID": str(self.app_id),
            "GITHUB_PRIVATE_KEY": self.private_key_pem,
            "GITHUB_API_URL": self.api_url,
            **extra,
        }

    def app(self, **kwargs: Any) -> Any:
        """A ``core.github.app.GitHubApp`` for this server (kwargs: clock, refresh_margin_s...)."""
        from core.github.app import GitHubApp

        return GitHubApp(
            str(self.app_id),
            self.private_key_pem,
            self.api_url,
            push_url_template=self.push_url_template,
            **kwargs,
        )

    def adapter(self, installation_id: int, **kwargs: Any) -> Any:
        """A ``core.github.adapter.GitHubAdapter`` acting as the App's installation ``installation_id``."""
        return self.app(**kwargs).adapter(installation_id)

    # ------------------------------------------------------------------ seeding

    def next_id(self) -> int:
        return next(self._ids)

    def bare(self, repo: str) -> Path:
        return self.git_root / f"{repo}.git"

    def add_repo(
        self,
        repo: str,
        *,
        default_branch: str = "main",
        files: Mapping[str, str] | None = None,
        private: bool = False,
    ) -> Path:
        """Create ``owner/name`` with a bare git repository; ``files`` become its first commit."""
        owner = repo.split("/")[0]
        path = self.bare(repo)
        _git(None, "init", "--bare", "-q", f"--initial-branch={default_branch}", str(path))
        with self.lock:
            self.state.repos[repo] = {
                "id": self.next_id(),
                "full_name": repo,
                "name": repo.split("/")[1],
                "owner": owner,
                "default_branch": default_branch,
                "private": private,
            }
            for bucket in (
                self.state.issues,
                self.state.pulls,
                self.state.labels,
                self.state.comments,
                self.state.check_runs,
                self.state.permissions,
            ):
                bucket.setdefault(repo, {})  # type: ignore[arg-type]
            self.state.next_number.setdefault(repo, 1)
        if files:
            self.commit(repo, files, branch=default_branch, message="initial")
        return path

    def commit(
        self,
        repo: str,
        files: Mapping[str, str | None],
        *,
        branch: str | None = None,
        message: str = "update",
    ) -> str:
        """Commit ``files`` (path -> text, None deletes) on ``branch`` of the bare repo; return the sha."""
        branch = branch or self.state.repos[repo]["default_branch"]
        bare = self.bare(repo)
        env = {"GIT_INDEX_FILE": str(self.root / f"index-{uuid.uuid4().hex}")}
        parent = _git(bare, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False).strip()
        try:
            if parent:
                _git(bare, "read-tree", parent, env=env)
            for path, text in files.items():
                if text is None:
                    _git(bare, "rm", "--cached", "-q", "--ignore-unmatch", path, env=env)
                    continue
                blob = _git(bare, "hash-object", "-w", "--stdin", input=text.encode()).strip()
                _git(bare, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
            tree = _git(bare, "write-tree", env=env).strip()
            args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
            sha = _git(bare, *args).strip()
            _git(bare, "update-ref", f"refs/heads/{branch}", sha)
        finally:
            Path(env["GIT_INDEX_FILE"]).unlink(missing_ok=True)
        return sha

    def head(self, repo: str, branch: str) -> str | None:
        sha = _git(
            self.bare(repo), "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False
        ).strip()
        return sha or None

    def protect(self, repo: str, branch: str, contexts: Iterable[str]) -> None:
        """Protect ``branch`` requiring these status checks (as a repository admin would)."""
        with self.lock:
            self.state.protection.setdefault(repo, {})[branch] = list(contexts)

    def set_permission(self, repo: str, login: str, permission: str) -> None:
        """Make ``login`` a collaborator with a role: admin, maintain, write, triage, read (or none)."""
        if permission not in PERMISSIONS:
            raise ValueError(f"permission must be one of {PERMISSIONS}")
        with self.lock:
            self.state.permissions.setdefault(repo, {})[login] = permission

    def oauth_client(
        self, client_id: str = "Iv1.loopback", client_secret: str = "loopback-secret"
    ) -> dict[str, str]:
        """Register the App's OAuth client; returns the settings the web process needs for it."""
        with self.lock:
            self.oauth_credentials = (client_id, client_secret)
        return {
            "GITHUB_OAUTH_CLIENT_ID": client_id,
            "GITHUB_OAUTH_CLIENT_SECRET": client_secret,
            "GITHUB_WEB_URL": self.url,
        }

    def sign_in_as(self, login: str | None) -> None:
        """Who the browser is signed in as on this "github.com" (``/login/oauth/authorize`` approves them)."""
        with self.lock:
            self.browser_login = login

    def add_installation(self, repos: Iterable[str], installation_id: int | None = None) -> int:
        with self.lock:
            iid = installation_id if installation_id is not None else self.next_id()
            self.state.installations.setdefault(iid, set()).update(repos)
            return iid

    def token_for(self, installation_id: int, ttl_s: int | None = None) -> str:
        """Mint an installation token directly (as if the App had asked for one)."""
        with self.lock:
            token = "ghs_" + uuid.uuid4().hex
            self.state.tokens[token] = {
                "installation_id": installation_id,
                "expires": time.time() + (self.token_ttl_s if ttl_s is None else ttl_s),
            }
            self.state.tokens_minted += 1
            return token

    def expire_tokens(self) -> None:
        """Make every issued installation token expire now (GitHub then answers 401)."""
        with self.lock:
            for info in self.state.tokens.values():
                info["expires"] = time.time() - 1

    def add_issue(
        self,
        repo: str,
        title: str,
        body: str = "",
        *,
        author: str = "octocat",
        labels: Iterable[str] = (),
        state: str = "open",
    ) -> int:
        with self.lock:
            number = self._number(repo)
            self.state.issues[repo][number] = self._new_issue(
                repo, number, title, body, author, labels, state
            )
            return number

    def add_pull(
        self,
        repo: str,
        head: str,
        base: str = "main",
        title: str = "A change",
        body: str = "",
        *,
        author: str = "octocat",
        author_association: str = "CONTRIBUTOR",
        draft: bool = False,
        head_repo: str | None = None,
    ) -> int:
        """Open a PR from ``head`` (a branch that must exist) as a human would."""
        if self.head(head_repo or repo, head) is None:
            raise ValueError(f"branch {head} does not exist in {head_repo or repo}")
        with self.lock:
            return self._create_pull(
                repo, head, base, title, body, author, draft, author_association, head_repo
            )

    def merge(self, repo: str, number: int) -> str:
        """Merge PR ``number`` as a maintainer would (base branch moves to the head); return the sha."""
        with self.lock:
            pr, issue = self.state.pulls[repo][number], self.state.issues[repo][number]
            sha = self.head(pr["head_repo"], pr["head"]) or ""
            _git(self.bare(repo), "update-ref", f"refs/heads/{pr['base']}", sha)
            pr.update(merged=True, merged_at=_now(), last_head_sha=sha)
            issue.update(state="closed", closed_at=_now())
            return sha

    def review(self, repo: str, number: int, login: str, state: str = "APPROVED", body: str = "") -> int:
        """``login`` reviews PR ``number`` at its current head, as a human would (APPROVED,
        CHANGES_REQUESTED or COMMENTED); its id."""
        with self.lock:
            pr = self.state.pulls[repo][number]
            rid = self.next_id()
            pr.setdefault("reviews", []).append(
                {
                    "id": rid,
                    "user": login,
                    "state": state,
                    "body": body,
                    "submitted_at": _now(),
                    "commit_id": self.head(pr["head_repo"], pr["head"])
                    or pr.get("last_head_sha")
                    or "0" * 40,
                }
            )
            # GitHub drops a user from the requested reviewers once they review.
            pr["requested_reviewers"] = [u for u in pr.get("requested_reviewers", []) if u != login]
            return rid

    # ------------------------------------------------------------------ faults

    def fail(
        self,
        status: int,
        times: int = 1,
        *,
        method: str | None = None,
        path: str | None = None,
        headers: Mapping[str, str] | None = None,
        message: str | None = None,
    ) -> None:
        default = {
            502: "Server Error",
            422: "Validation Failed",
            403: "Forbidden",
            404: "Not Found",
            401: "Bad credentials",
            500: "Server Error",
            503: "Service Unavailable",
        }
        with self.lock:
            self.faults.append(
                Fault(
                    status, times, method, path, dict(headers or {}), message or default.get(status, "Error")
                )
            )

    def secondary_rate_limit(self, retry_after: int = 7, **match: Any) -> None:
        self.fail(
            403,
            headers={"Retry-After": str(retry_after)},
            message="You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
            **match,
        )

    def rate_limit_exhausted(self, reset_in: int = 30, **match: Any) -> None:
        self.fail(
            403,
            headers={
                "x-ratelimit-remaining": "0",
                "x-ratelimit-limit": "5000",
                "x-ratelimit-reset": str(int(time.time()) + reset_in),
            },
            message="API rate limit exceeded for installation ID 1.",
            **match,
        )

    def slow(self, seconds: float, times: int = 1, **match: Any) -> None:
        with self.lock:
            self.faults.append(Fault(0, times, match.get("method"), match.get("path"), delay_s=seconds))

    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.matches(method, path):
                    fault.times -= 1
                    if fault.times <= 0:
                        self.faults.remove(fault)
                    return fault
        return None

    # ------------------------------------------------------------------ JSON shapes

    def _user(self, login: str) -> dict[str, Any]:
        is_bot = login.endswith("[bot]")
        return {
            "login": login,
            "id": abs(hash(login)) % 10_000_000,
            "node_id": "U_" + login,
            "avatar_url": f"https://avatars.githubusercontent.com/u/{login}",
            "gravatar_id": "",
            "url": f"{self.url}/users/{login}",
            "html_url": f"https://github.com/{login}",
            "type": "Bot" if is_bot else "User",
            "site_admin": False,
        }

    def _repo_json(self, repo: str) -> dict[str, Any]:
        r = self.state.repos[repo]
        return {
            "id": r["id"],
            "node_id": f"R_{r['id']}",
            "name": r["name"],
            "full_name": repo,
            "private": r["private"],
            "owner": self._user(r["owner"]),
            "html_url": f"https://github.com/{repo}",
            "description": None,
            "fork": False,
            "url": f"{self.url}/repos/{repo}",
            "clone_url": self.git_url(repo),
            "default_branch": r["default_branch"],
            "created_at": "2020-01-01T00:00:00Z",
            "updated_at": _now(),
            "pushed_at": _now(),
            "permissions": {"admin": False, "push": True, "pull": True},
        }

    def _number(self, repo: str) -> int:
        n = self.state.next_number[repo]
        self.state.next_number[repo] = n + 1
        return n

    def _label(self, repo: str, name: str) -> dict[str, Any]:
        labels = self.state.labels[repo]
        if name not in labels:
            lid = self.next_id()
            labels[name] = {
                "id": lid,
                "node_id": f"LA_{lid}",
                "url": f"{self.url}/repos/{repo}/labels/{name}",
                "name": name,
                "color": "ededed",
                "default": False,
                "description": None,
            }
        return labels[name]

    def _new_issue(
        self,
        repo: str,
        number: int,
        title: str,
        body: str | None,
        author: str,
        labels: Iterable[str],
        state: str,
    ) -> dict[str, Any]:
        return {
            "number": number,
            "id": self.next_id(),
            "title": title,
            "body": body,
            "author": author,
            "labels": [self._label(repo, name)["name"] for name in labels],
            "state": state,
            "state_reason": None,
            "created_at": _now(),
            "updated_at": _now(),
            "closed_at": None,
            "comments": 0,
            "is_pull": False,
        }

    def _issue_json(self, repo: str, issue: dict[str, Any]) -> dict[str, Any]:
        n = issue["number"]
        base = f"{self.url}/repos/{repo}/issues/{n}"
        out = {
            "url": base,
            "repository_url": f"{self.url}/repos/{repo}",
            "labels_url": base + "/labels{/name}",
            "comments_url": base + "/comments",
            "events_url": base + "/events",
            # GitHub's issues API gives a PR its PR page (.../pull/N), as the adapter relies on.
            "html_url": f"https://github.com/{repo}/{'pull' if issue['is_pull'] else 'issues'}/{n}",
            "id": issue["id"],
            "node_id": f"I_{issue['id']}",
            "number": n,
            "title": issue["title"],
            "user": self._user(issue["author"]),
            "labels": [self.state.labels[repo][name] for name in issue["labels"]],
            "state": issue["state"],
            "state_reason": issue["state_reason"],
            "locked": False,
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "closed_by": None,
            "comments": issue["comments"],
            "created_at": issue["created_at"],
            "updated_at": issue["updated_at"],
            "closed_at": issue["closed_at"],
            "author_association": "OWNER",
            "body": issue["body"],
        }
        if issue["is_pull"]:
            out["pull_request"] = {
                "url": f"{self.url}/repos/{repo}/pulls/{n}",
                "html_url": f"https://github.com/{repo}/pull/{n}",
                "diff_url": f"https://github.com/{repo}/pull/{n}.diff",
                "patch_url": f"https://github.com/{repo}/pull/{n}.patch",
            }
        return out

    def _create_pull(
        self,
        repo: str,
        head: str,
        base: str,
        title: str,
        body: str | None,
        author: str,
        draft: bool,
        author_association: str,
        head_repo: str | None = None,
    ) -> int:
        number = self._number(repo)
        issue = self._new_issue(repo, number, title, body, author, (), "open")
        issue["is_pull"] = True
        self.state.issues[repo][number] = issue
        self.state.pulls[repo][number] = {
            "number": number,
            "head": head,
            "base": base,
            "draft": draft,
            "merged": False,
            "merged_at": None,
            "head_repo": head_repo or repo,
            "author_association": author_association,
            "maintainer_can_modify": False,
        }
        return number

    def _pull_json(self, repo: str, number: int) -> dict[str, Any]:
        pr = self.state.pulls[repo][number]
        issue = self.state.issues[repo][number]
        head_repo = pr["head_repo"]
        head_sha = self.head(head_repo, pr["head"]) or pr.get("last_head_sha") or "0" * 40
        base_sha = self.head(repo, pr["base"]) or "0" * 40
        url = f"{self.url}/repos/{repo}/pulls/{number}"

        def side(ref: str, sha: str, of: str) -> dict[str, Any]:
            return {
                "label": f"{of.split('/')[0]}:{ref}",
                "ref": ref,
                "sha": sha,
                "user": self._user(of.split("/")[0]),
                "repo": self._repo_json(of) if of in self.state.repos else None,
            }

        stats = (
            _git(self.bare(repo), "diff", "--shortstat", f"{base_sha}...{head_sha}", check=False)
            if head_repo == repo and base_sha != "0" * 40 and head_sha != "0" * 40
            else ""
        )
        numbers = [int(n) for n in re.findall(r"(\d+) (?:file|insertion|deletion)", stats)]
        kinds = re.findall(r"\d+ (file|insertion|deletion)", stats)
        counted = dict(zip(kinds, numbers, strict=True))
        commits = (
            _git(self.bare(repo), "rev-list", "--count", f"{base_sha}..{head_sha}", check=False).strip()
            if head_repo == repo and base_sha != "0" * 40 and head_sha != "0" * 40
            else "0"
        )
        return {
            "url": url,
            "id": issue["id"],
            "node_id": f"PR_{issue['id']}",
            "commits": int(commits or 0),
            "additions": counted.get("insertion", 0),
            "deletions": counted.get("deletion", 0),
            "changed_files": counted.get("file", 0),
            "review_comments": 0,
            "review_comment_url": url + "/comments{/number}",
            "milestone": None,
            "merged_by": None,
            "rebaseable": True,
            "_links": {
                "self": {"href": url},
                "html": {"href": f"https://github.com/{repo}/pull/{number}"},
                "issue": {"href": f"{self.url}/repos/{repo}/issues/{number}"},
                "comments": {"href": f"{self.url}/repos/{repo}/issues/{number}/comments"},
                "commits": {"href": url + "/commits"},
                "statuses": {"href": f"{self.url}/repos/{repo}/statuses/{head_sha}"},
            },
            "html_url": f"https://github.com/{repo}/pull/{number}",
            "diff_url": f"https://github.com/{repo}/pull/{number}.diff",
            "patch_url": f"https://github.com/{repo}/pull/{number}.patch",
            "issue_url": f"{self.url}/repos/{repo}/issues/{number}",
            "number": number,
            "state": issue["state"],
            "locked": False,
            "title": issue["title"],
            "user": self._user(issue["author"]),
            "body": issue["body"],
            "labels": [self.state.labels[repo][name] for name in issue["labels"]],
            "created_at": issue["created_at"],
            "updated_at": issue["updated_at"],
            "closed_at": issue["closed_at"],
            "merged_at": pr["merged_at"],
            "merge_commit_sha": None,
            "assignee": None,
            "assignees": [],
            "requested_reviewers": [self._user(u) for u in pr.get("requested_reviewers", [])],
            "requested_teams": [
                {"slug": t, "name": t, "id": abs(hash(t)) % 100000} for t in pr.get("requested_teams", [])
            ],
            "draft": pr["draft"],
            "commits_url": url + "/commits",
            "review_comments_url": url + "/comments",
            "comments_url": f"{self.url}/repos/{repo}/issues/{number}/comments",
            "statuses_url": f"{self.url}/repos/{repo}/statuses/{head_sha}",
            "head": side(pr["head"], head_sha, head_repo),
            "base": side(pr["base"], base_sha, repo),
            "author_association": pr["author_association"],
            "merged": pr["merged"],
            "mergeable": True,
            "mergeable_state": "clean",
            "comments": issue["comments"],
            "maintainer_can_modify": pr["maintainer_can_modify"],
        }

    def _comment_json(self, repo: str, c: dict[str, Any]) -> dict[str, Any]:
        kind = (
            "pull" if c["issue_number"] in self.state.pulls.get(repo, {}) else "issues"
        )  # as GitHub links them
        return {
            "url": f"{self.url}/repos/{repo}/issues/comments/{c['id']}",
            "html_url": f"https://github.com/{repo}/{kind}/{c['issue_number']}#issuecomment-{c['id']}",
            "issue_url": f"{self.url}/repos/{repo}/issues/{c['issue_number']}",
            "id": c["id"],
            "node_id": f"IC_{c['id']}",
            "user": self._user(c["author"]),
            "created_at": c["created_at"],
            "updated_at": c["updated_at"],
            "author_association": "NONE",
            "body": c["body"],
            "reactions": {
                "url": f"{self.url}/repos/{repo}/issues/comments/{c['id']}/reactions",
                "total_count": len(self.state.reactions.get(c["id"], [])),
            },
        }

    def _check_run_json(self, repo: str, run: dict[str, Any]) -> dict[str, Any]:
        rid = run["id"]
        url = f"{self.url}/repos/{repo}/check-runs/{rid}"
        output = dict(run["output"])
        output["annotations_count"] = len(self.state.annotations.get(rid, []))
        output["annotations_url"] = url + "/annotations"
        return {
            "id": rid,
            "node_id": f"CR_{rid}",
            "head_sha": run["head_sha"],
            "external_id": run["external_id"],
            "url": url,
            "html_url": f"https://github.com/{repo}/runs/{rid}",
            "details_url": run["details_url"],
            "status": run["status"],
            "conclusion": run["conclusion"],
            "started_at": run["started_at"],
            "completed_at": run["completed_at"],
            "output": output,
            "name": run["name"],
            "check_suite": {"id": run["check_suite_id"]},
            "app": {
                "id": run["app_id"],
                "slug": run["app_slug"],
                "name": run["app_slug"],
                "owner": self._user(repo.split("/")[0]),
            },
            "pull_requests": [],
            "actions": run["actions"],
        }


def _git(
    cwd: Path | None,
    *args: str,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> str:
    """Git for the fake server's own bookkeeping (not the code under test, which uses the funnel)."""
    argv = ["git", *(["-C", str(cwd)] if cwd else []), *args]
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(argv, input=input, capture_output=True, env=full_env, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"loopback git {args[0]} failed: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode()


def _merge(headers: dict[str, str], extra: Mapping[str, str]) -> None:
    """Set headers case-insensitively (one x-ratelimit-remaining, not two)."""
    for key, value in extra.items():
        for old in [k for k in headers if k.lower() == key.lower()]:
            del headers[old]
        headers[key] = value


# ---------------------------------------------------------------------------------- routes

Route = tuple[str, re.Pattern[str], Callable[..., Any]]
_ROUTES: list[Route] = []
_REPO = r"(?P<repo>[^/]+/[^/]+)"


def route(method: str, pattern: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        _ROUTES.append((method, re.compile("^" + pattern.replace("{repo}", _REPO) + "$"), fn))
        return fn

    return register


class _Handler(BaseHTTPRequestHandler):
    gh: LoopbackGitHub
    protocol_version = "HTTP/1.1"
    server_version = "GitHub.com"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # -- plumbing

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: bytes, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _dispatch(self, method: str) -> None:
        gh = self.gh
        parts = urlsplit(self.path)
        path = unquote(parts.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        raw = self._body()
        fault = gh._take_fault(method, path)
        if fault is not None and fault.delay_s:
            time.sleep(fault.delay_s)
            fault = None
        reset = str(int(time.time()) + 3600)
        headers = {
            "Content-Type": "application/json; charset=utf-8",
            "X-GitHub-Media-Type": "github.v3; format=json",
            "X-RateLimit-Limit": "5000",
            "X-RateLimit-Remaining": "4999",
            "X-RateLimit-Reset": reset,
            "X-RateLimit-Used": "1",
            "X-GitHub-Request-Id": uuid.uuid4().hex[:20],
        }
        if path.startswith("/login/oauth/"):
            status = self._oauth(method, path, query, raw)
            with gh.lock:
                gh.requests.append((method, path, status))
            return
        if path.startswith("/git/"):
            status = self._git_http(method, path, parts.query, raw)
            with gh.lock:
                gh.requests.append((method, path, status))
            return
        try:
            if fault is not None:
                _merge(headers, fault.headers)
                raise _error(fault.status, fault.message)
            payload = json.loads(raw) if raw.strip() else {}
            for m, pattern, fn in _ROUTES:
                match = pattern.match(path)
                if match and m == method:
                    with gh.lock:
                        result = fn(gh, self, payload=payload, query=query, **match.groupdict())
                    status, body, extra = result if len(result) == 3 else (*result, {})
                    _merge(headers, extra)
                    break
            else:
                raise _error(404, "Not Found")
        except _Reply as reply:
            status, body = reply.status, reply.body
            _merge(headers, reply.headers)
        except json.JSONDecodeError:
            status, body = 400, {"message": "Problems parsing JSON"}
        except Exception as exc:  # a bug in the fake: say so loudly instead of hanging the client
            status, body = 500, {"message": f"loopback GitHub bug: {type(exc).__name__}: {exc}"}
        with gh.lock:
            gh.requests.append((method, path, status))
        data = b"" if body is None else json.dumps(body).encode()
        self._send(status, data, headers)

    # -- authentication

    def installation(self, repo: str | None = None) -> int:
        """The installation of the request's token; 401 when missing/expired, 404 when it lacks ``repo``."""
        auth = self.headers.get("Authorization", "")
        kind, _, token = auth.partition(" ")
        info = self.gh.state.tokens.get(token) if kind.lower() in ("token", "bearer") else None
        if info is None or info["expires"] < time.time():
            raise _error(401, "Bad credentials")
        if repo is not None and (
            repo not in self.gh.state.repos
            or repo not in self.gh.state.installations.get(info["installation_id"], set())
        ):
            raise _error(404, "Not Found")
        iid: int = info["installation_id"]
        return iid

    def app_jwt(self) -> None:
        auth = self.headers.get("Authorization", "")
        kind, _, token = auth.partition(" ")
        if kind.lower() != "bearer":
            raise _error(401, "A JSON web token could not be decoded")
        try:
            claims = jwt.decode(
                token,
                self.gh._public_key,
                algorithms=["RS256"],
                options={"require": ["iat", "exp", "iss"]},
                leeway=60,
            )
        except jwt.PyJWTError:
            raise _error(401, "A JSON web token could not be decoded") from None
        if str(claims["iss"]) != str(self.gh.app_id):
            raise _error(401, "Integration not found")
        if claims["exp"] - claims["iat"] > 11 * 60:
            raise _error(401, "Expiration time' claim ('exp') is too far in the future")

    def user_login(self) -> str | None:
        """The login of a user-to-server token (``Authorization: Bearer ghu_...``), None for other tokens."""
        kind, _, token = self.headers.get("Authorization", "").partition(" ")
        return self.gh.state.user_tokens.get(token) if kind.lower() in ("token", "bearer") else None

    def _oauth(self, method: str, path: str, query: Mapping[str, str], raw: bytes) -> int:
        """github.com's OAuth web flow: authorize (a redirect back with a code), access_token (JSON)."""
        gh = self.gh
        creds = gh.oauth_credentials
        if method == "GET" and path == "/login/oauth/authorize":
            if creds is None or query.get("client_id") != creds[0]:
                self._send(404, b"<html><body>Not Found</body></html>", {"Content-Type": "text/html"})
                return 404
            login = gh.browser_login
            if login is None:  # GitHub would show its sign-in form; the test says who signs in
                self._send(
                    200,
                    b"<html><body><h1>Sign in to GitHub</h1></body></html>",
                    {"Content-Type": "text/html"},
                )
                return 200
            code = uuid.uuid4().hex[:20]
            with gh.lock:
                gh.state.oauth_codes[code] = login
            sep = "&" if "?" in query.get("redirect_uri", "") else "?"
            target = f"{query.get('redirect_uri', '')}{sep}code={code}&state={query.get('state', '')}"
            self._send(302, b"", {"Location": target, "Content-Type": "text/html"})
            return 302
        if method == "POST" and path == "/login/oauth/access_token":
            form = {k: v[-1] for k, v in parse_qs(raw.decode(errors="replace")).items()}
            if raw.strip().startswith(b"{"):
                form = {str(k): str(v) for k, v in json.loads(raw).items()}
            with gh.lock:
                login = gh.state.oauth_codes.pop(form.get("code", ""), None)
                ok = creds is not None and (form.get("client_id"), form.get("client_secret")) == creds
                if ok and login is not None:
                    token = "ghu_" + uuid.uuid4().hex
                    gh.state.user_tokens[token] = login
                    body: dict[str, str] = {"access_token": token, "token_type": "bearer", "scope": ""}
                elif not ok:
                    body = {
                        "error": "incorrect_client_credentials",
                        "error_description": "The client_id and/or client_secret passed are incorrect.",
                        "error_uri": "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#incorrect-client-credentials",
                    }
                else:
                    body = {
                        "error": "bad_verification_code",
                        "error_description": "The code passed is incorrect or expired.",
                        "error_uri": "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#bad-verification-code",
                    }
            # GitHub answers 200 even for errors, with an "error" field.
            self._send(200, json.dumps(body).encode(), {"Content-Type": "application/json; charset=utf-8"})
            return 200
        self._send(404, b'{"message": "Not Found"}', {"Content-Type": "application/json"})
        return 404

    def _git_http(self, method: str, path: str, query: str, body: bytes) -> int:
        """Smart HTTP through ``git http-backend``; receive-pack needs a valid installation token."""
        gh = self.gh
        match = re.match(r"^/git/(?P<repo>[^/]+/[^/]+)\.git(?P<rest>/.*)$", path)
        repo = match.group("repo") if match else ""
        if not match or repo not in gh.state.repos:
            self._send(404, b"Repository not found.\n", {"Content-Type": "text/plain"})
            return 404
        if "git-receive-pack" in path or "service=git-receive-pack" in query:
            kind, _, cred = self.headers.get("Authorization", "").partition(" ")
            user, _, token = (
                base64.b64decode(cred).decode(errors="replace") if kind.lower() == "basic" else ""
            ).partition(":")
            with gh.lock:
                info = gh.state.tokens.get(token)
                allowed = (
                    user == "x-access-token"
                    and info is not None
                    and info["expires"] >= time.time()
                    and repo in gh.state.installations.get(info["installation_id"], set())
                )
            if not allowed:
                self._send(
                    401,
                    b"Invalid username or token.\n",
                    {"Content-Type": "text/plain", "WWW-Authenticate": 'Basic realm="GitHub"'},
                )
                return 401
        env = {
            **os.environ,
            "GIT_PROJECT_ROOT": str(gh.git_root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": f"/{repo}.git{match.group('rest')}",
            "REQUEST_METHOD": method,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": "x-access-token",
            "REMOTE_ADDR": "127.0.0.1",
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
        }
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        proc = subprocess.run(["git", "http-backend"], input=body, capture_output=True, env=env, check=False)
        head, _, payload = proc.stdout.partition(b"\r\n\r\n")
        status, headers = 200, {}
        for line in head.decode(errors="replace").split("\r\n"):
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.strip().split()[0])
            elif key:
                headers[key.strip()] = value.strip()
        if proc.returncode != 0 and not head:
            status, payload = 500, proc.stderr
        self._send(status, payload, headers)
        return status


# ---------------------------------------------------------------------------------- REST


def _paginate(
    handler: _Handler, items: list[Any], query: Mapping[str, str]
) -> tuple[list[Any], dict[str, str]]:
    per_page = max(1, min(100, int(query.get("per_page", "30"))))
    page = max(1, int(query.get("page", "1")))
    last = max(1, -(-len(items) // per_page))
    chunk = items[(page - 1) * per_page : page * per_page]
    base = handler.gh.url + urlsplit(handler.path).path
    others = "&".join(f"{k}={quote(v, safe=',')}" for k, v in query.items() if k not in ("page", "per_page"))
    links = []
    if page < last:
        links.append(
            f'<{base}?{others + "&" if others else ""}per_page={per_page}&page={page + 1}>; rel="next"'
        )
        links.append(f'<{base}?{others + "&" if others else ""}per_page={per_page}&page={last}>; rel="last"')
    return chunk, ({"Link": ", ".join(links)} if links else {})


@route("GET", "/app")
def _get_app(gh: LoopbackGitHub, h: _Handler, **_: Any) -> Any:
    h.app_jwt()
    return 200, {
        "id": gh.app_id,
        "slug": APP_SLUG,
        "name": APP_SLUG,
        "owner": gh._user("acme"),
        "permissions": {"checks": "write", "contents": "write"},
        "events": [],
    }


@route("POST", "/app/installations/(?P<iid>[0-9]+)/access_tokens")
def _access_token(gh: LoopbackGitHub, h: _Handler, iid: str, **_: Any) -> Any:
    h.app_jwt()
    if int(iid) not in gh.state.installations:
        raise _error(404, "Not Found")
    token = gh.token_for(int(iid))
    return 201, {
        "token": token,
        "expires_at": _iso(gh.state.tokens[token]["expires"]),
        "permissions": {
            "checks": "write",
            "contents": "write",
            "issues": "write",
            "pull_requests": "write",
            "metadata": "read",
        },
        "repository_selection": "selected",
    }


def _installation_json(gh: LoopbackGitHub, iid: int) -> dict[str, Any]:
    repos = sorted(gh.state.installations.get(iid, set()))
    owner = repos[0].split("/")[0] if repos else "acme"
    return {
        "id": iid,
        "app_id": gh.app_id,
        "app_slug": APP_SLUG,
        "account": gh._user(owner),
        "target_id": 1,
        "target_type": "Organization",
        "repository_selection": "selected",
        "access_tokens_url": f"{gh.url}/app/installations/{iid}/access_tokens",
        "repositories_url": f"{gh.url}/installation/repositories",
        "html_url": f"https://github.com/organizations/{owner}/settings/installations/{iid}",
        "permissions": {
            "checks": "write",
            "contents": "write",
            "issues": "write",
            "pull_requests": "write",
            "metadata": "read",
            "statuses": "read",
        },
        "events": ["push", "pull_request", "issue_comment", "check_run", "check_suite"],
        "created_at": "2020-01-01T00:00:00Z",
        "updated_at": "2020-01-01T00:00:00Z",
        "single_file_name": None,
        "has_multiple_single_files": False,
        "single_file_paths": [],
        "suspended_at": None,
        "suspended_by": None,
    }


@route("GET", "/app/installations")
def _list_installations(gh: LoopbackGitHub, h: _Handler, query: Mapping[str, str], **_: Any) -> Any:
    h.app_jwt()
    chunk, links = _paginate(
        h, [_installation_json(gh, iid) for iid in sorted(gh.state.installations)], query
    )
    return 200, chunk, links


@route("GET", "/app/installations/(?P<iid>[0-9]+)")
def _get_installation(gh: LoopbackGitHub, h: _Handler, iid: str, **_: Any) -> Any:
    h.app_jwt()
    if int(iid) not in gh.state.installations:
        raise _error(404, "Not Found")
    return 200, _installation_json(gh, int(iid))


@route("GET", "/installation/repositories")
def _installation_repositories(gh: LoopbackGitHub, h: _Handler, query: Mapping[str, str], **_: Any) -> Any:
    iid = h.installation()
    repos = [gh._repo_json(r) for r in sorted(gh.state.installations.get(iid, set())) if r in gh.state.repos]
    chunk, links = _paginate(h, repos, query)
    return 200, {"total_count": len(repos), "repository_selection": "selected", "repositories": chunk}, links


@route("GET", "/repos/{repo}/installation")
def _repo_installation(gh: LoopbackGitHub, h: _Handler, repo: str, **_: Any) -> Any:
    h.app_jwt()
    for iid, repos in sorted(gh.state.installations.items()):
        if repo in repos:
            return 200, _installation_json(gh, iid)
    raise _error(404, "Not Found")


@route("GET", "/user")
def _get_user(gh: LoopbackGitHub, h: _Handler, **_: Any) -> Any:
    login = h.user_login()
    if login is None:
        raise _error(401, "Requires authentication")
    return 200, {**gh._user(login), "name": login.title(), "email": None}


@route("GET", "/repos/{repo}")
def _get_repo(gh: LoopbackGitHub, h: _Handler, repo: str, **_: Any) -> Any:
    login = h.user_login()
    if login is None:
        h.installation(repo)
        return 200, gh._repo_json(repo)
    # A user-to-server token: GitHub answers 404 for a private repo the user cannot read, and
    # reports the user's own permissions.
    if repo not in gh.state.repos:
        raise _error(404, "Not Found")
    role = gh.state.permissions.get(repo, {}).get(login) or (
        "none" if gh.state.repos[repo]["private"] else "read"
    )
    if role == "none":
        raise _error(404, "Not Found")
    data = gh._repo_json(repo)
    data["permissions"] = {
        "admin": role == "admin",
        "maintain": role in ("admin", "maintain"),
        "push": role in ("admin", "maintain", "write"),
        "triage": role != "read",
        "pull": True,
    }
    return 200, data


@route("GET", "/repos/{repo}/contents/(?P<path>.+)")
def _contents(
    gh: LoopbackGitHub, h: _Handler, repo: str, path: str, query: Mapping[str, str], **_: Any
) -> Any:
    h.installation(repo)
    ref = query.get("ref") or gh.state.repos[repo]["default_branch"]
    bare = gh.bare(repo)
    kind = _git(bare, "cat-file", "-t", f"{ref}:{path}", check=False).strip()
    if kind != "blob":
        raise _error(404, "Not Found")
    blob_sha = _git(bare, "rev-parse", f"{ref}:{path}").strip()
    data = subprocess.run(
        ["git", "-C", str(bare), "cat-file", "blob", blob_sha], capture_output=True, check=True
    ).stdout
    url = f"{gh.url}/repos/{repo}/contents/{path}?ref={ref}"
    return 200, {
        "type": "file",
        "encoding": "base64",
        "size": len(data),
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "content": base64.encodebytes(data).decode(),
        "sha": blob_sha,
        "url": url,
        "git_url": f"{gh.url}/repos/{repo}/git/blobs/{blob_sha}",
        "html_url": f"https://github.com/{repo}/blob/{ref}/{path}",
        "download_url": f"https://raw.githubusercontent.com/{repo}/{ref}/{path}",
        "_links": {
            "self": url,
            "git": f"{gh.url}/repos/{repo}/git/blobs/{blob_sha}",
            "html": f"https://github.com/{repo}/blob/{ref}/{path}",
        },
    }


@route("GET", "/repos/{repo}/collaborators/(?P<login>[^/]+)/permission")
def _permission(gh: LoopbackGitHub, h: _Handler, repo: str, login: str, **_: Any) -> Any:
    h.installation(repo)
    role = gh.state.permissions[repo].get(login)
    if role is None:
        # GitHub: a user who is not a collaborator has no permission on a private repo, read on a public one.
        role = "none" if gh.state.repos[repo]["private"] else "read"
    return 200, {"permission": _COARSE[role], "role_name": role, "user": gh._user(login)}


# -- check runs


def _check_output(payload: Mapping[str, Any], run: dict[str, Any]) -> list[dict[str, Any]]:
    output = payload.get("output")
    if output is None:
        return []
    if not isinstance(output, dict) or not output.get("title") or not output.get("summary"):
        raise _validation("output needs a title and a summary", "CheckRun", "output", "missing_field")
    for key in ("summary", "text"):
        if len(output.get(key) or "") > 65535:
            raise _validation(
                f"output.{key} is too long (maximum is 65535 characters)", "CheckRun", key, "invalid"
            )
    annotations = list(output.get("annotations") or [])
    if len(annotations) > 50:
        raise _validation("Only 50 annotations may be sent per request", "CheckRun", "annotations", "invalid")
    for a in annotations:
        if not all(k in a for k in ("path", "start_line", "end_line", "annotation_level", "message")):
            raise _validation("annotation lacks a required key", "CheckRun", "annotations", "missing_field")
        if a["annotation_level"] not in ("notice", "warning", "failure"):
            raise _validation(
                "annotation_level must be notice, warning or failure", "CheckRun", "annotations", "invalid"
            )
    run["output"] = {"title": output["title"], "summary": output["summary"], "text": output.get("text")}
    return annotations


def _apply_check_fields(payload: Mapping[str, Any], run: dict[str, Any]) -> None:
    for key in ("name", "details_url", "external_id", "started_at"):
        if key in payload:
            run[key] = payload[key]
    if "actions" in payload:
        actions = payload["actions"] or []
        if len(actions) > 3:
            raise _validation("At most 3 actions", "CheckRun", "actions", "invalid")
        run["actions"] = actions
    status = payload.get("status")
    conclusion = payload.get("conclusion")
    if status is not None:
        if status not in ("queued", "in_progress", "completed", "waiting", "requested", "pending"):
            raise _validation(f"invalid status {status}", "CheckRun", "status", "invalid")
        run["status"] = status
    if conclusion is not None:
        run["conclusion"] = conclusion
        run["status"] = "completed"
    if run["status"] == "completed":
        if not run.get("conclusion"):
            raise _validation(
                "conclusion is required when status is completed", "CheckRun", "conclusion", "missing_field"
            )
        run["completed_at"] = payload.get("completed_at") or _now()


@route("POST", "/repos/{repo}/check-runs")
def _create_check_run(
    gh: LoopbackGitHub, h: _Handler, repo: str, payload: Mapping[str, Any], **_: Any
) -> Any:
    h.installation(repo)
    if not payload.get("name") or not payload.get("head_sha"):
        raise _validation("name and head_sha are required", "CheckRun", "name", "missing_field")
    rid = gh.next_id()
    run: dict[str, Any] = {
        "id": rid,
        "name": payload["name"],
        "head_sha": payload["head_sha"],
        "status": "queued",
        "conclusion": None,
        "started_at": _now(),
        "completed_at": None,
        "output": {"title": None, "summary": None, "text": None},
        "details_url": None,
        "external_id": "",
        "actions": [],
        "check_suite_id": 1,
        "app_id": gh.app_id,
        "app_slug": APP_SLUG,
    }
    annotations = _check_output(payload, run)
    _apply_check_fields(payload, run)
    gh.state.check_runs[repo][rid] = run
    gh.state.annotations[rid] = annotations
    return 201, gh._check_run_json(repo, run), {"Location": f"{gh.url}/repos/{repo}/check-runs/{rid}"}


def _find_run(gh: LoopbackGitHub, repo: str, rid: str) -> dict[str, Any]:
    run = gh.state.check_runs[repo].get(int(rid))
    if run is None:
        raise _error(404, "Not Found")
    return run


@route("PATCH", "/repos/{repo}/check-runs/(?P<rid>[0-9]+)")
def _update_check_run(
    gh: LoopbackGitHub, h: _Handler, repo: str, rid: str, payload: Mapping[str, Any], **_: Any
) -> Any:
    h.installation(repo)
    run = _find_run(gh, repo, rid)
    new = dict(run)
    annotations = _check_output(payload, new)
    _apply_check_fields(payload, new)
    run.update(new)
    gh.state.annotations[run["id"]].extend(annotations)  # GitHub appends annotations across updates
    return 200, gh._check_run_json(repo, run)


@route("GET", "/repos/{repo}/check-runs/(?P<rid>[0-9]+)")
def _get_check_run(gh: LoopbackGitHub, h: _Handler, repo: str, rid: str, **_: Any) -> Any:
    h.installation(repo)
    return 200, gh._check_run_json(repo, _find_run(gh, repo, rid))


@route("GET", "/repos/{repo}/check-runs/(?P<rid>[0-9]+)/annotations")
def _get_annotations(
    gh: LoopbackGitHub, h: _Handler, repo: str, rid: str, query: Mapping[str, str], **_: Any
) -> Any:
    h.installation(repo)
    run = _find_run(gh, repo, rid)
    items = [
        {
            "path": a["path"],
            "blob_href": f"https://github.com/{repo}/blob/{run['head_sha']}/{a['path']}",
            "start_line": a["start_line"],
            "end_line": a["end_line"],
            "start_column": a.get("start_column"),
            "end_column": a.get("end_column"),
            "annotation_level": a["annotation_level"],
            "title": a.get("title"),
            "message": a["message"],
            "raw_details": a.get("raw_details"),
        }
        for a in gh.state.annotations[run["id"]]
    ]
    chunk, links = _paginate(h, items, query)
    return 200, chunk, links


@route("GET", "/repos/{repo}/commits/(?P<ref>.+)/check-runs")
def _list_check_runs(
    gh: LoopbackGitHub, h: _Handler, repo: str, ref: str, query: Mapping[str, str], **_: Any
) -> Any:
    h.installation(repo)
    sha = ref if re.fullmatch(r"[0-9a-f]{40}", ref) else gh.head(repo, ref.removeprefix("refs/heads/"))
    runs = [r for r in gh.state.check_runs[repo].values() if r["head_sha"] == sha]
    if "check_name" in query:
        runs = [r for r in runs if r["name"] == query["check_name"]]
    if "status" in query:
        runs = [r for r in runs if r["status"] == query["status"]]
    runs.sort(key=lambda r: -r["id"])
    chunk, links = _paginate(h, runs, query)
    return 200, {"total_count": len(runs), "check_runs": [gh._check_run_json(repo, r) for r in chunk]}, links


# -- pull requests


def _actor(gh: LoopbackGitHub, h: _Handler, repo: str) -> str:
    h.installation(repo)
    return "forksync[bot]"


@route("GET", "/repos/{repo}/pulls")
def _list_pulls(gh: LoopbackGitHub, h: _Handler, repo: str, query: Mapping[str, str], **_: Any) -> Any:
    h.installation(repo)
    state = query.get("state", "open")
    out = []
    for number in sorted(gh.state.pulls[repo], reverse=True):
        pr, issue = gh.state.pulls[repo][number], gh.state.issues[repo][number]
        if state != "all" and issue["state"] != state:
            continue
        if "head" in query:
            owner, _, branch = query["head"].partition(":")
            if (pr["head_repo"].split("/")[0], pr["head"]) != (owner, branch):
                continue
        if "base" in query and pr["base"] != query["base"]:
            continue
        out.append(gh._pull_json(repo, number))
    chunk, links = _paginate(h, out, query)
    return 200, chunk, links


@route("POST", "/repos/{repo}/pulls")
def _create_pull_route(
    gh: LoopbackGitHub, h: _Handler, repo: str, payload: Mapping[str, Any], **_: Any
) -> Any:
    author = _actor(gh, h, repo)
    head, base = str(payload.get("head", "")), str(payload.get("base", ""))
    owner, _, branch = head.rpartition(":")
    head_repo = f"{owner}/{repo.split('/')[1]}" if owner else repo
    if not payload.get("title"):
        raise _validation("title is missing", "PullRequest", "title", "missing_field")
    if gh.head(repo, base) is None:
        raise _validation("base is invalid", "PullRequest", "base", "invalid")
    if head_repo not in gh.state.repos or gh.head(head_repo, branch) is None:
        raise _validation("head is invalid", "PullRequest", "head", "invalid")
    for number, pr in gh.state.pulls[repo].items():
        if (pr["head"], pr["base"], pr["head_repo"]) == (branch, base, head_repo) and gh.state.issues[repo][
            number
        ]["state"] == "open":
            raise _validation(
                f"A pull request already exists for {head_repo.split('/')[0]}:{branch}.",
                "PullRequest",
                "head",
            )
    if gh.head(repo, base) == gh.head(head_repo, branch):
        raise _validation(f"No commits between {base} and {branch}", "PullRequest", "head")
    number = gh._create_pull(
        repo,
        branch,
        base,
        payload["title"],
        payload.get("body"),
        author,
        bool(payload.get("draft", False)),
        "NONE",
        head_repo,
    )
    return 201, gh._pull_json(repo, number), {"Location": f"{gh.url}/repos/{repo}/pulls/{number}"}


def _find_pull(gh: LoopbackGitHub, repo: str, number: str) -> int:
    if int(number) not in gh.state.pulls[repo]:
        raise _error(404, "Not Found")
    return int(number)


@route("GET", "/repos/{repo}/pulls/(?P<number>[0-9]+)")
def _get_pull(gh: LoopbackGitHub, h: _Handler, repo: str, number: str, **_: Any) -> Any:
    h.installation(repo)
    return 200, gh._pull_json(repo, _find_pull(gh, repo, number))


@route("PATCH", "/repos/{repo}/pulls/(?P<number>[0-9]+)")
def _edit_pull(
    gh: LoopbackGitHub, h: _Handler, repo: str, number: str, payload: Mapping[str, Any], **_: Any
) -> Any:
    h.installation(repo)
    n = _find_pull(gh, repo, number)
    issue, pr = gh.state.issues[repo][n], gh.state.pulls[repo][n]
    for key in ("title", "body"):
        if key in payload:
            issue[key] = payload[key]
    if "base" in payload:
        pr["base"] = payload["base"]
    if payload.get("state") in ("open", "closed"):
        issue["state"] = payload["state"]
        issue["closed_at"] = _now() if payload["state"] == "closed" else None
    issue["updated_at"] = _now()
    return 200, gh._pull_json(repo, n)


@route("PUT", "/repos/{repo}/pulls/(?P<number>[0-9]+)/merge")
def _merge_pull(gh: LoopbackGitHub, h: _Handler, repo: str, number: str, **_: Any) -> Any:
    h.installation(repo)
    n = _find_pull(gh, repo, number)
    pr, issue = gh.state.pulls[repo][n], gh.state.issues[repo][n]
    if pr["merged"]:
        raise _error(405, "Pull Request is not mergeable")
    sha = gh.head(pr["head_repo"], pr["head"]) or ""
    _git(gh.bare(repo), "update-ref", f"refs/heads/{pr['base']}", sha)
    pr.update(merged=True, merged_at=_now(), last_head_sha=sha)
    issue.update(state="closed", closed_at=_now())
    return 200, {"sha": sha, "merged": True, "message": "Pull Request successfully merged"}


# -- issues, labels, comments, reactions


def _find_issue(gh: LoopbackGitHub, repo: str, number: str) -> dict[str, Any]:
    issue = gh.state.issues[repo].get(int(number))
    if issue is None:
        raise _error(404, "Not Found")
    return issue


@route("GET", "/repos/{repo}/issues")
def _list_issues(gh: LoopbackGitHub, h: _Handler, repo: str, query: Mapping[str, str], **_: Any) -> Any:
    h.installation(repo)
    state = query.get("state", "open")
    wanted = [name for name in query.get("labels", "").split(",") if name]
    issues = [
        i
        for _, i in sorted(gh.state.issues[repo].items(), reverse=True)
        if (state == "all" or i["state"] == state)
        and all(name in i["labels"] for name in wanted)
        and ("creator" not in query or i["author"] == query["creator"])
    ]
    chunk, links = _paginate(h, issues, query)
    return 200, [gh._issue_json(repo, i) for i in chunk], links


_SEARCH_TERM = re.compile(
    r'(?P<key>[a-z]+):(?:"(?P<qval>[^"]*)"|(?P<val>\S+))|"(?P<phrase>[^"]*)"|(?P<word>\S+)'
)


@route("GET", "/search/issues")
def _search_issues(gh: LoopbackGitHub, h: _Handler, query: Mapping[str, str], **_: Any) -> Any:
    """GitHub's issue search, for the qualifiers forksync sends: ``repo:``, ``is:issue``/``is:pr``,
    ``in:body``, ``label:`` and quoted phrases or words (matched case-insensitively in title or body,
    or the body alone with ``in:body``). The answer has GitHub's shape (total_count,
    incomplete_results, items with a score). The real index lags behind writes; here it does not."""
    terms: list[str] = []
    repo, kind, where, labels = None, None, "title,body", []
    for m in _SEARCH_TERM.finditer(query.get("q", "")):
        key, value = m.group("key"), m.group("qval") if m.group("qval") is not None else m.group("val")
        if key == "repo":
            repo = value
        elif key == "is":
            kind = value
        elif key == "in":
            where = value
        elif key == "label":
            labels.append(value)
        elif key is None:
            terms.append((m.group("phrase") if m.group("phrase") is not None else m.group("word")).lower())
        else:
            raise _validation(f"unsupported qualifier {key}: in the loopback", "Search", "q", "invalid")
    if repo is None:
        raise _validation("The listed users and repositories cannot be searched", "Search", "q", "invalid")
    h.installation(repo)

    def text(issue: dict[str, Any]) -> str:
        parts = [
            issue["title"] if "title" in where else "",
            issue.get("body") or "" if "body" in where else "",
        ]
        return "\n".join(parts).lower()

    items = [
        i
        for _, i in sorted(gh.state.issues[repo].items(), reverse=True)
        if (kind is None or (kind == "pr") == bool(i.get("is_pull")))
        and all(name in i["labels"] for name in labels)
        and all(t in text(i) for t in terms)
    ]
    chunk, links = _paginate(h, items, query)
    return (
        200,
        {
            "total_count": len(items),
            "incomplete_results": False,
            "items": [{**gh._issue_json(repo, i), "score": 1.0} for i in chunk],
        },
        links,
    )


@route("POST", "/repos/{repo}/issues")
def _create_issue(gh: LoopbackGitHub, h: _Handler, repo: str, payload: Mapping[str, Any], **_: Any) -> Any:
    author = _actor(gh, h, repo)
    if not payload.get("title"):
        raise _validation("title is missing", "Issue", "title", "missing_field")
    number = gh._number(repo)
    issue = gh._new_issue(
        repo, number, payload["title"], payload.get("body"), author, payload.get("labels") or (), "open"
    )
    gh.state.issues[repo][number] = issue
    return 201, gh._issue_json(repo, issue), {"Location": f"{gh.url}/repos/{repo}/issues/{number}"}


@route("GET", "/repos/{repo}/issues/(?P<number>[0-9]+)")
def _get_issue(gh: LoopbackGitHub, h: _Handler, repo: str, number: str, **_: Any) -> Any:
    h.installation(repo)
    return 200, gh._issue_json(repo, _find_issue(gh, repo, number))


@route("PATCH", "/repos/{repo}/issues/(?P<number>[0-9]+)")
def _edit_issue(
    gh: LoopbackGitHub, h: _Handler, repo: str, number: str, payload: Mapping[str, Any], **_: Any
) -> Any:
    h.installation(repo)
    issue = _find_issue(gh, repo, number)
    for key in ("title", "body"):
        if key in payload:
            issue[key] = payload[key]
    if "labels" in payload:
        issue["labels"] = [gh._label(repo, name)["name"] for name in payload["labels"]]
    if payload.get("state") in ("open", "closed"):
        issue["state"] = payload["state"]
        issue["closed_at"] = _now() if payload["state"] == "closed" else None
        issue["state_reason"] = payload.get("state_reason") or (
            "completed" if payload["state"] == "closed" else "reopened"
        )
    issue["updated_at"] = _now()
    return 200, gh._issue_json(repo, issue)


@route("GET", "/repos/{repo}/pulls/(?P<number>[0-9]+)/reviews")
def _list_reviews(
    gh: LoopbackGitHub, h: _Handler, repo: str, number: str, query: Mapping[str, str], **_: Any
) -> Any:
    """GitHub: the PR's reviews, oldest first, paginated."""
    h.installation(repo)
    n = _find_pull(gh, repo, number)
    url = f"https://github.com/{repo}/pull/{n}"
    out = [
        {
            "id": r["id"],
            "node_id": f"PRR_{r['id']}",
            "user": gh._user(r["user"]),
            "body": r["body"],
            "state": r["state"],
            "html_url": f"{url}#pullrequestreview-{r['id']}",
            "pull_request_url": f"{gh.url}/repos/{repo}/pulls/{n}",
            "author_association": "MEMBER",
            "_links": {
                "html": {"href": f"{url}#pullrequestreview-{r['id']}"},
                "pull_request": {"href": f"{gh.url}/repos/{repo}/pulls/{n}"},
            },
            "submitted_at": r["submitted_at"],
            "commit_id": r["commit_id"],
        }
        for r in gh.state.pulls[repo][n].get("reviews", [])
    ]
    chunk, links = _paginate(h, out, query)
    return 200, chunk, links


@route("POST", "/repos/{repo}/pulls/(?P<number>[0-9]+)/requested_reviewers")
def _request_reviewers(
    gh: LoopbackGitHub, h: _Handler, repo: str, number: str, payload: Mapping[str, Any], **_: Any
) -> Any:
    """GitHub: 201 with the PR; 422 when a reviewer is not a collaborator (teams are not checked here)."""
    h.installation(repo)
    pr = gh.state.pulls[repo].get(int(number))
    if pr is None:
        raise _error(404, "Not Found")
    users = [str(u) for u in payload.get("reviewers", [])]
    for login in users:
        if gh.state.permissions.get(repo, {}).get(login, "none") == "none":
            raise _validation(
                "Reviews may only be requested from collaborators. One or more of the users or teams you "
                "specified is not a collaborator of the " + repo + " repository.",
                "PullRequest",
                "reviewers",
            )
    pr.setdefault("requested_reviewers", [])
    pr.setdefault("requested_teams", [])
    pr["requested_reviewers"] = sorted(set(pr["requested_reviewers"]) | set(users))
    pr["requested_teams"] = sorted(
        set(pr["requested_teams"]) | {str(t) for t in payload.get("team_reviewers", [])}
    )
    return 201, gh._pull_json(repo, int(number))


@route("POST", "/repos/{repo}/issues/(?P<number>[0-9]+)/labels")
def _add_labels(gh: LoopbackGitHub, h: _Handler, repo: str, number: str, payload: Any, **_: Any) -> Any:
    h.installation(repo)
    issue = _find_issue(gh, repo, number)
    names = payload.get("labels", []) if isinstance(payload, dict) else payload
    for name in names:
        if name not in issue["labels"]:
            issue["labels"].append(gh._label(repo, name)["name"])
    return 200, [gh.state.labels[repo][name] for name in issue["labels"]]


@route("DELETE", "/repos/{repo}/issues/(?P<number>[0-9]+)/labels/(?P<name>[^/]+)")
def _remove_label(gh: LoopbackGitHub, h: _Handler, repo: str, number: str, name: str, **_: Any) -> Any:
    h.installation(repo)
    issue = _find_issue(gh, repo, number)
    if name not in issue["labels"]:
        raise _error(404, "Label does not exist")
    issue["labels"].remove(name)
    return 200, [gh.state.labels[repo][n] for n in issue["labels"]]


@route("GET", "/repos/{repo}/issues/(?P<number>[0-9]+)/comments")
def _list_comments(
    gh: LoopbackGitHub, h: _Handler, repo: str, number: str, query: Mapping[str, str], **_: Any
) -> Any:
    h.installation(repo)
    _find_issue(gh, repo, number)
    items = [c for _, c in sorted(gh.state.comments[repo].items()) if c["issue_number"] == int(number)]
    chunk, links = _paginate(h, items, query)
    return 200, [gh._comment_json(repo, c) for c in chunk], links


@route("GET", "/repos/{repo}/issues/comments")
def _list_repo_comments(
    gh: LoopbackGitHub, h: _Handler, repo: str, query: Mapping[str, str], **_: Any
) -> Any:
    """Every comment of the repository (issues and PRs), oldest first; ``since`` filters on updated_at."""
    h.installation(repo)
    since = query.get("since", "")
    items = [c for _, c in sorted(gh.state.comments[repo].items()) if c["updated_at"] >= since]
    chunk, links = _paginate(h, items, query)
    return 200, [gh._comment_json(repo, c) for c in chunk], links


@route("POST", "/repos/{repo}/issues/(?P<number>[0-9]+)/comments")
def _create_comment(
    gh: LoopbackGitHub, h: _Handler, repo: str, number: str, payload: Mapping[str, Any], **_: Any
) -> Any:
    author = _actor(gh, h, repo)
    issue = _find_issue(gh, repo, number)
    if not payload.get("body"):
        raise _validation("body is missing", "IssueComment", "body", "missing_field")
    cid = gh.next_id()
    comment = {
        "id": cid,
        "issue_number": int(number),
        "body": payload["body"],
        "author": author,
        "created_at": _now(),
        "updated_at": _now(),
    }
    gh.state.comments[repo][cid] = comment
    issue["comments"] += 1
    return 201, gh._comment_json(repo, comment), {"Location": f"{gh.url}/repos/{repo}/issues/comments/{cid}"}


def _find_comment(gh: LoopbackGitHub, repo: str, cid: str) -> dict[str, Any]:
    comment = gh.state.comments[repo].get(int(cid))
    if comment is None:
        raise _error(404, "Not Found")
    return comment


@route("GET", "/repos/{repo}/issues/comments/(?P<cid>[0-9]+)")
def _get_comment(gh: LoopbackGitHub, h: _Handler, repo: str, cid: str, **_: Any) -> Any:
    h.installation(repo)
    return 200, gh._comment_json(repo, _find_comment(gh, repo, cid))


@route("PATCH", "/repos/{repo}/issues/comments/(?P<cid>[0-9]+)")
def _edit_comment(
    gh: LoopbackGitHub, h: _Handler, repo: str, cid: str, payload: Mapping[str, Any], **_: Any
) -> Any:
    h.installation(repo)
    comment = _find_comment(gh, repo, cid)
    comment["body"] = payload.get("body", comment["body"])
    comment["updated_at"] = _now()
    return 200, gh._comment_json(repo, comment)


_REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")


@route("POST", "/repos/{repo}/issues/comments/(?P<cid>[0-9]+)/reactions")
def _react(gh: LoopbackGitHub, h: _Handler, repo: str, cid: str, payload: Mapping[str, Any], **_: Any) -> Any:
    author = _actor(gh, h, repo)
    _find_comment(gh, repo, cid)
    content = payload.get("content")
    if content not in _REACTIONS:
        raise _validation(f"content must be one of {', '.join(_REACTIONS)}", "Reaction", "content", "invalid")
    existing = gh.state.reactions.setdefault(int(cid), [])
    for r in existing:
        if (r["author"], r["content"]) == (author, content):  # GitHub answers 200 with the existing one
            return 200, {
                "id": r["id"],
                "node_id": f"REA_{r['id']}",
                "user": gh._user(author),
                "content": content,
                "created_at": r["created_at"],
            }
    rid = gh.next_id()
    existing.append({"id": rid, "author": author, "content": content, "created_at": _now()})
    return 201, {
        "id": rid,
        "node_id": f"REA_{rid}",
        "user": gh._user(author),
        "content": content,
        "created_at": _now(),
    }


@route("GET", "/repos/{repo}/issues/comments/(?P<cid>[0-9]+)/reactions")
def _list_reactions(
    gh: LoopbackGitHub, h: _Handler, repo: str, cid: str, query: Mapping[str, str], **_: Any
) -> Any:
    h.installation(repo)
    _find_comment(gh, repo, cid)
    items = [
        {
            "id": r["id"],
            "node_id": f"REA_{r['id']}",
            "user": gh._user(r["author"]),
            "content": r["content"],
            "created_at": r["created_at"],
        }
        for r in gh.state.reactions.get(int(cid), [])
    ]
    chunk, links = _paginate(h, items, query)
    return 200, chunk, links


@route("GET", "/repos/{repo}/branches/(?P<branch>[^/]+)")
def _get_branch(gh: LoopbackGitHub, h: _Handler, repo: str, branch: str, **_: Any) -> Any:
    h.installation(repo)
    sha = gh.head(repo, branch)
    if sha is None:
        raise _error(404, "Branch not found")
    protected = branch in gh.state.protection.get(repo, {})
    url = f"{gh.url}/repos/{repo}/branches/{branch}"
    return 200, {
        "name": branch,
        "protected": protected,
        "protection_url": f"{url}/protection",
        "commit": {"sha": sha, "url": f"{gh.url}/repos/{repo}/commits/{sha}"},
        "_links": {"self": url, "html": f"https://github.com/{repo}/tree/{branch}"},
    }


# The shape of GitHub's answer as recorded by PyGithub (tests/ReplayData/Branch.testEditRequiredStatusChecks.txt,
# LGPL, https://github.com/PyGithub/PyGithub): url, strict, contexts, contexts_url; 404 "Branch not protected".
@route("GET", "/repos/{repo}/branches/(?P<branch>[^/]+)/protection/required_status_checks")
def _required_status_checks(gh: LoopbackGitHub, h: _Handler, repo: str, branch: str, **_: Any) -> Any:
    h.installation(repo)
    contexts = gh.state.protection.get(repo, {}).get(branch)
    if contexts is None:
        raise _error(404, "Branch not protected")
    url = f"{gh.url}/repos/{repo}/branches/{branch}/protection/required_status_checks"
    return 200, {
        "url": url,
        "strict": True,
        "contexts": list(contexts),
        "contexts_url": f"{url}/contexts",
        "checks": [{"context": c, "app_id": None} for c in contexts],
    }


@route("GET", "/repos/{repo}/git/ref/(?P<ref>.+)")
def _get_ref(gh: LoopbackGitHub, h: _Handler, repo: str, ref: str, **_: Any) -> Any:
    h.installation(repo)
    sha = _git(gh.bare(repo), "rev-parse", "--verify", "--quiet", f"refs/{ref}", check=False).strip()
    if not sha:
        raise _error(404, "Not Found")
    return 200, {
        "ref": f"refs/{ref}",
        "node_id": "REF_" + sha[:8],
        "url": f"{gh.url}/repos/{repo}/git/refs/{ref}",
        "object": {"sha": sha, "type": "commit", "url": f"{gh.url}/repos/{repo}/git/commits/{sha}"},
    }
