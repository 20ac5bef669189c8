"""Recovery of comment commands whose webhook was lost: which recent comments still need an answer.

A pure planner over plain data: given a repository's recent comments (one listing, oldest first),
it returns a :class:`Recover` action for each comment that holds a command, was written by a
person, is older than a grace period (its own delivery had its chance) and has no reply of ours
carrying its reply marker. The executor (``workers/jobs/recover_commands.py``) enqueues each as
the ``forksync.on_comment`` task; the handler's own "already answered" check makes a re-run
idempotent, so recovering twice never runs a command twice.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.commands import parse
from core.github.records import CommentInfo
from core.render import carries_marker
from core.render.commands import reply_marker
from workers.commands.handler import is_bot


def _author_type(login: str) -> str:
    return "Bot" if login.lower().endswith("[bot]") else "User"


@dataclass(frozen=True)
class Recover:
    """Answer comment ``comment_id`` on #``issue_number``: its delivery never produced a reply."""

    repo: str
    installation_id: int
    issue_number: int
    comment_id: int
    author: str
    is_pull_request: bool

    def task_kwargs(self) -> dict[str, Any]:
        """The ``forksync.on_comment`` kwargs (core/tasknames.py), as the webhook view sends them."""
        return {
            "installation_id": self.installation_id,
            "repo": self.repo,
            "issue_number": self.issue_number,
            "comment_id": self.comment_id,
            "author": self.author,
            "author_type": _author_type(self.author),
            "is_pull_request": self.is_pull_request,
            "delivery": f"recovery-{self.comment_id}",
        }


_PULL_URL = re.compile(r"/pull/[0-9]+(?:#|$)")


def plan(
    repo: str,
    installation_id: int,
    comments: Sequence[CommentInfo],
    *,
    own_login: str | None,
    now: float,
    grace_s: float,
) -> list[Recover]:
    """The comments of ``comments`` that hold commands and were never answered (see the module docstring)."""
    ours = [
        c.body
        for c in comments
        if (c.author.lower() == own_login.lower() if own_login else is_bot(c.author, _author_type(c.author)))
    ]
    actions = []
    for comment in comments:
        if is_bot(comment.author, _author_type(comment.author), own_login):
            continue
        if comment.created_at and comment.created_at > now - grace_s:
            continue  # its own delivery may still be on the way or queued
        if not parse(comment.body):
            continue
        marker = reply_marker(comment.id)
        if any(carries_marker(body, marker) for body in ours):
            continue
        actions.append(
            Recover(
                repo,
                installation_id,
                comment.issue_number,
                comment.id,
                comment.author,
                bool(_PULL_URL.search(comment.html_url or "")),
            )
        )
    return actions
