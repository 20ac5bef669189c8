"""Comment commands, planned: what each command will do, decided from the parsed command and plain
state, as typed actions; :mod:`workers.commands.execute` applies them.

The model is ``workers/testing/tracking.py``: the readers in ``workers/commands/actions.py``
gather the state a command needs (the ledger entry it names, the pull request, the approval
comment, the plan), a planner here turns ``(command, state)`` into a list of actions, with no
I/O at all, and the one executor performs them over the GitHub roles, git and the task queue.
Every text of an answer comes from ``core.render.commands``.

The actions, in the order a plan lists them:

* :class:`Reply`: the command's answer (nothing else to do).
* :class:`Enqueue`: send a task by name; answered ``started`` when it was sent, ``unavailable``
  when this deployment has no queue for it.
* :class:`MarkCommit`: record ``/skip``, ``/defer`` or ``/urgent`` in the fork's decisions notes
  (pushed before the reply says so).
* :class:`MoveCommit`: ``/chain`` or ``/unchain`` in the fork's chains ref; answered with the
  chain it landed in.
* :class:`PostMarked`: post or edit in place the bot comment carrying ``marker``.
* :class:`AddLabels`: put labels on the issue or pull request.
* :class:`PushBranch`: force the rebuilt pick branch over the PR's (``/resolve``).
* :class:`EditPull`: retitle the PR and replace its sections in place.
* :class:`ApplyL3`: write the L3 check runs and queue the runs that ``/l3`` and ``/signoff`` planned
  (``workers.testing.l3``'s planners, on the PR head).
* :class:`LearnResolutions`: put the resolutions a pick PR's branch carries into the fork's
  resolution memory (``/approve`` on a pick PR); answered with how many were learned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core import tasknames
from core.commands import Command
from core.config import RepoConfig
from core.github.records import CheckRunInfo
from core.render import commands as render
from core.render import marker as marker_of
from core.render import resolution as show
from core.render.l3 import L3State
from workers.testing import l3

if TYPE_CHECKING:
    from workers.engine.resolve.branch import BuildResult


@dataclass(frozen=True)
class Reply:
    outcome: render.Outcome


@dataclass(frozen=True)
class Enqueue:
    task: str  # a name of core/tasknames.py
    kwargs: Mapping[str, Any]  # besides installation_id, repo and delivery, which the executor adds
    started: render.Outcome
    unavailable: render.Outcome


@dataclass(frozen=True)
class MarkCommit:
    sha: str
    disposition: str  # wont_port | deferred | urgent (workers.engine.decisions.Disposition values)
    note: str


@dataclass(frozen=True)
class MoveCommit:
    command: Command
    sha: str
    op: str  # add | remove
    into: str | None
    shown: str  # the commit as the answer names it


@dataclass(frozen=True)
class PostMarked:
    number: int
    marker: str
    body: str


@dataclass(frozen=True)
class AddLabels:
    number: int
    labels: tuple[str, ...]


@dataclass(frozen=True)
class ApplyL3:
    head_sha: str
    steps: tuple[l3.L3Action, ...]  # from l3.plan_request / l3.plan_signoff, ending with their answer


@dataclass(frozen=True)
class PushBranch:
    head: str
    branch: str  # refs/heads/… of the fork


@dataclass(frozen=True)
class EditPull:
    number: int
    title: str
    body: str


@dataclass(frozen=True)
class LearnResolutions:
    """Fetch pick PR #number's ``branch`` and record the resolutions it carries in the fork's
    resolution memory, their source ``source``; answered for ``head_sha`` with how many."""

    command: Command
    number: int
    branch: str
    head_sha: str
    source: str


Action = (
    Reply
    | Enqueue
    | MarkCommit
    | MoveCommit
    | PostMarked
    | AddLabels
    | ApplyL3
    | PushBranch
    | EditPull
    | LearnResolutions
)


# --------------------------------------------------------------------------- plain state


@dataclass(frozen=True)
class Entry:
    """The ledger entry a command names, as the planner needs it."""

    sha: str
    shown: str  # rendered commit line (render.commit_line)
    carriers: tuple[str, ...] = ()  # fork commits carrying it: already picked when non-empty


@dataclass(frozen=True)
class PullState:
    """The pull request a command is commented on."""

    number: int
    head_sha: str
    author: str
    author_association: str
    head_repo: str | None
    from_outside: bool  # its branch is not in this repository
    needs_approval: bool  # workers.commands.approval.needs_approval
    approved_head: str | None = None  # the head a maintainer's /approve recorded, if any
    head_ref: str = ""  # its branch

    @property
    def is_pick(self) -> bool:
        """forksync's own pick PR (a bundle, chain or pick branch of this repository)."""
        return not self.from_outside and self.head_ref.startswith(PICK_PREFIX)


