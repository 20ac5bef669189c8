"""The L1 job's decisions from plain data (workers/testing/l1_plan.py): what it does before the
suites run and what it publishes after, as typed actions, with no GitHub, git or runner."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from core.config import Suite
from core.github.records import IssueInfo
from workers.testing.l1 import L1Run
from workers.testing.l1_plan import (
    CloseIssue,
    Comment,
    FileIssue,
    ForgetPending,
    HandOverToGpu,
    PublishCoverage,
    PublishRetest,
    RememberPending,
    ReportFacts,
    RunSuites,
    Skip,
    StartFacts,
    TrackTrunk,
    UpdateCheck,
    UpdateIssue,
    UpsertCheck,
    plan_report,
    plan_start,
)
from workers.testing.suite_plan import SuitePlan
from workers.testing.suites import SuiteOutcome
from workers.testing.watchdog import RequiredChecks

SHA = "a" * 40
UNIT = Suite("unit", ("pytest",), timeout=60)
GPU = Suite("gpu", ("pytest",), timeout=60, gpu=True)


def _facts(run: L1Run, **kw: Any) -> ReportFacts:
    defaults: dict[str, Any] = dict(
        repo="acme/fork",
        head_sha=SHA,
        trunk=False,
        pr_number=7,
        attempt=0,
        retries=2,
        check_run_id=11,
        run=run,
        suite_plan=SuitePlan((UNIT,), ()),
        runner="runner-1",
        infra_issues=(),
        recover_after=2,
        required=RequiredChecks(()),
        retry_queue="l1-cpu",
        suites=(UNIT,),
    )
    return ReportFacts(**{**defaults, **kw})


def _kinds(actions: list[Any]) -> list[str]:
    return [type(a).__name__ for a in actions]


def test_a_config_error_fails_the_prs_check_and_a_trunk_job_only_reports_it() -> None:
    """An invalid config: a PR gets a failed check naming the error; a trunk job writes nothing."""
    pr = plan_start(StartFacts(SHA, False, True, (), {}, None, config_error="bad key"))
    assert _kinds(pr) == ["UpsertCheck", "Skip"]
    assert (
        isinstance(pr[0], UpsertCheck)
        and pr[0].output.conclusion == "failure"
        and "`bad key`" in pr[0].output.summary
    )
    assert plan_start(StartFacts(SHA, True, True, (), {}, None, config_error="bad key")) == [
        Skip("config_error", "bad key")
    ]


def test_a_cpu_worker_hands_gpu_suites_over_with_the_check_waiting_on_l1_gpu() -> None:
    """GPU suites on a CPU worker: the check goes in progress, waits on l1-gpu, nothing runs here."""
    actions = plan_start(StartFacts(SHA, False, False, (UNIT, GPU), {}, "pr:7"))
    assert _kinds(actions) == ["UpsertCheck", "RememberPending", "HandOverToGpu"]
    assert isinstance(actions[1], RememberPending) and actions[1].queue == "l1-gpu"
    assert isinstance(actions[0], UpsertCheck) and actions[0].external_id == "pr:7"
    assert actions[0].output.status == "in_progress"
    assert not any(isinstance(a, RunSuites) for a in actions)


def test_a_trunk_job_runs_without_a_check() -> None:
    """Trunk: no check run, no pending record: the suites just run."""
    assert plan_start(StartFacts(SHA, True, True, (UNIT,), {}, None)) == [RunSuites(("unit",), partial=False)]


def test_a_failed_pr_run_is_concluded_and_coverage_published() -> None:
    """A failing suite: the check is concluded failure, its pending record forgotten, coverage published."""
    run = L1Run(SHA, (SuiteOutcome("unit", "failed", passed=1, failed=1),), "failure")
    required = RequiredChecks(("Build",))
    actions = plan_report(_facts(run, required=required))
    assert _kinds(actions) == ["UpdateCheck", "ForgetPending", "PublishCoverage"]
    assert isinstance(actions[0], UpdateCheck) and actions[0].output.conclusion == "failure"
    assert actions[1] == ForgetPending(11) and actions[2] == PublishCoverage(required)


def test_an_infrastructure_failure_with_retries_left_keeps_the_check_in_progress() -> None:
    """Only the runner failed, retries left: the issue is filed, the check stays in progress saying
    it retries, and the watchdog waits for it again; it is not forgotten."""
    run = L1Run(
        SHA,
        (SuiteOutcome("unit", "infrastructure", infra_cause="disk full", reason="no space"),),
        "cancelled",
    )
    actions = plan_report(_facts(run))
    assert _kinds(actions) == ["FileIssue", "UpdateCheck", "RememberPending"]
    assert (
        isinstance(actions[0], FileIssue)
        and actions[0].marker == "<!-- forksync:infra:disk full:runner-1 -->"
    )
    assert isinstance(actions[1], UpdateCheck) and actions[1].output.status == "in_progress"
    assert "(retrying on another runner, 1 of 2)" in actions[1].output.title


def test_clean_runs_count_and_close_this_runners_infra_issue() -> None:
    """A clean run counts against this runner's open infra issue; reaching recover_after closes it;
    another runner's issue, or a GPU cause after a CPU-only run, is not counted."""
    run = L1Run(SHA, (SuiteOutcome("unit", "passed", passed=3),), "success")
    mine = IssueInfo(
        5,
        "t",
        "<!-- forksync:infra:disk full:runner-1 -->\n<!-- forksync:infra-healthy:1 -->",
        "open",
        (),
        "",
    )
    other = IssueInfo(6, "t", "<!-- forksync:infra:disk full:runner-2 -->", "open", (), "")
    gpu = IssueInfo(8, "t", "<!-- forksync:infra:CUDA device lost:runner-1 -->", "open", (), "")
    actions = plan_report(_facts(run, infra_issues=(mine, other, gpu), check_run_id=None, trunk=True))
    assert _kinds(actions) == ["UpdateIssue", "CloseIssue", "TrackTrunk"]
    assert isinstance(actions[0], UpdateIssue) and actions[0].number == 5
    assert actions[0].body.endswith("<!-- forksync:infra-healthy:2 -->")
    assert isinstance(actions[1], CloseIssue) and actions[1].number == 5
    assert actions[2] == TrackTrunk("unit")


