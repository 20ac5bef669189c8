"""The answered-comment index (``core/store/answers.py``) as the comment handler reads and writes
it (``workers.commands.handler.AnswerIndex``). A store that fails is reported as unknown (None),
so the handler falls back to reading the thread rather than answering twice."""

from __future__ import annotations

import logging

from core.store import Store, answers

log = logging.getLogger(__name__)


class StoreAnswerIndex:
    def __init__(self, store: Store) -> None:
        self.store = store

    def lookup(self, repo: str, comment_id: int) -> answers.CommentAnswer | bool | None:
        """The comment's record; False when there is none; None when the store cannot tell."""
        try:
            found = answers.get(self.store, repo, comment_id)
        except Exception as exc:  # SQLAlchemy/driver errors
            log.warning(
                "answered-comment index unavailable (%s); reading the thread instead", type(exc).__name__
            )
            return None
        return False if found is None else found

    def replying(
        self, repo: str, comment_id: int, issue_number: int, body: str, reactions: tuple[str, ...]
    ) -> None:
        self._record(repo, comment_id, issue_number, answers.REPLYING, body, reactions)

    def answered(self, repo: str, comment_id: int, issue_number: int) -> None:
        self._record(repo, comment_id, issue_number, answers.ANSWERED)

    def _record(
        self,
        repo: str,
        comment_id: int,
        issue_number: int,
        state: str,
        body: str = "",
        reactions: tuple[str, ...] = (),
    ) -> None:
        try:
            answers.record(self.store, repo, comment_id, issue_number, state, body, reactions)
        except Exception as exc:  # the reply still goes out; a redelivery then reads the thread
            log.warning(
                "answered-comment index: could not record comment %s as %s (%s)",
                comment_id,
                state,
                type(exc).__name__,
            )
