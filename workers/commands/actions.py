"""What each command does: one function per command, ``(Context, Command) -> Outcome``, in three
steps: read the plain state the command needs (here: the ledger entry, the PR, the plan), plan
with the pure planners of :mod:`workers.commands.plan` (typed actions: reply, enqueue, mark,
move, post, label), act with the one executor (:mod:`workers.commands.execute`). The answers'
texts are in ``core.render.commands``. ``/l3`` and ``/signoff`` plan with ``workers/testing/l3.py``'s
planners (``plan.plan_l3``); ``/resolve`` (``workers/commands/resolution.py``) likewise reads, plans, acts.

Decisions (``/skip``, ``/defer``, ``/urgent``) go to the fork's decisions notes and chain moves
(``/chain``, ``/unchain``) to its chains ref, pushed before the reply says so: ``forksync status``
sees them at once, and nothing lives only in Redis. Work that takes long (ingestion, L1, L2)
is enqueued by task name and answered 🚀. A feature that is not deployed answers 😕 "not
available yet", never a fake success.

How the fork's git data is reached: :class:`Services` maps the repository to a git location
(``Services.fork_location``: the adapter's clone URL, through ``FORKSYNC_GIT_URL_MAP``) and the
config's ``upstream.url`` likewise; ``open_pair`` keeps a disposable bare cache of both under
``FORKSYNC_CACHE_DIR``. With an installation token the git processes authenticate through the
environment only (``http.extraHeader``), never argv or disk.
"""

from __future__ import annotations

import logging

from core.commands import Command
from core.errors import ForksyncError
from core.github.roles import Checks, Pulls
from core.render import commands as render
from workers.commands import plan
from workers.commands.approval import (
    APPROVED_LABEL,
    approval_body,
    approval_marker,
    needs_approval,
    read_approval,
)
from workers.commands.execute import NotesMoved, execute
from workers.commands.handler import Context
from workers.commands.services import Services, fork_auth, git_auth, send_task, services_of

__all__ = ["Services", "fork_auth", "git_auth", "send_task", "services_of"]  # their home is services.py
from workers.engine.decisions import Disposition
from workers.engine.ledger.cache import load_ledger
from workers.engine.ledger.records import Ledger, LedgerEntry, matching
from workers.engine.pair import Pair, normalise_web_url, open_pair

log = logging.getLogger("forksync.commands")

# --------------------------------------------------------------------------- the fork side


class RefProblem(Exception):
    """REF names no commit, or several: the action answers with the right outcome."""

    def __init__(self, ref: str, candidates: tuple[LedgerEntry, ...]) -> None:
        super().__init__(ref)
        self.ref = ref
        self.candidates = candidates


def open_fork(ctx: Context) -> Pair:
    """The upstream/fork pair for this repository, freshly fetched."""
    config = ctx.config
    if not config.upstream.url:
        raise ForksyncError(
            "`.github/forksync.yml` names no upstream repository",
            "set `upstream: {url: https://github.com/OWNER/REPO, branch: main}` on the default branch",
        )
    services = services_of(ctx)
    with fork_auth(ctx):
        return open_pair(
            services.upstream_location(config.upstream.url),
            services.fork_location(ctx.repo),
            config.upstream.branch,
            config.fork.branch,
            notes_ref=config.ledger.notes_ref,
        )


def load(ctx: Context) -> tuple[Pair, Ledger]:
    """(pair, ledger), fresh."""
    pair = open_fork(ctx)
    return pair, load_ledger(pair, ctx.config.ledger, upstream_url=ctx.config.upstream.url)


def resolve(ledger: Ledger, ref: str) -> LedgerEntry:
    """The ledger entry REF names; RefProblem with the candidates (none or several) otherwise."""
    hits = matching(ledger.entries, ref)
    if len(hits) != 1:
        raise RefProblem(ref, hits)
    return hits[0]


