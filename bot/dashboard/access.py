"""Who may see a fork's dashboard, and the GitHub login (OAuth web flow) that proves it.

Rule (pure, :func:`may_view`): a public fork's page is open to anyone when public dashboards are
allowed (``FORKSYNC_DASHBOARD_PUBLIC``, default on) and the fork's config does not turn it off;
any other page needs a GitHub login by a user who can read that repository. A viewer who may not
look gets the same 404 as for a fork that does not exist: a stranger learns nothing, not even
the name.

The login uses the App's OAuth client (user-to-server token), through PyGithub
(``core/github/oauth.py``). The token is used once, at login, to read ``GET /user`` and
``GET /repos/{owner}/{repo}`` for each installed fork; the session keeps only the login and the
set of readable forks (signed cookie, short-lived), never the token.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from core.dashboard.feed import ForkFeed
from core.errors import ForksyncError

log = logging.getLogger("forksync.dashboard")

VIEWER_TTL_S = 15 * 60  # how long a login's list of readable forks is trusted before re-checking


@dataclass(frozen=True)
class Viewer:
    login: str | None = None
    readable: frozenset[str] = frozenset()  # repos (lower case) the user could read at login
    expires: float = 0.0

    def signed_in(self, now: float) -> bool:
        return self.login is not None and now < self.expires

    def as_session(self) -> dict[str, Any]:
        return {"login": self.login, "readable": sorted(self.readable), "expires": self.expires}

    @classmethod
    def from_session(cls, data: Any) -> Viewer:
        if not isinstance(data, dict) or not isinstance(data.get("login"), str):
            return cls()
        return cls(
            data["login"],
            frozenset(str(r).lower() for r in data.get("readable", ())),
            float(data.get("expires", 0)),
        )


def is_public(feed: ForkFeed, public_allowed: bool) -> bool:
    return public_allowed and feed.public_dashboard and not feed.private


def may_view(feed: ForkFeed, viewer: Viewer, *, public_allowed: bool, now: float) -> bool:
    if is_public(feed, public_allowed):
        return True
    return viewer.signed_in(now) and feed.repo.lower() in viewer.readable


class OAuthError(ForksyncError):
    """The GitHub login did not complete (one line with the remedy)."""


@dataclass(frozen=True)
class GitHubOAuth:
    """The OAuth web flow against ``web_url`` (github.com) and the API at ``api_url``."""

    web_url: str
    api_url: str
    client_id: str
    client_secret: str
    timeout_s: float = 10.0

    def authorize_url(self, state: str, redirect_uri: str) -> str:
        query = urlencode({"client_id": self.client_id, "redirect_uri": redirect_uri, "state": state})
        return f"{self.web_url}/login/oauth/authorize?{query}"

    def exchange(self, code: str, redirect_uri: str) -> str:
        """The user-to-server token for ``code`` (PyGithub's OAuth code exchange, ``core.github.oauth``)."""
        from core.github import oauth
        from core.github.errors import GitHubError

        try:
            return oauth.exchange_code(self.api_url, self.client_id, self.client_secret, code, self.timeout_s)
        except oauth.LoginRefused as exc:
            raise OAuthError(f"GitHub refused the login: {exc.problem}", exc.remedy) from None
        except GitHubError:
            raise OAuthError("GitHub did not answer the login", "try logging in again") from None

    def user(self, token: str) -> str:
        from core.github import oauth
        from core.github.errors import GitHubError

        try:
            return oauth.user_login(self.api_url, token, self.timeout_s)
        except GitHubError as exc:
            raise OAuthError(
                f"GitHub did not say who logged in (GET /user answered {exc.status or 'nothing'})",
                "log in again",
            ) from None

    def can_read(self, token: str, repo: str) -> bool:
        """GitHub answers 404 for a repository the user cannot see; 200 with ``permissions.pull`` otherwise."""
        from core.github import oauth
        from core.github.errors import GitHubError

        try:
            return oauth.can_read(self.api_url, token, repo, self.timeout_s)
        except GitHubError as exc:
            raise OAuthError(
                f"GitHub did not answer GET /repos/{repo}: {exc.problem}", "try logging in again"
            ) from None


def viewer_for(oauth: GitHubOAuth, token: str, repos: list[str], now: float) -> Viewer:
    login = oauth.user(token)
    readable = frozenset(repo.lower() for repo in repos if oauth.can_read(token, repo))
    log.info("dashboard login %s: may read %d of %d forks", login, len(readable), len(repos))
    return Viewer(login, readable, now + VIEWER_TTL_S)
