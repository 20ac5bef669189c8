"""Who may see a fork's dashboard, and the GitHub login (OAuth web flow) that proves it.

Rule (pure, :func:`may_view`): a public fork's page is open to anyone when public dashboards are
allowed (``FORKSYNC_DASHBOARD_PUBLIC``, default on) and the fork's config does not turn it off;
any other page needs a GitHub login by a user who can read that repository. A viewer who may not
look gets the same 404 as for a fork that does not exist: a stranger learns nothing, not even
the name.

The login uses the App's OAuth client (user-to-server token). The token is used once, at
login, to read ``GET /user`` and ``GET /repos/{owner}/{repo}`` for each installed fork; the
session keeps only the login and the set of readable forks (signed cookie, short-lived), never
the token.
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
        """The user-to-server token for ``code`` (GitHub answers 200 with an ``error`` field on failure)."""
        import requests

        try:
            answer = requests.post(
                f"{self.web_url}/login/oauth/access_token",
                data={
                    "client_id": self.client_id,
                    "client_secret": self.client_secret,
                    "code": code,
                    "redirect_uri": redirect_uri,
                },
                headers={"Accept": "application/json"},
                timeout=self.timeout_s,
            )
            data = answer.json()
        except (requests.RequestException, ValueError) as exc:
            raise OAuthError(
                f"GitHub did not answer the login ({type(exc).__name__})", "try logging in again"
            ) from None
        token = data.get("access_token") if isinstance(data, dict) else None
        if not token:
            error = (
                data.get("error_description") or data.get("error") if isinstance(data, dict) else "no token"
            )
            raise OAuthError(
                f"GitHub refused the login: {error}", "log in again; check GITHUB_OAUTH_CLIENT_ID/SECRET"
            )
        return str(token)

    def _get(self, token: str, path: str) -> tuple[int, Any]:
        import requests

        try:
            answer = requests.get(
                f"{self.api_url}{path}",
                headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json"},
                timeout=self.timeout_s,
            )
        except requests.RequestException as exc:
            raise OAuthError(
                f"GitHub did not answer {path} ({type(exc).__name__})", "try logging in again"
            ) from None
        try:
            body = answer.json()
        except ValueError:
            body = None
        return answer.status_code, body

    def user(self, token: str) -> str:
        status, body = self._get(token, "/user")
        if status != 200 or not isinstance(body, dict) or not body.get("login"):
            raise OAuthError(
                f"GitHub did not say who logged in (GET /user answered {status})", "log in again"
            )
        return str(body["login"])

    def can_read(self, token: str, repo: str) -> bool:
        """GitHub answers 404 for a repository the user cannot see; 200 with ``permissions.pull`` otherwise."""
        status, body = self._get(token, f"/repos/{repo}")
        if status != 200 or not isinstance(body, dict):
            return False
        perms = body.get("permissions")
        return bool(perms.get("pull", True)) if isinstance(perms, dict) else True


def viewer_for(oauth: GitHubOAuth, token: str, repos: list[str], now: float) -> Viewer:
    login = oauth.user(token)
    readable = frozenset(repo.lower() for repo in repos if oauth.can_read(token, repo))
    log.info("dashboard login %s: may read %d of %d forks", login, len(readable), len(repos))
    return Viewer(login, readable, now + VIEWER_TTL_S)