def ref_outcome(ctx: Context, command: Command, problem: RefProblem) -> render.Outcome:
    upstream = f"{ctx.config.upstream.url or 'upstream'} ({ctx.config.upstream.branch})"
    if not problem.candidates:
        return render.unknown_ref(command, problem.ref, upstream)
    return render.ambiguous_ref(command, problem.ref, [line_of(e) for e in problem.candidates], web_url(ctx))


def line_of(entry: LedgerEntry) -> render.CommitLine:
    return render.CommitLine(entry.sha, entry.subject, entry.pr_number)


def web_url(ctx: Context) -> str | None:
    url = ctx.config.upstream.url
    return normalise_web_url(url) if url else None


def label(ctx: Context, entry: LedgerEntry) -> str:
    return render.commit_line(line_of(entry), web_url(ctx))


# --------------------------------------------------------------------------- decisions


def entry_of(ctx: Context, entry: LedgerEntry) -> plan.Entry:
    return plan.Entry(entry.sha, label(ctx, entry), tuple(entry.carriers))


def decide(ctx: Context, command: Command) -> render.Outcome:
    """/skip, /defer, /urgent: read the ledger, plan, act (the decision is pushed before replying).
    When another decision lands between our read and our push, read again and plan again, once;
    a second race is reported."""
    for attempt in (1, 2):
        pair, ledger = load(ctx)
        try:
            entry = resolve(ledger, command.ref)
        except RefProblem as problem:
            return ref_outcome(ctx, command, problem)
        outlook = ""
        if command.name == "urgent" and not entry.carriers:
            outlook = _urgent_outlook(ctx, pair, entry.sha)
        try:
            return execute(ctx, plan.plan_decide(command, ctx.author, entry_of(ctx, entry), outlook), pair)
        except NotesMoved as moved:
            if attempt == 2 and isinstance(moved.__cause__, ForksyncError):
                raise moved.__cause__ from None
    raise AssertionError("unreachable: the second attempt returns or raises")


def _urgent_outlook(ctx: Context, pair: Pair, sha: str) -> str:
    """What ingestion will do with an urgent commit, from its trial pick alone onto the fork tip
    (the same trial the planner makes): its own PR when clean, else an issue naming the files."""
    import pygit2

    from workers.engine.bundle import URGENT_BRANCH
    from workers.engine.changes import commit_changes
    from workers.engine.planning import urgent_trial
    from workers.engine.symbols import stoplist

    repo = pygit2.Repository(str(pair.repo.path))
    conflicts = urgent_trial(
        repo, pair.fork_tip, commit_changes(repo, sha, stoplist(ctx.config.risk.symbol_stoplist))
    )
    return render.urgent_outlook(ctx.config.fork.branch, URGENT_BRANCH + sha[:7], conflicts)


# --------------------------------------------------------------------------- read-only commands


def help_(ctx: Context, command: Command) -> render.Outcome:
    return execute(ctx, plan.plan_help(command))


def status(ctx: Context, command: Command) -> render.Outcome:
    pair, ledger = load(ctx)
    m = ledger.metrics
    chains = _chains(ctx, pair)
    view = render.StatusView(
        upstream_url=web_url(ctx),
        upstream_tip=m.upstream_tip,
        frontier=None if m.frontier == m.base else m.frontier,
        contiguous_pin=None if m.contiguous_pin == m.base else m.contiguous_pin,
        days_behind=m.days_behind,
        backlog=tuple(line_of(e) for e in ledger.backlog_commits),
        pending=m.pending,
        picked=m.picked,
        wont_port=m.wont_port,
        deferred=tuple(line_of(e) for e in ledger.with_disposition(Disposition.DEFERRED)),
        urgent=tuple(m.urgent),
        bundles=_bundles(ctx, pair),
        chains=chains,
    )
    return execute(ctx, [plan.Reply(render.status_answer(command, view, m.backlog))])