@dataclass(frozen=True)
class PlanState:
    """What /bundle shows: the plan's groups and counts."""

    groups: tuple[render.PlannedGroup, ...]
    bundles: int
    chains: int
    urgent: int
    deferred: int  # deferred commits of the ledger (said when nothing is planned)
    table: str = ""  # render.plan_table of the groups


@dataclass(frozen=True)
class Benchmarks:
    """The config's L2 benchmarks: name -> its metric names."""

    metrics: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


L3Found = tuple[CheckRunInfo, L3State | None] | None  # l3.current: the workload's newest check on the head


# --------------------------------------------------------------------------- planners (pure)


PICK_PREFIX = "forksync/"  # forksync's pick branches

VERB = {"skip": "wont_port", "defer": "deferred", "urgent": "urgent"}


def plan_help(command: Command) -> list[Action]:
    return [Reply(render.help_answer(command, command.target or None))]


def plan_decide(command: Command, author: str, entry: Entry, outlook: str = "") -> list[Action]:
    """/skip, /defer, /urgent REF: mark it (an already picked commit cannot be skipped or deferred,
    and needs no hurry); /urgent then starts an ingestion (``outlook``: what that will do)."""
    disposition = VERB[command.name]
    reason = command.reason or ""
    if entry.carriers:
        if disposition != "urgent":
            return [Reply(render.already_picked(command, entry.shown, entry.carriers, disposition))]
        return [Reply(render.nothing_to_hurry(command, entry.shown))]
    note = f"{reason} (by @{author} via /{command.name})".strip()
    mark = MarkCommit(entry.sha, disposition, note)
    if disposition == "urgent":
        return [
            mark,
            Enqueue(
                tasknames.INGEST,
                {"reason": f"/urgent by @{author}"},
                render.urgent_started(command, entry.shown, reason, outlook),
                render.urgent_recorded(command, entry.shown, reason, outlook),
            ),
        ]
    return [mark, Reply(render.decided(command, entry.shown, disposition, reason))]


def plan_chain(command: Command, entry: Entry) -> list[Action]:
    """/chain REF [into ID], /unchain REF: move it in the fork's chains ref."""
    return [
        MoveCommit(
            command,
            entry.sha,
            "add" if command.name == "chain" else "remove",
            command.option("into"),
            entry.shown,
        )
    ]


def plan_bundle(
    command: Command, author: str, state: PlanState, limit: int | None, configured_max: int
) -> list[Action]:
    """/bundle [max=N] [dry-run]: the plan as a table; without dry-run an ingestion builds it."""
    if not state.groups:
        return [Reply(render.nothing_to_bundle(command, render.nothing_planned_why(state.deferred)))]
    count = sum(len(g.commits) for g in state.groups)
    summary = render.plan_summary(state.bundles, state.chains, count, state.urgent)
    if command.flag("dry-run"):
        return [Reply(render.bundle_dry_run(command, summary, state.table))]
    kwargs: dict[str, Any] = {"reason": f"/bundle by @{author}"}
    if limit is not None:
        kwargs["max_commits"] = limit  # this ingestion only; the config is not changed
    return [
        Enqueue(
            tasknames.INGEST,
            kwargs,
            render.bundle_started(command, summary, state.table, limit, configured_max),
            render.not_available(command, "the ingestion worker"),
        )
    ]


