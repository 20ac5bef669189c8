"""What one L1 job tests and how it heals a red bundle, decided from plain data.

Between the PR gate and the report (``l1_plan.plan_gate`` and ``plan_report``): the job
(``workers/jobs/l1_job.py``) reads :class:`JobFacts` (the configs at the head and the trunk, the
PR's base, a maintainer's approval of a suite drop, the last check's suite results), and
:func:`plan_job` decides the config, the suites and the start; after the suites,
:func:`plan_split_step` decides whether a red bundle is bisected and :func:`plan_after_split`
what follows a rebuild (reviews re-requested, the rebuilt head re-tested in the same PR). Nothing
here calls GitHub, git or a runner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from core.config import RepoConfig, Suite
from core.github.records import CheckRunInfo
from core.render import l1 as render
from workers.testing.l1 import L1Run
from workers.testing.l1_plan import Action, Skip, StartFacts, plan_start
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
