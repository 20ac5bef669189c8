"""The workers' one seam to the GitHub App (workers/app/runtime.py): replacing the App there
replaces it for the ingestion view too, and restoring it goes back to the real App."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import cast

import pytest

from core.github.ingest import LiveGitHub
from core.github.roles import GitHubPort
from core.settings import WorkerSettings
from workers.app import runtime


class RecordingApp:
    """An App that answers from plain data and records which installation it was asked for."""

    push_url_template = "/srv/git/{repo}.git"

    def __init__(self) -> None:
        self.asked: list[int] = []

    def adapter(self, installation_id: int) -> GitHubPort:
        self.asked.append(installation_id)
        return cast("GitHubPort", object())

    def installation_token(self, installation_id: int) -> str:
        return f"token-{installation_id}"

    def bot_login(self) -> str | None:
        return "forksync[bot]"

    def installed_repositories(self) -> Iterable[tuple[int, str]]:
        return [(7, "org/fork")]

    def installation_for_repo(self, repo: str) -> int:
        return 7


def test_the_ingestion_view_is_built_over_the_seams_app(tmp_path: Path) -> None:
    """With an App swapped in (and no GitHub factory), ``github_for`` wraps that App: its push URL
    and its token, for the installation asked; the real App is never built."""
    app = RecordingApp()
    settings = WorkerSettings.from_mapping({"FORKSYNC_DATA_DIR": str(tmp_path)})
    runtime.use(app=lambda _settings: app)
    try:
        assert runtime.app_for(settings) is app
        view = runtime.github_for(settings, 7)
        assert isinstance(view, LiveGitHub)
        assert view.clone_url("org/fork") == "/srv/git/org/fork.git"
        assert view.git_token() == "token-7"
        assert app.asked == [7]
    finally:
        runtime.use()


def test_restoring_the_seam_goes_back_to_the_real_app(tmp_path: Path) -> None:
    """After ``use()``, the seam builds the real App from the settings: with none configured, it
    refuses with a one-line error (a ForksyncError), not the swapped-in one."""
    from core.errors import ForksyncError

    app = RecordingApp()
    settings = WorkerSettings.from_mapping({"FORKSYNC_DATA_DIR": str(tmp_path)})
    runtime.use(app=lambda _settings: app)
    runtime.use()
    with pytest.raises(ForksyncError):
        runtime.app_for(settings)
