"""What each command does: one function per command, ``(Context, Command) -> Outcome``.

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

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from core import tasknames
from core.commands import Command
from core.errors import ForksyncError
from core.github.roles import Checks, Issues, Pulls
from core.render import commands as render
from workers.commands.approval import (
    APPROVED_LABEL,
    approval_body,
    approval_marker,
    needs_approval,
    read_approval,
)
from workers.commands.handler import Context, bot_comment, post_comment
from workers.engine.decisions import Disposition, write_decision
from workers.engine.ledger import Ledger, LedgerEntry, load_ledger, matching
from workers.engine.pair import FORK_NOTES_REF, Pair, normalise_web_url, open_pair

log = logging.getLogger("forksync.commands")

SendTask = Callable[[str, dict[str, Any]], None]


@dataclass
class Services:
    """What actions reach outside GitHub comments; None means "not deployed here"."""

    fork_location: Callable[[str], str]  # "owner/repo" -> git URL or local path
    upstream_location: Callable[[str], str] = field(default=lambda url: url)  # config url -> git location
    git_token: Callable[[], str | None] = field(default=lambda: None)
    send_task: SendTask | None = None


# --------------------------------------------------------------------------- the fork side


class RefProblem(Exception):
    """REF names no commit, or several: the action answers with the right outcome."""

    def __init__(self, ref: str, candidates: tuple[LedgerEntry, ...]) -> None:
        super().__init__(ref)
        self.ref = ref
        self.candidates = candidates


@contextlib.contextmanager
def git_auth(token: str | None, url: str) -> Iterator[None]:
    """Let this task's git processes send ``token`` to ``url`` only (environment only; restored after).

    The header is scoped with ``http.<url>.extraHeader`` so that fetching upstream (another host,
    perhaps) never carries the fork's installation token. Workers run tasks in processes (Celery's
    prefork pool), so the environment is this task's alone while it runs.
    """
    if not token or not url.startswith(("http://", "https://")):
        yield
        return
    import base64

    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    extra = {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"http.{url}.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
    }
    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def fork_auth(ctx: Context) -> contextlib.AbstractContextManager[None]:
    services = services_of(ctx)
    return git_auth(services.git_token(), services.fork_location(ctx.repo))


def services_of(ctx: Context) -> Services:
    services = ctx.services
    if not isinstance(services, Services):
        raise ForksyncError("this deployment has no git access for commands", "configure the workers (FORKSYNC_GIT_URL_MAP)")
    return services


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


_VERB = {"skip": "wont_port", "defer": "deferred", "urgent": "urgent"}


def decide(ctx: Context, command: Command) -> render.Outcome:
    """/skip, /defer, /urgent: record the decision in the fork's notes, pushed before replying."""
    disposition = Disposition(_VERB[command.name])
    reason = command.reason or ""
    note = f"{reason} (by @{ctx.author} via /{command.name})".strip()
    for attempt in (1, 2):
        pair, ledger = load(ctx)
        try:
            entry = resolve(ledger, command.ref)
        except RefProblem as problem:
            return ref_outcome(ctx, command, problem)
        shown = label(ctx, entry)
        if entry.carriers and disposition is not Disposition.URGENT:
            carriers = ", ".join(f"`{c[:10]}`" for c in entry.carriers)
            return render.failed(
                command,
                f"{shown} is already picked (carried by {carriers}), so it cannot be {disposition.value}",
                "revert the pick in the fork first if it should not be there",
            )
        if entry.carriers:
            return render.done(command, f"{shown} is already picked; nothing to hurry")
        new = write_decision(pair.repo, pair.fork_notes_tip, entry.sha, disposition, note)
        if new is None:
            break
        try:
            with fork_auth(ctx):
                pair.push_to_fork(new, pair.notes_ref)
        except ForksyncError as exc:
            # Another decision landed between our read and our push (the push must fast-forward):
            # read again and write ours on top, once; a second race is reported.
            if attempt == 2 or "moved while" not in exc.problem:
                raise
            continue
        pair.repo.git("update-ref", FORK_NOTES_REF, new)
        break
    log.info("%s: %s marked %s %s by %s", ctx.repo, entry.sha, disposition.value, reason, ctx.author)
    said = f"marked {shown} as **{disposition.value}**" + (f": {render.inline(reason)}" if reason else "")
    if disposition is Disposition.URGENT:
        what = _urgent_outlook(ctx, pair, entry.sha)
        started = _send(ctx, tasknames.INGEST, {"reason": f"/urgent by @{ctx.author}"})
        if started:
            return render.started(command, said + "; ingestion started now: " + what)
        return render.done(command, said + "; the next ingestion (push or poll) acts on it: " + what)
    if disposition is Disposition.DEFERRED:
        return render.done(command, said + "; it stays in the backlog and out of bundles")
    return render.done(command, said + "; it will not be picked")


