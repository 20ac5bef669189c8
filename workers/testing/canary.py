"""Before GPU suites, the runner canary: a GPU is visible and a small Triton kernel from the
kernel pack compiles and runs correctly. A failed canary makes the GPU suites "infrastructure".

The check runs in a child process (``python -m workers.kernels.canary``) in its own session
with a timeout: a wedged driver must not hang or crash the worker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from workers.testing import sandbox

CANARY_TIMEOUT_S = 180


@dataclass(frozen=True)
class CanaryResult:
    ok: bool
    backend: str
    reason: str
    seconds: float

    def describe(self) -> str:
        if self.backend == "host":
            return "the host canary passed" if self.ok else f"the host canary failed: {self.reason}"
        if self.ok and self.backend == "skipped":
            return f"runner canary skipped ({self.reason})"
        if self.ok:
            return f"runner canary passed on {self.backend} in {self.seconds:.1f} s"
        return f"runner canary failed: {self.reason}"


def run_canary(
    *,
    interpret: bool = False,
    python: str = sys.executable,
    timeout: float = CANARY_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
) -> CanaryResult:
    """Run the canary program; every way it can fail comes back as ``ok=False`` with a reason."""
    argv = [python, "-m", "workers.kernels.canary"] + (["--interpret"] if interpret else [])
    # Our own program, but it runs beside suites on the runner: the same allow-listed environment,
    # never the worker's secrets, plus where to import forksync from.
    package_root = str(Path(__file__).resolve().parents[2])
    with tempfile.TemporaryDirectory(prefix="forksync-canary-") as home:
        full_env = sandbox.child_env(Path(home), {"PYTHONPATH": package_root, **(env or {})})
        ran, errs = sandbox.run_bounded(
            argv, package_root, full_env, timeout=timeout, limit=1024 * 1024, stderr_apart=True
        )
    if ran.start_error:
        return CanaryResult(False, "none", f"cannot start the canary: {ran.start_error}", 0.0)
    if ran.timed_out:
        return CanaryResult(
            False,
            "unknown",
            f"the canary hung for {timeout:.0f} s (driver or device wedged?)",
            ran.duration_s,
        )
    elapsed = ran.duration_s
    out, err = ran.output, errs.output if errs is not None else b""
    last = next((ln for ln in reversed(out.decode("utf-8", "replace").splitlines()) if ln.strip()), "")
    try:
        data = json.loads(last)
        return CanaryResult(bool(data["ok"]), str(data["backend"]), str(data["reason"]), elapsed)
    except (ValueError, KeyError, TypeError):
        tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        return CanaryResult(
            False, "unknown", f"the canary crashed (exit {ran.exit_code}): {tail[0][:300]}", elapsed
        )


# The host canary's floors: below these the runner itself is the problem, whatever the suite did.
HOST_MIN_FREE_BYTES = 256 * 1024 * 1024
HOST_MIN_AVAILABLE_MEMORY = 128 * 1024 * 1024
HOST_SPAWN_TIMEOUT_S = 30.0


def run_host_canary(path: str | os.PathLike[str], *, python: str = sys.executable) -> CanaryResult:
    """The CPU runner's canary, re-run after a suspected infrastructure failure of a CPU suite: the
    disk under ``path`` has room, memory is available, and a child process starts and exits."""
    import shutil

    started = time.monotonic()

    def result(ok: bool, reason: str) -> CanaryResult:
        return CanaryResult(ok, "host", reason, time.monotonic() - started)

    try:
        free = shutil.disk_usage(path).free
    except OSError as exc:
        return result(False, f"cannot read the disk usage of {path}: {exc.strerror or exc}")
    if free < HOST_MIN_FREE_BYTES:
        return result(False, f"only {free // (1024 * 1024)} MiB free on the runner's disk")
    available = _available_memory()
    if available is not None and available < HOST_MIN_AVAILABLE_MEMORY:
        return result(False, f"only {available // (1024 * 1024)} MiB of memory available on the runner")
    try:
        code = subprocess.run(
            [python, "-c", "pass"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=HOST_SPAWN_TIMEOUT_S,
            check=False,
        ).returncode
    except (OSError, subprocess.TimeoutExpired) as exc:
        return result(False, f"the runner cannot start a process: {exc}")
    if code != 0:
        return result(False, f"a trivial child process exited with {code}")
    return result(True, "")


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
