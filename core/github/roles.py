"""What forksync does on GitHub, as narrow role protocols: the one set of interfaces to GitHub.

Each role is one area of GitHub's API (checks, pulls, issues, comments, contents,
collaborators, refs); :class:`GitHubPort` is all of them, and the PyGithub adapter
(``core.github.adapter.GitHubAdapter``) implements it. A caller names the roles it needs
(``class IssuesPort(Issues, Comments, Protocol)``), so its tests can hand in a small recording
fake; ``Checks``, ``Pulls`` and ``Issues`` are runtime-checkable, so a caller may use a role its
fake lacks only where it is there (the comment commands' ``CommandGitHub``). :class:`IngestGitHub` is the ingestion loop's upsert-by-key view over these roles
(``core.github.ingest``). ``repo`` is always ``owner/name``. Pure: no PyGithub import.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from core.github.records import (
    CheckAction,
    CheckOutput,
    CheckRunInfo,
    CommentInfo,
    IssueInfo,
    Posted,
    PullRequestInfo,
    ReviewInfo,
)


class GitFunnel(Protocol):
    """A local repository driven through the git funnel (``workers.engine.git.Repository``).

    ``core`` never imports workers, so the caller hands its funnel in; its failures are
    ``ForksyncError`` subclasses carrying git's ``stderr``.
    """

    def git(
        self, *args: str, input: bytes | None = None, check: bool = True, env: Mapping[str, str] | None = None
    ) -> bytes: ...


@runtime_checkable
class Checks(Protocol):
    """Check runs on a commit."""

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
    ) -> CheckRunInfo: ...

    def update_check_run(
        self,
        repo: str,
        check_run_id: int,
        *,
        status: str | None = None,
        conclusion: str | None = None,
        output: CheckOutput | None = None,
        actions: Sequence[CheckAction] | None = None,
    ) -> CheckRunInfo: ...

    def list_check_runs(self, repo: str, ref: str, *, name: str | None = None) -> list[CheckRunInfo]: ...

    def required_status_checks(self, repo: str, branch: str) -> tuple[str, ...] | None:
        """The status checks ``branch``'s protection requires (None: the branch is not protected
        or requires none). Raises ``GitHubPermissionError`` when the App may not read protection
        rules (403: it lacks ``Administration: read``)."""
        ...


class PullReader(Protocol):
    """One pull request read by number (the comment commands need nothing more of pulls)."""

    def get_pull_request(self, repo: str, number: int) -> PullRequestInfo: ...


@runtime_checkable
class Pulls(PullReader, Protocol):
    """Pull requests, found by head branch before one is created."""

    def find_pull_request(self, repo: str, head: str, base: str | None = None) -> PullRequestInfo | None: ...

    def ensure_pull_request(
        self, repo: str, *, head: str, base: str, title: str, body: str, draft: bool = False
    ) -> tuple[PullRequestInfo, bool]: ...

    def close_pull_request(
        self, repo: str, number: int, *, comment: str | None = None
    ) -> PullRequestInfo: ...

    def edit_pull_request(
        self,
        repo: str,
        number: int,
        *,
        title: str | None = None,
        body: str | None = None,
        base: str | None = None,
    ) -> PullRequestInfo:
        """Change a PR's title, body or base branch (``PullRequest.edit``): re-targeting keeps the PR."""
        ...

    def list_reviews(self, repo: str, number: int) -> list[ReviewInfo]:
        """The PR's reviews, oldest first."""
        ...

    def request_reviewers(
        self, repo: str, number: int, *, users: Sequence[str] = (), teams: Sequence[str] = ()
    ) -> None:
        """Ask users and teams to review the PR (again: a re-request after a force-push)."""
        ...


class PullLister(Protocol):
    """Pull requests listed, not found one by one: every open one of a repository (the L1
    watchdog's look for heads with no check), every one ever opened from a branch (a revert PR a
    maintainer closed)."""

    def open_pull_requests(self, repo: str) -> list[PullRequestInfo]: ...

    def pull_requests_from(self, repo: str, head: str) -> list[PullRequestInfo]: ...


@runtime_checkable
class Issues(Protocol):
    """Issues (never PRs), found by their hidden marker before one is created."""

    def find_issue(self, repo: str, marker: str, *, labels: Sequence[str] = ()) -> IssueInfo | None: ...

    def list_issues(
        self, repo: str, *, labels: Sequence[str] = (), state: str = "open"
    ) -> list[IssueInfo]: ...

    def ensure_issue(
        self,
        repo: str,
        *,
        marker: str,
        title: str,
        body: str,
        labels: Sequence[str] = (),
        reopen: bool = True,
    ) -> tuple[IssueInfo, bool]: ...

    def update_issue(
        self,
        repo: str,
        number: int,
        *,
        title: str | None = None,
        body: str | None = None,
        labels: Sequence[str] | None = None,
    ) -> IssueInfo: ...

    def close_issue(self, repo: str, number: int, *, comment: str | None = None) -> IssueInfo: ...

    def reopen_issue(self, repo: str, number: int) -> IssueInfo: ...

    def add_labels(self, repo: str, number: int, labels: Sequence[str]) -> None: ...


