"""What an L1 job does on GitHub, decided from plain data: typed actions from pure planners.

After ``workers/testing/tracking.py``: the job (``workers/jobs/l1_job.py``) reads what it needs
(the configs, the L1 result, the open infrastructure issues, the required checks), asks
:func:`plan_gate` whether the head may run at all (an outside PR's approval, a head to fetch),
:func:`plan_start` what to do before the suites run and :func:`plan_report` what to publish
after, and its executor applies each action through the GitHub roles and the store. Nothing
here calls GitHub, git or a runner; every text comes from ``core.render.l1``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from core.config import CONFIG_PATH, Suite
from core.github.records import IssueInfo
from core.render import l1 as render
from core.render import marker
from core.tasknames import Q_L1_CPU, Q_L1_GPU, l1_pool_queue
from workers.testing.l1 import CANCELLED, FAILURE, NEUTRAL, SUCCESS, L1Run, conclude
from workers.testing.pools import compare
from workers.testing.suite_plan import SuitePlan
from workers.testing.watchdog import RequiredChecks

INFRA_LABEL = "infrastructure"

# --------------------------------------------------------------------------- actions


@dataclass(frozen=True)
class UpsertCheck:
    """Create ``forksync / L1`` (or the named check) on its head, or update ours there in place."""

    output: render.CheckRunOutput
    external_id: str | None = None


@dataclass(frozen=True)
class UpdateCheck:
    """Update the check run this job created (conclude it, or leave it in progress to retry)."""

    check_run_id: int
    output: render.CheckRunOutput


@dataclass(frozen=True)
class RememberPending:
    """Let the staleness watchdog know the check waits on ``queue`` for these suites."""

    check_run_id: int
    queue: str
    suites: tuple[Suite, ...]


@dataclass(frozen=True)
class ForgetPending:
    check_run_id: int


@dataclass(frozen=True)
class HandOverToGpu:
    """A CPU worker's job with GPU suites: the task re-sends it to the GPU queue."""


@dataclass(frozen=True)
class RunSuites:
    """Run these suites on the head (``partial``: only them, the others keep their results)."""

    names: tuple[str, ...]
    partial: bool


@dataclass(frozen=True)
class Comment:
    number: int
    body: str


@dataclass(frozen=True)
class PublishRetest:
    """The rebuilt bundle's own check (the split's re-test) and the PR body's split section."""

    head_sha: str
    output: render.CheckRunOutput
    note: str
    external_id: str | None


@dataclass(frozen=True)
class FileIssue:
    """File or update (by marker) the runner's infrastructure issue of one cause."""

    marker: str
    title: str
    body: str


@dataclass(frozen=True)
class UpdateIssue:
    number: int
    body: str


@dataclass(frozen=True)
class CloseIssue:
    number: int
    comment: str


@dataclass(frozen=True)
class TrackTrunk:
    """Trunk results of one suite go to the tracking issues (``tracking.track``: its own plan)."""

    suite: str


@dataclass(frozen=True)
class PublishCoverage:
    required: RequiredChecks


Action = (
    UpsertCheck
    | UpdateCheck
    | RememberPending
    | ForgetPending
    | HandOverToGpu
    | RunSuites
    | Comment
    | PublishRetest
    | FileIssue
    | UpdateIssue
    | CloseIssue
    | TrackTrunk
    | PublishCoverage
)

# --------------------------------------------------------------------------- before the suites


# --------------------------------------------------------------------------- the PR gate


@dataclass(frozen=True)
class Refuse:
    """Complete ``forksync / L1`` without running anything (``status``: the job's result)."""

    status: str  # stale | needs_approval | not_fetchable | stacked
    title: str
    summary: str
    conclusion: str = "action_required"
    details_url: str | None = None


@dataclass(frozen=True)
class FetchPullHead:
    """Fetch PR #number's head (``refs/pull/N/head``, else its branch in ``head_repo``), then gate again
    with :func:`plan_fetched`."""

    number: int
    head_repo: str | None
    head_ref: str


@dataclass(frozen=True)
class GateFacts:
    """What the gate reads: the job's head, the PR as GitHub has it now, and the cache."""

    sha: str  # the head the job is for
    repo: str
    pr_number: int | None  # None: a push or a check with no PR
    pull_head: str = ""  # the PR's head now
    head_repo: str | None = None
    head_ref: str = ""
    author: str = ""
    association: str = ""
    html_url: str | None = None
    needs_approval: bool = False  # workers.commands.approval.needs_approval
    approved: bool = False  # a maintainer's /approve of ``sha`` (read only when it needs one and is current)
    in_cache: bool = False  # the head is in the job's git cache
    on_branch: bool = False  # the head is on a branch of the repository (read only without a PR)
    base_ref: str = ""  # the PR's base branch
    stacked: bool = False  # a forksync bundle PR based on another bundle's branch (docs/bundling.md)
    base_number: int | None = None  # stacked: the open PR of its base branch


