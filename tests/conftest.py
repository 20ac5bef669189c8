"""Shared fixtures: a hermetic git environment for every test, and real repository builders."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.gitrepo import Clock, GitRepo

# Fixture modules of each feature (tests/fixtures/*.py); add yours here.
pytest_plugins: list[str] = [
    "tests.fixtures.webhooks",
    "tests.fixtures.github",
    "tests.fixtures.trunk",
    "tests.fixtures.commands",
    "tests.fixtures.ingest",
    "tests.fixtures.workers",
    "tests.fixtures.bundling",
    "tests.fixtures.ledger",
    "tests.fixtures.payloads",
    "tests.fixtures.store",
    "tests.fixtures.redis",
]


@pytest.fixture(autouse=True)
def hermetic_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Seal git from the machine: temp HOME, no system config, fixed identity (git-revise style)."""
    home = tmp_path_factory.mktemp("home")
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test User\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n"
        "[commit]\n\tgpgsign = false\n"
        "[advice]\n\tdetachedHead = false\n"
        '[protocol "file"]\n\tallow = always\n'
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("FORKSYNC_CACHE_DIR", str(home / "forksync-cache"))
    for var in (
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_DATE",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Committer")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "committer@example.com")
    assert os.environ["HOME"] == str(home)
    yield home


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make_repo(tmp_path: Path, clock: Clock) -> Callable[[str], GitRepo]:
    """Factory: ``make_repo("upstream")`` creates a real repository under the test's tmp dir."""

    def make(name: str, branch: str = "main") -> GitRepo:
        return GitRepo(tmp_path / name, clock, branch)

    return make
