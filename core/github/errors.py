"""GitHub's errors as forksync knows them: one class per way a request can fail, and the wait
GitHub asks for.

Status codes are classified once, in the adapter (``core.github.adapter.classify``): "already
exists" is information (:class:`GitHubAlreadyDone`), 5xx, timeouts and rate limits are
:class:`RetryableGitHubError` (with the wait GitHub asked for), 401/403/404 are errors that say
what to do. Pure: callers may catch these without importing PyGithub.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from core.errors import ForksyncError


class GitHubError(ForksyncError):
    """GitHub refused a request; ``status`` is the HTTP status (0: no answer)."""

    def __init__(self, problem: str, remedy: str = "", status: int = 0) -> None:
        self.status = status
        super().__init__(problem, remedy)


class GitHubAuthError(GitHubError):
    """401: the App JWT or installation token was refused."""


class GitHubPermissionError(GitHubError):
    """403 (not a rate limit): the App lacks a permission, or a branch is protected."""


class GitHubNotFoundError(GitHubError):
    """404: the repository is not installed for the App, or the object does not exist."""


class GitHubValidationError(GitHubError):
    """422 that is not "already exists": the request itself is wrong."""


class GitHubAlreadyDone(GitHubError):
    """Information, not failure: the thing already exists or is already merged."""


class RetryableGitHubError(GitHubError):
    """5xx, timeouts and rate limits: retry after ``retry_after_s`` seconds (0: use backoff)."""

    def __init__(self, problem: str, retry_after_s: float, status: int = 0) -> None:
        self.retry_after_s = max(0.0, float(retry_after_s))
        super().__init__(
            problem, f"retry in {self.retry_after_s:.0f}s (done automatically by the task)", status
        )


class GitHubPushError(GitHubError):
    """git push failed for a reason a retry will not fix (rejected, protected branch)."""


def _header(headers: Mapping[str, Any] | None, name: str) -> str | None:
    for key, value in (headers or {}).items():
        if key.lower() == name.lower():
            return str(value)
    return None


def message_of(data: Any) -> str:
    """GitHub's error message with its details (``errors[].message``), from a response body."""
    if isinstance(data, Mapping):
        message = str(data.get("message") or "")
        details = [
            str(e.get("message") or e.get("code") or "")
            for e in data.get("errors") or []
            if isinstance(e, Mapping)
        ]
        details = [d for d in details if d]
        return f"{message}: {'; '.join(details)}" if details else message
    return str(data or "")


def retry_after_s(headers: Mapping[str, Any] | None, now: float | None = None) -> float | None:
    """The wait GitHub asks for: ``Retry-After``, else ``x-ratelimit-reset`` when remaining is 0."""
    retry_after = _header(headers, "Retry-After")
    if retry_after is not None:
        try:
            return max(0.0, float(retry_after))
        except ValueError:
            pass
    if _header(headers, "x-ratelimit-remaining") == "0":
        reset = _header(headers, "x-ratelimit-reset")
        if reset is not None:
            try:
                return max(0.0, float(reset) - (time.time() if now is None else now))
            except ValueError:
                pass
    return None
