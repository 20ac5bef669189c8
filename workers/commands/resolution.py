"""``/resolve [agent]`` and ``/resolve show FILE`` on a forksync pick PR.

``/resolve`` rebuilds the PR's branch: each upstream commit the branch carries (its trailers) is
cherry-picked again onto the fork's trunk in memory and resolved (memory from the fork's
``refs/forksync/resolutions``, the deterministic strategies, the agent with ``/resolve agent``),
behind the rails. When every pick resolves, the branch is replaced, which is allowed only while
every commit on it is forksync's: a maintainer's own pushed resolution is kept, never
force-pushed over (it goes into the memory when the PR merges). ``/resolve show FILE`` answers
one file's conflict and resolution and writes nothing. Every outcome is answered.
"""

from __future__ import annotations

import pygit2

from core.commands import Command
from core.github.roles import Comments, Issues
from core.render import commands as render
from core.render import marker as render_marker
from core.render import resolution as show
from workers.commands.actions import open_fork
from workers.commands.handler import Context, bot_comment, post_comment
from workers.commands.services import fork_auth
from workers.engine.bundle import BOT_COMMITTER, PickStyle
from workers.engine.pair import normalise_web_url
from workers.engine.resolve.agent import agent_step, from_config
from workers.engine.resolve.branch import BuildResult, build_through, plan_branch, read_branch
from workers.engine.resolve.learning import learn_branch, record_in_fork
from workers.engine.resolve.memory import fetch_memory
from workers.engine.resolve.pick import AgentStep
from workers.engine.resolve.rails import Check

PR_HEAD_REF = "refs/forksync/pr-head/"
BRANCH_PREFIX = "forksync/"


def _committer(ctx: Context) -> tuple[str, str]:
    text = ctx.config.bundle.committer
    name, _, email = text.partition(" <")
    return (name, email.rstrip(">")) if email else BOT_COMMITTER


def resolve_action(ctx: Context, command: Command) -> render.Outcome:
    """/resolve, /resolve agent, /resolve show FILE (see the module docstring)."""
    if not ctx.task.is_pull_request:
        return render.resolve_on_issue(command)
    pull = ctx.pull()
    if pull.from_outside(ctx.repo) or not pull.head_ref.startswith(BRANCH_PREFIX):
        return render.resolve_not_a_pick(command, pull.head_ref)
    with_agent = command.args[:1] == ("agent",)
    if with_agent and not ctx.config.resolve.agent.configured:
        return render.resolve_no_agent(command)
    pair = open_fork(ctx)
    head_ref = f"{PR_HEAD_REF}{pull.number}"
    with fork_auth(ctx):
        pair.repo.git("fetch", "--quiet", "--no-tags", "--", pair.fork.remote, f"+refs/heads/{pull.head_ref}:{head_ref}")
    repo = pygit2.Repository(str(pair.repo.path))
    committer = _committer(ctx)
    plan = plan_branch(read_branch(repo, pair.fork_tip, head_ref), ctx.config.ledger.trailer_patterns, committer[1])
    upstream = [pair.repo.rev_parse(sha) for sha in plan.upstream]
    missing = [s for s, full in zip(plan.upstream, upstream, strict=True) if full is None]
    if not plan.upstream or missing:
        return render.resolve_no_upstream(command, missing, ctx.config.ledger.trailer)
    shas = [s for s in upstream if s is not None]
    memory = fetch_memory(pair, ctx.config.resolve.memory_ref)
    cfg = ctx.config.resolve
    checks = tuple(Check(suffix, argv) for suffix, argv in cfg.checks)
    agent = from_config(cfg.agent) if with_agent or cfg.auto_agent else None
    style = PickStyle(trailer=ctx.config.ledger.trailer,
                      upstream_url=normalise_web_url(ctx.config.upstream.url) if ctx.config.upstream.url else None,
                      committer=committer)

    def agent_for(onto: str) -> AgentStep | None:
        return agent_step(agent, repo, onto=onto, checks=checks, history_commits=cfg.agent.history_commits) if agent else None

    built = build_through(repo, shas, pair.fork_tip, config=ctx.config, style=style, memory=memory, agent_for=agent_for)

    if command.args[:1] == ("show",):
        return _show(command, built, command.args[1])
    if plan.human_owned:
        return render.resolve_human_owned(command, [c.sha for c in plan.human], _details(built))
    if built.head is None:
        waiting = sum(len(o.waiting) for o in built.outcomes)
        return render.resolve_waiting(command, waiting, agent is not None, _details(built))
    with fork_auth(ctx):
        pair.push_to_fork(built.head, f"refs/heads/{pull.head_ref}", force=True)
    _update_pr_text(ctx, pull.number, built)
    files = sum(len(o.entries) for o in built.outcomes)
    return render.resolved(command, files, len(built.outcomes), pull.head_ref, built.head, _details(built))


