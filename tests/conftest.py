"""Shared fixtures: a hermetic git environment for every test, and real repository builders."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.gitrepo import Clock, GitRepo, sealed_env

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
    "tests.fixtures.demo",
]


@pytest.fixture(autouse=True)
def hermetic_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Seal git from the machine: temp HOME, no system config, fixed identity (git-revise style)."""
    home = tmp_path_factory.mktemp("home")
    for name, value in sealed_env(home).items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
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
