"""Minimal typed models of the GitHub webhook events forksync reads, and their strict parser.

Webhooks are triggers, not data: each model keeps only the small key a task needs
(installation, repo, number, sha...). :func:`parse_event` raises :class:`PayloadError`
naming the missing or mistyped field, which the webhook view answers with a 400.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.errors import ForksyncError


class PayloadError(ForksyncError):
    """A webhook payload lacks a field its event needs (or has it with the wrong type)."""

    def __init__(self, event: str, field: str, problem: str) -> None:
        self.event = event
        self.field = field
        super().__init__(
            f"{event} payload: {field}: {problem}",
            "send the payload GitHub sends for this event (see docs.github.com webhook payloads)",
        )


@dataclass(frozen=True)
class PushEvent:
    installation_id: int | None
    repo: str
    ref: str
    before: str
    after: str
    created: bool
    deleted: bool
    forced: bool


@dataclass(frozen=True)
class PullRequestEvent:
    installation_id: int | None
    repo: str
    action: str
    number: int
    head_sha: str
    head_ref: str
    head_repo: str | None  # None when the head repository was deleted
    base_ref: str
    merged: bool
    draft: bool
    author: str
    author_association: str
    base_changed: bool = False  # "edited": the PR was re-targeted (changes.base in the payload)

    @property
    def from_fork(self) -> bool:
        """True when the head lives in another repository (an outside contributor's fork)."""
        return self.head_repo != self.repo


@dataclass(frozen=True)
class IssueCommentEvent:
    installation_id: int | None
    repo: str
    action: str
    issue_number: int
    comment_id: int
    body: str
    author: str
    author_type: str
    is_pull_request: bool

    @property
    def by_bot(self) -> bool:
        """Comments by bots (ours included) are never commands: that way no bot loops."""
        return self.author_type == "Bot" or self.author.endswith("[bot]")


@dataclass(frozen=True)
class CheckRunEvent:
    installation_id: int | None
    repo: str
    action: str
    check_run_id: int
    name: str
    head_sha: str
    requested_action: str | None  # the button's identifier, for action "requested_action"
    app_id: int | None


@dataclass(frozen=True)
class CheckSuiteEvent:
    installation_id: int | None
    repo: str
    action: str
    check_suite_id: int
    head_sha: str
    head_branch: str | None
    app_id: int | None  # the App whose suite it is (a suite holds one App's check runs)


@dataclass(frozen=True)
class InstallationEvent:
    installation_id: int
    action: str
    repos: tuple[str, ...]


@dataclass(frozen=True)
class InstallationRepositoriesEvent:
    installation_id: int
    action: str
    added: tuple[str, ...]
    removed: tuple[str, ...]


@dataclass(frozen=True)
class PingEvent:
    zen: str
    hook_id: int | None
    app_id: int | None


@dataclass(frozen=True)
class UnhandledEvent:
    """An event forksync does not act on; the view answers 202 "ignored"."""

    name: str
    action: str | None


Event = (
    PushEvent
    | PullRequestEvent
    | IssueCommentEvent
    | CheckRunEvent
    | CheckSuiteEvent
    | InstallationEvent
    | InstallationRepositoriesEvent
    | PingEvent
    | UnhandledEvent
)

HANDLED_EVENTS: tuple[str, ...] = (
    "push",
    "pull_request",
    "issue_comment",
    "check_run",
    "check_suite",
    "installation",
    "installation_repositories",
    "ping",
)

_MISSING = object()


class _Reader:
    """Typed reads by dotted path from one payload; errors name the event and the field."""

    def __init__(self, event: str, payload: Mapping[str, Any]) -> None:
        self.event = event
        self.payload = payload

    def _get(self, path: str) -> Any:
        node: Any = self.payload
        walked: list[str] = []
        for part in path.split("."):
            walked.append(part)
            if node is None:
                # GitHub nulls whole objects (head.repo of a deleted fork): the field is absent.
                return _MISSING
            if not isinstance(node, Mapping):
                raise PayloadError(self.event, ".".join(walked[:-1]), "expected an object")
            node = node.get(part, _MISSING)
            if node is _MISSING:
                return _MISSING
        return node

    def text(self, path: str) -> str:
        value = self._get(path)
        if value is _MISSING or value is None:
            raise PayloadError(self.event, path, "missing")
        if not isinstance(value, str):
            raise PayloadError(self.event, path, f"expected a string, got {type(value).__name__}")
        return value

    def opt_text(self, path: str) -> str | None:
        value = self._get(path)
        if value is _MISSING or value is None:
            return None
        if not isinstance(value, str):
            raise PayloadError(self.event, path, f"expected a string, got {type(value).__name__}")
        return value

    def integer(self, path: str) -> int:
        value = self._get(path)
        if value is _MISSING or value is None:
            raise PayloadError(self.event, path, "missing")
        if isinstance(value, bool) or not isinstance(value, int):
            raise PayloadError(self.event, path, f"expected an integer, got {type(value).__name__}")
        return value

    def opt_integer(self, path: str) -> int | None:
        value = self._get(path)
        if value is _MISSING or value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise PayloadError(self.event, path, f"expected an integer, got {type(value).__name__}")
        return value

    def flag(self, path: str, default: bool | None = None) -> bool:
        value = self._get(path)
        if (value is _MISSING or value is None) and default is not None:
            return default
        if not isinstance(value, bool):
            problem = (
                "missing"
                if value is _MISSING or value is None
                else f"expected true or false, got {type(value).__name__}"
            )
            raise PayloadError(self.event, path, problem)
        return value

    def repo_names(self, path: str) -> tuple[str, ...]:
        value = self._get(path)
        if value is _MISSING or value is None:
            return ()
        if not isinstance(value, list):
            raise PayloadError(self.event, path, "expected a list of repositories")
        names: list[str] = []
        for i, item in enumerate(value):
            name = item.get("full_name") if isinstance(item, Mapping) else None
            if not isinstance(name, str):
                raise PayloadError(self.event, f"{path}[{i}].full_name", "missing")
            names.append(name)
        return tuple(names)


def parse_event(name: str, payload: Mapping[str, Any]) -> Event:
    """Reduce a webhook payload (``X-GitHub-Event`` = ``name``) to its typed model.

    Events forksync does not handle become :class:`UnhandledEvent`; a handled event that
    lacks a field it needs raises :class:`PayloadError` naming that field.
    """
    if not isinstance(payload, Mapping):
        raise PayloadError(name or "unknown", "(body)", "expected a JSON object")
    r = _Reader(name, payload)
    if name not in HANDLED_EVENTS:
        # New or unknown events are ignored whatever their shape: never a 400 for an odd "action".
        action = payload.get("action")
        return UnhandledEvent(name=name, action=action if isinstance(action, str) else None)
    if name == "ping":
        return PingEvent(
            zen=r.opt_text("zen") or "", hook_id=r.opt_integer("hook_id"), app_id=r.opt_integer("hook.app_id")
        )
    if name == "installation":
        return InstallationEvent(
            installation_id=r.integer("installation.id"),
            action=r.text("action"),
            repos=r.repo_names("repositories"),
        )
    if name == "installation_repositories":
        return InstallationRepositoriesEvent(
            installation_id=r.integer("installation.id"),
            action=r.text("action"),
            added=r.repo_names("repositories_added"),
            removed=r.repo_names("repositories_removed"),
        )
    installation_id = r.opt_integer("installation.id")
    repo = r.text("repository.full_name")
    if name == "push":
        return PushEvent(
            installation_id=installation_id,
            repo=repo,
            ref=r.text("ref"),
            before=r.text("before"),
            after=r.text("after"),
            created=r.flag("created", default=False),
            deleted=r.flag("deleted", default=False),
            forced=r.flag("forced", default=False),
        )
    if name == "pull_request":
        return PullRequestEvent(
            installation_id=installation_id,
            repo=repo,
            action=r.text("action"),
            number=r.integer("pull_request.number"),
            head_sha=r.text("pull_request.head.sha"),
            head_ref=r.text("pull_request.head.ref"),
            head_repo=r.opt_text("pull_request.head.repo.full_name"),
            base_ref=r.text("pull_request.base.ref"),
            merged=r.flag("pull_request.merged", default=False),
            draft=r.flag("pull_request.draft", default=False),
            author=r.text("pull_request.user.login"),
            author_association=r.opt_text("pull_request.author_association") or "NONE",
            base_changed=r.opt_text("changes.base.ref.from") is not None,
        )
    if name == "issue_comment":
        return IssueCommentEvent(
            installation_id=installation_id,
            repo=repo,
            action=r.text("action"),
            issue_number=r.integer("issue.number"),
            comment_id=r.integer("comment.id"),
            body=r.opt_text("comment.body") or "",
            author=r.text("comment.user.login"),
            author_type=r.opt_text("comment.user.type") or "User",
            # GitHub marks comments on PRs by a "pull_request" object inside "issue".
            is_pull_request=isinstance(payload.get("issue"), Mapping)
            and payload["issue"].get("pull_request") is not None,
        )
    if name == "check_run":
        action = r.text("action")
        return CheckRunEvent(
            installation_id=installation_id,
            repo=repo,
            action=action,
            check_run_id=r.integer("check_run.id"),
            name=r.text("check_run.name"),
            head_sha=r.text("check_run.head_sha"),
            requested_action=r.text("requested_action.identifier") if action == "requested_action" else None,
            app_id=r.opt_integer("check_run.app.id"),
        )
    # check_suite: the only handled name left
    return CheckSuiteEvent(
        installation_id=installation_id,
        repo=repo,
        action=r.text("action"),
        check_suite_id=r.integer("check_suite.id"),
        head_sha=r.text("check_suite.head_sha"),
        head_branch=r.opt_text("check_suite.head_branch"),
        app_id=r.opt_integer("check_suite.app.id"),
    )


_ZERO_SHA = "0" * 40
_BOT_REF_PREFIX = "refs/heads/forksync/"  # workers/jobs/ingestion.py BOT_BRANCH_PREFIX

# The pull_request actions some handler acts on (L1: opened/synchronize/reopened/ready_for_review;
# ingestion: closed+merged). The rest (labeled, edited, review_requested, assigned,
# auto_merge_enabled, converted_to_draft...) are frequent and would only wake a worker for nothing.
PULL_REQUEST_ACTIONS: frozenset[str] = frozenset(
    {"opened", "synchronize", "reopened", "ready_for_review", "closed"}
)

# installation: a new or resumed installation gets its first ingest; repositories added likewise.
INSTALLATION_ACTIONS: frozenset[str] = frozenset({"created", "unsuspend"})
INSTALLATION_REPOSITORIES_ACTIONS: frozenset[str] = frozenset({"added"})


def ignore_reason(event: Event, our_app_id: int | None = None) -> str | None:
    """Why a parsed event triggers no task (one line), or None when it should be enqueued.

    Decided here, before anything is enqueued, so that the frequent no-op deliveries (branch
    deletions, tag pushes, our own ``forksync/*`` pushes, PR labels, another App's check runs)
    cost no worker time and cannot loop. ``our_app_id`` is the App's id (GITHUB_APP_ID), when known.
    """
    if isinstance(event, (PingEvent, UnhandledEvent)):
        return None  # the view answers these itself
    if isinstance(event, InstallationEvent):
        if event.action not in INSTALLATION_ACTIONS:
            return f"installation {event.action}: nothing to do (only created and unsuspend start an ingest)"
        return None
    if isinstance(event, InstallationRepositoriesEvent):
        if event.action not in INSTALLATION_REPOSITORIES_ACTIONS or not event.added:
            return f"installation_repositories {event.action}: nothing to do (only added repositories are ingested)"
        return None
    # installation_id None (a repository webhook, not the App's) is enqueued all the same: the
    # worker looks the installation up from the repository (workers/tasks/webhooks.py).
    if isinstance(event, PushEvent):
        if event.deleted or event.after == _ZERO_SHA:
            return f"push deleted {event.ref}: nothing to test or ingest"
        if not event.ref.startswith("refs/heads/"):
            return f"push to {event.ref}: only branch pushes are acted on"
        if event.ref.startswith(_BOT_REF_PREFIX):
            return f"push to {event.ref}: forksync's own branch (acting on it would loop)"
        return None
    if isinstance(event, PullRequestEvent):
        if event.action == "edited":
            # A re-target (a stacked bundle moved to the trunk) changes what L1 gates on; a title or
            # body edit (ingestion rewrites bodies) changes nothing to test.
            return None if event.base_changed else "pull_request edited: only a change of base is acted on"
        if event.action not in PULL_REQUEST_ACTIONS:
            return f"pull_request {event.action}: not acted on"
        return None
    if isinstance(event, CheckRunEvent):
        if our_app_id is not None and event.app_id is not None and event.app_id != our_app_id:
            return f"check_run {event.name!r} belongs to App {event.app_id}: only forksync's own check runs are re-run"
        return None
    if isinstance(event, CheckSuiteEvent):
        # completed: any App's suite (another CI system finishing feeds forksync / coverage).
        if event.action == "requested":
            return (
                "check_suite requested: GitHub opens a suite on every push; L1 starts from the "
                "pull_request and push events, so there is nothing to run yet"
            )
        if (
            event.action == "rerequested"
            and our_app_id is not None
            and event.app_id is not None
            and event.app_id != our_app_id
        ):
            return f"check_suite {event.check_suite_id} belongs to App {event.app_id}: only forksync's own suite is re-run"
        return None
    return None
