"""How a task gets its GitHub App, its GitHub view and its engine; replaceable in-process (demo, tests).

Tasks call :func:`app_for` (the App itself: its adapter, push URL, tokens, installations),
:func:`github_for` (the ingestion view over that App; a fresh installation token is minted
inside the task, never passed through the queue) and :func:`engine`. This is the one place the
workers reach ``core.github.app.app_for`` (``tests/test_import_rules.py`` checks it), so
:func:`use` replaces the App for every task at once. ``forksync demo`` swaps in a dry GitHub and
App; worker processes in tests reach the loopback GitHub through the normal path, so nothing is
swapped there.
"""

from __future__ import annotations

from collections.abc import Callable

from core.github.roles import IngestGitHub, InstalledApp
from core.settings import WorkerSettings
from workers.jobs.ingestion import Engine

GitHubFactory = Callable[[WorkerSettings, int], IngestGitHub]
AppFactory = Callable[[WorkerSettings], InstalledApp]

__all__ = ["AppFactory", "GitHubFactory", "InstalledApp", "app_for", "engine", "github_for", "use"]

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
    from core.github.ingest import LiveGitHub

    return LiveGitHub(app_for(settings), installation_id)


def engine() -> Engine:
    if _engine is not None:
        return _engine
    from workers.jobs.engine_bridge import run_engine

    return run_engine
