"""GitHub App authentication: App JWT (RS256) → installation tokens, cached per installation.

Tokens are minted inside tasks (never passed through the queue) and reused until shortly
before they expire. The private key never appears in a log line or an exception message.
:func:`app_for` keeps one :class:`GitHubApp` (one token cache) per process and App;
:meth:`GitHubApp.installed_repositories` lists every repository the App is installed on
(PyGithub's pagination).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from github import Auth, Consts, Github, GithubIntegration
from github.PaginatedList import PaginatedList
from github.Repository import Repository

from core.config import Settings
from core.errors import ForksyncError
from core.github.adapter import GitHubAdapter, classify

log = logging.getLogger("forksync.github")

# Refresh a token this long before GitHub says it expires (tokens live one hour).
REFRESH_MARGIN_S = 300
TIMEOUT_S = 15


class GitHubAppConfigError(ForksyncError):
    """The App's id or private key is missing or unusable."""


def default_push_url_template(api_url: str) -> str:
    """Where git pushes go for an API URL: github.com, or a GitHub Enterprise host (``/api/v3``)."""
    api = api_url.rstrip("/")
    if api == Consts.DEFAULT_BASE_URL:
        return "https://github.com/{repo}.git"
    if api.endswith("/api/v3"):
        return api[: -len("/api/v3")] + "/{repo}.git"
    return api + "/{repo}.git"


def github_client(auth: Auth.Auth | None, api_url: str, timeout: int = TIMEOUT_S) -> Github:
    """A PyGithub client whose own retries and throttling are off: the adapter classifies every
    status code itself (style.md), and the workers' Celery retry honours Retry-After."""
    return Github(
        auth=auth,
        base_url=api_url,
        timeout=timeout,
        retry=None,
        seconds_between_requests=None,
        seconds_between_writes=None,
        lazy=True,
    )


@dataclass(frozen=True)
class _Token:
    token: str
    expires_at: float  # epoch seconds


