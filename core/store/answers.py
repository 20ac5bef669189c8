"""The index of answered comments in the SQL store: how the comment handler knows "already
answered" without paging through the thread (issue 14, finding 8).

Before posting a reply the handler records the comment as ``replying`` with the reply's body and
reactions (its commands ran: a retry posts that reply alone); once the reply is on GitHub, as
``answered``. A comment with no row was never answered by this deployment's handler.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import delete, select

from core.store.db import Store
from core.store.models import CommentAnswerRow

REPLYING = "replying"
ANSWERED = "answered"


@dataclass(frozen=True)
class CommentAnswer:
    repo: str
    comment_id: int
    issue_number: int
    state: str
    body: str
    reactions: tuple[str, ...]


def get(store: Store, repo: str, comment_id: int) -> CommentAnswer | None:
    """The record of comment ``comment_id`` on ``repo``, or None (never answered here)."""
    with store.engine.connect() as conn:
        row = conn.execute(
            select(
                CommentAnswerRow.issue_number,
                CommentAnswerRow.state,
                CommentAnswerRow.body,
                CommentAnswerRow.reactions,
            ).where(CommentAnswerRow.repo == repo, CommentAnswerRow.comment_id == comment_id)
        ).first()
    if row is None:
        return None
    issue, state, body, reactions = row
    return CommentAnswer(
        repo, comment_id, int(issue), str(state), str(body), tuple(r for r in str(reactions).split(",") if r)
    )


def record(
    store: Store,
    repo: str,
    comment_id: int,
    issue_number: int,
    state: str,
    body: str = "",
    reactions: tuple[str, ...] = (),
    now: float | None = None,
) -> None:
    """Write (or overwrite) the record of a comment: ``replying`` with its reply, or ``answered``."""
    now = time.time() if now is None else now
    with store.session() as db:
        row = db.get(CommentAnswerRow, (repo, comment_id))
        if row is None:
            db.add(
                CommentAnswerRow(
                    repo=repo,
                    comment_id=comment_id,
                    issue_number=issue_number,
                    state=state,
                    body=body,
                    reactions=",".join(reactions),
                    updated_at=now,
                )
            )
            return
        row.state = state
        row.updated_at = now
        if body:
            row.body = body
            row.reactions = ",".join(reactions)


def prune(store: Store, before: float) -> int:
    """Drop records older than ``before`` (comments older than redeliveries and recovery reach)."""
    with store.session() as db:
        result = db.execute(delete(CommentAnswerRow).where(CommentAnswerRow.updated_at < before))
        return int(getattr(result, "rowcount", 0) or 0)
