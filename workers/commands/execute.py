"""The one executor of planned comment commands (:mod:`workers.commands.plan`): it performs each
action over the GitHub roles, the fork's git refs and the task queue, and returns the answer.

Actions run in order; the answer is the last one an action gives (a :class:`Reply`, the
``started``/``unavailable`` outcome of an :class:`Enqueue`, the chain a :class:`MoveCommit`
landed in). A plan without an answer is a bug in its planner, reported as such.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from core.errors import ForksyncError
from core.github.roles import Checks, Issues
from core.render import commands as render
from workers.commands.plan import (
    Action,
    AddLabels,
    ApplyL3,
    EditPull,
    Enqueue,
    LearnResolutions,
    MarkCommit,
    MoveCommit,
    PostMarked,
    PushBranch,
    Reply,
)
from workers.commands.services import Services, fetch_pull_branch, fork_auth, send_task
from workers.engine.decisions import Disposition, write_decision
from workers.engine.pair import FORK_NOTES_REF

if TYPE_CHECKING:
    from workers.commands.handler import Context
    from workers.engine.pair import Pair

log = logging.getLogger("forksync.commands")


class NotesMoved(Exception):
    """The decisions notes moved between our read and our push: read again and plan again."""


def execute(ctx: Context, actions: Sequence[Action], pair: Pair | None = None) -> render.Outcome:
    """Perform ``actions`` for the command of ``ctx``; ``pair``: the fork as read for the plan
    (needed by the actions that write git refs)."""
    from workers.commands.handler import bot_comment, post_comment

    answer: render.Outcome | None = None
    for action in actions:
        if isinstance(action, Reply):
            answer = action.outcome
        elif isinstance(action, Enqueue):
            answer = (
                action.started if send_task(ctx, action.task, dict(action.kwargs)) else action.unavailable
            )
        elif isinstance(action, MarkCommit):
            _mark(ctx, _need(pair, action), action)
        elif isinstance(action, MoveCommit):
            answer = _move(ctx, _need(pair, action), action)
        elif isinstance(action, LearnResolutions):
            answer = _learn(ctx, _need(pair, action), action)
        elif isinstance(action, PostMarked):
            existing = bot_comment(ctx.gh, ctx.repo, action.number, action.marker, ctx.own_login)
            post_comment(ctx.gh, ctx.repo, action.number, action.body, existing)
        elif isinstance(action, PushBranch):
            with fork_auth(ctx):
                _need(pair, action).push_to_fork(action.head, action.branch, force=True)
        elif isinstance(action, EditPull) and isinstance(ctx.gh, Issues):
            # (a test fake without the issues role keeps the PR's text)
            ctx.gh.update_issue(ctx.repo, action.number, title=action.title, body=action.body)
        elif isinstance(action, ApplyL3):
            _apply_l3(ctx, action)
        elif isinstance(action, AddLabels) and isinstance(ctx.gh, Issues):
            # (a test fake without the issues role shows the comment only)
            ctx.gh.add_labels(ctx.repo, action.number, list(action.labels))
    if answer is None:
        raise ForksyncError(
            "the command's plan gave no answer (a bug in forksync)", "report it to the bot's operators"
        )
    return answer


def _need(pair: Pair | None, action: Any) -> Pair:
    if pair is None:
        raise ForksyncError(
            f"{type(action).__name__} needs the fork's git data (a bug in forksync)",
            "report it to the bot's operators",
        )
    return pair


def _mark(ctx: Context, pair: Pair, action: MarkCommit) -> None:
    """Write the decision on the fork's notes and push it (fast-forward only); NotesMoved when
    another decision landed between the read and the push."""
    new = write_decision(
        pair.repo, pair.fork_notes_tip, action.sha, Disposition(action.disposition), action.note
    )
    if new is None:
        return  # already so recorded
    try:
        with fork_auth(ctx):
            pair.push_to_fork(new, pair.notes_ref)
    except ForksyncError as exc:
        if "moved while" in exc.problem:
            raise NotesMoved(exc.problem) from exc
        raise
    pair.repo.git("update-ref", FORK_NOTES_REF, new)
    log.info("%s: %s marked %s by %s", ctx.repo, action.sha, action.disposition, ctx.author)


def _move(ctx: Context, pair: Pair, action: MoveCommit) -> render.Outcome:
    from workers.engine.planning import move_commit

    with fork_auth(ctx):
        record = move_commit(pair, ctx.config, action.sha, action.op, action.into)
    log.info("%s: /%s %s by %s", ctx.repo, action.command.name, action.sha, ctx.author)
    if record is None:
        return render.unchained(action.command, action.shown)
    return render.chained(action.command, action.shown, record.id, len(record.commits))


def _learn(ctx: Context, pair: Pair, action: LearnResolutions) -> render.Outcome:
    """The PR's branch fetched, the resolutions on it read (``learn_branch``) and pushed onto the
    fork's resolution memory ref."""
    import pygit2

    from workers.engine.resolve.learning import learn_branch, record_in_fork

    head = fetch_pull_branch(ctx, pair, action.number, action.branch)
    repo = pygit2.Repository(str(pair.repo.path))
    records = learn_branch(repo, pair.fork_tip, head, ctx.config.ledger.trailer_patterns, action.source)
    with fork_auth(ctx):
        learned = record_in_fork(
            pair,
            records,
            render.learned_resolutions_message(len(records), action.number),
            ctx.config.resolve.memory_ref,
        )
    log.info(
        "%s: %d resolution(s) of #%d learned (/approve by %s)", ctx.repo, learned, action.number, ctx.author
    )
    return render.resolution_approved_answer(action.command, action.head_sha, learned)


def _apply_l3(ctx: Context, action: ApplyL3) -> None:
    """The L3 check runs written and the runs queued (straight to the queue: the run task's kwargs)."""
    from workers.testing.l3 import apply_l3

    if not isinstance(ctx.gh, Checks):
        raise ForksyncError(
            "the L3 check was planned without the check-run adapter (a bug in forksync)",
            "report it to the bot's operators",
        )
    services = ctx.services if isinstance(ctx.services, Services) else None
    send = services.send_task if services is not None else None

    def enqueue(name: str, kwargs: Any) -> None:
        assert send is not None  # planned only when a queue is reachable (plan_l3's can_queue)
        send(name, dict(kwargs))

    apply_l3(
        ctx.gh,
        ctx.repo,
        action.head_sha,
        action.steps,
        enqueue=enqueue if send is not None else None,
        installation_id=ctx.task.installation_id,
    )
