"""How code from outside runs: L1/L2/L3 suites, bisection probes and the runner canary.

A suite is code from a PR head (or trunk) and must never reach the App's secrets. So a child
process never inherits the worker's environment: :func:`child_env` builds it from an allow-list
(``PATH``, the locale, the GPU device variables, and the names an operator adds with
``FORKSYNC_SUITE_ENV_PASS``), a ``HOME`` and ``TMPDIR`` of its own under the job's temporary
directory, and what the suite's config ``env:`` sets. Names that carry secrets
(:data:`SECRET_NAMES`) are never passed through, even when an operator lists them.

``FORKSYNC_SUITE_USER`` (an operator setting, never a repository one) runs every child as
another Unix user, so that a private key given by path (``GITHUB_PRIVATE_KEY_PATH``, mode 0600)
is not readable by the suite; the worker must be root (or hold CAP_SETUID) for that.

:func:`run_bounded` starts the child in its own session, kills the whole process group on
timeout (and after a normal exit, for stray daemons), and keeps at most ``limit`` bytes of its
output: the head and the tail, with a line saying how much was cut between them.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

# Passed through from the worker's environment when set: what a build or a GPU test needs.
ALLOWED_NAMES: tuple[str, ...] = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    # GPU device selection (CUDA, ROCm/HIP, oneAPI) and the Triton backend switch.
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
    "ZE_AFFINITY_MASK",
    "TRITON_INTERPRET",
    "PYTHONUNBUFFERED",
)
ALLOWED_PREFIXES: tuple[str, ...] = ("LC_",)

# Never passed through from the worker, whatever an operator lists (the App's and the
# deployment's secrets). A suite's own config ``env:`` may still set these names to its own values.
SECRET_NAMES: frozenset[str] = frozenset(
    {
        "GITHUB_PRIVATE_KEY",
        "GITHUB_PRIVATE_KEY_PATH",
        "GITHUB_APP_ID",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "GITHUB_CLIENT_SECRET",
        "FORKSYNC_WEBHOOK_SECRET",
        "REDIS_URL",
        "FORKSYNC_DATABASE_URL",
        "DATABASE_URL",
        "CELERY_BROKER_URL",
        "CELERY_RESULT_BACKEND",
        "FORKSYNC_GIT_URL_MAP",
    }
)
_SECRET_WORDS = ("SECRET", "TOKEN", "PASSWORD", "PRIVATE_KEY", "CREDENTIAL")

PASS_VAR = "FORKSYNC_SUITE_ENV_PASS"
USER_VAR = "FORKSYNC_SUITE_USER"

# How much of a child's output is kept by default (head + tail).
OUTPUT_LIMIT = 8 * 1024 * 1024
# After a kill, how long the output reader may still drain the pipe.
_DRAIN_S = 5.0


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return (
        upper in SECRET_NAMES
        or any(word in upper for word in _SECRET_WORDS)
        or upper.startswith("GIT_CONFIG_")
    )


def child_env(
    home: Path,
    extra: Mapping[str, str] | None = None,
    *,
    source: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a suite: allow-listed names from ``source`` (the worker's environment),
    ``HOME``/``TMPDIR`` under ``home`` (created), then ``extra`` (the config's ``env:``, set as given)."""
    source = os.environ if source is None else source
    passed = {n.strip() for n in (source.get(PASS_VAR) or "").split(",") if n.strip()}
    env: dict[str, str] = {}
    for name, value in source.items():
        allowed = name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES) or name in passed
        if allowed and not is_secret_name(name):
            env[name] = value
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    # Python suites write their output as it comes, so a crash or a kill keeps the last lines.
    env.setdefault("PYTHONUNBUFFERED", "1")
    tmp = home / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env.update({"HOME": str(home), "TMPDIR": str(tmp), "XDG_CACHE_HOME": str(home / ".cache")})
    user = suite_user(source)
    if user is not None:
        _give(home, user)
    env.update(extra or {})
    return env


@dataclass(frozen=True)
class SuiteUser:
    name: str
    uid: int
    gid: int


def suite_user(source: Mapping[str, str] | None = None) -> SuiteUser | None:
    """The Unix user suites run as (``FORKSYNC_SUITE_USER``), or None to run as the worker."""
    source = os.environ if source is None else source
    name = (source.get(USER_VAR) or "").strip()
    if not name:
        return None
    from core.errors import ForksyncError

    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise ForksyncError(
            f"{USER_VAR}={name} names no user on this runner",
            "create the user (useradd --system forksync-suite) or unset it",
        ) from None
    if os.geteuid() != 0 and entry.pw_uid != os.geteuid():
        raise ForksyncError(
            f"{USER_VAR}={name} needs the worker to run as root to switch user",
            "run the worker as root, or unset it and run the whole worker as that user",
        )
    return SuiteUser(name, entry.pw_uid, entry.pw_gid)