def plan_retest(
    command: Command, is_pull: bool, known: Sequence[str], pull: PullState | None
) -> list[Action]:
    """/retest [SUITE …]: rerun L1 on the PR head; an outside PR's head must be approved first."""
    if not is_pull:
        return [Reply(render.pr_only(command))]
    unknown = [name for name in command.args if name not in known]
    if unknown:
        return [Reply(render.unknown_suites(command, unknown, known))]
    assert pull is not None  # read for every pull request
    # The same rule as the L1 job's (workers/jobs/l1_job.py): refusing here answers at once, instead of
    # a 🚀 followed by a check run that waits for /approve.
    if pull.needs_approval and pull.approved_head != pull.head_sha:
        return [Reply(render.retest_not_approved(command, pull.head_repo, pull.head_sha))]
    kwargs: dict[str, Any] = {"head_sha": pull.head_sha, "number": pull.number}
    if command.args:
        kwargs["suites"] = list(command.args)
    return [
        Enqueue(
            tasknames.RUN_L1,
            kwargs,
            render.retest_started(command, command.args, known, pull.head_sha),
            render.not_available(command, "the L1 worker queue"),
        )
    ]


def plan_bisect(command: Command, benchmarks: Benchmarks, issue_number: int) -> list[Action]:
    """/bisect BENCHMARK-OR-METRIC [good=SHA] [bad=SHA]: bisect on the l2 queue, answered on this issue."""
    target = command.target
    bench = (
        target
        if target in benchmarks.metrics
        else next((name for name, metrics in benchmarks.metrics.items() if target in metrics), None)
    )
    if bench is None:
        names = [*benchmarks.metrics, *(m for metrics in benchmarks.metrics.values() for m in metrics)]
        return [Reply(render.unknown_benchmark(command, target, names))]
    kwargs: dict[str, Any] = {"benchmark": bench, "issue_number": issue_number}
    for key in ("good", "bad"):
        if command.option(key):
            kwargs[key] = command.option(key)
    return [
        Enqueue(
            tasknames.BISECT,
            kwargs,
            render.bisect_started(command, bench, target),
            render.not_available(command, "the L2 worker queue"),
        )
    ]


def plan_digest(command: Command) -> list[Action]:
    """/digest: refresh the period's digest issue now (the task the daily beat sends)."""
    return [
        Enqueue(
            tasknames.DIGEST,
            {"reason": "/digest"},
            render.digest_started(command),
            render.not_available(command, "the digest task queue"),
        )
    ]


def plan_approve(
    command: Command, is_pull: bool, pull: PullState | None, marker: str, body: str, label: str
) -> list[Action]:
    """/approve on an outside PR: record the approval of its head (a marked comment and a label).
    (On forksync's own pick PR it approves the resolution instead: :func:`plan_approve_resolution`.)"""
    if not is_pull or pull is None:
        return [Reply(render.approve_on_issue(command))]
    if not pull.from_outside:
        return [Reply(render.approve_not_needed_inside(command))]
    if not pull.needs_approval:
        return [Reply(render.approve_not_needed_member(command, pull.author, pull.author_association))]
    return [
        PostMarked(pull.number, marker, body),
        AddLabels(pull.number, (label,)),
        Reply(render.approved(command, pull.author, pull.head_sha)),
    ]


def resolution_marker(pr: int) -> str:
    """The hidden marker of the bot's record of a resolution's approval on PR #pr."""
    return marker_of("resolution-approval", str(pr))


def plan_approve_resolution(command: Command, pull: PullState, author: str) -> list[Action]:
    """/approve on a pick PR: the maintainer's word on its resolution at the current head. Its
    resolutions go into the fork's memory at once ("approved proposals"), and a marked bot comment
    records the head (a later push needs a new approval)."""
    record = resolution_marker(pull.number)
    return [
        LearnResolutions(
            command, pull.number, pull.head_ref, pull.head_sha, f"approved #{pull.number} by @{author}"
        ),
        PostMarked(pull.number, record, render.resolution_approval_record(record, pull.head_sha, author)),
    ]