class GitHubApp:
    """The App's identity: mints installation tokens (cached) and builds adapters per installation."""

    def __init__(
        self,
        app_id: str,
        private_key: str,
        api_url: str = Consts.DEFAULT_BASE_URL,
        *,
        push_url_template: str | None = None,
        clock: Callable[[], float] = time.time,
        refresh_margin_s: float = REFRESH_MARGIN_S,
        timeout: int = TIMEOUT_S,
    ) -> None:
        if not app_id or not str(app_id).strip().isdigit():
            raise GitHubAppConfigError(
                f"GITHUB_APP_ID must be the App's numeric id, got {app_id!r}",
                "copy it from the App's settings page",
            )
        _check_private_key(private_key)
        self.app_id = str(app_id).strip()
        self.api_url = api_url.rstrip("/")
        self.push_url_template = push_url_template or default_push_url_template(self.api_url)
        self.clock = clock
        self.refresh_margin_s = refresh_margin_s
        self.timeout = timeout
        self._integration = GithubIntegration(
            auth=Auth.AppAuth(int(self.app_id), private_key),
            base_url=self.api_url,
            timeout=timeout,
            retry=None,
            seconds_between_requests=None,
            seconds_between_writes=None,
        )
        self._tokens: dict[int, _Token] = {}
        self._bot_login: str | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # never show the key
        return f"GitHubApp(app_id={self.app_id}, api_url={self.api_url!r})"

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> GitHubApp:
        if not settings.app_id or not settings.private_key:
            raise GitHubAppConfigError(
                "the GitHub App is not configured (GITHUB_APP_ID and a private key are needed)",
                "set GITHUB_APP_ID and GITHUB_PRIVATE_KEY or GITHUB_PRIVATE_KEY_PATH (docs/github-app.md)",
            )
        return cls(settings.app_id, settings.private_key, settings.api_url, **kwargs)

    # ----------------------------------------------------------------- tokens

    def installation_token(self, installation_id: int) -> str:
        """A valid installation token, minted once and reused until ``refresh_margin_s`` before expiry."""
        with self._lock:
            cached = self._tokens.get(installation_id)
            if cached is not None and self.clock() < cached.expires_at - self.refresh_margin_s:
                return cached.token
        try:
            auth = self._integration.get_access_token(installation_id)
        except Exception as exc:
            raise classify(exc, f"mint a token for installation {installation_id}") from None
        token = _Token(auth.token, auth.expires_at.timestamp())
        with self._lock:
            self._tokens[installation_id] = token
        log.info(
            "minted an installation token for installation %s (expires %s)", installation_id, auth.expires_at
        )
        return token.token

    def bot_login(self) -> str:
        """The login the App writes as (``<slug>[bot]``), read once from ``GET /app``: records that
        only forksync may write (the ``/approve`` comment) are trusted from this login alone."""
        with self._lock:
            cached = self._bot_login
        if cached is not None:
            return cached
        try:
            login = f"{self._integration.get_app().slug}[bot]"
        except Exception as exc:
            raise classify(exc, "read the App's own login (GET /app)") from None
        with self._lock:
            self._bot_login = login
        return login

    def forget_token(self, installation_id: int) -> None:
        """Drop a cached token (GitHub refused it): the next call mints a new one."""
        with self._lock:
            self._tokens.pop(installation_id, None)

    def installation_for_repo(self, repo: str) -> int:
        """The installation id of the App on ``owner/name`` (for payloads that carry none)."""
        owner, _, name = repo.partition("/")
        try:
            return int(self._integration.get_repo_installation(owner, name).id)
        except Exception as exc:
            raise classify(exc, f"find the App's installation on {repo}", repo=repo) from None

    def installed_repositories(self) -> Iterator[tuple[int, str]]:
        """Every (installation id, ``owner/name``) the App is installed on: ``GET /app/installations``
        as the App, then each installation's ``GET /installation/repositories`` with its token."""
        try:
            installations = list(self._integration.get_installations())
        except Exception as exc:
            raise classify(exc, "list the App's installations") from None
        for installation in installations:
            try:
                client = self.client(installation.id)
                repos = PaginatedList(
                    Repository,
                    client.requester,
                    "/installation/repositories",
                    {"per_page": 100},
                    list_item="repositories",
                )
                names = [r.full_name for r in repos]
            except Exception as exc:
                raise classify(exc, f"list the repositories of installation {installation.id}") from None
            for name in names:
                yield installation.id, name

    # ----------------------------------------------------------------- clients

    def client(self, installation_id: int) -> Github:
        """A PyGithub client acting as the installation; every request uses a fresh-enough token."""
        return github_client(_InstallationTokenAuth(self, installation_id), self.api_url, self.timeout)

    def adapter(self, installation_id: int) -> GitHubAdapter:
        return GitHubAdapter(
            self.client(installation_id),
            token=lambda: self.installation_token(installation_id),
            push_url_template=self.push_url_template,
            on_bad_credentials=lambda: self.forget_token(installation_id),
        )


class _InstallationTokenAuth(Auth.Auth):
    """PyGithub auth that asks the App's cache for the token on every request."""

    def __init__(self, app: GitHubApp, installation_id: int) -> None:
        self._app = app
        self._installation_id = installation_id

    @property
    def token_type(self) -> str:
        return "token"

    @property
    def token(self) -> str:
        return self._app.installation_token(self._installation_id)

    @property
    def _masked_token(self) -> str:
        return "token (installation token removed)"


def _check_private_key(private_key: str | None) -> None:
    """Fail early, and without echoing key material, when the key is not an RSA PEM private key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    problem = None
    if not private_key or "PRIVATE KEY" not in private_key:
        problem = "the App's private key is missing or not in PEM format"
    else:
        try:
            key = serialization.load_pem_private_key(private_key.encode(), password=None)
            if not isinstance(key, rsa.RSAPrivateKey):
                problem = "the App's private key is not an RSA key"
        except Exception:  # any parse failure; its message could quote key bytes, so drop it
            problem = "the App's private key could not be loaded"
    if problem:
        raise GitHubAppConfigError(
            problem,
            "download a new private key (.pem) from the App's settings and set GITHUB_PRIVATE_KEY_PATH",
        ) from None


_apps: dict[tuple[str | None, str], GitHubApp] = {}
_apps_lock = threading.Lock()


def app_for(settings: Settings) -> GitHubApp:
    """The process's :class:`GitHubApp` for these settings (one token cache per App and API URL)."""
    key = (settings.app_id, settings.api_url)
    with _apps_lock:
        app = _apps.get(key)
        if app is None:
            app = _apps[key] = GitHubApp.from_settings(settings)
        return app


__all__ = ["GitHubApp", "GitHubAppConfigError", "app_for", "default_push_url_template", "github_client"]
