"""Builders for real git repositories in temp dirs, with a fixed clock (hermetic git fixtures).

Use through the ``make_repo`` fixture in ``conftest.py``; every commit gets a deterministic
author/committer date, one minute after the previous one unless ``date`` is given.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

EPOCH = 1_700_000_000  # 2023-11-14T22:13:20Z: fixed, so shas are stable across runs

# Variables a machine's git set-up or a caller's shell could leak into a test's git.
_UNSET = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_DATE",
)


def sealed_env(home: Path) -> dict[str, str | None]:
    """The environment changes that seal git from the machine (git-revise style): a temp HOME (made
    here, with a fixed identity in its .gitconfig), no system config; None means unset. The
    per-test ``hermetic_git`` fixture applies them; a session-scoped subprocess applies them itself."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test User\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n"
        "[commit]\n\tgpgsign = false\n"
        "[advice]\n\tdetachedHead = false\n"
        '[protocol "file"]\n\tallow = always\n'
    )
    changes: dict[str, str | None] = dict.fromkeys(_UNSET)
    changes.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        FORKSYNC_CACHE_DIR=str(home / "forksync-cache"),
        GIT_COMMITTER_NAME="Test Committer",
        GIT_COMMITTER_EMAIL="committer@example.com",
    )
    return changes


class Clock:
    """Monotonic fake time shared by the repositories of one test."""

    def __init__(self, start: int = EPOCH, step: int = 60) -> None:
        self.now = start
        self.step = step

    def tick(self) -> int:
        self.now += self.step
        return self.now


class GitRepo:
    """A real repository with a work tree, driven by plain ``git`` like a user would."""

    def __init__(self, path: Path, clock: Clock, branch: str = "main") -> None:
        self.path = path
        self.clock = clock
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", branch)

    def git(self, *args: str, env: Mapping[str, str] | None = None, check: bool = True) -> str:
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        proc = subprocess.run(
            ["git", "-C", str(self.path), *args], capture_output=True, text=True, env=full_env, check=False
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
        return proc.stdout.strip()

    def _dated_env(
        self, date: int | None, author: str | None, author_date: int | None = None
    ) -> dict[str, str]:
        when = date if date is not None else self.clock.tick()
        env = {
            "GIT_AUTHOR_DATE": f"@{author_date if author_date is not None else when} +0000",
            "GIT_COMMITTER_DATE": f"@{when} +0000",
        }
        if author:
            name, _, email = author.partition(" <")
            env["GIT_AUTHOR_NAME"] = name
            env["GIT_AUTHOR_EMAIL"] = email.rstrip(">") or f"{name.lower().replace(' ', '.')}@example.com"
        return env

    def write(self, files: Mapping[str, str | None]) -> None:
        """Write (or with None, delete) files in the work tree and stage them."""
        for name, content in files.items():
            target = self.path / name
            if content is None:
                self.git("rm", "-q", "-r", "--", name)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
            self.git("add", "--", name)

    def commit(
        self,
        message: str,
        files: Mapping[str, str | None] | None = None,
        *,
        author: str | None = None,
        date: int | None = None,
        author_date: int | None = None,
    ) -> str:
        """Commit ``files`` (path → content, None deletes) with ``message``; return the sha."""
        if files:
            self.write(files)
        self.git(
            "commit", "-q", "--allow-empty", "-m", message, env=self._dated_env(date, author, author_date)
        )
        return self.head()

    def head(self, rev: str = "HEAD") -> str:
        return self.git("rev-parse", rev)

    def cherry_pick(self, sha: str, *, x: bool = False, date: int | None = None) -> str:
        """``git cherry-pick [-x] sha`` (from any repository whose objects were fetched here)."""
        args = ["cherry-pick", "--allow-empty", "--keep-redundant-commits"]
        if x:
            args.append("-x")
        self.git(*args, sha, env=self._dated_env(date, None))
        return self.head()

    def fetch(self, other: GitRepo, branch: str = "main", into: str | None = None) -> None:
        ref = into or f"refs/remotes/other/{branch}"
        self.git("fetch", "-q", str(other.path), f"+refs/heads/{branch}:{ref}")

    def message(self, sha: str) -> str:
        return self.git("log", "-1", "--format=%B", sha)
