"""The one funnel through which forksync runs git: list arguments, captured output, domain errors."""

from __future__ import annotations

import contextlib
import fcntl
import os
import queue
import select
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

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

    def feed(self, *args: str) -> FedGit:
        """Start ``git -C path ARGS`` reading a stdin the caller writes as it goes (:func:`feed_git`)."""
        return feed_git(self.path, args)

    def stream(self, *args: str, input: bytes | None = None, blocks: bool = False) -> Iterator[bytes]:
        """Like :meth:`git`, yielding stdout line by line (or in blocks) while git runs (:func:`stream_git`)."""
        return stream_git(self.path, args, input=input, blocks=blocks)

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
            [
                "git",
                "-C",
                str(self.path),
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                f"{rev}^{{commit}}",
            ],
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


# git commands that talk to a remote: each gets low-speed limits and a wall-clock timeout, so a
# server (or a socket a config points at) that never answers cannot pin a worker.
NETWORK_VERBS = frozenset({"fetch", "push", "ls-remote", "clone", "pull", "fetch-pack", "send-pack"})
# Abort a transfer slower than LOW_SPEED_BYTES/s for LOW_SPEED_S seconds (git's http.lowSpeed*).
LOW_SPEED_BYTES = 1000
LOW_SPEED_S = 60
TIMEOUT_VAR = "FORKSYNC_GIT_TIMEOUT_S"
DEFAULT_NETWORK_TIMEOUT_S = 900.0


def _verb(args: Sequence[str]) -> str:
    i = 0
    while i < len(args) and args[i] == "-c":
        i += 2
    return args[i] if i < len(args) else ""


def network_timeout_s() -> float:
    """Wall-clock limit of one network git command (``FORKSYNC_GIT_TIMEOUT_S``, default 900 s)."""
    raw = os.environ.get(TIMEOUT_VAR)
    try:
        return float(raw) if raw else DEFAULT_NETWORK_TIMEOUT_S
    except ValueError:
        return DEFAULT_NETWORK_TIMEOUT_S


def _popen(
    args: Sequence[str],
    cwd: Path | str,
    *,
    stdin: bool,
    env: Mapping[str, str] | None = None,
    new_session: bool = False,
    prefix: Sequence[str] = (),
    stderr: bool = True,
) -> subprocess.Popen[bytes]:
    """``git -C cwd ARGS`` started with piped stdout and stderr (stdin piped only when asked; stderr
    discarded with ``stderr=False``), run through ``prefix`` (a wrapper such as ``stdbuf -o0``): the
    one place a git process is spawned, so a missing git says the same thing everywhere."""
    try:
        return subprocess.Popen(
            [*prefix, "git", "-C", str(cwd), *args],
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if stderr else subprocess.DEVNULL,
            env=_env(env),
            start_new_session=new_session,
        )
    except FileNotFoundError as exc:  # pragma: no cover - git missing from PATH
        raise ForksyncError("git is not installed or not on PATH", "install git 2.38 or newer") from exc


def _local_only(args: Sequence[str]) -> None:
    """Refuse a network verb where no timeout guards the call (those go through :func:`run_git`)."""
    if _verb(args) in NETWORK_VERBS:
        raise ValueError(f"git {_verb(args)} talks to a remote: use run_git")


class RunningGit:
    """A local git command started by :func:`start_git`, still running: :meth:`wait` collects it.

    With ``read_ahead`` a thread takes its output as git writes it, so that a command printing
    more than a pipe holds runs to its end while the caller works (without it git waits on the
    full pipe until :meth:`wait`)."""

    def __init__(
        self, proc: subprocess.Popen[bytes], shown: Sequence[str], check: bool, read_ahead: bool = False
    ) -> None:
        self._proc = proc
        self._shown = list(shown)
        self._check = check
        self._result: tuple[bytes, bytes] = (b"", b"")
        self.stderr = b""  # what git printed there, once :meth:`wait` returned
        self._reader: threading.Thread | None = None
        if read_ahead:
            self._reader = threading.Thread(target=self._communicate, daemon=True)
            self._reader.start()

    def _communicate(self) -> None:
        self._result = self._proc.communicate()

    @property
    def returncode(self) -> int | None:
        """git's exit status once :meth:`wait` returned (None before)."""
        return self._proc.returncode

    def wait(self) -> bytes:
        """Its stdout once it exits (what :func:`run_git` returns); raises :class:`GitError` as it does."""
        if self._reader is not None:
            self._reader.join()
            out, err = self._result
        else:
            out, err = self._proc.communicate()
        self.stderr = err
        if self._check and self._proc.returncode != 0:
            raise GitError(self._shown, self._proc.returncode, err.decode("utf-8", "replace"))
        return out

    def done(self) -> bool:
        """Whether git has exited (so :meth:`wait` does not wait long)."""
        return self._proc.poll() is not None

    def abandon(self) -> None:
        """Stop git (its answer is not wanted) and reap it."""
        with contextlib.suppress(ProcessLookupError):
            self._proc.kill()
        if self._reader is not None:
            self._reader.join()
        else:
            self._proc.communicate()


