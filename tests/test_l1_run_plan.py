"""What an L1 job runs and how it heals a red bundle, decided from plain data
(workers/testing/l1_run_plan.py): no GitHub, git or runner."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from core.config import RepoConfig, Suite
from core.github.records import CheckRunInfo
from core.render import l1 as render
from workers.testing.l1 import L1Run
from workers.testing.l1_plan import ForgetPending, RunSuites, Skip, UpsertCheck
from workers.testing.l1_run_plan import (
    JobFacts,
    JobPlan,
    PoolReport,
    PoolReportFacts,
    PoolSuites,
    RecordPoolResults,
    RequestReviews,
    Retest,
    RetryPool,
    RunPool,
    SplitBundle,
    StalePoolRun,
    plan_after_split,
    plan_job,
    plan_pool_report,
    plan_pool_results,
    plan_pool_suites,
    plan_split_step,
    retested_check,
)
from workers.testing.pools import PENDING, PoolResult
from workers.testing.suites import Failure, SuiteOutcome

SHA = "a" * 40
BASE = "b" * 40
UNIT = Suite("unit", ("pytest",), timeout=60)
LINT = Suite("lint", ("ruff",), timeout=60)
POOLED = Suite("kernels", ("pytest",), timeout=60, pools=("a100", "h100"))


def _config(*suites: Suite) -> RepoConfig:
    config = RepoConfig()
    return replace(config, l1=replace(config.l1, suites=suites))


def _facts(**kw: Any) -> JobFacts:
    config = _config(UNIT, LINT)
    defaults: dict[str, Any] = dict(
        head_sha=SHA,
        trunk=False,
        gpu_runner=True,
        head_config=config,
        trunk_config=config,
        trunk_ref="refs/heads/main",
        external_id="pr:7",
    )
    return JobFacts(**{**defaults, **kw})


def _plan(facts: JobFacts) -> JobPlan:
    planned = plan_job(facts)
    assert isinstance(planned, JobPlan)
    return planned


def test_a_pr_runs_the_trunks_suites_and_starts_its_check() -> None:
    """A PR head: every trunk suite runs, the check goes in progress first, nothing is kept."""
    planned = _plan(_facts())
    assert [s.name for s in planned.suites] == ["unit", "lint"] and planned.kept == {}
    assert isinstance(planned.start[0], UpsertCheck) and planned.start[0].external_id == "pr:7"
    assert planned.start[-1] == RunSuites(("unit", "lint"), partial=False)
    assert planned.trunk_branch == "main"


def test_the_trunks_config_decides_what_a_pr_runs() -> None:
    """A PR whose own config drops a suite still runs it (and the plan says it was dropped)."""
    planned = _plan(_facts(head_config=_config(UNIT)))
    assert [s.name for s in planned.suites] == ["unit", "lint"]
    assert planned.suite_plan.dropped == ("lint",) and planned.suite_plan.blocked
    approved = _plan(_facts(head_config=_config(UNIT), drop_approved_by="maint"))
    assert [s.name for s in approved.suites] == ["unit"] and not approved.suite_plan.blocked


def test_an_invalid_config_stops_at_the_start_with_a_failed_check() -> None:
    """A config error: no suite runs; the PR's check fails naming it; the job's result is config_error."""
    planned = _plan(_facts(config_error="bad key at line 3"))
    assert planned.suites == ()
    assert isinstance(planned.start[0], UpsertCheck) and planned.start[0].output.conclusion == "failure"
    assert planned.start[-1] == Skip("config_error", "bad key at line 3")


def test_a_push_to_another_branch_skips_and_the_trunk_branch_runs() -> None:
    """A trunk job for a ref that is not fork.branch writes nothing; one for fork.branch runs without a check."""
    other = _plan(_facts(trunk=True, trunk_ref=None, push_ref="refs/heads/topic"))
    assert other.start == (Skip("skipped", "refs/heads/topic is not the trunk branch main"),)
    trunk = _plan(_facts(trunk=True, trunk_ref=None, push_ref="refs/heads/main"))
    assert trunk.start == (RunSuites(("unit", "lint"), partial=False),)


def test_pooled_suites_go_to_their_pools_on_a_pr_and_run_once_on_trunk() -> None:
    """A PR's pooled suite is dispatched (not run here); trunk runs it once as its baseline."""
    config = _config(UNIT, POOLED)
    pr = _plan(_facts(head_config=config, trunk_config=config))
    assert [s.name for s in pr.suites] == ["unit"] and [s.name for s in pr.pooled] == ["kernels"]
    trunk = _plan(_facts(head_config=config, trunk_config=config, trunk=True, push_ref="refs/heads/main"))
    assert [s.name for s in trunk.suites] == ["unit", "kernels"]