class Comments(Protocol):
    """Comments on issues and PRs, and reactions to them."""

    def create_comment(self, repo: str, issue_number: int, body: str) -> CommentInfo: ...

    def edit_comment(self, repo: str, comment_id: int, body: str) -> CommentInfo: ...

    def find_comment(self, repo: str, issue_number: int, marker: str) -> CommentInfo | None: ...

    def get_comment(self, repo: str, comment_id: int) -> CommentInfo: ...

    def list_comments(self, repo: str, issue_number: int) -> list[CommentInfo]: ...

    def upsert_comment(
        self, repo: str, issue_number: int, *, marker: str, body: str
    ) -> tuple[CommentInfo, bool]: ...

    def add_reaction(self, repo: str, comment_id: int, content: str) -> None: ...


class Contents(Protocol):
    """Files of the repository at a ref."""

    def read_file(self, repo: str, path: str, ref: str | None = None) -> str | None: ...


class Collaborators(Protocol):
    """Who may do what on the repository."""

    def permission(self, repo: str, login: str) -> str: ...


class Refs(Protocol):
    """Branches, written with git over https and an installation token."""

    def push_branch(
        self, repo: str, source: GitFunnel, rev: str, branch: str, *, force: bool = False
    ) -> None: ...


class GitHubPort(Checks, Pulls, PullLister, Issues, Comments, Contents, Collaborators, Refs, Protocol):
    """Everything forksync does on GitHub, for one installation."""


class InstalledApp(Protocol):
    """The GitHub App as the worker tasks ask for it (``core.github.app.GitHubApp``; the demo's
    ``workers.demo.github.DemoApp``): one place, ``workers.app.runtime.app_for``, hands it out."""

    push_url_template: str  # "…/{repo}.git": where the workers fetch and push

    def adapter(self, installation_id: int) -> GitHubPort: ...

    def installation_token(self, installation_id: int) -> str: ...

    def bot_login(self) -> str | None: ...

    def installed_repositories(self) -> Iterable[tuple[int, str]]: ...

    def installation_for_repo(self, repo: str) -> int: ...


class IngestGitHub(Protocol):
    """One installation's view of GitHub as the ingestion loop uses it: PRs by head branch, issues
    by marker, reviews and checks read, comments and review requests written.

    ``core.github.ingest.LiveGitHub`` implements it over :class:`GitHubPort`; ``DryGitHub``
    records it in memory (``forksync demo``, executor tests).
    """

    def clone_url(self, repo: str) -> str:
        """The git URL of ``repo`` (https), without credentials."""
        ...

    def git_token(self) -> str | None:
        """An installation token for git over https (minted now, never stored)."""
        ...

    def find_pull(self, repo: str, head: str) -> PullRequestInfo | None:
        """The open PR whose head is the branch ``head`` of ``repo``, whatever its base."""
        ...

    def closed_unmerged(self, repo: str, head: str) -> int | None:
        """The newest PR from the branch ``head``, when a maintainer closed it without merging; else None."""
        ...

    def merged_elsewhere(self, repo: str, head: str, trunk: str) -> tuple[int, str] | None:
        """The newest PR from the branch ``head`` when it was merged into another branch than ``trunk``
        (a stacked bundle merged before its base): its number and the branch it went into; else None."""
        ...

    def open_pull(self, repo: str, *, head: str, base: str, title: str, body: str) -> Posted:
        """Open a PR from ``head`` into ``base`` (a create that races another finds the first)."""
        ...

    def edit_pull(
        self,
        repo: str,
        number: int,
        *,
        title: str | None = None,
        body: str | None = None,
        base: str | None = None,
    ) -> Posted:
        """Edit an open PR in place: title, body, or re-target it to ``base``."""
        ...

    def pull_reviews(self, repo: str, number: int) -> Sequence[ReviewInfo]:
        """The PR's reviews, oldest first."""
        ...

    def check_runs(self, repo: str, sha: str) -> Sequence[CheckRunInfo]:
        """The check runs on commit ``sha``."""
        ...

    def comment(self, repo: str, number: int, body: str) -> None:
        """Post ``body`` as a comment on issue or PR ``number``."""
        ...

    def request_review(self, repo: str, number: int, users: Sequence[str]) -> None:
        """Ask ``users`` to review PR ``number`` (again)."""
        ...

    def upsert_issue(self, repo: str, *, marker: str, title: str, body: str) -> Posted:
        """Update the open issue whose body carries ``marker``, or open one: never a second."""
        ...

    def check_run(
        self,
        repo: str,
        *,
        name: str,
        head_sha: str,
        conclusion: str,
        title: str,
        summary: str,
        text: str | None = None,
    ) -> Posted:
        """Create a completed check run on ``head_sha``."""
        ...

    def close_pull(self, repo: str, *, head: str, comment: str) -> int | None:
        """Close the open PR whose head is ``head`` with ``comment``; its number, or None if none is open."""
        ...

    def close_issue(self, repo: str, *, marker: str, comment: str) -> int | None:
        """Close the open issue carrying ``marker`` with ``comment``; its number, or None if none is open."""
        ...