def _urgent_outlook(ctx: Context, pair: Pair, sha: str) -> str:
    """What ingestion will do with an urgent commit, from its trial pick alone onto the fork tip
    (the same trial the planner makes): its own PR when clean, else an issue naming the files."""
    import pygit2

    from workers.engine.bundle import URGENT_BRANCH
    from workers.engine.changes import commit_changes
    from workers.engine.planning import urgent_trial
    from workers.engine.symbols import stoplist

    repo = pygit2.Repository(str(pair.repo.path))
    conflicts = urgent_trial(repo, pair.fork_tip, commit_changes(repo, sha, stoplist(ctx.config.risk.symbol_stoplist)))
    trunk = render.code(ctx.config.fork.branch)
    if not conflicts:
        return (
            f"it picks cleanly onto {trunk}, so it gets a PR of its own on {render.code(URGENT_BRANCH + sha[:7])}, "
            "built on the fork tip ahead of the bundles; merging it does not move the frontier"
        )
    files = ", ".join(render.code(path) for path in conflicts)
    return (
        f"its pick onto {trunk} conflicts in {files}, so no PR can be built; an issue will name the files "
        "and the commands to pick it by hand (the frontier stays either way)"
    )


def _send(ctx: Context, name: str, extra: dict[str, Any]) -> bool:
    services = ctx.services
    if not isinstance(services, Services) or services.send_task is None:
        return False
    kwargs: dict[str, Any] = {"installation_id": ctx.task.installation_id, "repo": ctx.repo, **extra}
    if ctx.task.delivery:
        kwargs.setdefault("delivery", ctx.task.delivery)
    services.send_task(name, kwargs)
    return True


# --------------------------------------------------------------------------- read-only commands


def help_(ctx: Context, command: Command) -> render.Outcome:
    topic = command.target or None
    return render.done(command, "the commands forksync understands" if not topic else f"how to use `/{topic}`", render.help_table(topic))


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
    summary = f"{m.days_behind:.1f} days behind upstream, {m.backlog} backlog commits, {m.pending} pending"
    return render.done(command, summary, render.status_details(view))


def _bundles(ctx: Context, pair: Pair) -> tuple[render.OpenItem, ...]:
    """Bundle branches in the fork (``forksync/bundle/*``), with their open PRs when GitHub has them."""
    import re

    with fork_auth(ctx):
        out = pair.repo.text("ls-remote", "--", pair.fork.remote, "refs/heads/forksync/bundle/*")
    branches = sorted(line.split("\t", 1)[1].removeprefix("refs/heads/") for line in out.splitlines() if "\t" in line)
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
    from workers.engine.planning import move_commit

    pair, ledger = load(ctx)
    try:
        entry = resolve(ledger, command.ref)
    except RefProblem as problem:
        return ref_outcome(ctx, command, problem)
    shown = label(ctx, entry)
    into = command.option("into")
    with fork_auth(ctx):
        record = move_commit(pair, ctx.config, entry.sha, "add" if command.name == "chain" else "remove", into)
    log.info("%s: /%s %s by %s", ctx.repo, command.name, entry.sha, ctx.author)
    if record is None:
        return render.done(command, f"took {shown} out of its chain; file and symbol links will not pull it back in")
    return render.done(
        command, f"moved {shown} into chain {render.code(record.id)} ({len(record.commits)} commits, upstream order)"
    )


