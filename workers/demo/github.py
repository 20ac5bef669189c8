"""The demo's simulated GitHub: the dry ingestion recorder, plus what comment commands and the L1
and L2 jobs need.

``forksync demo`` runs a maintainer's comments (``/approve``, ``/skip``) through the real command
path (webhook view -> Celery -> ``workers.tasks.commands.answer`` -> the handler -> its action).
That path asks GitHub for the comment, the PR, the user's permission and the fork's config
(:class:`workers.commands.handler.CommandGitHub`); :class:`DemoGitHub` answers them from what
the demo recorded (``DryGitHub``'s PRs) and from the fork's bare copy on disk (files, PR heads).
The tasks ask the App (:class:`DemoApp`, through ``workers.app.runtime.app_for``) for this same
GitHub, and write their check runs here (:attr:`DemoGitHub.runs`, apart from the
ingestion's ``checks``). Nothing here reaches a network.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import cast

from core.github.errors import GitHubNotFoundError
from core.github.ingest import DryGitHub
from core.github.records import (
    CheckAction,
    CheckOutput,
    CheckRunInfo,
    CommentInfo,
    IssueInfo,
    PullRequestInfo,
    ReviewInfo,
    author_type,
)
from core.github.roles import GitHubPort
from core.render import carries_marker
from workers.engine.git import Repository

BOT_LOGIN = "forksync[bot]"


@dataclass
class DemoGitHub(DryGitHub):
    """``DryGitHub`` with the roles of the comment commands (comments, contents, collaborators, PRs)."""

    permissions: dict[str, str] = field(default_factory=dict)  # login -> role on every demo repo
    reactions: dict[int, list[str]] = field(default_factory=dict)  # comment id -> reactions added
    notes: list[CommentInfo] = field(default_factory=list)  # every comment, users' and the bot's
    runs: dict[int, CheckRunInfo] = field(default_factory=dict)  # the L1 job's check runs, by id

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

    # ----------------------------------------------------------------- Checks, reviews (the L1 job)

    def create_check_run(
        self,
        repo: str,
        *,
        name: str,
        head_sha: str,
        status: str = "queued",
        conclusion: str | None = None,
        output: CheckOutput | None = None,
        actions: Sequence[CheckAction] = (),
        details_url: str | None = None,
        external_id: str | None = None,
    ) -> CheckRunInfo:
        number = len(self.runs) + 1
        info = CheckRunInfo(
            number,
            name,
            head_sha,
            "completed" if conclusion else status,
            conclusion,
            f"dry://{repo}/runs/{number}",
            external_id=external_id,
        )
        self.runs[number] = _with_output(info, output)
        return self.runs[number]

    def update_check_run(
        self,
        repo: str,
        check_run_id: int,
        *,
        status: str | None = None,
        conclusion: str | None = None,
        output: CheckOutput | None = None,
        actions: Sequence[CheckAction] | None = None,
    ) -> CheckRunInfo:
        old = self.runs[check_run_id]
        new = replace(
            old,
            status="completed" if conclusion else (status or old.status),
            conclusion=conclusion if conclusion else (None if status else old.conclusion),
        )
        self.runs[check_run_id] = _with_output(new, output)
        return self.runs[check_run_id]

    def list_check_runs(self, repo: str, ref: str, *, name: str | None = None) -> list[CheckRunInfo]:
        return [r for r in self.runs.values() if r.head_sha == ref and name in (None, r.name)]

    def required_status_checks(self, repo: str, branch: str) -> tuple[str, ...] | None:
        return None  # the demo's trunk is not protected

    def list_reviews(self, repo: str, number: int) -> list[ReviewInfo]:
        return list(self.reviews.get(number, []))

    def list_issues(self, repo: str, *, labels: Sequence[str] = (), state: str = "open") -> list[IssueInfo]:
        return []  # no infrastructure issue is open in the demo


def _with_output(info: CheckRunInfo, output: CheckOutput | None) -> CheckRunInfo:
    if output is None:
        return info
    return replace(info, title=output.title, summary=output.summary, text=output.text)


@dataclass
class DemoApp:
    """The GitHub App as the tasks ask for it (``core.github.roles.InstalledApp``):
    its adapter is the demo's GitHub, its push URLs the bare copies on disk, no token."""

    github: DemoGitHub
    push_url_template: str  # e.g. /tmp/demo/github/{repo}.git

    def adapter(self, installation_id: int) -> GitHubPort:
        # The roles the L1 and L2 jobs use in the demo (checks, pulls, reviews, issues listed,
        # comments, contents); a call outside them fails with AttributeError, never silently.
        return cast("GitHubPort", self.github)

    def installation_token(self, installation_id: int) -> str:
        return ""  # local paths: git sends no credentials

    def bot_login(self) -> str:
        return BOT_LOGIN

    def installed_repositories(self) -> Iterable[tuple[int, str]]:
        return [(1, repo) for repo in self.github.remotes]

    def installation_for_repo(self, repo: str) -> int:
        if repo not in self.github.remotes:
            raise GitHubNotFoundError(f"the demo App is not installed on {repo}", "use the demo's fork")
        return 1