def _bundles(ctx: Context, pair: Pair) -> tuple[render.OpenItem, ...]:
    """Bundle branches in the fork (``forksync/bundle/*``), with their open PRs when GitHub has them."""
    import re

    with fork_auth(ctx):
        out = pair.repo.text("ls-remote", "--", pair.fork.remote, "refs/heads/forksync/bundle/*")
    branches = sorted(
        line.split("\t", 1)[1].removeprefix("refs/heads/") for line in out.splitlines() if "\t" in line
    )
    pulls = {}
    if isinstance(ctx.gh, Pulls):  # the adapter lists bundle PRs; a fake without pulls shows branches only
        for branch in branches:
            info = ctx.gh.find_pull_request(ctx.repo, branch)
            if info is not None and info.state == "open":
                pulls[branch] = (info.number, info.title, info.html_url)
    items = []
    for branch in branches:
        if branch in pulls:
            number, title, url = pulls[branch]
            m = re.search(r"Cherry-pick (\d+) upstream", title)
            items.append(render.OpenItem(f"#{number}", int(m.group(1)) if m else None, url, title))
        else:
            items.append(render.OpenItem(branch, None, None, "(branch without an open PR)"))
    return tuple(items)


def _chains(ctx: Context, pair: Pair) -> tuple[render.OpenItem, ...]:
    try:
        from workers.engine.chains import read_chains
    except ImportError:  # pragma: no cover - the chains store ships with the engine
        return ()
    store = read_chains(pair)
    return tuple(render.OpenItem(r.id, len(r.commits)) for r in store.records if r.commits)


# --------------------------------------------------------------------------- chains and bundles


def chain(ctx: Context, command: Command) -> render.Outcome:
    """/chain REF [into ID] and /unchain REF: record the move in the fork's chains ref."""
    pair, ledger = load(ctx)
    try:
        entry = resolve(ledger, command.ref)
    except RefProblem as problem:
        return ref_outcome(ctx, command, problem)
    return execute(ctx, plan.plan_chain(command, entry_of(ctx, entry)), pair)


def bundle(ctx: Context, command: Command) -> render.Outcome:
    """/bundle [max=N] [dry-run]: plan now; dry-run replies with the plan, else ingestion runs."""
    import dataclasses

    from workers.engine.planning import make_plan

    config = ctx.config
    limit = command.max_commits
    if limit is not None:
        config = dataclasses.replace(config, bundle=dataclasses.replace(config.bundle, max_commits=limit))
    pair, ledger = load(ctx)
    made = make_plan(pair, config, ledger=ledger).plan

    def lines(shas: tuple[str, ...]) -> tuple[render.CommitLine, ...]:
        # Every planned commit is a ledger entry; a sha alone is shown should that ever not hold.
        return tuple(line_of(e) if (e := ledger.entry(s)) is not None else render.CommitLine(s) for s in shas)

    groups = [
        render.PlannedGroup(
            "urgent",
            u.id,
            lines(u.commits),
            (
                f"conflicts on the fork tip in {', '.join(u.conflicts)}"
                if u.conflicts
                else "marked urgent: alone on the fork tip",
            ),
        )
        for u in made.urgent
    ]
    groups += [render.PlannedGroup("bundle", b.id, lines(b.commits)) for b in made.bundles] + [
        render.PlannedGroup(
            "chain", c.id, lines(c.commits), tuple(f"{r.commit[:7]} {r.kind}: {r.detail}" for r in c.reasons)
        )
        for c in made.chains
    ]
    state = plan.PlanState(
        tuple(groups),
        len(made.bundles),
        len(made.chains),
        len(made.urgent),
        ledger.metrics.deferred,
        render.plan_table(groups, web_url(ctx)) if groups else "",
    )
    return execute(ctx, plan.plan_bundle(command, ctx.author, state, limit, ctx.config.bundle.max_commits))


