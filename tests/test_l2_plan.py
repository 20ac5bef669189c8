"""The nightly L2 job, planned (workers/testing/l2_plan.py): one benchmark's outcome and the known
tracking issues in, the issues to file, the records to store and the reverts to propose out; plain data."""

from __future__ import annotations

from core.config import Benchmark, Metric
from workers.testing import tracking
from workers.testing.bisect import BisectReport
from workers.testing.l2 import BenchmarkOutcome
from workers.testing.l2_plan import ProposeRevert, StoreRegressions, Track, plan_outcome
from workers.testing.regression import OK, REGRESSED, L2Run, MetricCheck, Verdict

BENCH = Benchmark(name="matmul", run=("python", "bench.py"), metrics=(Metric("tflops", "higher", 5.0),))
AT = "2026-12-01T00:00:00Z"
CULPRIT = "c" * 40


def regressed(bisect: BisectReport | None) -> BenchmarkOutcome:
    check = MetricCheck("tflops", 80.0, None, 20.0, True, "tflops 80.0 is 20% below its baseline")
    run = L2Run("matmul", "b" * 40, "pass", {"tflops": 80.0}, verdict=REGRESSED)
    return BenchmarkOutcome(
        run, Verdict(REGRESSED, "tflops regressed", (check,)), "a" * 40, "b" * 40, True, bisect
    )


def test_a_bisected_regression_files_its_issue_stores_it_and_proposes_the_revert() -> None:
    found = BisectReport(
        "found", "a" * 40, "b" * 40, CULPRIT, 3, (), (), 4, (CULPRIT,), "", culprit_subject="Slow path"
    )
    outcome = regressed(found)
    track, store, revert = plan_outcome(outcome, BENCH, [], AT, 3)
    assert isinstance(track, Track) and [type(a) for a in track.actions] == [tracking.OpenIssue]
    assert store == StoreRegressions(outcome, 0)
    assert revert == ProposeRevert(CULPRIT, "Slow path", 0)


def test_without_a_culprit_no_revert_and_a_good_run_files_nothing() -> None:
    track, store = plan_outcome(regressed(None), BENCH, [], AT, 3)
    assert isinstance(track, Track) and len(track.actions) == 1 and isinstance(store, StoreRegressions)
    good = BenchmarkOutcome(
        L2Run("matmul", "d" * 40, "pass", {"tflops": 100.0}, verdict=OK),
        Verdict(OK, ""),
        "d" * 40,
        None,
        False,
    )
    assert plan_outcome(good, BENCH, [], AT, 3) == [Track(()), StoreRegressions(good, None)]
