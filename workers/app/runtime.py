"""How a task gets its GitHub view and its engine; replaceable in-process (demo, tests).

Tasks call :func:`github_for` (a fresh installation token is minted through the bot's App auth
inside the task, never passed through the queue), :func:`app_for` (the App itself, for the L1
and L2 jobs: its adapter, push URL and tokens) and :func:`engine`. ``forksync demo`` swaps in a
dry GitHub and App with :func:`use`; worker processes in tests reach the loopback GitHub through
the normal path, so nothing is swapped there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from core.github.roles import GitHubPort, IngestGitHub
from core.settings import WorkerSettings
from workers.jobs.ingestion import Engine

GitHubFactory = Callable[[WorkerSettings, int], IngestGitHub]


class InstalledApp(Protocol):
    """What the L1 and L2 tasks ask of the GitHub App (``core.github.app.GitHubApp``)."""

    push_url_template: str  # "…/{repo}.git": where the workers fetch and push

    def adapter(self, installation_id: int) -> GitHubPort: ...

    def installation_token(self, installation_id: int) -> str: ...

    def bot_login(self) -> str | None: ...

    def installed_repositories(self) -> Iterable[tuple[int, str]]: ...


AppFactory = Callable[[WorkerSettings], InstalledApp]

_github_factory: GitHubFactory | None = None
_app_factory: AppFactory | None = None
_engine: Engine | None = None


def use(
    *, github: GitHubFactory | None = None, engine: Engine | None = None, app: AppFactory | None = None
) -> None:
    """Replace the GitHub factory, the App and/or the engine for this process (None restores the default)."""
    global _github_factory, _engine, _app_factory
    _github_factory = github
    _engine = engine
    _app_factory = app


def app_for(settings: WorkerSettings) -> InstalledApp:
    """The process's GitHub App (``core.github.app.app_for`` over the bot's settings)."""
    if _app_factory is not None:
        return _app_factory(settings)
    from core.github.app import app_for as github_app

    return github_app(settings.bot)


def github_for(settings: WorkerSettings, installation_id: int) -> IngestGitHub:
    if _github_factory is not None:
        return _github_factory(settings, installation_id)
    from core.github.ingest import live_github

    return live_github(settings, installation_id)


def engine() -> Engine:
    if _engine is not None:
        return _engine
    from workers.jobs.engine_bridge import run_engine

    return run_engine
