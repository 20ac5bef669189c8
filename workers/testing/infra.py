"""Known infrastructure causes in a suite's log: the runner failed, not the PR under test.

Only the runner's and the harness's own signals count, never text a test wrote into its own
failure: a suite process killed by a signal (:func:`signal_cause`), a known cause in the log of a
run that wrote no results at all (:func:`infrastructure_cause`), the canary failing after the
suite. Each makes the suite a *suspected* infrastructure failure; the runner canary, re-run after
the suite, settles it (``workers.testing.l1``): canary passes, the failure is the change's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# Only the log's tail is searched: causes show up where the run died, and a huge log must not
# cost the worker a full read.
TAIL_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class InfraCause:
    name: str
    pattern: re.Pattern[str]
    remedy: str


def _cause(name: str, pattern: str, remedy: str) -> InfraCause:
    return InfraCause(name, re.compile(pattern, re.IGNORECASE | re.MULTILINE), remedy)


KNOWN_CAUSES: tuple[InfraCause, ...] = (
    _cause(
        "CUDA device busy or unavailable",
        r"CUDA[- ]capable device\(s\) (?:is|are) busy or unavailable|cudaErrorDevicesUnavailable"
        r"|CUDA_ERROR_(?:NO_DEVICE|INVALID_DEVICE)|no CUDA GPUs are available|Found no NVIDIA driver",
        "check the runner's GPU (nvidia-smi): another process may hold it, or the driver is missing",
    ),
    _cause(
        "GPU lost (Xid / fallen off the bus)",
        r"\bXid\b|GPU has fallen off the bus|CUDA_ERROR_(?:ECC_UNCORRECTABLE|LAUNCH_TIMEOUT)"
        r"|uncorrectable ECC error|device-side assert.*lost",
        "drain the runner and check dmesg for NVRM Xid errors",
    ),
    _cause(
        "CUDA unspecified launch failure",
        r"CUDA error: unspecified launch failure|CUDA_ERROR_LAUNCH_FAILED",
        "usually a hardware or driver fault on this runner; the job is retried elsewhere",
    ),
    _cause(
        "out of disk space",
        r"No space left on device|ENOSPC|Disk quota exceeded",
        "free disk space on the runner (caches, old worktrees)",
    ),
    _cause(
        "network failure",
        r"Temporary failure in name resolution|Could not resolve host|Connection reset by peer"
        r"|Network is unreachable|Connection timed out|Read timed out|\bECONNRESET\b|TLS handshake timeout",
        "check the runner's network and proxies; retry",
    ),
    _cause(
        "runner out of memory (killed)",
        r"\bOOM[- ]killer\b|Out of memory: Killed process|Cannot allocate memory",
        "the host ran out of memory; check other jobs on the runner",
    ),
)


@dataclass(frozen=True)
class InfraMatch:
    cause: str
    line: str
    remedy: str


def infrastructure_cause(log_text: str) -> InfraMatch | None:
    """The first known infrastructure cause in ``log_text`` and the line that shows it, or None."""
    for cause in KNOWN_CAUSES:
        m = cause.pattern.search(log_text)
        if m:
            start = log_text.rfind("\n", 0, m.start()) + 1
            end = log_text.find("\n", m.end())
            line = log_text[start : end if end != -1 else len(log_text)].strip()
            return InfraMatch(cause.name, line[:300], cause.remedy)
    return None


def signal_cause(exit_code: int | None) -> InfraMatch | None:
    """The suite's process died of a signal (a negative exit code from the runner): the kernel's
    OOM killer, a lost device, someone killing the job. None for an ordinary exit."""
    if exit_code is None or exit_code >= 0:
        return None
    import signal

    try:
        name = signal.Signals(-exit_code).name
    except ValueError:
        name = f"signal {-exit_code}"
    return InfraMatch(
        f"killed by {name}",
        f"the suite's process exited by signal {-exit_code} ({name})",
        "check the runner's memory (OOM killer: dmesg) and whether another job killed it",
    )


def log_tail(path: Path, limit: int = TAIL_BYTES) -> str:
    """The last ``limit`` bytes of a log, decoded leniently; empty when there is no log."""
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""