def bundle(ctx: Context, command: Command) -> render.Outcome:
    """/bundle [max=N] [dry-run]: plan now; dry-run replies with the plan, else ingestion runs."""
    import dataclasses

    from workers.engine.planning import make_plan

    config = ctx.config
    limit = command.max_commits
    if limit is not None:
        config = dataclasses.replace(config, bundle=dataclasses.replace(config.bundle, max_commits=limit))
    pair, ledger = load(ctx)
    planned = make_plan(pair, config, ledger=ledger)
    plan = planned.plan
    if not plan.bundles and not plan.chains and not plan.urgent:
        m = ledger.metrics
        why = "every upstream commit after the base is picked, deferred or won't port"
        if m.deferred:
            why += f" ({m.deferred} deferred)"
        return render.nothing_to_bundle(command, why)

    def lines(shas: tuple[str, ...]) -> tuple[render.CommitLine, ...]:
        # Every planned commit is a ledger entry; a sha alone is shown should that ever not hold.
        return tuple(line_of(e) if (e := ledger.entry(s)) is not None else render.CommitLine(s) for s in shas)

    groups = [
        render.PlannedGroup(
            "urgent",
            u.id,
            lines(u.commits),
            (f"conflicts on the fork tip in {', '.join(u.conflicts)}" if u.conflicts else "marked urgent: alone on the fork tip",),
        )
        for u in plan.urgent
    ]
    groups += [render.PlannedGroup("bundle", b.id, lines(b.commits)) for b in plan.bundles] + [
        render.PlannedGroup(
            "chain",
            c.id,
            lines(c.commits),
            tuple(f"{r.commit[:7]} {r.kind}: {r.detail}" for r in c.reasons),
        )
        for c in plan.chains
    ]
    count = sum(len(g.commits) for g in groups)
    summary = f"{len(plan.bundles)} bundle(s) and {len(plan.chains)} chain(s), {count} commits"
    if plan.urgent:
        summary += f" ({len(plan.urgent)} urgent, each in a PR of its own)"
    if command.flag("dry-run"):
        return render.done(command, f"the plan (dry run, nothing pushed): {summary}", render.plan_table(groups, web_url(ctx)))
    extra: dict[str, Any] = {"reason": f"/bundle by @{ctx.author}"}
    if limit is not None:
        extra["max_commits"] = limit  # this ingestion only; the config is not changed
    if not _send(ctx, tasknames.INGEST, extra):
        return render.not_available(command, "the ingestion worker")
    note = ""
    if limit is not None:
        note = (
            f" with at most {limit} commit(s) per bundle (`max={limit}`, for this run only; later runs bundle by "
            f"`bundle.max_commits` = {ctx.config.bundle.max_commits} again)"
        )
    return render.started(
        command,
        f"planned {summary}; ingestion started: bundle PRs will be opened or updated{note}",
        render.plan_table(groups, web_url(ctx)),
    )


# --------------------------------------------------------------------------- tests: L1, L2, L3


def _pr_only(ctx: Context, command: Command) -> render.Outcome | None:
    if ctx.task.is_pull_request:
        return None
    return render.failed(
        command, f"`/{command.name}` works on pull requests; this is an issue", "comment it on the PR it is about"
    )


def retest(ctx: Context, command: Command) -> render.Outcome:
    """/retest [SUITE …]: rerun L1 on the PR head (``forksync.run_l1``, updated in place); named
    suites rerun alone, the others keep their results on that commit."""
    if (refused := _pr_only(ctx, command)) is not None:
        return refused
    known = [s.name for s in ctx.config.l1.suites]
    unknown = [name for name in command.args if name not in known]
    if unknown:
        return render.unknown_suites(command, unknown, known)
    pull = ctx.pull()
    # The same rule as the L1 job's (workers/jobs/l1_job.py): refusing here answers at once, instead of
    # a 🚀 followed by a check run that waits for /approve.
    if needs_approval(ctx.repo, pull.head_repo, pull.author_association):
        approval = read_approval(ctx.gh, ctx.repo, pull.number, ctx.own_login)
        if approval is None or approval.head_sha != pull.head_sha:
            return render.failed(
                command,
                f"this PR comes from outside ({pull.head_repo or 'a deleted fork'}) and its head `{pull.head_sha[:10]}` "
                "is not approved for the self-hosted runners",
                "a maintainer reviews the change and comments `/approve`, then `/retest`",
            )
    extra: dict[str, Any] = {"head_sha": pull.head_sha, "number": pull.number}
    if command.args:
        extra["suites"] = list(command.args)
    if not _send(ctx, tasknames.RUN_L1, extra):
        return render.not_available(command, "the L1 worker queue")
    if command.args:
        scope = (
            f"rerunning {', '.join(render.code(a) for a in command.args)} on `{pull.head_sha[:10]}`; the other suites "
            "keep their results on this commit (one with no result on it yet runs too)"
        )
    else:
        listed = ", ".join(render.code(n) for n in known) or "none are configured"
        scope = f"rerunning all L1 suites ({listed}) on `{pull.head_sha[:10]}`"
    return render.started(command, f"{scope}; the `forksync / L1` check updates in place")


