"""Typed records of what forksync reads from and writes to GitHub (pure dataclasses).

The adapter (``core.github.adapter``) turns PyGithub objects into these and takes them back;
callers, planners and their tests see only these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_ACTIONS = 3  # GitHub's limit of buttons on one check run
WRITE_ROLES = frozenset({"admin", "maintain", "write"})
REACTIONS = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})


@dataclass(frozen=True)
class Annotation:
    """One check-run annotation (levels: notice, warning, failure)."""

    path: str
    start_line: int
    end_line: int
    annotation_level: str
    message: str
    title: str | None = None
    raw_details: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "annotation_level": self.annotation_level,
            "message": self.message,
        }
        if self.title:
            out["title"] = self.title
        if self.raw_details:
            out["raw_details"] = self.raw_details
        return out


@dataclass(frozen=True)
class CheckAction:
    """A button on a check run; clicking it sends check_run.requested_action with ``identifier``."""

    label: str  # at most 20 characters (longer is cut: it is only shown)
    description: str  # at most 40 characters (likewise)
    identifier: str  # at most 20 characters: refused, not cut, since it is what comes back

    def __post_init__(self) -> None:
        if not self.identifier or len(self.identifier) > 20:
            raise ValueError(f"check-run action identifier must be 1-20 characters, got {self.identifier!r}")

    def to_json(self) -> dict[str, str]:
        return {
            "label": cut(self.label, 20),
            "description": cut(self.description, 40),
            "identifier": self.identifier,
        }


@dataclass(frozen=True)
class CheckOutput:
    title: str
    summary: str
    text: str | None = None
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class CheckRunInfo:
    id: int
    name: str
    head_sha: str
    status: str
    conclusion: str | None
    html_url: str
    app_id: int | None = None
    external_id: str | None = None
    # The output as GitHub holds it (checks whose state lives in their output, e.g. L3 sign-off).
    title: str | None = None
    summary: str | None = None
    text: str | None = None


@dataclass(frozen=True)
class PullRequestInfo:
    number: int
    title: str
    body: str
    state: str
    head_sha: str
    head_ref: str
    head_repo: str | None
    base_ref: str
    merged: bool
    draft: bool
    author: str
    author_association: str
    html_url: str
    updated_at: float = 0.0  # seconds since the epoch (a push, an edit, a comment); 0: GitHub did not say

    def from_outside(self, repo: str) -> bool:
        """True when the head branch lives in another repository (or a deleted one)."""
        return (self.head_repo or "").lower() != repo.lower()


@dataclass(frozen=True)
class ReviewInfo:
    """One review of a pull request: who, its state (APPROVED, CHANGES_REQUESTED, COMMENTED,
    DISMISSED, PENDING) and the head commit it was given on."""

    user: str
    state: str
    commit_id: str | None = None


@dataclass(frozen=True)
class IssueInfo:
    number: int
    title: str
    body: str
    state: str
    labels: tuple[str, ...]
    html_url: str


@dataclass(frozen=True)
class CommentInfo:
    id: int
    issue_number: int
    body: str
    author: str
    html_url: str
    created_at: float = 0.0  # seconds since the epoch; 0 when GitHub did not say
    author_type: str = "User"  # "User", "Bot", "Organization": only a bot's marker counts


def author_type(login: str) -> str:
    """ "Bot" for a ``<slug>[bot]`` login (GitHub reserves the suffix to App accounts), else "User"."""
    return "Bot" if login.lower().endswith("[bot]") else "User"


@dataclass(frozen=True)
class Posted:
    """A PR, issue or check run as GitHub answered: its number (or id), URL, and whether new."""

    number: int
    url: str
    created: bool


def can_write(role: str) -> bool:
    """True for roles that may run forksync commands (write, maintain, admin)."""
    return role in WRITE_ROLES


def cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the last one an ellipsis when anything was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