# --------------------------------------------------------------------------- tests: L1, L2, L3


def pull_state(ctx: Context, *, with_approval: bool = False) -> plan.PullState:
    """The PR this command is on, as the planners need it (its recorded approval when asked)."""
    pull = ctx.pull()
    needs = needs_approval(ctx.repo, pull.head_repo, pull.author_association)
    approved_head = None
    if with_approval and needs:
        approval = read_approval(ctx.gh, ctx.repo, pull.number, ctx.own_login)
        approved_head = approval.head_sha if approval is not None else None
    return plan.PullState(
        pull.number,
        pull.head_sha,
        pull.author,
        pull.author_association,
        pull.head_repo,
        pull.from_outside(ctx.repo),
        needs,
        approved_head,
        pull.head_ref,
    )


def retest(ctx: Context, command: Command) -> render.Outcome:
    """/retest [SUITE …]: rerun L1 on the PR head (``forksync.run_l1``, updated in place); named
    suites rerun alone, the others keep their results on that commit."""
    known = [s.name for s in ctx.config.l1.suites]
    pull = None
    if ctx.task.is_pull_request and all(name in known for name in command.args):
        pull = pull_state(ctx, with_approval=True)
    return execute(ctx, plan.plan_retest(command, ctx.task.is_pull_request, known, pull))


def bisect(ctx: Context, command: Command) -> render.Outcome:
    """/bisect SUITE-OR-METRIC [good=SHA] [bad=SHA]: bisect a trunk regression on the l2 queue."""
    benches = plan.Benchmarks({b.name: tuple(m.name for m in b.metrics) for b in ctx.config.l2.benchmarks})
    return execute(ctx, plan.plan_bisect(command, benches, ctx.task.issue_number))


def digest(ctx: Context, command: Command) -> render.Outcome:
    """/digest: refresh the period's digest issue now (the same task the daily beat sends)."""
    return execute(ctx, plan.plan_digest(command))


def l3(ctx: Context, command: Command) -> render.Outcome:
    """/l3 WORKLOAD and /signoff WORKLOAD: read the workload's newest check on the PR head, plan
    (``plan.plan_l3`` over ``workers/testing/l3.py``'s planners), act."""
    from workers.testing.l3 import current, is_owner

    has_checks = isinstance(ctx.gh, Checks)
    head_sha, found = "", None
    if ctx.task.is_pull_request and has_checks:
        assert isinstance(ctx.gh, Checks)
        head_sha = ctx.pull().head_sha
        w = ctx.config.workload(command.target)
        # (/signoff by someone who is no owner is refused before anything is read, as before)
        if w is not None and (command.name == "l3" or is_owner(ctx.author, w)):
            found = current(ctx.gh, ctx.repo, head_sha, w.name)
    services = ctx.services if isinstance(ctx.services, Services) else None
    can_queue = services is not None and services.send_task is not None
    return execute(
        ctx,
        plan.plan_l3(
            command, ctx.task.is_pull_request, has_checks, head_sha, ctx.config, found, ctx.author, can_queue
        ),
    )


# --------------------------------------------------------------------------- /approve


def approve(ctx: Context, command: Command) -> render.Outcome:
    """/approve: on forksync's own pick PR, the resolution at its head (learned into the fork's
    memory, ``plan.plan_approve_resolution``); on an outside PR, that it may run on self-hosted
    runners at its current head."""
    pull = pull_state(ctx) if ctx.task.is_pull_request else None
    if pull is not None and pull.is_pick:
        return execute(ctx, plan.plan_approve_resolution(command, pull, ctx.author), open_fork(ctx))
    body = approval_body(pull.number, pull.head_sha, ctx.author) if pull is not None else ""
    marker = approval_marker(pull.number) if pull is not None else ""
    return execute(
        ctx, plan.plan_approve(command, ctx.task.is_pull_request, pull, marker, body, APPROVED_LABEL)
    )