def plan_l3(
    command: Command,
    is_pull: bool,
    has_checks: bool,
    head_sha: str,
    config: RepoConfig,
    found: L3Found,
    author: str,
    can_queue: bool,
) -> list[Action]:
    """/l3 WORKLOAD, /signoff WORKLOAD on a PR head: the sign-off check run (``found``: the newest
    one of the workload on the head, ``l3.current``); ``can_queue``: a worker queue is reachable."""
    if not is_pull:
        return [Reply(render.pr_only(command))]
    if not has_checks:
        return [Reply(render.not_available(command, "the check-run adapter"))]
    if command.name == "l3":
        steps = l3.plan_request(
            config, command.target, head_sha, found, requested_by=author, can_queue=can_queue
        )
    else:
        steps = l3.plan_signoff(config, command.target, head_sha, author, found)
    answer = steps[-1]
    assert isinstance(answer, l3.Answer)  # every L3 plan ends with its answer
    if not answer.ok:
        outcome = render.failed(command, answer.text, "")
    elif answer.started:
        outcome = render.started(command, answer.text)
    else:
        outcome = render.done(command, answer.text)
    return [ApplyL3(head_sha, tuple(steps)), Reply(outcome)] if len(steps) > 1 else [Reply(outcome)]


def resolve_refusal(
    command: Command, is_pull: bool, head_ref: str, from_outside: bool, agent_configured: bool
) -> Reply | None:
    """/resolve before anything is fetched: only on forksync's own pick PR, ``agent`` only when one
    is configured; None when the branch is to be read and rebuilt."""
    if not is_pull:
        return Reply(render.resolve_on_issue(command))
    if from_outside or not head_ref.startswith(PICK_PREFIX):
        return Reply(render.resolve_not_a_pick(command, head_ref))
    if command.args[:1] == ("agent",) and not agent_configured:
        return Reply(render.resolve_no_agent(command))
    return None


@dataclass(frozen=True)
class ResolveState:
    """The pick PR and its branch rebuilt in memory (``workers.engine.resolve.branch``)."""

    number: int
    head_ref: str
    title: str
    body: str
    trailer: str  # the config's ledger trailer (named when the branch carries no upstream commit)
    missing: tuple[str, ...]  # upstream commits the branch names that upstream lacks
    upstream: tuple[str, ...]  # the upstream commits the branch carries
    human: tuple[str, ...]  # commits on the branch a human wrote
    with_agent: bool  # an agent took part in the rebuild
    built: BuildResult | None  # None when there was nothing to build (no or missing upstream commits)


def plan_resolve(command: Command, state: ResolveState) -> list[Action]:
    """/resolve [agent], /resolve show FILE, from the rebuilt branch: show one file (writing
    nothing), refuse a branch a human pushed to, say what waits, or push it and edit the PR."""
    if not state.upstream or state.missing or state.built is None:
        return [Reply(render.resolve_no_upstream(command, list(state.missing), state.trailer))]
    built = state.built
    if command.args[:1] == ("show",):
        return [Reply(_show(command, built, command.args[1]))]
    details = "\n".join(
        show.conflict_resolution_section(o, with_details=False) for o in built.outcomes if not o.clean
    )
    if state.human:
        return [Reply(render.resolve_human_owned(command, list(state.human), details))]
    if built.head is None:
        waiting = sum(len(o.waiting) for o in built.outcomes)
        return [Reply(render.resolve_waiting(command, waiting, state.with_agent, details))]
    body = state.body
    for outcome in built.outcomes:
        if not outcome.clean:
            body = show.replace_section(body, show.conflict_resolution_section(outcome), outcome.commit)
    files = sum(len(o.entries) for o in built.outcomes)
    return [
        PushBranch(built.head, f"refs/heads/{state.head_ref}"),
        EditPull(state.number, show.retitle_resolved(state.title), body),
        Reply(render.resolved(command, files, len(built.outcomes), state.head_ref, built.head, details)),
    ]


def _show(command: Command, built: BuildResult, path: str) -> render.Outcome:
    for outcome in built.outcomes:
        text = show.show_file(outcome, path)
        if text is not None:
            return render.resolve_show(command, path, outcome.commit, text)
    conflicted = sorted(
        {e.path for o in built.outcomes for e in o.entries}
        | {w.path for o in built.outcomes for w in o.waiting}
    )
    return render.resolve_show_unknown(command, path, conflicted)