def _update_pr_text(ctx: Context, number: int, built: BuildResult) -> None:
    """The PR's sections replaced in place and its title retitled RESOLVED (where the adapter can)."""
    if not isinstance(ctx.gh, Issues):
        return
    pull = ctx.gh.get_pull_request(ctx.repo, number)
    title, body = pull.title, pull.body or ""
    for outcome in built.outcomes:
        if not outcome.clean:
            body = show.replace_section(body, show.conflict_resolution_section(outcome), outcome.commit)
    ctx.gh.update_issue(ctx.repo, number, title=show.retitle_resolved(title), body=body)


def _details(built: BuildResult) -> str:
    return "\n".join(show.conflict_resolution_section(o, with_details=False) for o in built.outcomes if not o.clean)


def _show(command: Command, built: BuildResult, path: str) -> render.Outcome:
    for outcome in built.outcomes:
        text = show.show_file(outcome, path)
        if text is not None:
            return render.resolve_show(command, path, outcome.commit, text)
    conflicted = sorted({e.path for o in built.outcomes for e in o.entries} | {w.path for o in built.outcomes for w in o.waiting})
    return render.resolve_show_unknown(command, path, conflicted)


# --------------------------------------------------------------------------- approval of a resolution


def resolution_marker(pr: int) -> str:
    return render_marker("resolution-approval", str(pr))


def approve_resolution(ctx: Context, command: Command) -> render.Outcome:
    """/approve on a forksync pick PR: the maintainer's word on its resolution, at the current head.

    Recorded as a marked bot comment (naming the head sha: a later push needs a new approval),
    and the branch's resolutions go into the fork's memory at once ("approved proposals").
    """
    pull = ctx.pull()
    pair = open_fork(ctx)
    head_ref = f"{PR_HEAD_REF}{pull.number}"
    with fork_auth(ctx):
        pair.repo.git("fetch", "--quiet", "--no-tags", "--", pair.fork.remote, f"+refs/heads/{pull.head_ref}:{head_ref}")
    repo = pygit2.Repository(str(pair.repo.path))
    records = learn_branch(repo, pair.fork_tip, head_ref, ctx.config.ledger.trailer_patterns,
                           f"approved #{pull.number} by @{ctx.author}")
    with fork_auth(ctx):
        learned = record_in_fork(pair, records, f"forksync: learn {len(records)} resolution(s) approved in #{pull.number}",
                                 ctx.config.resolve.memory_ref)
    body = render.resolution_approval_record(resolution_marker(pull.number), pull.head_sha, ctx.author)
    existing = bot_comment(ctx.gh, ctx.repo, pull.number, resolution_marker(pull.number), ctx.own_login)
    post_comment(ctx.gh, ctx.repo, pull.number, body, existing)
    return render.resolution_approved_answer(command, pull.head_sha, learned)


def resolution_approved(gh: Comments, repo: str, pr: int, head_sha: str, own_login: str | None = None) -> bool:
    """True when a maintainer approved PR #pr's resolution at ``head_sha`` (for whoever merges)."""
    comment = bot_comment(gh, repo, pr, resolution_marker(pr), own_login)
    return comment is not None and comment.author_type == "Bot" and f"Approved head: `{head_sha}`" in comment.body
