"""The dashboard's GitHub login through PyGithub: the OAuth web flow's code exchanged for a
user-to-server token (``ApplicationOAuth.get_access_token``), the user it belongs to and whether
they can read a repository (``Github(auth=Token)``). ``bot/dashboard/access.py`` calls these once
per login and keeps only what they answer, never the token.

The code exchange goes to the web host PyGithub derives from the API URL (``github.com`` for the
default API, the same host for GitHub Enterprise Server).
"""

from __future__ import annotations

from github import Auth, GithubException

from core.github.adapter import classify
from core.github.app import github_client
from core.github.errors import GitHubError


class LoginRefused(GitHubError):
    """GitHub refused the code (it answers 200 with an ``error`` field): ``problem`` is its description."""


def exchange_code(api_url: str, client_id: str, client_secret: str, code: str, timeout_s: float) -> str:
    """The user-to-server token for ``code``; :class:`LoginRefused` when GitHub refuses it, another
    :class:`GitHubError` when it does not answer."""
    client = github_client(None, api_url, max(1, int(timeout_s)))
    try:
        token = client.get_oauth_application(client_id, client_secret).get_access_token(code).token
    except GithubException as exc:
        if exc.status == 200:
            data = exc.data if isinstance(exc.data, dict) else {}
            why = data.get("error_description") or data.get("error") or "no token"
            raise LoginRefused(str(why), "log in again; check GITHUB_OAUTH_CLIENT_ID/SECRET") from None
        raise classify(exc, "exchange the login code") from None
    except Exception as exc:  # a network failure: classified (retryable) like every other call
        raise classify(exc, "exchange the login code") from None
    if not token:
        raise LoginRefused("no token", "log in again; check GITHUB_OAUTH_CLIENT_ID/SECRET")
    return str(token)


def user_login(api_url: str, token: str, timeout_s: float) -> str:
    """``GET /user``: who the token belongs to; a :class:`GitHubError` when GitHub does not say."""
    try:
        return str(github_client(Auth.Token(token), api_url, max(1, int(timeout_s))).get_user().login)
    except Exception as exc:
        raise classify(exc, "read the user who logged in") from None


def can_read(api_url: str, token: str, repo: str, timeout_s: float) -> bool:
    """``GET /repos/{repo}`` as the user: GitHub answers 404 (or 403) for a repository they cannot
    see, and ``permissions.pull`` otherwise; a :class:`GitHubError` when it does not answer."""
    try:
        # The client is lazy: reading raw_data is what sends the request.
        perms = (
            github_client(Auth.Token(token), api_url, max(1, int(timeout_s)))
            .get_repo(repo)
            .raw_data.get("permissions")
        )
    except GithubException as exc:
        if exc.status in (403, 404):
            return False
        raise classify(exc, f"read {repo} as the user who logged in") from None
    except Exception as exc:
        raise classify(exc, f"read {repo} as the user who logged in") from None
    return bool(perms.get("pull", True)) if isinstance(perms, dict) else True