def test_an_unapproved_suite_drop_fails_even_a_passing_run() -> None:
    """A PR that drops a trunk suite without a maintainer's /approve fails, whatever ran."""
    run = L1Run(SHA, (SuiteOutcome("unit", "passed", passed=3),), "success")
    actions = plan_report(_facts(run, suite_plan=SuitePlan((UNIT,), (), dropped=("gpu",))))
    (update,) = [a for a in actions if isinstance(a, UpdateCheck)]
    assert update.output.conclusion == "failure" and "gpu" in update.output.title


def test_a_split_rebuild_publishes_the_retest_then_the_comment_then_the_check() -> None:
    """A split that rebuilt the bundle: the new head's check (marked re-tested) and the PR body
    come first, then the comment, then the old head's check with the note."""
    run = L1Run(SHA, (SuiteOutcome("unit", "failed", passed=1, failed=1),), "failure")
    retest = L1Run("b" * 40, (SuiteOutcome("unit", "passed", passed=2),), "success")
    actions = plan_report(
        _facts(
            run,
            split_note="**Red bundle split**: …",
            retest=retest,
            rebuilt_head="b" * 40,
            external_id="pr:7",
        )
    )
    assert _kinds(actions) == ["PublishRetest", "Comment", "UpdateCheck", "ForgetPending"]
    assert isinstance(actions[0], PublishRetest) and actions[0].output.conclusion == "success"
    assert f"<!-- forksync:l1-retested:{'b' * 40} -->" in actions[0].output.summary
    assert actions[1] == Comment(7, "**Red bundle split**: …")
    assert isinstance(actions[2], UpdateCheck) and "**Red bundle split**" in actions[2].output.summary
    assert not any(isinstance(a, HandOverToGpu) for a in actions)


# --------------------------------------------------------------------------- the PR gate (plain data)


