"""The one PyGithub adapter: :class:`GitHubAdapter` implements every role of ``core.github.roles``.

All PyGithub use lives here (and App auth in ``core.github.app``): check runs (annotations in
batches of 50), pull requests found by head branch before one is created, issues and comments
found by their hidden marker before one is created, reactions, permissions, files at a ref, and
git pushes with an installation token. Status codes are classified here, once
(:func:`classify`, into ``core.github.errors``). Methods take and return the typed records of
``core.github.records``, so tests of callers can use a recording fake of a role.
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import requests
from github import Github, GithubException
from github.CheckRun import CheckRun
from github.ContentFile import ContentFile
from github.Issue import Issue
from github.IssueComment import IssueComment
from github.PullRequest import PullRequest

from core.errors import ForksyncError
from core.github.errors import (
    GitHubAlreadyDone,
    GitHubAuthError,
    GitHubError,
    GitHubNotFoundError,
    GitHubPermissionError,
    GitHubPushError,
    GitHubValidationError,
    RetryableGitHubError,
    message_of,
    retry_after_s,
)
from core.github.records import (
    MAX_ACTIONS,
    REACTIONS,
    WRITE_ROLES,
    Annotation,
    CheckAction,
    CheckOutput,
    CheckRunInfo,
    CommentInfo,
    IssueInfo,
    PullRequestInfo,
    ReviewInfo,
    author_type,
    cut,
)
from core.github.roles import GitFunnel
from core.render import carries_marker

log = logging.getLogger("forksync.github")

ANNOTATIONS_PER_REQUEST = 50  # GitHub's limit per create/update call
MAX_OUTPUT_CHARS = 65_535  # GitHub's limit for a check run's output.summary and output.text
_DEFAULT_RETRY_S = 60.0  # GitHub: "wait at least one minute" when a secondary limit gives no header

T = TypeVar("T")


def classify(exc: BaseException, action: str, repo: str | None = None) -> GitHubError:
    """Turn what PyGithub/requests raised while doing ``action`` into one of our errors."""
    where = f" on {repo}" if repo else ""
    if isinstance(exc, GitHubError):
        return exc
    if isinstance(exc, requests.Timeout | requests.ConnectionError):
        return RetryableGitHubError(
            f"GitHub did not answer while trying to {action}{where} ({type(exc).__name__})", 0.0
        )
    if not isinstance(exc, GithubException):
        return GitHubError(
            f"unexpected failure while trying to {action}{where}: {type(exc).__name__}",
            "report this to the forksync maintainers with the task log",
        )
    status, message, headers = exc.status, message_of(exc.data), exc.headers
    text = f"GitHub answered {status} ({message or 'no message'}) while trying to {action}{where}"
    wait = retry_after_s(headers)
    lower = message.lower()
    if status in (403, 429) and (wait is not None or "rate limit" in lower):
        return RetryableGitHubError(text, wait if wait is not None else _DEFAULT_RETRY_S, status)
    if status >= 500:
        return RetryableGitHubError(text, wait or 0.0, status)
    if status == 401:
        return GitHubAuthError(
            text,
            "check GITHUB_APP_ID and the private key (regenerate it in the App's settings); "
            "the token may also have expired",
            status,
        )
    if status == 403:
        return GitHubPermissionError(
            text,
            "grant the App the permissions listed in app.yml (the installation owner "
            "must accept new permissions), or check branch protection",
            status,
        )
    if status == 404:
        return GitHubNotFoundError(
            text,
            f"check that the App is installed on {repo or 'the repository'} and that the object exists",
            status,
        )
    if status in (405, 409, 422) and (
        "already exists" in lower
        or "already merged" in lower
        or ("not mergeable" in lower and "merged" in lower)
    ):
        return GitHubAlreadyDone(text, "nothing to do", status)
    if status == 422:
        return GitHubValidationError(
            text, "this is a bug in what forksync sent; report it with the task log", status
        )
    return GitHubError(text, "see GitHub's message above", status)


# --------------------------------------------------------------------------- PyGithub implementation


def _count_call(gh: Any, outcome: str) -> None:
    """Count one interaction and record the rate limit GitHub reported (read from the last
    response's headers: no extra request)."""
    from core import telemetry

    telemetry.GITHUB_CALLS.labels(outcome=outcome).inc()
    requester = getattr(gh, "requester", None) or getattr(gh, "_Github__requester", None)
    remaining = getattr(requester, "rate_limiting", (-1, -1))[0]
    if isinstance(remaining, int) and remaining >= 0:
        telemetry.GITHUB_RATE_REMAINING.set(remaining)


class GitHubAdapter:
    """``core.github.roles.GitHubPort`` over PyGithub (``base_url`` = ``Settings.api_url``)."""

    def __init__(
        self,
        github: Github,
        *,
        token: Callable[[], str],
        push_url_template: str,
        on_bad_credentials: Callable[[], None] | None = None,
    ) -> None:
        self._gh = github
        self._token = token
        self.push_url_template = push_url_template
        self._on_bad_credentials = on_bad_credentials

    def _call(self, action: str, repo: str | None, fn: Callable[[], T]) -> T:
        """Run one GitHub interaction; classify failures; retry once with a new token after a 401."""
        for attempt in (1, 2):
            try:
                result = fn()
            except Exception as exc:
                error = classify(exc, action, repo)
                _count_call(self._gh, type(error).__name__)
                if (
                    isinstance(error, GitHubAuthError)
                    and attempt == 1
                    and self._on_bad_credentials is not None
                ):
                    log.warning("token refused while trying to %s; minting a new one", action)
                    self._on_bad_credentials()
                    continue
                raise error from None
            _count_call(self._gh, "ok")
            return result
        raise AssertionError("unreachable")

    def _repo(self, repo: str) -> Any:
        return self._gh.get_repo(repo)  # lazy: no request until something is read or written

    # ----------------------------------------------------------------- check runs

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
        batches = _annotation_batches(output)
        kwargs: dict[str, Any] = {"name": name, "head_sha": head_sha}
        if conclusion is not None:
            kwargs["conclusion"] = conclusion
            status = "completed"
        kwargs["status"] = status
        if output is not None:
            kwargs["output"] = _output_json(output, batches[0])
        if actions:
            kwargs["actions"] = _actions_json(actions)
        if details_url:
            kwargs["details_url"] = details_url
        if external_id:
            kwargs["external_id"] = external_id
        run: CheckRun = self._call(
            f"create check run {name!r}", repo, lambda: self._repo(repo).create_check_run(**kwargs)
        )
        if output is not None:
            for batch in batches[1:]:
                self._call(
                    f"add annotations to check run {name!r}",
                    repo,
                    lambda b=batch: run.edit(output=_output_json(output, b)),  # type: ignore[misc]
                )
        return _check_run_info(run)

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
        run: CheckRun = self._repo(repo).get_check_run(check_run_id)  # lazy
        batches = _annotation_batches(output)
        kwargs: dict[str, Any] = {}
        if status is not None:
            kwargs["status"] = status
        if conclusion is not None:
            kwargs["conclusion"] = conclusion
        if output is not None:
            kwargs["output"] = _output_json(output, batches[0])
        if actions is not None:
            kwargs["actions"] = _actions_json(actions)
        self._call(f"update check run {check_run_id}", repo, lambda: run.edit(**kwargs))
        if output is not None:
            for batch in batches[1:]:
                self._call(
                    f"add annotations to check run {check_run_id}",
                    repo,
                    lambda b=batch: run.edit(output=_output_json(output, b)),  # type: ignore[misc]
                )
        return _check_run_info(run)

    def list_check_runs(self, repo: str, ref: str, *, name: str | None = None) -> list[CheckRunInfo]:
        def fetch() -> list[CheckRunInfo]:
            commit = self._repo(repo).get_commit(ref)
            runs = commit.get_check_runs(check_name=name) if name else commit.get_check_runs()
            return [_check_run_info(r) for r in runs]

        return self._call(f"list check runs of {ref}", repo, fetch)

    def required_status_checks(self, repo: str, branch: str) -> tuple[str, ...] | None:
        """The contexts ``branch``'s protection requires (PyGithub ``Branch.get_required_status_checks``);
        None when the branch is unprotected or protection does not require status checks (404).
        A 403 (the App lacks ``Administration: read``) raises ``GitHubPermissionError``: the
        caller says so on the check run instead of taking it for an unprotected branch."""

        def fetch() -> tuple[str, ...] | None:
            try:
                checks = self._repo(repo).get_branch(branch).get_required_status_checks()
            except GithubException as exc:
                if exc.status == 404:  # not protected, or no required status checks
                    return None
                raise
            return tuple(checks.contexts or ())

        return self._call(f"read the required status checks of {branch}", repo, fetch)

    # ----------------------------------------------------------------- pull requests

    def find_pull_request(self, repo: str, head: str, base: str | None = None) -> PullRequestInfo | None:
        """The open PR whose head is ``head`` (a branch of ``repo``, or ``owner:branch``)."""
        qualified = head if ":" in head else f"{repo.split('/')[0]}:{head}"

        def fetch() -> PullRequestInfo | None:
            kwargs: dict[str, Any] = {"state": "open", "head": qualified}
            if base:
                kwargs["base"] = base
            for pr in self._repo(repo).get_pulls(**kwargs):
                return _pull_info(pr)
            return None

        return self._call(f"look for an open pull request from {qualified}", repo, fetch)

    def ensure_pull_request(
        self, repo: str, *, head: str, base: str, title: str, body: str, draft: bool = False
    ) -> tuple[PullRequestInfo, bool]:
        """Update the open PR from ``head`` if there is one, else create it; True when created.

        Reruns therefore update, never duplicate; a create that races another worker ("already
        exists") falls back to the update.
        """
        existing = self.find_pull_request(repo, head, base)
        if existing is None:
            try:
                pr: PullRequest = self._call(
                    f"open a pull request from {head} into {base}",
                    repo,
                    lambda: self._repo(repo).create_pull(
                        title=title, body=body, head=head, base=base, draft=draft
                    ),
                )
                return _pull_info(pr), True
            except GitHubAlreadyDone:
                existing = self.find_pull_request(repo, head, base)
                if existing is None:
                    raise
        number = existing.number
        if (existing.title, existing.body) == (title, body):
            return existing, False
        pull: PullRequest = self._repo(repo).get_pull(number)
        self._call(f"update pull request #{number}", repo, lambda: pull.edit(title=title, body=body))
        return _pull_info(pull), False  # edit() refreshed the object from GitHub's answer

    def open_pull_requests(self, repo: str) -> list[PullRequestInfo]:
        """Every open PR of ``repo``, newest first (PyGithub pages through them)."""
        return self._call(
            "list the open pull requests",
            repo,
            lambda: [_pull_info(pr, listed=True) for pr in self._repo(repo).get_pulls(state="open")],
        )

    def pull_requests_from(self, repo: str, head: str) -> list[PullRequestInfo]:
        """Every PR ever opened from ``head`` (a branch of ``repo``), open or closed, newest first."""
        qualified = head if ":" in head else f"{repo.split('/')[0]}:{head}"
        return self._call(
            f"list the pull requests from {qualified}",
            repo,
            lambda: [
                _pull_info(pr, listed=True) for pr in self._repo(repo).get_pulls(state="all", head=qualified)
            ],
        )

    def get_pull_request(self, repo: str, number: int) -> PullRequestInfo:
        return self._call(
            f"read pull request #{number}",
            repo,
            lambda: _pull_info(_complete(self._repo(repo).get_pull(number))),
        )

    def close_pull_request(self, repo: str, number: int, *, comment: str | None = None) -> PullRequestInfo:
        """Close PR #``number`` (``PATCH /pulls``), after posting ``comment`` on it when given."""
        if comment:
            self.create_comment(repo, number, comment)

        def close() -> PullRequestInfo:
            pull: PullRequest = self._repo(repo).get_pull(number)
            pull.edit(state="closed")
            return _pull_info(pull)

        return self._call(f"close pull request #{number}", repo, close)

    def edit_pull_request(
        self,
        repo: str,
        number: int,
        *,
        title: str | None = None,
        body: str | None = None,
        base: str | None = None,
    ) -> PullRequestInfo:
        """``PullRequest.edit`` with only what is given (title, body, base: re-targeting keeps the PR)."""
        fields: dict[str, Any] = {
            k: v for k, v in (("title", title), ("body", body), ("base", base)) if v is not None
        }

        def edit() -> PullRequestInfo:
            pull: PullRequest = self._repo(repo).get_pull(number)
            if fields:
                pull.edit(**fields)
            return _pull_info(pull)

        what = f"re-target pull request #{number} to {base}" if base else f"update pull request #{number}"
        return self._call(what, repo, edit)

    def list_reviews(self, repo: str, number: int) -> list[ReviewInfo]:
        def fetch() -> list[ReviewInfo]:
            return [
                ReviewInfo(r.user.login if r.user is not None else "ghost", r.state, r.commit_id or None)
                for r in self._repo(repo).get_pull(number).get_reviews()
            ]

        return self._call(f"read the reviews of pull request #{number}", repo, fetch)

    # ----------------------------------------------------------------- issues

    def find_issue(self, repo: str, marker: str, *, labels: Sequence[str] = ()) -> IssueInfo | None:
        """The issue (open or closed, newest first) whose body carries ``marker``; PRs are skipped.

        GitHub's issue search first (one request however many issues the repository has); its
        index lags behind writes and its words are not the marker's bytes, so a miss (or a refused
        search: it has its own, lower rate limit) falls back to reading the issues, newest first,
        before saying there is none: a marker issue is never opened twice because search lagged.
        """

        def search() -> IssueInfo | None:
            words = marker.removeprefix("<!--").removesuffix("-->").strip().replace('"', " ")
            query = f'repo:{repo} is:issue in:body "{words}"' + "".join(f' label:"{name}"' for name in labels)
            for issue in self._gh.search_issues(query, sort="created", order="desc"):
                if not _is_pull(issue) and carries_marker(issue.body or "", marker):
                    return _issue_info(issue)
            return None

        try:
            found = self._call(f"search for the issue marked {marker}", repo, search)
        except GitHubError as exc:
            log.info("issue search refused (%s); reading the issues instead", exc.problem)
            found = None
        if found is not None:
            return found

        def fetch() -> IssueInfo | None:
            kwargs: dict[str, Any] = {"state": "all", "sort": "created", "direction": "desc"}
            if labels:
                kwargs["labels"] = list(labels)
            for issue in self._repo(repo).get_issues(**kwargs):
                # Only where the bot writes it (the body's leading markers): text an outsider wrote,
                # or the bot copied from outside, can never pass for the bot's record.
                if not _is_pull(issue) and carries_marker(issue.body or "", marker):
                    return _issue_info(issue)
            return None

        return self._call(f"look for the issue marked {marker}", repo, fetch)

    def list_issues(self, repo: str, *, labels: Sequence[str] = (), state: str = "open") -> list[IssueInfo]:
        """Issues (not PRs) with all of ``labels``, in ``state`` (open, closed or all), newest first."""

        def fetch() -> list[IssueInfo]:
            kwargs: dict[str, Any] = {"state": state, "sort": "created", "direction": "desc"}
            if labels:
                kwargs["labels"] = list(labels)
            return [_issue_info(i) for i in self._repo(repo).get_issues(**kwargs) if not _is_pull(i)]

        return self._call(f"list {state} issues labelled {', '.join(labels) or 'anything'}", repo, fetch)

    def ensure_issue(
        self,
        repo: str,
        *,
        marker: str,
        title: str,
        body: str,
        labels: Sequence[str] = (),
        reopen: bool = True,
    ) -> tuple[IssueInfo, bool]:
        """Update the issue carrying ``marker`` (reopening it if asked), else create it; True when created."""
        full_body = body if carries_marker(body, marker) else f"{marker}\n{body}"
        existing = self.find_issue(repo, marker)
        if existing is None:
            issue: Issue = self._call(
                f"open issue {title!r}",
                repo,
                lambda: self._repo(repo).create_issue(title=title, body=full_body, labels=list(labels)),
            )
            return _issue_info(issue), True
        info = existing
        if (existing.title, existing.body) != (title, full_body) or not set(labels) <= set(existing.labels):
            info = self.update_issue(
                repo,
                existing.number,
                title=title,
                body=full_body,
                labels=sorted(set(existing.labels) | set(labels)),
            )
        if reopen and info.state == "closed":
            info = self.reopen_issue(repo, existing.number)
        return info, False

    def _edit_issue(self, repo: str, number: int, action: str, **kwargs: Any) -> IssueInfo:
        def edit() -> IssueInfo:
            issue: Issue = self._repo(repo).get_issue(number)
            issue.edit(**kwargs)
            return _issue_info(issue)

        return self._call(action, repo, edit)

    def update_issue(
        self,
        repo: str,
        number: int,
        *,
        title: str | None = None,
        body: str | None = None,
        labels: Sequence[str] | None = None,
    ) -> IssueInfo:
        kwargs: dict[str, Any] = {}
        if title is not None:
            kwargs["title"] = title
        if body is not None:
            kwargs["body"] = body
        if labels is not None:
            kwargs["labels"] = list(labels)
        return self._edit_issue(repo, number, f"update issue #{number}", **kwargs)

    def close_issue(self, repo: str, number: int, *, comment: str | None = None) -> IssueInfo:
        if comment:
            self.create_comment(repo, number, comment)
        return self._edit_issue(
            repo, number, f"close issue #{number}", state="closed", state_reason="completed"
        )

    def reopen_issue(self, repo: str, number: int) -> IssueInfo:
        return self._edit_issue(repo, number, f"reopen issue #{number}", state="open")

    def add_labels(self, repo: str, number: int, labels: Sequence[str]) -> None:
        if labels:
            self._call(
                f"label #{number}", repo, lambda: self._repo(repo).get_issue(number).add_to_labels(*labels)
            )

    # ----------------------------------------------------------------- comments and reactions

    def create_comment(self, repo: str, issue_number: int, body: str) -> CommentInfo:
        comment: IssueComment = self._call(
            f"comment on #{issue_number}",
            repo,
            lambda: self._repo(repo).get_issue(issue_number).create_comment(body),
        )
        return _comment_info(comment, issue_number)

    def edit_comment(self, repo: str, comment_id: int, body: str) -> CommentInfo:
        def edit() -> CommentInfo:
            # Comment URLs do not involve the issue number (/issues/comments/{id}); 0 is a placeholder.
            comment: IssueComment = _complete(self._repo(repo).get_issue(0).get_comment(comment_id))
            comment.edit(body)
            return _comment_info(comment, None)

        return self._call(f"edit comment {comment_id}", repo, edit)

    def get_comment(self, repo: str, comment_id: int) -> CommentInfo:
        """One issue or PR comment by id (the comment commands re-read it fresh)."""
        return self._call(
            f"read comment {comment_id}",
            repo,
            lambda: _comment_info(_complete(self._repo(repo).get_issue(0).get_comment(comment_id)), None),
        )

    def list_comments(self, repo: str, issue_number: int) -> list[CommentInfo]:
        """Every comment on #``issue_number``, oldest first."""
        return self._call(
            f"list the comments of #{issue_number}",
            repo,
            lambda: [
                _comment_info(c, issue_number)
                for c in self._repo(repo).get_issue(issue_number).get_comments()
            ],
        )

    def recent_comments(self, repo: str, since: datetime) -> list[CommentInfo]:
        """Every issue and PR comment of ``repo`` updated at or after ``since``, oldest first (one
        paginated listing for the whole repository: what recovery of missed commands reads)."""
        return self._call(
            "list the repository's recent comments",
            repo,
            lambda: [
                _comment_info(c, None)
                for c in self._repo(repo).get_issues_comments(sort="created", direction="asc", since=since)
            ],
        )

    def find_comment(self, repo: str, issue_number: int, marker: str) -> CommentInfo | None:
        """The first comment on #``issue_number`` whose body carries ``marker``."""

        def fetch() -> CommentInfo | None:
            for comment in self._repo(repo).get_issue(issue_number).get_comments():
                if carries_marker(comment.body or "", marker):
                    return _comment_info(comment, issue_number)
            return None

        return self._call(f"look for the comment marked {marker} on #{issue_number}", repo, fetch)

    def request_reviewers(
        self, repo: str, number: int, *, users: Sequence[str] = (), teams: Sequence[str] = ()
    ) -> None:
        """Ask users and teams (slugs, without the org) to review PR ``number``; GitHub ignores repeats."""

        def post() -> None:
            self._gh.requester.requestJsonAndCheck(
                "POST",
                f"/repos/{repo}/pulls/{number}/requested_reviewers",
                input={"reviewers": list(users), "team_reviewers": list(teams)},
            )

        self._call(f"request reviews on #{number}", repo, post)

    def upsert_comment(
        self, repo: str, issue_number: int, *, marker: str, body: str
    ) -> tuple[CommentInfo, bool]:
        """Edit the comment carrying ``marker`` in place, else post it; True when posted."""
        full_body = body if carries_marker(body, marker) else f"{marker}\n{body}"
        existing = self.find_comment(repo, issue_number, marker)
        if existing is None:
            return self.create_comment(repo, issue_number, full_body), True
        if existing.body == full_body:
            return existing, False
        return self.edit_comment(repo, existing.id, full_body), False

    def add_reaction(self, repo: str, comment_id: int, content: str) -> None:
        if content not in REACTIONS:
            raise GitHubValidationError(
                f"unknown reaction {content!r}", f"use one of {', '.join(sorted(REACTIONS))}"
            )
        self._call(
            f"react {content} to comment {comment_id}",
            repo,
            lambda: self._repo(repo).get_issue(0).get_comment(comment_id).create_reaction(content),
        )

    # ----------------------------------------------------------------- permissions and files

    def permission(self, repo: str, login: str) -> str:
        """The user's role on ``repo``: admin, maintain, write, triage, read or none."""

        def fetch() -> str:
            r = self._repo(repo)
            role = r.get_collaborator_role_name(login) or "none"
            # GitHub reports custom roles by name; fall back to the coarse permission for those.
            return (
                role
                if role in WRITE_ROLES | {"triage", "read", "none"}
                else r.get_collaborator_permission(login)
            )

        try:
            return self._call(f"read {login}'s permission", repo, fetch)
        except GitHubNotFoundError:
            # A login that is not a user at all: no permission, but not a failure of forksync.
            return "none"

    def is_private(self, repo: str) -> bool:
        """Whether ``repo`` is private (the dashboard shows private forks only after a login)."""

        def fetch() -> bool:
            _headers, data = self._gh.requester.requestJsonAndCheck("GET", f"/repos/{repo}")
            return bool(data.get("private", True))

        return self._call("read the repository's visibility", repo, fetch)

    def read_file(self, repo: str, path: str, ref: str | None = None) -> str | None:
        """The text of ``path`` at ``ref`` (default branch when None), or None when it does not exist."""

        def fetch() -> str | None:
            r = self._repo(repo)
            try:
                content = r.get_contents(path, ref=ref) if ref else r.get_contents(path)
            except GithubException as exc:
                if exc.status == 404:
                    return None
                raise
            if isinstance(content, list):  # a directory
                return None
            file: ContentFile = content
            return file.decoded_content.decode("utf-8", "replace")

        return self._call(f"read {path} at {ref or 'the default branch'}", repo, fetch)

    # ----------------------------------------------------------------- git

    def push_branch(
        self, repo: str, source: GitFunnel, rev: str, branch: str, *, force: bool = False
    ) -> None:
        """Push ``rev`` of the local repository ``source`` (a git-funnel ``Repository``) to ``refs/heads/<branch>``.

        The installation token travels in an environment-provided ``http.extraHeader`` (git's
        ``GIT_CONFIG_*`` variables): never on the command line, on disk, or in a message.
        """
        url = self.push_url_template.format(repo=repo)
        token = self._token()
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        env = {
            "GIT_CONFIG_COUNT": "2",
            "GIT_CONFIG_KEY_0": "http.extraHeader",
            "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
            # No credential helper may store or offer anything for this push.
            "GIT_CONFIG_KEY_1": "credential.helper",
            "GIT_CONFIG_VALUE_1": "",
        }
        refspec = f"{'+' if force else ''}{rev}:refs/heads/{branch}"
        try:
            source.git("push", "--porcelain", "--", url, refspec, env=env)
        except ForksyncError as exc:  # the funnel's GitError
            stderr = str(getattr(exc, "stderr", "") or exc)
            raise _classify_push(stderr, repo, branch, (token, basic)) from None
        log.info("pushed %s to %s:%s", rev, repo, branch)


def _scrub(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


_URL = re.compile(r"[a-z][a-z0-9+.-]*://[^\s'\"]+")
_STATUS = re.compile(r"\b([1-5]\d\d)\b")


def _classify_push(stderr: str, repo: str, branch: str, secrets: Iterable[str]) -> GitHubError:
    stderr = _scrub(stderr, secrets)
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    first = next(
        (line for line in lines if "error" in line.lower() or "fatal" in line.lower()),
        lines[0] if lines else "no message",
    )
    text = f"git push to {repo}:{branch} failed: {first}"
    lower = stderr.lower()
    # HTTP statuses are whole numbers outside the URLs: git names the remote in its messages, and
    # neither a port such as 127.0.0.1:40357 nor a sha with 403 in it is a 403.
    codes = set(_STATUS.findall(_URL.sub("<url>", lower)))
    # A refused token makes git ask for a username, which it cannot (prompts are off).
    if "401" in codes or any(
        sign in lower
        for sign in ("authentication failed", "invalid username or token", "could not read username")
    ):
        return GitHubAuthError(
            text, "the installation token was refused; check the App has contents: write", 401
        )
    if "403" in codes or "protected branch" in lower or "permission" in lower:
        return GitHubPermissionError(
            text, "give the App contents: write, and allow it past branch protection", 403
        )
    if "non-fast-forward" in lower or "fetch first" in lower or "rejected" in lower:
        return GitHubPushError(
            text,
            f"{branch} moved on GitHub; rebuild from its new head, or push with force "
            "if forksync owns the branch",
        )
    if (
        "could not resolve host" in lower
        or "timed out" in lower
        or any(code.startswith("50") for code in codes)
        or "unable to access" in lower
    ):
        return RetryableGitHubError(text, 0.0)
    return GitHubPushError(text, "see git's message above")


def _annotation_batches(output: CheckOutput | None) -> list[tuple[Annotation, ...]]:
    annotations = output.annotations if output is not None else ()
    if not annotations:
        return [()]
    return [
        annotations[i : i + ANNOTATIONS_PER_REQUEST]
        for i in range(0, len(annotations), ANNOTATIONS_PER_REQUEST)
    ]


def _fit(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """Cut a check-run field to GitHub's limit, saying so in the text itself (never silently)."""
    if len(text) <= limit:
        return text
    note = f"\n\n… (cut by forksync: {len(text) - limit + 200} more characters did not fit GitHub's limit)"
    return text[: limit - 200] + note


def _actions_json(actions: Sequence[CheckAction]) -> list[dict[str, str]]:
    if len(actions) > MAX_ACTIONS:
        raise GitHubValidationError(
            f"a check run takes at most {MAX_ACTIONS} actions, got {len(actions)}",
            "offer the others as commands in the summary instead",
        )
    return [a.to_json() for a in actions]


def _output_json(output: CheckOutput, annotations: Sequence[Annotation]) -> dict[str, Any]:
    out: dict[str, Any] = {"title": cut(output.title, 255), "summary": _fit(output.summary)}
    if output.text is not None:
        out["text"] = _fit(output.text)
    if annotations:
        out["annotations"] = [a.to_json() for a in annotations]
    return out


def _complete(obj: T) -> T:
    """Fetch a lazy PyGithub object now, inside the classified call."""
    obj.update()  # type: ignore[attr-defined]
    return obj


def _check_run_info(run: CheckRun) -> CheckRunInfo:
    app = run.app
    output = run.output
    return CheckRunInfo(
        id=run.id,
        name=run.name,
        head_sha=run.head_sha,
        status=run.status,
        conclusion=run.conclusion,
        html_url=run.html_url,
        app_id=app.id if app else None,
        external_id=run.external_id or None,
        title=output.title if output else None,
        summary=output.summary if output else None,
        text=output.text if output else None,
    )


def _pull_info(pr: PullRequest, *, listed: bool = False) -> PullRequestInfo:
    """``listed``: ``pr`` comes from a listing, which carries no ``merged`` (PyGithub would fetch
    each PR again to fill it in): ``merged_at`` says it instead."""
    head_repo = pr.head.repo.full_name if pr.head.repo is not None else None
    return PullRequestInfo(
        number=pr.number,
        title=pr.title,
        body=pr.body or "",
        state=pr.state,
        head_sha=pr.head.sha,
        head_ref=pr.head.ref,
        head_repo=head_repo,
        base_ref=pr.base.ref,
        merged=bool(pr.raw_data.get("merged_at")) if listed else bool(pr.merged),
        draft=bool(pr.draft),
        author=pr.user.login,
        author_association=pr.raw_data.get("author_association") or "NONE",
        html_url=pr.html_url,
        updated_at=pr.updated_at.timestamp() if pr.updated_at is not None else 0.0,
    )


def _is_pull(issue: Issue) -> bool:
    """True for a PR in an issue listing. Read from ``html_url`` (.../pull/N), which every listing
    carries: GitHub omits ``pull_request`` on plain issues, and PyGithub's ``issue.pull_request``
    then re-reads the issue, one GET per issue listed."""
    return "/pull/" in (issue.html_url or "")


def _issue_info(issue: Issue) -> IssueInfo:
    return IssueInfo(
        number=issue.number,
        title=issue.title,
        body=issue.body or "",
        state=issue.state,
        labels=tuple(label.name for label in issue.labels),
        html_url=issue.html_url,
    )


def _comment_info(comment: IssueComment, issue_number: int | None) -> CommentInfo:
    if issue_number is None:
        issue_number = int(comment.issue_url.rstrip("/").rsplit("/", 1)[-1])
    created = comment.created_at
    return CommentInfo(
        id=comment.id,
        issue_number=issue_number,
        body=comment.body or "",
        author=comment.user.login,
        html_url=comment.html_url,
        created_at=created.timestamp() if created is not None else 0.0,
        author_type=author_type(comment.user.login),
    )


__all__ = ["GitHubAdapter", "classify"]