def start_git(
    cwd: Path | str,
    args: Sequence[str],
    *,
    check: bool = True,
    read_ahead: bool = False,
) -> RunningGit:
    """Start a local git command (no stdin) and return at once: the caller works on, then waits.

    For work that overlaps: a process, not a thread, so nothing is shared but the object
    database git writes to. Network commands go through :func:`run_git` (its timeout).
    ``read_ahead``: see :class:`RunningGit`.
    """
    _local_only(args)
    return RunningGit(_popen(args, cwd, stdin=False), args, check, read_ahead)


class FedGit:
    """A local git command started by :func:`feed_git` that reads its stdin as the caller writes
    it (``git fast-import``): git works on the first records while the caller makes the next.
    Its stderr is drained by a thread, so git never blocks on it; stdout is read at the end (a
    command that prints much while it reads would need a reader of its own)."""

    def __init__(self, proc: subprocess.Popen[bytes], shown: Sequence[str]) -> None:
        self._proc = proc
        self._shown = list(shown)
        self._errors: list[bytes] = []
        assert proc.stderr is not None
        stderr = proc.stderr
        self._drain = threading.Thread(target=lambda: self._errors.append(stderr.read()), daemon=True)
        self._drain.start()

    def write(self, data: bytes) -> None:
        """Hand ``data`` to git's stdin (buffered); a git that died is reported by :meth:`finish`."""
        assert self._proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self._proc.stdin.write(data)

    def finish(self) -> bytes:
        """Close stdin, wait for git to exit; its stdout, or :class:`GitError` as :func:`run_git` raises."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        with contextlib.suppress(BrokenPipeError):
            self._proc.stdin.close()
        out = self._proc.stdout.read()
        self._proc.stdout.close()
        returncode = self._proc.wait()
        self._drain.join()
        if self._proc.stderr is not None:
            self._proc.stderr.close()
        if returncode != 0:
            raise GitError(self._shown, returncode, b"".join(self._errors).decode("utf-8", "replace"))
        return out

    def abandon(self) -> None:
        """Stop git without letting it finish (the caller failed): nothing it was fed takes effect."""
        self._proc.kill()
        self._proc.wait()
        self._drain.join()
        for pipe in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def feed_git(cwd: Path | str, args: Sequence[str]) -> FedGit:
    """Start a local git command whose stdin the caller writes as it goes (:class:`FedGit`)."""
    _local_only(args)
    return FedGit(_popen(args, cwd, stdin=True), args)


class AskedGit:
    """A local git command kept running that answers requests one at a time: one line on its stdin,
    one answer on its stdout as NUL-terminated fields ending with an empty field (``git merge-tree
    --stdin``). What a process per request costs in start-up (git's own, and reading the
    repository's config and pack indexes again) is paid once. Started by :func:`ask_git`.

    git buffers its stdout when it is a pipe and (2.39) does not flush after each answer, so the
    command runs under ``stdbuf -o0``; whoever starts one checks, once, that an answer comes back
    while the process still runs (:meth:`answer` with a ``timeout``). Its stderr is discarded: a
    request it fails on ends the process (:meth:`answer` gives None), and the caller asks that
    request again of a git of its own, which reports the failure as usual.
    """

    def __init__(self, proc: subprocess.Popen[bytes], shown: Sequence[str]) -> None:
        self._proc = proc
        self._shown = list(shown)
        self._buffer = b""
        self.alive = True

    def ask(self, line: bytes) -> None:
        """Send one request (a line, without its ``\n``); a git that died answers None."""
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(line + b"\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.alive = False

    def ready(self) -> bool:
        """Whether reading the next answer would not wait long: some of it has come (or git ended)."""
        if not self.alive or self._buffer:
            return True
        assert self._proc.stdout is not None
        return bool(select.select([self._proc.stdout.fileno()], [], [], 0)[0])

    def answer(self, timeout: float | None = None) -> list[bytes] | None:
        """The fields of the next answer (without the empty field that ends it); None when git
        exited first, or when no answer came within ``timeout`` seconds (then it is stopped)."""
        if not self.alive:
            return None
        assert self._proc.stdout is not None
        out = self._proc.stdout.fileno()
        fields: list[bytes] = []
        while self.alive:
            field, sep, rest = self._buffer.partition(b"\0")
            if sep:
                self._buffer = rest
                if not field:
                    return fields
                fields.append(field)
                continue
            if timeout is not None and not select.select([out], [], [], timeout)[0]:
                self.close()
                break
            chunk = os.read(out, 1 << 16)
            if not chunk:
                self.alive = False
                break
            self._buffer += chunk
        return None

    def close(self) -> None:
        """End the process (stdin closed: git exits after its last answer; killed if it does not)."""
        self.alive = False
        if self._proc.stdin is not None:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()


def ask_git(cwd: Path | str, args: Sequence[str]) -> AskedGit | None:
    """Start a local git command that answers requests as they come (:class:`AskedGit`); None
    where ``stdbuf`` (coreutils) is missing, without which git's answers would wait in its buffer."""
    _local_only(args)
    wrapper = shutil.which("stdbuf")
    if wrapper is None:
        return None
    return AskedGit(_popen(args, cwd, stdin=True, prefix=(wrapper, "-o0"), stderr=False), args)


def stream_git(
    cwd: Path | str, args: Sequence[str], *, input: bytes | None = None, blocks: bool = False
) -> Iterator[bytes]:
    """Run a local git command and yield its stdout line by line (each with its ``\\n``) as git
    writes it, so the caller works on the first lines while git computes the rest; raises
    :class:`GitError` at the end when git failed. ``input`` is fed from a thread (a long input
    and a long output must not wait on each other). ``blocks``: yield whatever each read of the
    pipe returns instead (up to 256 KiB, cut anywhere), for a caller that splits the output
    itself: a Python step per line costs more than git's work for a long diff."""
    _local_only(args)
    proc = _popen(args, cwd, stdin=input is not None)
    assert proc.stdout is not None and proc.stderr is not None
    errors: list[bytes] = []
    drain = threading.Thread(target=lambda: errors.append(proc.stderr.read()), daemon=True)  # type: ignore[union-attr]
    drain.start()
    feeder: threading.Thread | None = None
    if input is not None:
        feeder = threading.Thread(target=_feed, args=(proc, input), daemon=True)
        feeder.start()
    reader: threading.Thread | None = None
    ahead: queue.Queue[bytes | None] = queue.Queue(maxsize=READ_AHEAD_BLOCKS)
    read_all = False
    try:
        if blocks:
            # A thread reads ahead (at most READ_AHEAD_BLOCKS): git does not wait on a full pipe
            # while the caller works on a block, so git's diffs and the caller's parsing each keep
            # a core busy.
            _widen_pipe(proc.stdout)
            reader = threading.Thread(target=_read_ahead, args=(proc.stdout, ahead), daemon=True)
            reader.start()
            while (block := ahead.get()) is not None:
                yield block
            read_all = True
        else:
            yield from proc.stdout
    finally:
        if reader is not None:
            if not read_all:  # the caller stopped early: git's output is not wanted
                proc.kill()
                while reader.is_alive():  # it may be waiting to hand over a block
                    with contextlib.suppress(queue.Empty):
                        ahead.get(timeout=0.05)
            reader.join()
        proc.stdout.close()
        if feeder is not None:
            feeder.join()
        returncode = proc.wait()
        drain.join()
        proc.stderr.close()
    if returncode != 0:
        raise GitError(list(args), returncode, b"".join(errors).decode("utf-8", "replace"))


_BLOCK = 1 << 18
_PIPE = 1 << 20
# How many blocks a block stream reads ahead of its caller (up to 16 MiB held in memory).
READ_AHEAD_BLOCKS = 64


def _widen_pipe(pipe: IO[bytes]) -> None:
    """Let git write up to 1 MiB ahead into ``pipe`` (Linux; elsewhere the pipe stays as it is): the
    reading thread takes the interpreter lock only between the caller's steps, so a 64 KiB pipe
    would make git wait between two of its reads."""
    size = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only
    if size is not None:
        with contextlib.suppress(OSError):
            fcntl.fcntl(pipe.fileno(), size, _PIPE)


def _read_ahead(stdout: IO[bytes], out: queue.Queue[bytes | None]) -> None:
    """Move ``stdout``'s blocks to ``out`` as git writes them, then None (at its end, or a read error)."""
    try:
        while block := stdout.read1(_BLOCK):  # type: ignore[attr-defined]
            out.put(block)
    except (OSError, ValueError):
        pass
    finally:
        out.put(None)


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.write(data)
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.close()


def run_git(
    cwd: Path | str,
    args: Sequence[str],
    *,
    input: bytes | None = None,
    check: bool = True,
    env: Mapping[str, str] | None = None,
) -> bytes:
    """Run git in ``cwd`` with a list of arguments (never a shell string).

    A network command (:data:`NETWORK_VERBS`) runs with ``http.lowSpeedLimit``/``lowSpeedTime``
    and in its own process group, killed whole (git and its remote helper) after
    :func:`network_timeout_s`; it then fails with "timed out", which callers treat as transient.
    """
    timeout: float | None = None
    shown = list(args)
    if _verb(args) in NETWORK_VERBS:
        args = [
            "-c",
            f"http.lowSpeedLimit={LOW_SPEED_BYTES}",
            "-c",
            f"http.lowSpeedTime={LOW_SPEED_S}",
            *args,
        ]
        timeout = network_timeout_s()
    proc = _popen(args, cwd, stdin=input is not None, env=env, new_session=timeout is not None)
    try:
        out, err = proc.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        raise GitError(
            shown,
            124,
            f"fatal: git {_verb(args)} timed out after {timeout:g} s (no answer from the remote)",
            remedy=f"check that the remote answers; {TIMEOUT_VAR} sets the limit",
        ) from None
    if check and proc.returncode != 0:
        raise GitError(shown, proc.returncode, err.decode("utf-8", "replace"))
    return out