def test_a_pool_job_runs_its_pool_only_for_a_dispatching_run() -> None:
    """A pool job with its run id runs its pool; without one (or on trunk) it skips."""
    config = _config(UNIT, POOLED)
    ran = plan_job(_facts(head_config=config, trunk_config=config, pool="a100", pool_run="1f"))
    assert isinstance(ran, RunPool) and [s.name for s in ran.config.l1.suites] == ["unit", "kernels"]
    assert plan_job(_facts(pool="a100")) == Skip(
        "skipped", "a pool job tests the head its L1 job dispatched it for"
    )


def test_retest_runs_the_named_suites_and_keeps_the_others() -> None:
    """/retest lint: lint runs, unit keeps its result; a name configured nowhere is dropped and said."""
    planned = _plan(_facts(suite_names=("lint", "nope"), previous={"unit": "success", "lint": "failure"}))
    assert [s.name for s in planned.suites] == ["lint"] and planned.kept == {"unit": "success"}
    assert planned.start[-1] == RunSuites(("lint",), partial=True)
    assert planned.unknown == ("nope",)


def test_retest_runs_a_suite_without_an_earlier_result() -> None:
    """A suite with nothing to keep runs too: the check never concludes over a suite that never ran."""
    planned = _plan(_facts(suite_names=("lint",), previous={"lint": "failure"}))
    assert [s.name for s in planned.suites] == ["unit", "lint"] and planned.kept == {}


def _red(merge_base: str | None = BASE) -> L1Run:
    failure = Failure("test_add", "boom", "boom")
    return L1Run(
        SHA, (SuiteOutcome("unit", "failed", 1, 1, failures=(failure,)),), "failure", merge_base=merge_base
    )


def test_a_red_bundle_failing_where_trunk_passes_is_split() -> None:
    """A bundle PR failing in a suite trunk passes is bisected; its branch is the PR's."""
    steps = plan_split_step(False, 7, "forksync/bundle/1", _red(), frozenset({"unit"}))
    assert len(steps) == 1 and isinstance(steps[0], SplitBundle)
    assert steps[0].number == 7 and steps[0].branch == "forksync/bundle/1"
    assert steps[0].chase.targets == frozenset({"unit/test_add"})


def test_no_split_for_trunk_a_chain_a_shared_failure_or_no_merge_base() -> None:
    """Nothing to split: trunk, no PR, no merge-base, a chain's branch, or trunk failing there too."""
    passing = frozenset({"unit"})
    assert plan_split_step(True, 7, "forksync/bundle/1", _red(), passing) == []
    assert plan_split_step(False, None, "forksync/bundle/1", _red(), passing) == []
    assert plan_split_step(False, 7, "forksync/bundle/1", _red(None), passing) == []
    assert plan_split_step(False, 7, "forksync/chain/1", _red(), passing) == []
    assert plan_split_step(False, 7, "forksync/bundle/1", _red(), frozenset()) == []


def test_a_rebuilt_bundle_is_retested_and_its_approvers_asked_again() -> None:
    """After a rebuild: approvers of the old head are asked to review, then the new head is re-tested."""
    assert plan_after_split(7, "c" * 40, ("ann", "bob")) == [
        RequestReviews(7, ("ann", "bob")),
        Retest("c" * 40),
    ]
    assert plan_after_split(7, "c" * 40, ()) == [Retest("c" * 40)]
    assert plan_after_split(7, None, ("ann",)) == []  # nothing rebuilt: nothing overrun, nothing to test


def _check(id: int, sha: str, status: str, summary: str) -> CheckRunInfo:
    return CheckRunInfo(id, render.L1_CHECK, sha, status, None, "", summary=summary)


def test_a_push_the_split_retested_is_not_run_again() -> None:
    """The split's completed check on the rebuilt head (its mark) stops a push's L1; others do not."""
    mark = render.retested_mark(SHA)
    assert retested_check(SHA, [_check(3, SHA, "completed", mark + "ok")]) == 3
    assert retested_check(SHA, [_check(3, SHA, "in_progress", mark)]) is None
    assert retested_check(SHA, [_check(3, SHA, "completed", "ok")]) is None
    assert retested_check(SHA, [_check(3, "d" * 40, "completed", mark)]) is None


# --------------------------------------------------------------------------- a pool job

SMALL = Suite("small", ("pytest",), timeout=60, pools=("a100",))
RUN_ID = "0123abcd"


def test_a_pool_job_runs_the_pooled_suites_of_its_pool_only() -> None:
    """A pool's suites are the pooled ones naming it; a pool no suite names skips, naming the head."""
    config = _config(UNIT, POOLED, SMALL)
    assert plan_pool_suites(config, "h100", SHA) == PoolSuites(("kernels",), (POOLED, SMALL))
    assert plan_pool_suites(config, "a100", SHA) == PoolSuites(("kernels", "small"), (POOLED, SMALL))
    skip = plan_pool_suites(config, "v100", SHA)
    assert isinstance(skip, Skip) and skip.status == "skipped" and SHA[:12] in skip.message


