"""A clean, detached worktree moved from commit to commit, and a command runner with a timeout.

Trunk tests and bisection run a command at many commits. ``CleanCheckout`` adds one worktree
beside the repository (never touching the user's own work tree), and before each run checks out
the commit with ``--force`` and removes every untracked or ignored file, so one run's build
output cannot leak into the next. ``run_command`` starts the command in its own process group
and kills the whole group on timeout, so a hung benchmark cannot leave children behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

from core.errors import ForksyncError
from workers.engine.git import Repository

# How much of a command's output is kept: the tail is where failures and metrics are.
OUTPUT_LIMIT = 256 * 1024


@dataclass(frozen=True)
class CommandResult:
    """What one command run did: exit status (None when it timed out), output tails, wall time."""

    argv: tuple[str, ...]
    exit_code: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False

    @property
    def output(self) -> str:
        return f"{self.stdout}\n{self.stderr}" if self.stderr else self.stdout


def run_command(
    argv: Sequence[str],
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> CommandResult:
    """Run ``argv`` (a list, no shell) in ``cwd``; on timeout kill its whole process group.

    A command that cannot be started (not found, not executable) is the user's to fix, so it
    raises :class:`ForksyncError` naming it rather than passing for a failing commit.
    """
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    start = time.monotonic()
    # Output goes to files, not pipes: a chatty benchmark cannot fill the worker's memory.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=full_env,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
            raise ForksyncError(
                f"cannot run {argv[0]!r} in {cwd}: {exc.strerror or exc}",
                "check the command (it runs in a clean checkout of the commit, without a shell)",
            ) from None
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc.pid)
            proc.wait()
        return CommandResult(
            argv=tuple(argv),
            exit_code=None if timed_out else proc.returncode,
            stdout=_tail(out),
            stderr=_tail(err),
            duration_s=time.monotonic() - start,
            timed_out=timed_out,
        )


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.killpg(pid, signal.SIGKILL)


def _tail(f: IO[bytes]) -> str:
    size = f.seek(0, os.SEEK_END)
    f.seek(max(0, size - OUTPUT_LIMIT))
    return f.read().decode("utf-8", "replace")


class CleanCheckout:
    """A detached worktree of ``repo`` that :meth:`at` moves to a commit, clean each time.

    Use as a context manager; the worktree is removed (and pruned) on exit, even on errors.
    """

    def __init__(self, repo: Repository, parent: Path | None = None) -> None:
        self.repo = repo
        self._parent = parent
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.path: Path | None = None
        self._added = False

    def __enter__(self) -> CleanCheckout:
        self._tmp = tempfile.TemporaryDirectory(prefix="forksync-wt-", dir=self._parent)
        self.path = Path(self._tmp.name) / "tree"
        return self

    def at(self, sha: str) -> Path:
        """Check out ``sha`` (forced, detached) and delete untracked and ignored files."""
        if self.path is None:
            raise RuntimeError("CleanCheckout used outside its with-block")
        if not self._added:
            # Added at the first commit asked for: a bare cache may have no HEAD to start from.
            self.repo.git("worktree", "add", "--quiet", "--detach", "--force", str(self.path), sha)
            self._added = True
            return self.path
        tree = Repository(self.path)
        tree.git("checkout", "--quiet", "--force", "--detach", sha)
        tree.git("clean", "-ffdxq")
        return self.path

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.path is not None and self._added:
            self.repo.git("worktree", "remove", "--force", str(self.path), check=False)
            self.repo.git("worktree", "prune", check=False)
        if self._tmp is not None:
            self._tmp.cleanup()
        self.path = None
