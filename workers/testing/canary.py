"""Before GPU suites, the runner canary: a GPU is visible and a small Triton kernel from the
kernel pack compiles and runs correctly. A failed canary makes the GPU suites "infrastructure".

The check runs in a child process (``python -m workers.kernels.canary``) in its own session
with a timeout: a wedged driver must not hang or crash the worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass

CANARY_TIMEOUT_S = 180


@dataclass(frozen=True)
class CanaryResult:
    ok: bool
    backend: str
    reason: str
    seconds: float

    def describe(self) -> str:
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
    full_env = dict(os.environ)
    full_env.update(env or {})
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            env=full_env, start_new_session=True,
        )
    except OSError as exc:
        return CanaryResult(False, "none", f"cannot start the canary: {exc}", 0.0)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return CanaryResult(False, "unknown", f"the canary hung for {timeout:.0f} s (driver or device wedged?)",
                            time.monotonic() - started)
    elapsed = time.monotonic() - started
    last = next((ln for ln in reversed(out.decode("utf-8", "replace").splitlines()) if ln.strip()), "")
    try:
        data = json.loads(last)
        return CanaryResult(bool(data["ok"]), str(data["backend"]), str(data["reason"]), elapsed)
    except (ValueError, KeyError, TypeError):
        tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        return CanaryResult(False, "unknown", f"the canary crashed (exit {proc.returncode}): {tail[0][:300]}", elapsed)
