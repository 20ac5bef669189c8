"""Run one configured L1 suite the way a worker does: own process group, timeout, kept log, parsed results.

:func:`checkout` gives a clean detached worktree of a repository at a ref (removed afterwards,
even on failure); :func:`run_suite` runs a :class:`core.config.Suite` in it and returns a
:class:`SuiteOutcome` whose status is one of ``passed``, ``failed``, ``omitted``, ``timed_out``,
``infrastructure``. Nothing here raises for what the suite does: every way it can go wrong is a
status with a reason.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from core.config import Suite
from workers.engine.git import GitError, Repository
from workers.testing import infra, junit, sandbox, signatures, watchdog
from workers.testing.canary import CanaryResult

PASSED, FAILED, OMITTED, TIMED_OUT, INFRASTRUCTURE = (
    "passed",
    "failed",
    "omitted",
    "timed_out",
    "infrastructure",
)
STATUSES = (PASSED, FAILED, OMITTED, TIMED_OUT, INFRASTRUCTURE)

# After SIGTERM on timeout, how long the process group gets to exit before SIGKILL.
KILL_GRACE_S = 3.0


@dataclass(frozen=True)
class Failure:
    """One failing test: what a check run shows and what triage classifies."""

    test_id: str
    message: str
    first_lines: str
    file: str | None = None
    line: int | None = None
    signature: str = ""  # workers.testing.signatures key: same bug, same key
    signature_title: str = ""
    triage: str = "new"  # new, flaky, broken_trunk (see workers.testing.triage)


@dataclass(frozen=True)
class SuiteOutcome:
    """What one suite run gave. ``expected``: the fewest tests the watchdog required (0: no floor)."""

    name: str
    status: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    expected: int = 0
    duration_s: float = 0.0
    log_path: str = ""
    reason: str = ""
    failures: tuple[Failure, ...] = ()
    # Every test's (id, outcome): what the trunk results store records.
    tests: tuple[tuple[str, str], ...] = ()
    exit_code: int | None = None
    infra_cause: str | None = None
    attempts: int = 1
    owners: tuple[str, ...] = ()
    gpu: bool = False
    # Seconds spent parsing results and classifying: the worker's own share of the run.
    parse_s: float = 0.0
    # The log's last lines when the suite did not pass and no failing test explains why
    # (crash, timeout, infrastructure): what the check run shows instead of a test failure.
    log_tail: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)
    # Why tests were skipped, with counts (``watchdog.describe_skips``): named in the check.
    skip_reasons: str = ""
    # A suspected infrastructure failure: the (status, reason) it is if the canary after it passes.
    unconfirmed: tuple[str, str] | None = None

    @property
    def total(self) -> int:
        return len(self.tests)

    @property
    def executed(self) -> int:
        """Tests that ran (passed or failed); skipped ones are reported, not run."""
        return self.passed + self.failed

    def as_json(self) -> dict[str, Any]:
        """The ``forksync l1 --json`` record of a suite (the documented contract, plus details)."""
        return {
            "name": self.name,
            "status": self.status,
            "passed": self.passed,
            "failed": self.failed,
            "skipped": self.skipped,
            "skip_reasons": self.skip_reasons,
            "executed": self.executed,
            "expected": self.expected,
            "duration_s": round(self.duration_s, 3),
            "reason": self.reason,
            "log": self.log_path,
            "attempts": self.attempts,
            "failures": [
                {
                    "test": f.test_id,
                    "triage": f.triage,
                    "message": f.message,
                    "file": f.file,
                    "line": f.line,
                    "signature": f.signature,
                }
                for f in self.failures
            ],
        }


# --------------------------------------------------------------------------- worktree


@contextlib.contextmanager
def checkout(repo: Path, ref: str, parent: Path) -> Iterator[tuple[Path, str]]:
    """A clean detached worktree of ``repo`` at ``ref`` under ``parent``; yields (path, sha).

    The worktree is removed (and pruned) when the block ends, whether it raised or not, so a
    crashed suite never leaves state behind for the next task.
    """
    git = Repository(repo)
    sha = git.rev_parse(ref)
    if sha is None:
        raise GitError(
            ["rev-parse", ref],
            128,
            f"fatal: {ref!r} is not a commit in {repo}",
            remedy="fetch it first or pass an existing --ref",
        )
    parent.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=f"l1-{sha[:12]}-", dir=parent))
    path.rmdir()  # worktree add wants to create it
    git.git("worktree", "add", "--detach", "--quiet", str(path), sha)
    try:
        yield path, sha
    finally:
        git.git("worktree", "remove", "--force", "--force", str(path), check=False)
        if path.exists():  # a suite may have made files git refuses to delete (read-only dirs)
            _force_rmtree(path)
        git.git("worktree", "prune", check=False)


def _force_rmtree(path: Path) -> None:
    import shutil

    def onerror(func: Any, p: str, _exc: Any) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
            func(p)

    shutil.rmtree(path, onerror=onerror)


# --------------------------------------------------------------------------- one suite


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "suite"


def run_suite(
    suite: Suite,
    workdir: Path,
    log_dir: Path,
    *,
    baseline: int | None = None,
    fraction: float = 0.8,
    env: Mapping[str, str] | None = None,
    attempt: int = 1,
    tag: str = "",
) -> SuiteOutcome:
    """Run ``suite`` in the checkout at ``workdir``; the log and results file go to ``log_dir``.

    ``attempt`` > 1 and ``tag`` (e.g. "rerun") keep each run's log and results apart.
    """
    log_dir.mkdir(parents=True, exist_ok=True)
    stem = safe_name(suite.name) + (f".{tag}" if tag else f".attempt{attempt}" if attempt > 1 else "")
    log_path = log_dir / f"{stem}.log"
    results = log_dir / f"{stem}.xml"
    results.unlink(missing_ok=True)
    expected = watchdog.expected_tests(suite, baseline, fraction)
    base = SuiteOutcome(
        name=suite.name,
        status=OMITTED,
        expected=expected,
        log_path=str(log_path),
        attempts=attempt,
        owners=suite.owners,
        gpu=suite.gpu,
    )

    cwd = (workdir / suite.cwd).resolve()
    try:
        cwd.relative_to(workdir.resolve())
    except ValueError:
        return replace(base, reason=f"did not run: cwd {suite.cwd!r} is outside the checkout")
    if not cwd.is_dir():
        log_path.write_text(f"forksync: cwd {suite.cwd!r} does not exist in the checkout\n")
        return replace(base, reason=f"did not run: cwd {suite.cwd!r} does not exist at this commit")

    with tempfile.TemporaryDirectory(prefix="forksync-job-") as job:
        # The suite writes its results in its own home; the worker copies them to the log dir,
        # which (like the rest of the data dir) the suite user cannot read or write.
        home = Path(job)
        own_results = home / "results" / results.name
        own_results.parent.mkdir()
        argv = [arg.replace("{junit}", str(own_results)) for arg in suite.run]
        config_env = {k: v.replace("{junit}", str(own_results)) for k, v in suite.env.items()}
        full_env = sandbox.child_env(home, {**(env or {}), **config_env, "FORKSYNC_JUNIT": str(own_results)})
        sandbox.give_tree(workdir)
        started = time.monotonic()
        exit_code, timed_out, start_error = _run_in_group(argv, cwd, full_env, log_path, suite.timeout)
        duration = time.monotonic() - started
        if own_results.is_file() and not own_results.is_symlink():
            shutil.copyfile(own_results, results)
    if start_error:
        return replace(base, duration_s=duration, reason=f"did not run: {start_error}")

    parse_started = time.monotonic()
    outcome = _judge(suite, base, workdir, results, log_path, exit_code, timed_out, baseline, fraction)
    tail = ""
    if outcome.status != PASSED and not outcome.failures:
        tail = last_lines(infra.log_tail(log_path, 64 * 1024), TAIL_LINES)
    return replace(
        outcome,
        duration_s=duration,
        exit_code=exit_code,
        parse_s=time.monotonic() - parse_started,
        log_tail=tail,
    )


TAIL_LINES = 30


def last_lines(text: str, count: int) -> str:
    lines = [ln.rstrip() for ln in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines[-count:])


def _run_in_group(
    argv: list[str], cwd: Path, env: Mapping[str, str], log_path: Path, timeout: int
) -> tuple[int | None, bool, str]:
    """Run argv in its own session (see :mod:`workers.testing.sandbox`); returns (exit code, timed
    out, error starting it). The log keeps at most ``sandbox.OUTPUT_LIMIT`` bytes, head and tail."""
    ran, _ = sandbox.run_bounded(argv, cwd, env, timeout=timeout, kill_grace_s=KILL_GRACE_S)
    with log_path.open("wb") as log:
        log.write(ran.output)
        if ran.start_error:
            log.write(f"forksync: {ran.start_error}\n".encode())
        if ran.timed_out:
            log.write(
                f"\nforksync: killed after {timeout} s (suite timeout), with its process group\n".encode()
            )
    return ran.exit_code, ran.timed_out, ran.start_error


def _judge(
    suite: Suite,
    base: SuiteOutcome,
    workdir: Path,
    results: Path,
    log_path: Path,
    exit_code: int | None,
    timed_out: bool,
    baseline: int | None,
    fraction: float,
) -> SuiteOutcome:
    report = junit.parse_junit_file(results, root=workdir, cwd=suite.cwd)
    failures = tuple(_failure(c) for c in report.failures)
    counted = replace(
        base,
        passed=report.passed,
        failed=report.failed,
        skipped=report.skipped,
        failures=failures,
        tests=tuple((c.id, c.outcome) for c in report.cases),
        skip_reasons=watchdog.describe_skips(c.message for c in report.cases if c.outcome == junit.SKIPPED),
    )
    if timed_out:
        # A hang is the change's until the runner canary says otherwise (``workers.testing.l1``).
        return replace(
            counted,
            status=TIMED_OUT,
            reason=f"killed after its {suite.timeout} s timeout (with its process group)",
        )
    omitted = watchdog.omission(
        suite,
        ran=True,
        readable=report.readable,
        problem=report.problem,
        executed=report.passed + report.failed,
        baseline=baseline,
        fraction=fraction,
        skipped=report.skipped,
        skip_reasons=counted.skip_reasons,
    )
    if report.failures:
        # A failing test is the change's failure whatever its message says ("Connection reset by
        # peer" in an assertion is the test's text, not a signal from the runner).
        note = f"; also {omitted}" if omitted else ""
        judged = replace(counted, status=FAILED, reason=f"{report.failed} test(s) failed{note}")
        return _suspect(judged, infra.signal_cause(exit_code))
    if omitted or (exit_code not in (0, None) and not report.readable):
        code = f" (exit code {exit_code})" if exit_code not in (0, None) else ""
        judged = replace(counted, status=OMITTED, reason=f"{omitted or 'crashed'}{code}")
        # Infrastructure signals: death by a signal, or a known cause in the log of a run that
        # wrote no results at all (nothing a test asserted); the canary confirms either.
        cause = infra.signal_cause(exit_code) or (
            infra.infrastructure_cause(infra.log_tail(log_path)) if not report.readable else None
        )
        return _suspect(judged, cause)
    if exit_code not in (0, None):
        judged = replace(
            counted,
            status=FAILED,
            reason=f"exited with code {exit_code} although its results show no failing test: see the log",
        )
        return _suspect(judged, infra.signal_cause(exit_code))
    return replace(counted, status=PASSED, reason="")


def _failure(case: junit.TestCase) -> Failure:
    sig = signatures.signature(f"{case.message}\n{case.text}", case.id)
    return Failure(
        case.id,
        case.message,
        case.first_lines(),
        case.file,
        case.line,
        signature=sig.key,
        signature_title=sig.title,
    )


def _suspect(judged: SuiteOutcome, cause: infra.InfraMatch | None) -> SuiteOutcome:
    """``judged`` as a suspected infrastructure failure when a runner signal says so: the L1 run
    re-runs the canary and puts ``judged`` back (the change's failure) if the canary passes."""
    if cause is None:
        return judged
    return replace(
        _infra(judged, cause),
        unconfirmed=(judged.status, judged.reason),
    )


def _infra(outcome: SuiteOutcome, cause: infra.InfraMatch) -> SuiteOutcome:
    return replace(
        outcome,
        status=INFRASTRUCTURE,
        infra_cause=cause.cause,
        reason=f"infrastructure: {cause.cause} ({cause.line}); {cause.remedy}. Not caused by this change.",
    )


def infra_confirmed(outcome: SuiteOutcome, canary: CanaryResult | None) -> SuiteOutcome:
    """Settle a suspected infrastructure failure with the canary run after the suite: it passed,
    so the runner is healthy and the failure is the change's (the status it had before the
    suspicion, saying so); it failed, so the runner is at fault (the canary's reason). Without a
    canary the suspicion stands."""
    if outcome.status != INFRASTRUCTURE or outcome.unconfirmed is None or canary is None:
        return outcome
    if canary.ok:
        status, reason = outcome.unconfirmed
        why = f"{reason} ({outcome.infra_cause}, but {canary.describe()} after the suite: the runner is healthy)"
        return replace(outcome, status=status, reason=why, infra_cause=None, unconfirmed=None)
    return replace(
        outcome, unconfirmed=None, reason=f"{outcome.reason} Confirmed: {canary.describe()} after the suite."
    )


def canary_failed_after(outcome: SuiteOutcome, canary: CanaryResult) -> SuiteOutcome:
    """A suite that failed, and then the canary failed too: the runner broke under the suite."""
    return replace(
        outcome,
        status=INFRASTRUCTURE,
        infra_cause="runner canary failed after the suite",
        unconfirmed=None,
        reason=f"infrastructure: {canary.describe()} right after the suite ({outcome.reason}). "
        "Not caused by this change; the job goes to another runner.",
    )
