"""The nightly L2 job, planned (workers/testing/l2_plan.py): one benchmark's outcome and the known
tracking issues in, the issues to file, the records to store and the reverts to propose out; plain data."""

from __future__ import annotations

from core.config import Benchmark, Metric
from workers.testing import tracking
from workers.testing.bisect import BisectReport
from workers.testing.l2 import BenchmarkOutcome
from workers.testing.l2_plan import (
    Answer,
    Bisect,
    BisectFacts,
    ProposeRevert,
    StoreRegressions,
    Track,
    plan_bisect,
    plan_bisect_answer,
    plan_outcome,
)
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


# --------------------------------------------------------------------------- /bisect


def _bisect_facts(**kw: object) -> BisectFacts:
    from dataclasses import replace

    from core.config import RepoConfig

    config = RepoConfig()
    config = replace(config, l2=replace(config.l2, benchmarks=(BENCH,)))
    defaults: dict[str, object] = dict(
        benchmark="matmul", good="a" * 40, bad="b" * 40, config=config, issue_number=9
    )
    return BisectFacts(**{**defaults, **kw})  # type: ignore[arg-type]


def test_a_bisection_runs_between_known_ends_with_the_bad_ends_verdict() -> None:
    """Both ends known and the benchmark configured: it bisects; the bad end's recorded run is
    judged against the runs before it, as the nightly did."""
    history = (
        L2Run("matmul", "a" * 40, "pass", {"tflops": 100.0}, verdict=OK),
        L2Run("matmul", "b" * 40, "pass", {"tflops": 50.0}, verdict=REGRESSED),
    )
    (step,) = plan_bisect(_bisect_facts(history=history))
    assert isinstance(step, Bisect) and (step.good, step.bad, step.bench) == ("a" * 40, "b" * 40, BENCH)
    assert step.verdict is not None and step.verdict.status == REGRESSED
    (unjudged,) = plan_bisect(_bisect_facts())
    assert isinstance(unjudged, Bisect) and unjudged.verdict is None  # never run at the bad end


def test_a_bisection_that_cannot_start_says_why_on_its_issue() -> None:
    """A bad config, an unknown benchmark, or a missing end: answered on the issue, nothing runs."""
    assert plan_bisect(_bisect_facts(config_error="bad key")) == [
        Answer(9, "Cannot bisect `matmul`: bad key")
    ]
    (unknown,) = plan_bisect(_bisect_facts(benchmark="nope"))
    assert unknown == Answer(9, "Cannot bisect `nope`: no L2 benchmark named `nope` in .github/forksync.yml.")
    for missing in (dict(good=None), dict(bad=None, config=None)):
        (answer,) = plan_bisect(_bisect_facts(**missing))
        assert isinstance(answer, Answer) and "no good and bad trunk runs recorded yet" in answer.text


def test_the_bisection_answer_names_the_culprit() -> None:
    """The report becomes one answer on the issue naming the culprit and its subject."""
    found = BisectReport(
        "found", "a" * 40, "b" * 40, CULPRIT, 3, (), (), 4, (CULPRIT,), "", culprit_subject="Slow path"
    )
    (answer,) = plan_bisect_answer("matmul", found, 9)
    assert answer.issue_number == 9 and f"**Culprit:** {CULPRIT[:12]} Slow path" in answer.text