def _give(path: Path, user: SuiteUser) -> None:
    """Let the suite user own its home (it must write there)."""
    for root, dirs, files in os.walk(path):
        for name in (root, *(os.path.join(root, d) for d in dirs), *(os.path.join(root, f) for f in files)):
            with contextlib.suppress(OSError):
                os.chown(name, user.uid, user.gid)


def worktree_parent(default: Path) -> Path:
    """Where checkouts for suites go: ``default`` (inside the worker's data dir), or, when suites
    run as another user, a directory outside it that user can enter (the data dir stays 0700)."""
    if suite_user() is None:
        return default
    parent = Path(tempfile.gettempdir()) / "forksync-suites"
    parent.mkdir(mode=0o711, exist_ok=True)
    os.chmod(parent, 0o711)
    return parent


def give_tree(path: Path, source: Mapping[str, str] | None = None) -> None:
    """Hand a checkout to the suite user so the suite can build in it (no-op without one)."""
    user = suite_user(source)
    if user is not None:
        _give(path, user)


@dataclass(frozen=True)
class Bounded:
    """What :func:`run_bounded` saw: exit code (None when it timed out or did not start)."""

    exit_code: int | None
    timed_out: bool
    output: bytes
    cut: int  # bytes of output dropped between head and tail
    start_error: str = ""
    duration_s: float = 0.0


class _Keeper:
    """Reads a pipe to its end, keeping the first and last ``limit // 2`` bytes."""

    def __init__(self, pipe: IO[bytes], limit: int) -> None:
        self.pipe, self.limit = pipe, limit
        self.head = bytearray()
        self.tail = bytearray()
        self.cut = 0
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        half = max(1, self.limit // 2)
        with contextlib.suppress(OSError, ValueError):
            while chunk := self.pipe.read1(65536):  # type: ignore[attr-defined]
                room = half - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    chunk = chunk[room:]
                if chunk:
                    self.tail += chunk
                    if len(self.tail) > half:
                        drop = len(self.tail) - half
                        self.cut += drop
                        del self.tail[:drop]

    def output(self) -> bytes:
        if not self.cut:
            return bytes(self.head + self.tail)
        note = (
            f"\n[forksync: {self.cut} bytes of output cut here; the log keeps its head and tail]\n".encode()
        )
        return bytes(self.head) + note + bytes(self.tail)


def run_bounded(
    argv: Sequence[str],
    cwd: Path | str | None,
    env: Mapping[str, str],
    *,
    timeout: float | None,
    limit: int | None = None,
    stderr_apart: bool = False,
    kill_grace_s: float = 0.0,
) -> tuple[Bounded, Bounded | None]:
    """Run ``argv`` (no shell) in its own session as the suite user; returns (stdout+stderr or
    stdout, stderr when ``stderr_apart``). The process group is killed on timeout and after exit."""
    limit = OUTPUT_LIMIT if limit is None else limit
    user = suite_user()
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if stderr_apart else subprocess.STDOUT,
            start_new_session=True,
            user=user.uid if user else None,
            group=user.gid if user else None,
            extra_groups=[] if user else None,
        )
    except FileNotFoundError:
        return Bounded(
            None, False, b"", 0, f"command not found: {argv[0]!r} (is it installed on the runner, on PATH?)"
        ), None
    except PermissionError:
        return Bounded(None, False, b"", 0, f"permission denied running {argv[0]!r}"), None
    except (OSError, subprocess.SubprocessError) as exc:
        return Bounded(
            None, False, b"", 0, f"cannot start {argv[0]!r}: {getattr(exc, 'strerror', None) or exc}"
        ), None
    assert proc.stdout is not None
    out = _Keeper(proc.stdout, limit)
    err = _Keeper(proc.stderr, limit) if stderr_apart and proc.stderr is not None else None
    timed_out = False
    try:
        code: int | None = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        if kill_grace_s:
            kill_group(proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=kill_grace_s)
        kill_group(proc.pid, signal.SIGKILL)
        proc.wait()
        code = None
    # Whatever the child left running in its group (daemons, stray grandchildren) goes too.
    kill_group(proc.pid, signal.SIGKILL)
    for keeper in (out, err):
        if keeper is not None:
            keeper.thread.join(_DRAIN_S)
            with contextlib.suppress(OSError):
                keeper.pipe.close()
    elapsed = time.monotonic() - started
    main = Bounded(code, timed_out, out.output(), out.cut, duration_s=elapsed)
    apart = Bounded(code, timed_out, err.output(), err.cut, duration_s=elapsed) if err is not None else None
    return main, apart


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
