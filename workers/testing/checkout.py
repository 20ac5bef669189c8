"""A clean, detached worktree moved from commit to commit, and a command runner with a timeout.

Trunk tests and bisection run a command at many commits. ``CleanCheckout`` adds one worktree
beside the repository (never touching the user's own work tree), and before each run checks out
the commit with ``--force`` and removes every untracked or ignored file, so one run's build
output cannot leak into the next. ``run_command`` starts the command in its own process group
and kills the whole group on timeout, so a hung benchmark cannot leave children behind; it
runs with the sandbox's allow-listed environment (:mod:`workers.testing.sandbox`), never the
worker's secrets.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from core.errors import ForksyncError
from workers.engine.git import Repository
from workers.testing import sandbox

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
    with tempfile.TemporaryDirectory(prefix="forksync-job-") as home:
        # Never the worker's environment: the command is code from the commit under test.
        full_env = sandbox.child_env(Path(home), env)
        sandbox.give_tree(Path(cwd))
        out, err = sandbox.run_bounded(
            argv, cwd, full_env, timeout=timeout, limit=2 * OUTPUT_LIMIT, stderr_apart=True
        )
    if out.start_error:
        raise ForksyncError(
            f"cannot run {argv[0]!r} in {cwd}: {out.start_error}",
            "check the command (it runs in a clean checkout of the commit, without a shell)",
        )
    assert err is not None
    return CommandResult(
        argv=tuple(argv),
        exit_code=None if out.timed_out else out.exit_code,
        stdout=_tail(out.output),
        stderr=_tail(err.output),
        duration_s=out.duration_s,
        timed_out=out.timed_out,
    )


def _tail(data: bytes) -> str:
    return data[-OUTPUT_LIMIT:].decode("utf-8", "replace")


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