def _pool_run(conclusion: str, *suites: SuiteOutcome) -> L1Run:
    return L1Run(SHA, suites, conclusion)


def test_a_pool_reports_executed_tests_and_retries_only_an_infrastructure_failure() -> None:
    """Executed is passed + failed per suite; a runner failure retries while retries are left, then reports."""
    run = _pool_run("failure", SuiteOutcome("kernels", "failed", 3, 2, skipped=4))
    assert plan_pool_results(run, "a100", 0, 2) == (PoolResult("kernels", "a100", 5, "failure"),)
    broken = _pool_run("cancelled", SuiteOutcome("kernels", "infrastructure", reason="disk full"))
    assert plan_pool_results(broken, "a100", 0, 2) == RetryPool()
    assert plan_pool_results(broken, "a100", 1, 2) == RetryPool()
    last = plan_pool_results(broken, "a100", 2, 2)
    assert isinstance(last, tuple) and [r.outcome for r in last] == ["cancelled"]


def _pools_check(id: int, run_id: str, sha: str = SHA) -> CheckRunInfo:
    summary = render.pool_run_mark(run_id) + "| suite | pool |"
    return CheckRunInfo(id, render.POOLS_CHECK, sha, "in_progress", None, "", summary=summary)


def _report_facts(
    checks: list[CheckRunInfo], recorded: list[PoolResult], mine: list[PoolResult]
) -> PoolReportFacts:
    return PoolReportFacts(SHA, RUN_ID, checks, (POOLED,), recorded, mine)


def test_a_pool_job_whose_run_is_not_the_newest_records_nothing() -> None:
    """Stale: the newest pools check on the head names another run, or there is none; an older check
    naming ours, or one on another head, does not count."""
    mine = [PoolResult("kernels", "a100", 5, "success")]
    newer = [_pools_check(1, RUN_ID), _pools_check(2, "ffff0000")]
    assert plan_pool_report(_report_facts(newer, [], mine)) == StalePoolRun()
    assert plan_pool_report(_report_facts([], [], mine)) == StalePoolRun()
    other_head = [_pools_check(1, RUN_ID), _pools_check(2, "ffff0000", sha="d" * 40)]
    assert isinstance(plan_pool_report(_report_facts(other_head, [], mine)), PoolReport)


def test_the_first_pool_records_and_keeps_the_check_pending() -> None:
    """One of two pools reported: its results are recorded, the check stays in progress under the
    run's mark, and the watchdog keeps waiting."""
    mine = [PoolResult("kernels", "a100", 5, "success")]
    planned = plan_pool_report(_report_facts([_pools_check(1, RUN_ID)], [], mine))
    assert isinstance(planned, PoolReport) and planned.conclusion == PENDING
    record, upsert = planned.actions
    assert record == RecordPoolResults(tuple(mine))
    assert isinstance(upsert, UpsertCheck) and upsert.output.status == "in_progress"
    assert render.pool_run_of(upsert.output.summary) == RUN_ID


def test_the_pool_that_sees_every_result_concludes_and_a_rerun_replaces_its_own() -> None:
    """The last pool concludes (the check completes and leaves the watchdog); this job's result,
    last, replaces an earlier one of the same pool."""
    recorded = [PoolResult("kernels", "a100", 5, "success"), PoolResult("kernels", "h100", 2, "success")]
    mine = [PoolResult("kernels", "h100", 5, "success")]
    planned = plan_pool_report(_report_facts([_pools_check(1, RUN_ID)], recorded, mine))
    assert isinstance(planned, PoolReport) and planned.conclusion == "success"
    assert planned.actions[0] == RecordPoolResults(tuple(mine))
    upsert = planned.actions[1]
    assert isinstance(upsert, UpsertCheck) and upsert.output.conclusion == "success"
    assert planned.actions[2:] == (ForgetPending(0),)
    fewer = plan_pool_report(_report_facts([_pools_check(1, RUN_ID)], recorded[:1], [recorded[1]]))
    assert isinstance(fewer, PoolReport) and fewer.conclusion == "failure"


def test_the_pools_mark_reads_back_what_it_wrote() -> None:
    """``pool_run_of`` finds the run id ``pool_run_mark`` hid in a summary; none without the mark."""
    assert render.pool_run_of(render.pool_run_mark(RUN_ID) + "rest") == RUN_ID
    assert render.pool_run_of("no mark here") is None and render.pool_run_of(None) is None
