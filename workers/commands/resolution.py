"""``/resolve [agent]`` and ``/resolve show FILE`` on a forksync pick PR, and whether its
resolution was approved (``/approve`` on a pick PR is planned in ``plan.plan_approve_resolution``).

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
from core.github.roles import Comments
from core.render import commands as render
from workers.commands import plan
from workers.commands.actions import open_fork
from workers.commands.execute import execute
from workers.commands.handler import Context, bot_comment
from workers.commands.services import fetch_pull_branch
from workers.engine.bundle import BOT_COMMITTER, PickStyle
from workers.engine.ledger.cache import load_ledger
from workers.engine.pair import normalise_web_url
from workers.engine.resolve.agent import agent_step, from_config
from workers.engine.resolve.branch import build_through, plan_branch, read_branch
from workers.engine.resolve.history import ledger_history
from workers.engine.resolve.memory import fetch_memory
from workers.engine.resolve.pick import AgentStep
from workers.engine.resolve.rails import Check

BRANCH_PREFIX = plan.PICK_PREFIX


def _committer(ctx: Context) -> tuple[str, str]:
    text = ctx.config.bundle.committer
    name, _, email = text.partition(" <")
    return (name, email.rstrip(">")) if email else BOT_COMMITTER


def resolve_action(ctx: Context, command: Command) -> render.Outcome:
    """/resolve, /resolve agent, /resolve show FILE (see the module docstring): read the PR, fetch
    and rebuild its branch in memory, plan (``plan.plan_resolve``), act."""
    pull = ctx.pull() if ctx.task.is_pull_request else None
    refused = plan.resolve_refusal(
        command,
        pull is not None,
        pull.head_ref if pull else "",
        pull.from_outside(ctx.repo) if pull else False,
        ctx.config.resolve.agent.configured,
    )
    if refused is not None:
        return execute(ctx, [refused])
    assert pull is not None  # a refusal otherwise
    with_agent = command.args[:1] == ("agent",)
    pair = open_fork(ctx)
    head_ref = fetch_pull_branch(ctx, pair, pull.number, pull.head_ref)
    repo = pygit2.Repository(str(pair.repo.path))
    committer = _committer(ctx)
    branch = plan_branch(
        read_branch(repo, pair.fork_tip, head_ref), ctx.config.ledger.trailer_patterns, committer[1]
    )
    upstream = [pair.repo.rev_parse(sha) for sha in branch.upstream]
    missing = tuple(s for s, full in zip(branch.upstream, upstream, strict=True) if full is None)
    cfg = ctx.config.resolve
    agent, built = None, None
    if branch.upstream and not missing:
        agent = from_config(cfg.agent) if with_agent or cfg.auto_agent else None
        memory = fetch_memory(pair, cfg.memory_ref)
        checks = tuple(Check(suffix, argv) for suffix, argv in cfg.checks)
        style = PickStyle(
            trailer=ctx.config.ledger.trailer,
            upstream_url=normalise_web_url(ctx.config.upstream.url) if ctx.config.upstream.url else None,
            committer=committer,
        )

        def agent_for(onto: str) -> AgentStep | None:
            return (
                agent_step(agent, repo, onto=onto, checks=checks, history_commits=cfg.agent.history_commits)
                if agent
                else None
            )

        # Why the branch lacks a file: git history plus the ledger's carried commits (a file the
        # fork dropped after carrying its commit is skipped; one whose commit has not landed waits).
        ledger = load_ledger(pair, ctx.config.ledger, upstream_url=ctx.config.upstream.url)
        built = build_through(
            repo,
            [s for s in upstream if s is not None],
            pair.fork_tip,
            config=ctx.config,
            style=style,
            memory=memory,
            agent_for=agent_for,
            history_for=lambda onto: ledger_history(pair.repo, pair.base, onto, ledger),
        )
    state = plan.ResolveState(
        pull.number,
        pull.head_ref,
        pull.title,
        pull.body or "",
        ctx.config.ledger.trailer,
        missing,
        branch.upstream,
        tuple(c.sha for c in branch.human),
        agent is not None,
        built,
    )
    return execute(ctx, plan.plan_resolve(command, state), pair)


# --------------------------------------------------------------------------- approval of a resolution


def resolution_approved(
    gh: Comments, repo: str, pr: int, head_sha: str, own_login: str | None = None
) -> bool:
    """True when a maintainer approved PR #pr's resolution at ``head_sha`` (for whoever merges)."""
    comment = bot_comment(gh, repo, pr, plan.resolution_marker(pr), own_login)
    return (
        comment is not None
        and comment.author_type == "Bot"
        and f"Approved head: `{head_sha}`" in comment.body
    )