def plan_gate(facts: GateFacts) -> list[Refuse | FetchPullHead]:
    """Whether the head may run: an outside PR only at the very head a maintainer approved; a stacked
    bundle PR not until it is re-targeted to the trunk; a PR head not in the cache is fetched; without
    a PR only a branch of the repository runs. [] when it may."""
    if facts.pr_number is None:
        if facts.on_branch:
            return []
        return [
            Refuse("not_fetchable", *render.gate_not_on_branch(facts.sha, facts.repo), conclusion="cancelled")
        ]
    if facts.needs_approval:
        if facts.pull_head != facts.sha:
            return [
                Refuse("stale", *render.gate_moved(facts.pr_number, facts.pull_head), conclusion="cancelled")
            ]
        if not facts.approved:
            return [
                Refuse(
                    "needs_approval",
                    *render.gate_needs_approval(facts.head_repo, facts.author, facts.association, facts.sha),
                    details_url=facts.html_url,
                )
            ]
    if facts.stacked:
        # Merged now it would land in its base bundle's branch, not the trunk: it waits, and runs once
        # ingestion re-targets it to the trunk (the PR's base changes: L1 runs again then).
        return [Refuse("stacked", *render.gate_stacked(facts.base_ref, facts.base_number))]
    if facts.in_cache:
        return []
    return [FetchPullHead(facts.pr_number, facts.head_repo, facts.head_ref)]


def plan_fetched(sha: str, number: int, found: bool) -> list[Refuse]:
    """After :class:`FetchPullHead`: run when the head came, else say it could not be fetched."""
    if found:
        return []
    return [Refuse("not_fetchable", *render.gate_not_fetched(sha, number), conclusion="cancelled")]


# --------------------------------------------------------------------------- pool dispatch


@dataclass(frozen=True)
class DispatchPool:
    """Send the job for ``pool`` (its queue ``tasknames.l1_pool_queue(pool)``) under run ``run_id``."""

    pool: str
    run_id: str


def plan_pools(
    sha: str,
    pooled: Sequence[Suite],
    run_id: str,
    *,
    trunk: bool,
    attempt: int,
    external_id: str | None = None,
) -> list[UpsertCheck | RememberPending | DispatchPool]:
    """Once per L1 run of a PR head (never on trunk, whose single run is its baseline, nor on an
    infrastructure retry): ``forksync / L1 pools`` in progress under ``run_id``, the watchdog told
    (it concludes the check timed_out if a pool's queue never answers), one job per pool."""
    if trunk or attempt or not pooled:
        return []
    out = render.pools_check_run(sha, compare({s.name: s.pools for s in pooled}, ()))
    pools = sorted({p for s in pooled for p in s.pools})
    return [
        UpsertCheck(replace(out, summary=render.pool_run_mark(run_id) + out.summary), external_id),
        RememberPending(0, l1_pool_queue(pools[0]), tuple(pooled)),  # 0: the check just upserted
        *(DispatchPool(p, run_id) for p in pools),
    ]


@dataclass(frozen=True)
class StartFacts:
    """What the job knows once the PR gate let it through and the configs are read."""

    head_sha: str
    trunk: bool
    gpu_runner: bool
    suites: tuple[Suite, ...]  # those that run now (a /retest's subset, pooled suites aside)
    kept: Mapping[str, str]  # /retest: suites keeping their earlier result
    external_id: str | None
    config_error: str | None = None
    not_trunk_branch: str | None = None  # a trunk job whose ref is not fork.branch: why it skips


@dataclass(frozen=True)
class Skip:
    """Nothing runs; ``status`` and ``message`` are the job's result."""

    status: str
    message: str