def bisect(ctx: Context, command: Command) -> render.Outcome:
    """/bisect SUITE-OR-METRIC [good=SHA] [bad=SHA]: bisect a trunk regression on the l2 queue."""
    target = command.target
    benches = ctx.config.l2.benchmarks
    bench = next((b for b in benches if b.name == target), None) or next(
        (b for b in benches if any(m.name == target for m in b.metrics)), None
    )
    if bench is None:
        names = [b.name for b in benches] + [m.name for b in benches for m in b.metrics]
        listed = ", ".join(render.code(n) for n in names) if names else "none are configured"
        return render.failed(
            command,
            f"there is no L2 benchmark or metric {render.code(target)} (known: {listed})",
            "use a name under `l2.benchmarks` in `.github/forksync.yml`",
        )
    extra: dict[str, Any] = {"benchmark": bench.name, "issue_number": ctx.task.issue_number}
    for key in ("good", "bad"):
        if command.option(key):
            extra[key] = command.option(key)
    if not _send(ctx, tasknames.BISECT, extra):
        return render.not_available(command, "the L2 worker queue")
    what = f"benchmark {render.code(bench.name)}" + (f" (metric {render.code(target)})" if target != bench.name else "")
    return render.started(command, f"bisecting {what} on the l2 queue; the culprit will be posted here")


def digest(ctx: Context, command: Command) -> render.Outcome:
    """/digest: refresh the period's digest issue now (the same task the daily beat sends)."""
    if not _send(ctx, tasknames.DIGEST, {"reason": "/digest"}):
        return render.not_available(command, "the digest task queue")
    return render.started(command, "refreshing this period's pin-update digest issue (label `forksync:digest`); "
                                   "owners of the touched areas are mentioned there once")


def l3(ctx: Context, command: Command) -> render.Outcome:
    """/l3 WORKLOAD and /signoff WORKLOAD: the L3 sign-off check on the PR head (workers/testing/l3.py)."""
    from workers.testing.l3 import request_l3, signoff_l3

    if (refused := _pr_only(ctx, command)) is not None:
        return refused
    checks = ctx.gh if isinstance(ctx.gh, Checks) else None
    if checks is None:
        return render.not_available(command, "the check-run adapter")
    pull = ctx.pull()
    if command.name == "l3":
        services = ctx.services if isinstance(ctx.services, Services) else None
        enqueue = None
        if services is not None and services.send_task is not None:
            send = services.send_task

            def enqueue(name: str, kwargs: Any) -> None:
                send(name, dict(kwargs))

        reply = request_l3(
            checks, ctx.repo, pull.head_sha, command.target, ctx.config,
            requested_by=ctx.author, enqueue=enqueue, installation_id=ctx.task.installation_id,
        )
        if reply.ok:
            return render.started(command, reply.text) if "queued" in reply.text else render.done(command, reply.text)
    else:
        reply = signoff_l3(checks, ctx.repo, pull.head_sha, command.target, ctx.author, ctx.config)
        if reply.ok:
            return render.done(command, reply.text)
    return render.failed(command, reply.text, "")


# --------------------------------------------------------------------------- /approve


def approve(ctx: Context, command: Command) -> render.Outcome:
    """Record that this outside PR may run on self-hosted runners, at its current head."""
    if not ctx.task.is_pull_request:
        return render.failed(command, "`/approve` works on pull requests; this is an issue", "comment it on the PR to approve")
    pull = ctx.pull()
    if not pull.from_outside(ctx.repo):
        return render.done(command, "not needed: this PR's branch is in the repository, so its L1 runs on the self-hosted runners already")
    if not needs_approval(ctx.repo, pull.head_repo, pull.author_association):
        return render.done(
            command,
            f"not needed: @{pull.author} is a {pull.author_association.lower()} of this repository, so this PR's L1 "
            "runs on the self-hosted runners already",
        )
    body = approval_body(pull.number, pull.head_sha, ctx.author)
    existing = bot_comment(ctx.gh, ctx.repo, pull.number, approval_marker(pull.number), ctx.own_login)
    post_comment(ctx.gh, ctx.repo, pull.number, body, existing)
    if isinstance(ctx.gh, Issues):
        ctx.gh.add_labels(ctx.repo, pull.number, [APPROVED_LABEL])
    return render.done(
        command,
        f"approved head `{pull.head_sha[:10]}` of @{pull.author}'s PR for the self-hosted runners; a new push needs a new `/approve`",
    )
