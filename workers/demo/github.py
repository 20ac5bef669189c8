"""The demo's simulated GitHub: the dry ingestion recorder, plus what comment commands need.

``forksync demo`` runs a maintainer's comments (``/approve``, ``/skip``) through the real command
path (webhook view -> Celery -> ``workers.tasks.commands.answer`` -> the handler -> its action).
That path asks GitHub for the comment, the PR, the user's permission and the fork's config
(:class:`workers.commands.handler.CommandGitHub`); :class:`DemoGitHub` answers them from what
the demo recorded (``DryGitHub``'s PRs) and from the fork's bare copy on disk (files, PR heads).
Nothing here reaches a network.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.github.errors import GitHubNotFoundError
from core.github.ingest import DryGitHub
from core.github.records import CommentInfo, PullRequestInfo, author_type
from core.render import carries_marker
from workers.engine.git import Repository

BOT_LOGIN = "forksync[bot]"


@dataclass
class DemoGitHub(DryGitHub):
    """``DryGitHub`` with the roles of the comment commands (comments, contents, collaborators, PRs)."""

    permissions: dict[str, str] = field(default_factory=dict)  # login -> role on every demo repo
    reactions: dict[int, list[str]] = field(default_factory=dict)  # comment id -> reactions added
    notes: list[CommentInfo] = field(default_factory=list)  # every comment, users' and the bot's

    @property
    def adapter(self) -> DemoGitHub:
        """What ``workers.tasks.commands.answer`` hands the handler (the live view's PyGithub adapter)."""
        return self

    # ----------------------------------------------------------------- as people do

    def say(self, repo: str, issue_number: int, author: str, body: str) -> CommentInfo:
        """A person's comment on #issue_number (what the demo's maintainer writes)."""
        return self._add(repo, issue_number, body, author)

    # ----------------------------------------------------------------- Comments

    def _add(self, repo: str, issue_number: int, body: str, author: str) -> CommentInfo:
        number = len(self.notes) + 1001
        info = CommentInfo(
            number,
            issue_number,
            body,
            author,
            f"dry://{repo}/{issue_number}#comment-{number}",
            float(number),
            author_type(author),
        )
        self.notes.append(info)
        self.comments.append({"number": issue_number, "body": body, "id": number, "author": author})
        return info

    def create_comment(self, repo: str, issue_number: int, body: str) -> CommentInfo:
        return self._add(repo, issue_number, body, BOT_LOGIN)

    def edit_comment(self, repo: str, comment_id: int, body: str) -> CommentInfo:
        old = self.get_comment(repo, comment_id)
        new = CommentInfo(
            old.id, old.issue_number, body, old.author, old.html_url, old.created_at, old.author_type
        )
        self.notes[self.notes.index(old)] = new
        return new

    def get_comment(self, repo: str, comment_id: int) -> CommentInfo:
        found = next((c for c in self.notes if c.id == comment_id), None)
        if found is None:
            raise GitHubNotFoundError(f"comment {comment_id} not found on {repo}", "it was deleted")
        return found

    def list_comments(self, repo: str, issue_number: int) -> list[CommentInfo]:
        return [c for c in self.notes if c.issue_number == issue_number]

    def find_comment(self, repo: str, issue_number: int, marker: str) -> CommentInfo | None:
        return next(
            (c for c in self.list_comments(repo, issue_number) if carries_marker(c.body, marker)), None
        )

    def upsert_comment(
        self, repo: str, issue_number: int, *, marker: str, body: str
    ) -> tuple[CommentInfo, bool]:
        full = body if carries_marker(body, marker) else f"{marker}\n{body}"
        existing = self.find_comment(repo, issue_number, marker)
        if existing is None:
            return self.create_comment(repo, issue_number, full), True
        return self.edit_comment(repo, existing.id, full), False

    def add_reaction(self, repo: str, comment_id: int, content: str) -> None:
        self.reactions.setdefault(comment_id, []).append(content)

    # ----------------------------------------------------------------- Contents, Collaborators, PullReader

    def read_file(self, repo: str, path: str, ref: str | None = None) -> str | None:
        git = Repository(Path(self.remotes[repo]))
        rev = f"{ref or 'refs/heads/main'}:{path}"
        if git.git("cat-file", "-t", rev, check=False).strip() == b"blob":
            return git.git("cat-file", "blob", rev).decode("utf-8", "replace")
        return None

    def permission(self, repo: str, login: str) -> str:
        return self.permissions.get(login, "none")

    def get_pull_request(self, repo: str, number: int) -> PullRequestInfo:
        entry = next((v for (r, _), v in self.pulls.items() if r == repo and v["number"] == number), None)
        if entry is None:
            raise GitHubNotFoundError(f"pull request #{number} not found on {repo}", "check the number")
        head = str(entry["head"])
        sha = Repository(Path(self.remotes[repo])).rev_parse(f"refs/heads/{head}") or ""
        merged = bool(entry.get("merged"))
        return PullRequestInfo(
            number,
            str(entry["title"]),
            str(entry["body"]),
            str(entry["state"]),
            sha,
            head,
            repo,
            str(entry["base"]),
            merged,
            False,
            BOT_LOGIN,
            "NONE",
            f"dry://{repo}/{number}",
        )
