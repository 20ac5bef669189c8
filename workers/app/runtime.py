"""How a task gets its GitHub view and its engine; replaceable in-process (demo, tests).

Tasks call :func:`github_for` (a fresh installation token is minted through the bot's App auth
inside the task, never passed through the queue) and :func:`engine`. ``forksync demo`` swaps in
a dry GitHub with :func:`use`; worker processes in tests reach the loopback GitHub through the
normal path, so nothing is swapped there.
"""

from __future__ import annotations

from collections.abc import Callable

from core.github.roles import IngestGitHub
from core.settings import WorkerSettings
from workers.jobs.ingestion import Engine

GitHubFactory = Callable[[WorkerSettings, int], IngestGitHub]

_github_factory: GitHubFactory | None = None
_engine: Engine | None = None


def use(*, github: GitHubFactory | None = None, engine: Engine | None = None) -> None:
    """Replace the GitHub factory and/or the engine for this process (None restores the default)."""
    global _github_factory, _engine
    _github_factory = github
    _engine = engine


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