def test_the_gate_runs_inside_heads_and_approved_outside_heads_and_fetches_what_is_missing() -> None:
    from workers.testing.l1_plan import FetchPullHead, GateFacts, Refuse, plan_fetched, plan_gate

    sha, now = "a" * 40, "b" * 40
    inside = GateFacts(
        sha, "acme/fork", 5, sha, "acme/fork", "feature", "alice", "MEMBER", "u", False, False, True
    )
    assert plan_gate(inside) == []
    assert plan_gate(replace(inside, in_cache=False)) == [FetchPullHead(5, "acme/fork", "feature")]
    outside = replace(
        inside, head_repo="mallory/fork", author="mallory", association="NONE", needs_approval=True
    )
    (wait,) = plan_gate(outside)
    assert isinstance(wait, Refuse) and wait.status == "needs_approval" and wait.details_url == "u"
    assert "`mallory/fork` (author @mallory, none)" in wait.summary and f"`{sha[:12]}`" in wait.summary
    assert plan_gate(replace(outside, approved=True)) == []
    (moved,) = plan_gate(replace(outside, pull_head=now, approved=True))  # approval is of the head that runs
    assert isinstance(moved, Refuse) and moved.status == "stale" and now[:12] in moved.title
    assert moved.conclusion == "cancelled"
    (lost,) = plan_fetched(sha, 5, False)
    assert isinstance(lost, Refuse) and lost.status == "not_fetchable" and plan_fetched(sha, 5, True) == []
    push = GateFacts(sha, "acme/fork", None, on_branch=False)
    (off,) = plan_gate(push)
    assert isinstance(off, Refuse) and "no branch of `acme/fork`" in off.summary
    assert plan_gate(replace(push, on_branch=True)) == []


def test_a_stacked_bundle_pr_waits_for_its_base_and_a_human_pr_into_a_bundle_branch_runs() -> None:
    """A forksync bundle PR based on another bundle's branch completes action_required naming its base
    PR; once based on the trunk it runs; a maintainer's PR into a bundle branch is not stacked."""
    from workers.jobs.l1_job import is_stacked
    from workers.testing.l1_plan import GateFacts, Refuse, plan_gate

    sha, base = "a" * 40, "forksync/bundle/3333333"
    pr = GateFacts(sha, "acme/fork", 9, sha, "acme/fork", "forksync/bundle/4444444", "forksync[bot]", "NONE")
    (wait,) = plan_gate(replace(pr, in_cache=True, base_ref=base, stacked=True, base_number=8))
    assert isinstance(wait, Refuse) and wait.status == "stacked" and wait.conclusion == "action_required"
    assert (
        wait.title == f"Waiting: lands after #8 (base branch {base}); re-targeted to the trunk when #8 lands"
    )
    (gone,) = plan_gate(replace(pr, in_cache=True, base_ref=base, stacked=True))
    assert isinstance(gone, Refuse) and "has no open PR now" in gone.summary
    assert plan_gate(replace(pr, in_cache=True, base_ref="main")) == []
    assert is_stacked("acme/fork", "forksync/bundle/4444444", "acme/fork", base)
    assert not is_stacked("acme/fork", "fix-the-bundle", "acme/fork", base)  # a human's fix into the bundle
    assert not is_stacked("acme/fork", "forksync/bundle/4444444", "acme/fork", "main")
    assert not is_stacked("acme/fork", "forksync/bundle/4444444", "mallory/fork", base)


def test_pools_are_dispatched_once_per_pr_run_with_one_job_per_pool() -> None:
    from workers.testing.l1_plan import DispatchPool, UpsertCheck, plan_pools

    sha = "a" * 40
    pooled = (
        Suite(name="gemm", run=("pytest",), pools=("h100", "a100")),
        Suite(name="attn", run=("pytest",), pools=("h100",)),
    )
    check, remember, *dispatch = plan_pools(sha, pooled, "r1", trunk=False, attempt=0, external_id="x")
    assert isinstance(check, UpsertCheck) and check.external_id == "x"
    assert (
        check.output.summary.startswith("<!-- forksync:l1-pools-run:r1 -->\n")
        and check.output.status == "in_progress"
    )
    assert isinstance(remember, RememberPending) and remember.queue == "l1-a100" and remember.suites == pooled
    assert dispatch == [DispatchPool("a100", "r1"), DispatchPool("h100", "r1")]
    assert plan_pools(sha, pooled, "r1", trunk=True, attempt=0) == []  # trunk: one run, its baseline
    assert plan_pools(sha, pooled, "r1", trunk=False, attempt=1) == []  # an infrastructure retry
    assert plan_pools(sha, (), "r1", trunk=False, attempt=0) == []
