"""The commands' view of GitHub (``CommentGitHub``) over the bot's adapter (``core.github.adapter.GitHubAdapter``).

All PyGithub use stays in ``core/github/adapter.py``; this only shapes the adapter's records into what
the handler reads, and keeps one rule the adapter does not know: a marker only counts in a
comment written by a bot (so a user cannot forge "already answered" or "approved").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.config import CONFIG_PATH
from core.render import carries_marker
from workers.commands.handler import CommentInfo, PullInfo, is_bot


def _author_type(login: str) -> str:
    # GitHub Apps comment as "<slug>[bot]"; that suffix is reserved to bot accounts.
    return "Bot" if login.lower().endswith("[bot]") else "User"


class AdapterCommentGitHub:
    """``CommentGitHub`` for one installation, over ``GitHubAdapter``."""

    def __init__(self, adapter: Any, own_login: str | None = None) -> None:
        self.adapter = adapter
        self.own_login = own_login

    def comment(self, repo: str, comment_id: int) -> CommentInfo | None:
        from core.github.errors import GitHubNotFoundError

        try:
            info = self.adapter.get_comment(repo, comment_id)
        except GitHubNotFoundError:
            return None
        return CommentInfo(info.id, info.body, info.author, _author_type(info.author))

    def react(self, repo: str, comment_id: int, content: str) -> None:
        self.adapter.add_reaction(repo, comment_id, content)

    def permission(self, repo: str, user: str) -> str:
        return str(self.adapter.permission(repo, user))

    def find_comment(self, repo: str, issue_number: int, marker: str) -> int | None:
        """The newest comment by a bot on #issue_number that carries ``marker`` (by our own bot only,
        when ``own_login`` is known: another App's bot may echo text a user wrote)."""
        found = None
        for info in self.adapter.list_comments(repo, issue_number):
            if not carries_marker(info.body, marker):
                continue
            if self.own_login and info.author.lower() != self.own_login.lower():
                continue
            if is_bot(info.author, _author_type(info.author), self.own_login):
                found = info.id
        return found

    def post_comment(self, repo: str, issue_number: int, body: str, existing: int | None = None) -> int:
        if existing is not None:
            return int(self.adapter.edit_comment(repo, existing, body).id)
        return int(self.adapter.create_comment(repo, issue_number, body).id)

    def read_config(self, repo: str) -> str | None:
        text = self.adapter.read_file(repo, CONFIG_PATH)
        return None if text is None else str(text)

    def pull(self, repo: str, number: int) -> PullInfo:
        info = self.adapter.get_pull_request(repo, number)
        return PullInfo(info.number, info.head_sha, info.head_ref, info.head_repo, info.author, info.author_association)

    def add_label(self, repo: str, number: int, label: str) -> None:
        self.adapter.add_labels(repo, number, [label])

    def pulls_for_branches(self, repo: str, branches: Sequence[str]) -> list[tuple[str, int, str, str]]:
        """(branch, number, title, url) of the open PR of each branch that has one."""
        out = []
        for branch in branches:
            info = self.adapter.find_pull_request(repo, branch)
            if info is not None and info.state == "open":
                out.append((branch, info.number, info.title, info.html_url))
        return out

    def pull_text(self, repo: str, number: int) -> tuple[str, str]:
        """(title, body) of PR #number, for the resolution section edited in place."""
        info = self.adapter.get_pull_request(repo, number)
        return str(info.title), str(info.body or "")

    def update_pull_text(self, repo: str, number: int, title: str, body: str) -> None:
        self.adapter.update_issue(repo, number, title=title, body=body)
