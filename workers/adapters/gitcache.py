"""Per-worker bare git caches of upstream and fork, fetched incrementally, reset before each use.

A task calls :meth:`GitCache.open` inside ``with``: it takes the cache's file lock (two tasks of
one worker never share a cache at once), clears what a crashed task may have left (stale
``*.lock`` files, worktrees, temporary refs under ``refs/forksync-tmp/``), then fetches with
``--prune`` and explicit refspecs. Credentials travel in the environment of the one git process
that needs them (``http.extraHeader`` through ``GIT_CONFIG_*``), never in argv, a URL on disk,
or a log line.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from workers.engine.git import GitError, Repository

TMP_REF_PREFIX = "refs/forksync-tmp/"


def auth_env(token: str | None) -> dict[str, str]:
    """Environment that makes git send ``token`` as GitHub expects (x-access-token basic auth)."""
    if not token:
        return {}
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
    }


def cache_name(key: str) -> str:
    """A readable, collision-free directory name for a cache key such as ``owner/repo``."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", key)[:80]
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    return f"{readable}-{digest}.git"


class GitCache:
    """Bare repositories under ``root`` (a worker's ``<data dir>/git``), one per key."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def for_installation(cls, root: Path, installation_id: int | None) -> GitCache:
        """The caches of one installation: ``root/installation-<id>``. A job of one installation
        never opens another's (one may hold a private repository the other cannot read), even for
        the same upstream URL."""
        return cls(root / f"installation-{int(installation_id) if installation_id is not None else 'none'}")

    @contextlib.contextmanager
    def open(self, key: str) -> Iterator[Repository]:
        """The cache for ``key``, locked for this task and reset to a known state."""
        path = self.root / cache_name(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        lock_fd = os.open(str(path) + ".forksync-lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            repo = Repository(path)
            if not (path / "HEAD").exists():
                path.mkdir(parents=True, exist_ok=True)
                repo.git("init", "-q", "--bare")
                # Caches are ours alone: no auto-gc racing a task, no reflogs growing forever.
                repo.git("config", "gc.auto", "0")
                repo.git("config", "core.logAllRefUpdates", "false")
            reset(repo)
            yield repo
        finally:
            os.close(lock_fd)

    def fetch(self, repo: Repository, url: str, refspecs: Sequence[str], token: str | None = None) -> None:
        """``git fetch --prune --no-tags url refspecs`` (incremental: only new objects move)."""
        remote_git(
            repo,
            token,
            "fetch",
            "--quiet",
            "--prune",
            "--no-tags",
            "--no-write-fetch-head",
            "--",
            url,
            *refspecs,
        )


# git's words for a server or network that failed (worth a retry), not a refusal.
_TRANSIENT = (
    "unable to access",
    "could not resolve host",
    "timed out",
    "connection refused",
    "connection reset",
    "the remote end hung up",
    "returned error: 50",
    "error: rpc failed",
    "http 50",
)


def remote_git(repo: Repository, token: str | None, *args: str) -> bytes:
    """Run a git command that talks to a remote with ``token``; a network or 5xx failure becomes
    :class:`RetryableGitHubError` (the task retries with backoff) and the token never shows."""
    from core.github.errors import RetryableGitHubError

    try:
        return repo.git(*args, env=auth_env(token))
    except GitError as exc:
        stderr = exc.stderr.lower()
        if any(word in stderr for word in _TRANSIENT):
            message = exc.one_line()
            if token:
                message = message.replace(token, "***")
            raise RetryableGitHubError(
                f"git {args[0]} failed, the server or network is unavailable: {message}", 0.0
            ) from None
        raise


def reset(repo: Repository) -> None:
    """Remove what an interrupted task leaves behind, so it cannot wedge the next one.

    Safe only under the cache lock (no other git process can be running on this cache).
    """
    for lock in list(repo.path.glob("*.lock")) + list((repo.path / "refs").rglob("*.lock")):
        lock.unlink(missing_ok=True)
    repo.git("worktree", "prune")
    stale = repo.text("for-each-ref", "--format=%(refname)", TMP_REF_PREFIX)
    if stale:
        commands = "".join(f"delete {ref}\n" for ref in stale.splitlines())
        repo.git("update-ref", "--stdin", input=commands.encode())
