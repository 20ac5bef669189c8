"""What one L1 job tests and how it heals a red bundle, decided from plain data.

Between the PR gate and the report (``l1_plan.plan_gate`` and ``plan_report``): the job
(``workers/jobs/l1_job.py``) reads :class:`JobFacts` (the configs at the head and the trunk, the
PR's base, a maintainer's approval of a suite drop, the last check's suite results), and
:func:`plan_job` decides the config, the suites and the start; after the suites,
:func:`plan_split_step` decides whether a red bundle is bisected and :func:`plan_after_split`
what follows a rebuild (reviews re-requested, the rebuilt head re-tested in the same PR). A pool
job's suites, what it reports and, under the repository's lock, whether it concludes
``forksync / L1 pools`` are :func:`plan_pool_suites`, :func:`plan_pool_results` and
:func:`plan_pool_report`. Nothing here calls GitHub, git or a runner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from core.config import RepoConfig, Suite
from core.github.records import CheckRunInfo
from core.render import l1 as render
from workers.testing.l1 import CANCELLED, L1Run
from workers.testing.l1_plan import (
    Action,
    ForgetPending,
    Skip,
    StartFacts,
    UpsertCheck,
    plan_start,
    suite_conclusions,
)
from workers.testing.pools import PoolResult, compare
from workers.testing.red_bundle import SplitPlan, plan_split
from workers.testing.suite_plan import SuitePlan, plan_suites

# --------------------------------------------------------------------------- before the suites


@dataclass(frozen=True)
class JobFacts:
    """What an L1 job reads once the PR gate let it through (the job's own fields included)."""

    head_sha: str
    trunk: bool
    gpu_runner: bool
    head_config: RepoConfig  # the config at the head (defaults when it is invalid)
    trunk_config: RepoConfig  # the config at ``trunk_ref`` (the head's when there is none)
    trunk_ref: str | None  # the PR's base branch or fork.branch, when the cache has it
    config_error: str | None = None  # one line: the head's or the trunk's config is invalid
    push_ref: str | None = None  # a trunk job's pushed ref
    pool: str | None = None
    pool_run: str = ""
    suite_names: tuple[str, ...] = ()  # /retest SUITE …
    previous: Mapping[str, str] = field(default_factory=dict)  # last L1 check's suite results (for /retest)
    drop_approved_by: str | None = None  # the maintainer whose /approve names this head
    external_id: str | None = None


@dataclass(frozen=True)
class RunPool:
    """A pool job: run the suites of ``pool`` under ``config`` and report them (``_run_pool``)."""

    config: RepoConfig


@dataclass(frozen=True)
class JobPlan:
    """The config the suites run with, which run now, and :func:`l1_plan.plan_start`'s actions."""

    config: RepoConfig
    suite_plan: SuitePlan
    trunk_branch: str  # whose branch protection names the required checks
    suites: tuple[Suite, ...]  # what runs now
    kept: Mapping[str, str]  # /retest: suites keeping their earlier result
    pooled: tuple[Suite, ...]  # pooled suites, dispatched to their pools (``plan_pools``)
    start: tuple[Action | Skip, ...]
    unknown: tuple[str, ...] = ()  # /retest names no suite configured here (dropped, logged)


def plan_job(facts: JobFacts) -> JobPlan | RunPool | Skip:
    """An invalid config or a push to another branch stops at the start; a pool job runs its pool
    (or skips: it belongs to a PR head's L1 run); otherwise the trunk's suites (with the PR's
    changes, ``plan_suites``), pooled suites aside on a PR, and for ``/retest SUITE …`` only those
    named or without a result here, the others keeping theirs."""
    not_trunk = None
    if facts.config_error is None and facts.trunk:
        branch = facts.head_config.fork.branch
        if facts.push_ref != f"refs/heads/{branch}":
            not_trunk = f"{facts.push_ref} is not the trunk branch {branch}"
    if facts.config_error is not None or not_trunk is not None:
        stop = StartFacts(
            facts.head_sha, facts.trunk, facts.gpu_runner, (), {}, None, facts.config_error, not_trunk
        )
        config = RepoConfig()
        return JobPlan(config, SuitePlan((), ()), "", (), {}, (), tuple(plan_start(stop)))
    suite_plan = plan_suites(facts.trunk_config, facts.head_config, drop_approved_by=facts.drop_approved_by)
    trunk_branch = (facts.trunk_ref or f"refs/heads/{facts.head_config.fork.branch}").removeprefix(
        "refs/heads/"
    )
    config = suite_plan.apply(facts.trunk_config)
    if facts.pool is not None:
        if facts.trunk or not facts.pool_run:
            return Skip("skipped", "a pool job tests the head its L1 job dispatched it for")
        return RunPool(config)
    pooled = tuple(s for s in config.l1.suites if s.pools)
    if pooled and not facts.trunk:  # trunk runs each suite once, as ever: that is its baseline
        config = replace(
            config, l1=replace(config.l1, suites=tuple(s for s in config.l1.suites if not s.pools))
        )
    names = [s.name for s in config.l1.suites]
    kept: dict[str, str] = {}
    chosen = names
    unknown: tuple[str, ...] = ()
    if facts.suite_names and not facts.trunk:
        kept, chosen = partial_rerun(facts.suite_names, names, facts.previous)
        unknown = tuple(n for n in facts.suite_names if n not in names)
    suites = tuple(s for s in config.l1.suites if s.name in chosen)
    start = plan_start(
        StartFacts(facts.head_sha, facts.trunk, facts.gpu_runner, suites, kept, facts.external_id)
    )
    return JobPlan(config, suite_plan, trunk_branch, suites, kept, pooled, tuple(start), unknown)


def partial_rerun(
    asked: Sequence[str], names: Sequence[str], previous: Mapping[str, str]
) -> tuple[dict[str, str], list[str]]:
    """(results kept from the last run on this commit, suites to run) for ``/retest SUITE …``.

    A suite with no result on this commit runs too (nothing to keep), so the check never
    concludes over suites that did not run; names not configured at this commit are dropped.
    """
    chosen = [n for n in names if n in asked or n not in previous]
    kept = {n: previous[n] for n in names if n not in chosen}
    return kept, chosen


def retested_check(head_sha: str, runs: Sequence[CheckRunInfo]) -> int | None:
    """Our completed L1 check on ``head_sha`` when the split that rebuilt this bundle re-tested it
    already (its id; None: a push's L1 runs as usual)."""
    mark = render.retested_mark(head_sha)
    for run in runs:
        if run.head_sha == head_sha and run.status == "completed" and mark in (run.summary or ""):
            return run.id
    return None


# --------------------------------------------------------------------------- a red bundle


@dataclass(frozen=True)
class SplitBundle:
    """Bisect PR #number's bundle for the commits that make ``chase.targets`` fail, eject them to
    chains, rebuild the bundle without them and force-push ``branch`` (``l1_split.split_bundle``)."""

    number: int
    branch: str
    chase: SplitPlan


@dataclass(frozen=True)
class RequestReviews:
    """The force-push overran these approvals: ask them to review the rebuilt head."""

    number: int
    users: tuple[str, ...]


@dataclass(frozen=True)
class Retest:
    """Run L1 on the rebuilt head here, in the same PR (the runner and the cache are ours already)."""

    head_sha: str


def plan_split_step(
    trunk: bool, pr_number: int | None, head_ref: str, run: L1Run, trunk_passing: frozenset[str]
) -> list[SplitBundle]:
    """A bundle PR whose L1 fails in suites trunk passes at the merge-base is split (``plan_split``);
    a trunk run, a run with no PR or no merge-base, and anything else is not."""
    if trunk or pr_number is None or run.merge_base is None:
        return []
    chase = plan_split(head_ref, run, trunk_passing)
    return [] if chase is None else [SplitBundle(pr_number, head_ref, chase)]


def plan_after_split(
    number: int, rebuilt_head: str | None, approvers: Sequence[str]
) -> list[RequestReviews | Retest]:
    """After a split: a rebuilt head is re-tested; those who approved the old head are asked again."""
    if rebuilt_head is None:
        return []
    asked: list[RequestReviews | Retest] = [RequestReviews(number, tuple(approvers))] if approvers else []
    return [*asked, Retest(rebuilt_head)]


# --------------------------------------------------------------------------- a pool job


@dataclass(frozen=True)
class PoolSuites:
    """A pool job's suites: ``names`` run here; ``pooled`` (every pooled suite) are compared."""

    names: tuple[str, ...]
    pooled: tuple[Suite, ...]


def plan_pool_suites(config: RepoConfig, pool: str, head_sha: str) -> PoolSuites | Skip:
    """The suites of ``pool`` among the pooled ones; none: the job skips."""
    pooled = tuple(s for s in config.l1.suites if s.pools)
    mine = tuple(s.name for s in pooled if pool in s.pools)
    if not mine:
        return Skip("skipped", f"no L1 suite runs on pool {pool} at {head_sha[:12]}")
    return PoolSuites(mine, pooled)


@dataclass(frozen=True)
class RetryPool:
    """Only the runner failed: the task retries on the pool's queue; nothing is reported yet."""


def plan_pool_results(
    run: L1Run, pool: str, attempt: int, retries: int
) -> RetryPool | tuple[PoolResult, ...]:
    """What this pool reports of ``run``: per suite, the tests executed and its conclusion; or, when
    only the infrastructure failed and the task may retry, a retry."""
    if run.conclusion == CANCELLED and attempt < retries:
        return RetryPool()
    own = suite_conclusions(run)
    return tuple(PoolResult(s.name, pool, s.passed + s.failed, own[s.name]) for s in run.suites)


@dataclass(frozen=True)
class PoolReportFacts:
    """What the pool job reads under the repository's lock, beside its own results."""

    head_sha: str
    pool_run: str  # the dispatching job's run id
    pools_checks: Sequence[CheckRunInfo]  # ``forksync / L1 pools`` runs listed on the head
    pooled: Sequence[Suite]
    recorded: Sequence[PoolResult]  # this run's results stored so far (oldest first)
    mine: Sequence[PoolResult]


@dataclass(frozen=True)
class RecordPoolResults:
    """Append these results to the pool run's store series (``pools.pool_series``)."""

    results: tuple[PoolResult, ...]


@dataclass(frozen=True)
class StalePoolRun:
    """A newer L1 run on this commit dispatched its own pools: this job's results are not recorded."""


@dataclass(frozen=True)
class PoolReport:
    """Record, then upsert ``forksync / L1 pools``; a concluded check leaves the watchdog."""

    actions: tuple[RecordPoolResults | UpsertCheck | ForgetPending, ...]
    conclusion: str  # the comparison's: ``pending`` until every pool reported


def plan_pool_report(facts: PoolReportFacts) -> PoolReport | StalePoolRun:
    """The newest pools check on the head must name this job's run (else it is stale); then every
    pool's results so far, this job's last, are compared: the job that sees them all concludes."""
    current = [r for r in facts.pools_checks if r.head_sha == facts.head_sha]
    newest = max(current, key=lambda r: r.id) if current else None
    if newest is None or render.pool_run_of(newest.summary) != facts.pool_run:
        return StalePoolRun()
    pooled = facts.pooled
    comparison = compare(
        {s.name: s.pools for s in pooled},
        [*facts.recorded, *facts.mine],
        {s.name: s.pool_tolerance for s in pooled},
    )
    out = render.pools_check_run(facts.head_sha, comparison)
    out = replace(out, summary=render.pool_run_mark(facts.pool_run) + out.summary)
    actions: list[RecordPoolResults | UpsertCheck | ForgetPending] = [
        RecordPoolResults(tuple(facts.mine)),
        UpsertCheck(out),
    ]
    if out.status == "completed":
        actions.append(ForgetPending(0))  # 0: the check just upserted
    return PoolReport(tuple(actions), comparison.conclusion)
