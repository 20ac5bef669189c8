"""The ingestion loop's GitHub view in production: the bot's adapter, for one installation.

The App (``bot.github_auth.GitHubApp``) is built once per process from the settings and keeps
the installation-token cache; each task asks for its installation's view here, so the token is
minted (or reused while fresh) inside the task, never carried through the queue.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from bot.github import CheckOutput, GitHubAdapter
from bot.github_auth import GitHubApp
from core.settings import WorkerSettings
from workers.github_port import IngestGitHub, Posted

_apps: dict[tuple[str | None, str], GitHubApp] = {}
_lock = threading.Lock()


def app_for(settings: WorkerSettings) -> GitHubApp:
    """The process's GitHubApp for these settings (one token cache per App and API URL)."""
    key = (settings.bot.app_id, settings.bot.api_url)
    with _lock:
        app = _apps.get(key)
        if app is None:
            app = _apps[key] = GitHubApp.from_settings(settings.bot)
        return app


class LiveGitHub:
    """:class:`IngestGitHub` over :class:`GitHubAdapter` (PyGithub) for one installation."""

    def __init__(self, app: GitHubApp, installation_id: int) -> None:
        self.app = app
        self.installation_id = installation_id
        self.adapter: GitHubAdapter = app.adapter(installation_id)

    def clone_url(self, repo: str) -> str:
        return self.app.push_url_template.format(repo=repo)

    def git_token(self) -> str | None:
        return self.app.installation_token(self.installation_id)

    def upsert_pull(self, repo: str, *, head: str, base: str, title: str, body: str, draft: bool = False) -> Posted:
        info, created = self.adapter.ensure_pull_request(repo, head=head, base=base, title=title, body=body, draft=draft)
        return Posted(info.number, info.html_url, created)

    def upsert_issue(self, repo: str, *, marker: str, title: str, body: str) -> Posted:
        info, created = self.adapter.ensure_issue(repo, marker=marker, title=title, body=body)
        return Posted(info.number, info.html_url, created)

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
        info = self.adapter.create_check_run(
            repo, name=name, head_sha=head_sha, conclusion=conclusion, output=CheckOutput(title, summary, text)
        )
        return Posted(info.id, info.html_url, True)


    def close_pull(self, repo: str, *, head: str, comment: str) -> int | None:
        info = self.adapter.find_pull_request(repo, head)
        if info is None:
            return None
        self.adapter.close_issue(repo, info.number, comment=comment)  # a PR is an issue to GitHub's API
        return info.number

    def close_issue(self, repo: str, *, marker: str, comment: str) -> int | None:
        info = self.adapter.find_issue(repo, marker)
        if info is None or info.state != "open":
            return None
        self.adapter.close_issue(repo, info.number, comment=comment)
        return info.number


def live_github(settings: WorkerSettings, installation_id: int) -> IngestGitHub:
    return LiveGitHub(app_for(settings), installation_id)


def installed_repositories(settings: WorkerSettings) -> Iterator[tuple[int, str]]:
    """Every (installation id, ``owner/name``) the App is installed on (``GET /app/installations``,
    then each installation's ``GET /installation/repositories``)."""
    from github import Auth, GithubIntegration

    from bot.github import classify

    app = app_for(settings)
    if not settings.bot.private_key:  # from_settings above already refused this; keeps mypy sure
        return
    integration = GithubIntegration(auth=Auth.AppAuth(int(app.app_id), settings.bot.private_key), base_url=app.api_url)
    try:
        installations = list(integration.get_installations())
    except Exception as exc:
        raise classify(exc, "list the App's installations") from None
    for installation in installations:
        try:
            repos = _installation_repos(app, installation.id)
        except Exception as exc:
            raise classify(exc, f"list the repositories of installation {installation.id}") from None
        for repo in repos:
            yield installation.id, repo


def _installation_repos(app: GitHubApp, installation_id: int) -> list[str]:
    import requests

    names: list[str] = []
    url: str | None = f"{app.api_url}/installation/repositories?per_page=100"
    token = app.installation_token(installation_id)
    while url:
        answer = requests.get(url, headers={"Authorization": f"token {token}", "Accept": "application/vnd.github+json"}, timeout=30)
        answer.raise_for_status()
        names += [r["full_name"] for r in answer.json().get("repositories", [])]
        url = answer.links.get("next", {}).get("url")
    return names
