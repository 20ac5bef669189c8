"""The one funnel through which forksync runs git: list arguments, captured output, domain errors."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.errors import ForksyncError


class GitError(ForksyncError):
    """A git command failed; carries the command and git's own first line of complaint."""

    def __init__(self, args: Sequence[str], returncode: int, stderr: str, remedy: str = "") -> None:
        self.args_list = list(args)
        self.returncode = returncode
        self.stderr = stderr
        first = next((line for line in stderr.splitlines() if line.strip()), "no message")
        super().__init__(f"git {' '.join(args[:3])} failed ({returncode}): {first}", remedy)


# Environment that makes git deterministic and non-interactive whatever the user's config says.
_QUIET_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "LC_ALL": "C",
    "LANG": "C",
}


@dataclass(frozen=True)
class Repository:
    """A git repository on disk (bare or not), driven only through :meth:`git`."""

    path: Path

    def git(
        self,
        *args: str,
        input: bytes | None = None,
        check: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> bytes:
        """Run ``git -C path ARGS`` and return its stdout; raise :class:`GitError` on failure."""
        return run_git(self.path, args, input=input, check=check, env=env)

    def text(self, *args: str, env: Mapping[str, str] | None = None) -> str:
        """Like :meth:`git`, decoded (UTF-8, replacing bad bytes), trailing newline stripped."""
        return self.git(*args, env=env).decode("utf-8", "replace").rstrip("\n")

    def ok(self, *args: str) -> bool:
        """True when the git command exits 0 (for predicates such as ``merge-base --is-ancestor``)."""
        proc = subprocess.run(
            ["git", "-C", str(self.path), *args],
            capture_output=True,
            env=_env(None),
            check=False,
        )
        return proc.returncode == 0

    def rev_parse(self, rev: str) -> str | None:
        """The full sha of ``rev`` (peeled to a commit), or None when it does not resolve."""
        proc = subprocess.run(
            ["git", "-C", str(self.path), "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
            capture_output=True,
            env=_env(None),
            check=False,
        )
        return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def _env(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(_QUIET_ENV)
    if extra:
        env.update(extra)
    return env


def run_git(
    cwd: Path | str,
    args: Sequence[str],
    *,
    input: bytes | None = None,
    check: bool = True,
    env: Mapping[str, str] | None = None,
) -> bytes:
    """Run git in ``cwd`` with a list of arguments (never a shell string)."""
    argv = ["git", "-C", str(cwd), *args]
    try:
        proc = subprocess.run(argv, input=input, capture_output=True, env=_env(env), check=False)
    except FileNotFoundError as exc:  # pragma: no cover - git missing from PATH
        raise ForksyncError("git is not installed or not on PATH", "install git 2.38 or newer") from exc
    if check and proc.returncode != 0:
        raise GitError(list(args), proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc.stdout