def plan_start(facts: StartFacts) -> list[Action | Skip]:
    """Before the suites: a config error is concluded (a trunk job only reports it), a push to
    another branch skips; otherwise the PR's check goes in progress (its pending record names the
    queue it waits on), a CPU worker hands GPU suites over, and the suites run."""
    if facts.config_error is not None:
        if facts.trunk:
            return [Skip("config_error", facts.config_error)]
        return [
            UpsertCheck(
                render.CheckRunOutput(
                    name=render.L1_CHECK,
                    head_sha=facts.head_sha,
                    status="completed",
                    conclusion="failure",
                    title=f"{CONFIG_PATH} is invalid: L1 cannot run",
                    summary=f"{marker('l1', facts.head_sha)}\n`{facts.config_error}`",
                )
            ),
            Skip("config_error", facts.config_error),
        ]
    if facts.not_trunk_branch is not None:
        return [Skip("skipped", facts.not_trunk_branch)]
    names = tuple(s.name for s in facts.suites)
    gpu = any(s.gpu for s in facts.suites)
    actions: list[Action | Skip] = []
    if not facts.trunk:
        progress = with_kept(render.l1_in_progress(facts.head_sha, list(names)), facts.kept, {})
        actions.append(UpsertCheck(progress, facts.external_id))
        # Until it completes, the staleness watchdog (beat) knows this check and its deadline;
        # the id is the created check's (0: filled in by the executor).
        actions.append(RememberPending(0, Q_L1_GPU if facts.gpu_runner or gpu else Q_L1_CPU, facts.suites))
    if not facts.gpu_runner and gpu:
        return [*actions, HandOverToGpu()]
    return [*actions, RunSuites(names, partial=bool(facts.kept))]


# --------------------------------------------------------------------------- after the suites

_INFRA_KEY = re.compile(r"<!-- forksync:infra:(?P<key>.+?) -->")
_HEALTHY = re.compile(r"<!-- forksync:infra-healthy:(?P<n>\d+) -->\n?")
# Causes that only a run with GPU suites can show to be gone (a CPU-only run never touches the device).
_GPU_CAUSE = re.compile(r"GPU|CUDA|canary|device", re.IGNORECASE)
LogUrl = Callable[[str], str | None] | None


@dataclass(frozen=True)
class ReportFacts:
    """Everything the publication of one L1 run depends on."""

    repo: str
    head_sha: str
    trunk: bool
    pr_number: int | None
    attempt: int
    retries: int  # l1.max_infra_retries (or the task's override)
    check_run_id: int | None
    run: L1Run
    suite_plan: SuitePlan
    runner: str  # this host: infrastructure issues are per cause and runner
    infra_issues: tuple[IssueInfo, ...]  # the open issues labelled infrastructure
    recover_after: int
    required: RequiredChecks
    retry_queue: str  # where a retried job waits
    suites: tuple[Suite, ...]
    kept: Mapping[str, str] = field(default_factory=dict)
    pooled: tuple[str, ...] = ()  # pooled suites dispatched to their pools (empty: none dispatched)
    split_note: str | None = None
    retest: L1Run | None = None  # the split's re-test of the rebuilt bundle
    rebuilt_head: str | None = None
    external_id: str | None = None
    log_url: LogUrl = None


def plan_report(facts: ReportFacts) -> list[Action]:
    """After the suites: infrastructure issues filed and counted clean, trunk failures tracked,
    then (a PR's check) the split's re-test and comment, the check concluded (or kept in progress
    for an infrastructure retry) with every note, its pending record updated, and coverage."""
    run = facts.run
    actions: list[Action] = [*infra_issue_actions(facts.run, facts.runner), *_recovered(facts)]
    if facts.trunk:
        actions += [TrackTrunk(s.name) for s in run.suites if s.status != "infrastructure"]
    if facts.check_run_id is None:
        return actions
    if facts.suite_plan.blocked:
        run = replace(run, conclusion=FAILURE)
    out = with_plan(render.l1_check_run(run, log_url=facts.log_url), facts.suite_plan)
    if facts.split_note is not None and facts.pr_number is not None:
        out = replace(out, summary=out.summary + "\n\n" + facts.split_note)
        if facts.rebuilt_head is not None and facts.retest is not None:
            retest = render.l1_check_run(facts.retest, log_url=facts.log_url)
            retest = replace(
                retest,
                summary=render.retested_mark(facts.rebuilt_head) + retest.summary + "\n\n" + facts.split_note,
            )
            actions.append(
                PublishRetest(
                    facts.rebuilt_head,
                    with_kept(retest, {}, suite_conclusions(facts.retest)),
                    facts.split_note,
                    facts.external_id,
                )
            )
        actions.append(Comment(facts.pr_number, facts.split_note))
    out = with_kept(out, facts.kept, suite_conclusions(run))
    if facts.pooled:
        title, note = render.pooled_suites_note(out.title, list(facts.pooled), len(run.suites))
        out = replace(out, title=title, summary=out.summary + note)
    if run.conclusion == CANCELLED and facts.attempt < facts.retries:
        out = retrying(out, facts.attempt + 1, facts.retries)
    required = facts.required
    if required.unreadable:  # said on L1 too: coverage may not run at all without protection
        out = replace(
            out, summary=out.summary + render.protection_note(required.branch, (), (), required.unreadable)
        )
    actions.append(UpdateCheck(facts.check_run_id, out))
    if out.status == "completed":
        actions.append(ForgetPending(facts.check_run_id))
    else:  # retried on another runner: it may wait once more for every suite
        actions.append(RememberPending(facts.check_run_id, facts.retry_queue, facts.suites))
    if required.checks or required.only_in_config:
        actions.append(PublishCoverage(required))
    return actions


