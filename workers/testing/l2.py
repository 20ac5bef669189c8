"""L2 trunk tests: run each benchmark at a trunk commit, judge it against its history, bisect a new break.

``run_benchmark`` runs one :class:`core.config.Benchmark` in a clean worktree and reads its
metrics line; ``run_trunk`` does it for every benchmark of the config, records the runs in the
:class:`ResultStore`, and when a benchmark turns bad (a regression or a failure right after a
good run) bisects ``last good..this commit`` within ``l2.bisect_budget``. Its outcomes are what
the tracking planner turns into issues. Called by the beat's nightly task and on demand.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from core.config import Benchmark, RepoConfig
from workers.engine.git import Repository
from workers.testing import junit
from workers.testing.bisect import (
    BisectReport,
    MetricRule,
    Reference,
    Suspect,
    bisect,
    commit_files,
    parse_metrics,
    rank_suspects,
)
from workers.testing.checkout import CleanCheckout, CommandResult, run_command
from workers.testing.regression import (
    FAIL,
    FAILED,
    INFRA,
    OK,
    PASS,
    SKIP,
    SKIPPED,
    TIMEOUT,
    L2Run,
    Verdict,
    judge,
    worst,
)
from workers.testing.results import RegressionRecord, ResultStore
from workers.testing.signatures import Failure, infra_reason

# Without a good run to bisect from, suspects are ranked among this many recent trunk commits.
SUSPECT_WINDOW = 50
# How much of the output a failed run keeps for the tracking issue.
TAIL_CHARS = 4000


def run_benchmark(
    repo: Repository,
    sha: str,
    bench: Benchmark,
    *,
    checkout: CleanCheckout | None = None,
    recorded_at: str = "",
) -> L2Run:
    """Run ``bench`` at ``sha`` in a clean worktree; the run's status says what the command did.

    As for L1 suites, ``{junit}`` in the command or its env (and ``$FORKSYNC_JUNIT``) is a path
    where the benchmark may write JUnit XML: its failed tests become the run's failures.
    """
    if checkout is None:
        with CleanCheckout(repo) as own:
            return run_benchmark(repo, sha, bench, checkout=own, recorded_at=recorded_at)
    tree = checkout.at(sha)
    with tempfile.TemporaryDirectory(prefix="forksync-l2-") as tmp:
        results = Path(tmp) / "results.xml"
        argv = [a.replace("{junit}", str(results)) for a in bench.run]
        env = {k: v.replace("{junit}", str(results)) for k, v in bench.env.items()}
        env["FORKSYNC_JUNIT"] = str(results)
        result = run_command(argv, tree / bench.cwd, env=env, timeout=bench.timeout)
        report = junit.parse_junit_file(results, root=tree, cwd=bench.cwd) if results.exists() else None
    return _to_run(bench, sha, result, recorded_at, report)


def _to_run(
    bench: Benchmark,
    sha: str,
    result: CommandResult,
    recorded_at: str,
    report: junit.JUnitReport | None = None,
) -> L2Run:
    metrics = parse_metrics(result.stdout) or {}
    tail = result.output[-TAIL_CHARS:]
    base = L2Run(
        bench.name, sha, PASS, metrics, result.exit_code, result.duration_s, "", "", recorded_at=recorded_at
    )
    if result.timed_out or result.exit_code is None:
        return replace(base, status=TIMEOUT, reason=f"timed out after {bench.timeout}s", output_tail=tail)
    code = result.exit_code
    cause = infra_reason(result.output) if code != 0 else ""
    if cause:
        return replace(base, status=INFRA, reason=f"infrastructure: {cause}", output_tail=tail)
    if code == 125:
        return replace(base, status=SKIP, reason="exit 125: this commit cannot be tested", output_tail=tail)
    tests = tuple(Failure(c.id, f"{c.message}\n{c.text}".strip()) for c in report.failures) if report else ()
    if tests:
        why = f"{len(tests)} test{'s' if len(tests) > 1 else ''} failed" + (f" (exit {code})" if code else "")
        return replace(base, status=FAIL, reason=why, output_tail=tail, failures=tests)
    if code != 0:
        return replace(
            base, status=FAIL, reason=f"exit {code}", output_tail=tail, failures=(Failure(bench.name, tail),)
        )
    if bench.metrics and not metrics:
        why = 'exit 0 but no {"metrics": {...}} JSON object on the last stdout line'
        return replace(base, status=FAIL, reason=why, output_tail=tail, failures=(Failure(bench.name, why),))
    return base


@dataclass(frozen=True)
class BenchmarkOutcome:
    """One benchmark at one trunk commit: the run, its verdict, and what is known of the culprit."""

    run: L2Run
    verdict: Verdict
    last_good: str | None  # sha of the newest good run before this one
    first_bad: str | None  # sha of the first bad run of the current bad streak (this one if new)
    new_break: bool  # this run starts a bad streak (the previous judged run was good or absent)
    bisect: BisectReport | None = None
    suspects: tuple[Suspect, ...] = ()
    note: str = ""  # why there is no bisection, when there is none


def regression_records(
    outcome: BenchmarkOutcome, tracking_issue: int | None, at: float
) -> list[RegressionRecord]:
    """What ``outcome`` found, as records to store with its run (pure): one per regressed metric,
    or one for a failed run, with the bisection's range, steps and culprit; none unless this run
    starts a bad streak (a streak's later runs add nothing new) or it has no run id."""
    if not outcome.new_break or not outcome.verdict.bad or outcome.run.run_id is None:
        return []
    report = outcome.bisect
    failed = RegressionRecord(
        benchmark=outcome.run.benchmark,
        metric="",
        kind="failed",
        first_bad=outcome.run.sha,
        run_id=outcome.run.run_id,
        good=report.good if report else outcome.last_good,
        culprit=report.culprit if report else None,
        culprit_subject=report.culprit_subject if report else "",
        bisect_status=report.status if report else "none",
        bisect_steps=report.runs if report else 0,
        candidates=report.candidates if report else 0,
        note=("" if report.culprit else report.reason) if report else outcome.note,
        tracking_issue=tracking_issue,
        recorded_at=at,
    )
    if outcome.verdict.status == FAILED:
        return [failed]
    out = []
    for check in outcome.verdict.regressed_metrics:
        delta = None
        if check.value is not None and check.baseline is not None and check.baseline.median:
            delta = 100.0 * (check.value - check.baseline.median) / abs(check.baseline.median)
        out.append(replace(failed, metric=check.metric, kind="regressed", delta_pct=delta))
    return out


def run_trunk(
    repo: Repository,
    repo_name: str,
    sha: str,
    config: RepoConfig,
    store: ResultStore,
    *,
    recorded_at: str = "",
    only: Sequence[str] = (),
    worktree_parent: Path | None = None,
) -> list[BenchmarkOutcome]:
    """Run the config's benchmarks (or ``only`` those) at trunk ``sha``, record, judge, bisect new breaks."""
    benches = [b for b in config.l2.benchmarks if not only or b.name in only]
    outcomes = []
    with CleanCheckout(repo, worktree_parent) as checkout:
        for bench in benches:
            history = store.history(repo_name, bench.name)
            run = run_benchmark(repo, sha, bench, checkout=checkout, recorded_at=recorded_at)
            verdict = judge(run, history, bench, config.l2.baseline_runs)
            run = store.record(repo_name, replace(run, verdict=verdict.status))
            outcomes.append((bench, run, verdict, history))
    # Bisection needs its own checkout per benchmark; it runs after every benchmark is recorded.
    return [
        _follow_up(repo, bench, run, verdict, history, config, worktree_parent)
        for bench, run, verdict, history in outcomes
    ]


def _follow_up(
    repo: Repository,
    bench: Benchmark,
    run: L2Run,
    verdict: Verdict,
    history: Sequence[L2Run],
    config: RepoConfig,
    worktree_parent: Path | None,
) -> BenchmarkOutcome:
    judged = [r for r in history if r.verdict and r.verdict != SKIPPED]
    last_good = next((r.sha for r in reversed(judged) if r.verdict == OK), None)
    if not verdict.bad:
        return BenchmarkOutcome(run, verdict, last_good, None, False)
    streak = []
    for r in reversed(judged):
        if r.verdict == OK:
            break
        streak.append(r)
    new_break = not streak
    first_bad = streak[-1].sha if streak else run.sha
    if not new_break:
        return BenchmarkOutcome(
            run,
            verdict,
            last_good,
            first_bad,
            False,
            note=f"bad since {first_bad[:12]}; bisected when it first broke",
        )
    tests = [f.test_id for f in run.failures if f.test_id and f.test_id != bench.name] or _paths(bench)
    if last_good is None or last_good == run.sha:
        suspects = _recent_suspects(repo, run.sha, tests)
        return BenchmarkOutcome(
            run,
            verdict,
            None,
            first_bad,
            True,
            suspects=suspects,
            note="no good run recorded to bisect from; suspects ranked by path overlap",
        )
    report = bisect_benchmark(repo, bench, last_good, run.sha, config, verdict, tests, worktree_parent)
    return BenchmarkOutcome(
        run,
        verdict,
        last_good,
        first_bad,
        True,
        bisect=report,
        suspects=report.suspects,
        note="" if report.culprit else report.reason,
    )


def bisect_benchmark(
    repo: Repository,
    bench: Benchmark,
    good: str,
    bad: str,
    config: RepoConfig,
    verdict: Verdict | None,
    test_ids: Sequence[str] = (),
    worktree_parent: Path | None = None,
) -> BisectReport:
    """Bisect ``good..bad`` for one benchmark, within ``l2.bisect_budget``.

    A metric regression bisects on its worst metric against the baseline median and noise band
    (no run at ``good`` needed); a failure (or no verdict) bisects on the exit status, a crash
    counting as bad.
    """
    rule: MetricRule | None = None
    reference: Reference | None = None
    target = worst(verdict.checks, bench) if verdict is not None and verdict.status != FAILED else None
    if target is not None and target.baseline is not None:
        metric = next(m for m in bench.metrics if m.name == target.metric)
        rule = MetricRule(metric.name, metric.threshold, metric.direction)
        reference = Reference(
            target.baseline.median, target.baseline.band, f"median of {target.baseline.runs} good runs"
        )
    with tempfile.TemporaryDirectory(prefix="forksync-bisect-") as tmp:
        # Bisection judges by exit status and metrics; a JUnit file is written somewhere harmless.
        results = str(Path(tmp) / "results.xml")
        argv = [a.replace("{junit}", results) for a in bench.run]
        env = {**{k: v.replace("{junit}", results) for k, v in bench.env.items()}, "FORKSYNC_JUNIT": results}
        return bisect(
            repo,
            good,
            bad,
            argv,
            rule=rule,
            reference=reference,
            budget=config.l2.bisect_budget,
            env=env,
            timeout=bench.timeout,
            cwd=bench.cwd,
            test_ids=test_ids or _paths(bench),
            abort_on_signal=False,
            worktree_parent=worktree_parent,
        )


def _paths(bench: Benchmark) -> list[str]:
    """Arguments of the benchmark command that look like files: the "test" a suspect may touch."""
    # Absolute paths are the interpreter or tools outside the repository, never a suspect's file.
    return [
        a for a in bench.run if not a.startswith("/") and ("/" in a or a.endswith((".py", ".sh", ".mlir")))
    ] or [bench.name]


def _recent_suspects(repo: Repository, sha: str, tests: Sequence[str]) -> tuple[Suspect, ...]:
    shas = repo.text("rev-list", "--first-parent", "--reverse", f"--max-count={SUSPECT_WINDOW}", sha).split()
    return tuple(rank_suspects(commit_files(repo, shas), tests))