def infra_issue_actions(run: L1Run, runner: str) -> list[Action]:
    """One issue per infrastructure cause and runner (found again by its marker)."""
    found: list[Action] = []
    for suite in run.suites:
        if suite.status != "infrastructure" or not suite.infra_cause:
            continue
        title, body = render.infra_issue(suite.infra_cause, runner, suite.name, run.sha, suite.reason)
        found.append(FileIssue(marker("infra", f"{suite.infra_cause}:{runner}"), title, body))
    return found


def _recovered(facts: ReportFacts) -> list[Action]:
    """A clean run counts against this runner's open infrastructure issues; those reaching
    ``recover_after`` clean runs in a row close, with a comment. The count lives in the issue
    body, so it survives worker restarts; a recurrence rewrites the body, which starts it again."""
    run = facts.run
    if not run.suites or any(s.status == "infrastructure" for s in run.suites):
        return []
    ran_gpu = any(s.gpu for s in run.suites)
    actions: list[Action] = []
    for issue in facts.infra_issues:
        found = _INFRA_KEY.search(issue.body)
        if found is None:
            continue
        cause, _, on = found.group("key").rpartition(":")
        if on != facts.runner or (_GPU_CAUSE.search(cause) and not ran_gpu):
            continue
        counted = _HEALTHY.search(issue.body)
        healthy = (int(counted.group("n")) if counted else 0) + 1
        actions.append(
            UpdateIssue(
                issue.number,
                _HEALTHY.sub("", issue.body).rstrip("\n") + f"\n<!-- forksync:infra-healthy:{healthy} -->",
            )
        )
        if healthy >= facts.recover_after:
            actions.append(
                CloseIssue(issue.number, render.infra_recovered_comment(cause, facts.runner, healthy))
            )
    return actions


# --------------------------------------------------------------------------- check-run texts


def suite_conclusions(run: L1Run) -> dict[str, str]:
    """Each suite's own conclusion in ``run`` (the rule of :func:`conclude` on that suite alone)."""
    return {s.name: conclude([s], run.fail_on) for s in run.suites}


def combined(conclusions: Sequence[str]) -> str:
    values = list(conclusions)
    for worst in (FAILURE, CANCELLED):
        if worst in values:
            return worst
    return SUCCESS if values and all(v == SUCCESS for v in values) else NEUTRAL


def with_kept(
    out: render.CheckRunOutput, kept: Mapping[str, str], ran: Mapping[str, str]
) -> render.CheckRunOutput:
    """The check run with every suite's own conclusion recorded (hidden, for a later partial
    rerun) and, after a partial rerun, the suites kept from the earlier run and a conclusion over all."""
    import json

    every = {**kept, **ran}
    mark = f"<!-- forksync:l1-suites {json.dumps(every, sort_keys=True)} -->\n" if every else ""
    if not kept:
        return replace(out, summary=mark + out.summary)
    summary = mark + out.summary + render.kept_suites_note(kept)
    if out.status != "completed":
        return replace(out, summary=summary)
    title = render.partial_rerun_title(out.title, list(ran), kept)
    return replace(out, conclusion=combined(list(every.values())), title=title, summary=summary)


def with_plan(out: render.CheckRunOutput, plan: SuitePlan) -> render.CheckRunOutput:
    """The check run saying which suites the PR's config adds or drops (and failing an unapproved drop)."""
    if not plan.changes:
        return out
    note = render.suite_changes_note(
        added=plan.added,
        dropped=plan.dropped,
        changed=plan.changed,
        required_added=plan.required_added,
        required_dropped=plan.required_dropped,
        approved_by=plan.drop_approved_by,
    )
    title = (
        render.unapproved_drop_title(out.title, (*plan.dropped, *plan.required_dropped))
        if plan.blocked
        else out.title
    )
    return replace(out, title=title, summary=out.summary + note)


def retrying(out: render.CheckRunOutput, attempt: int, retries: int) -> render.CheckRunOutput:
    return replace(
        out,
        status="in_progress",
        conclusion=None,
        title=f"{out.title} (retrying on another runner, {attempt} of {retries})",
    )
