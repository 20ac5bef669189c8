"""Commit analyses kept between runs: read back equal to a fresh analysis, never for other rules."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pygit2

from tests.gitrepo import GitRepo
from workers.engine.changes import CHANGES_CACHE_FILE, cached_commit_changes, commit_changes_many
from workers.engine.git import Repository
from workers.engine.symbols import BUILTIN_STOPLIST


def _history(make_repo: Callable[[str], GitRepo]) -> tuple[GitRepo, list[str]]:
    repo = make_repo("up")
    shas = [
        repo.commit(
            "base", {"lib/A.cpp": "int a() { return 1; }\n", "python/m.py": "x = 1\n", "bin.dat": "\0\1"}
        )
    ]
    shas.append(
        repo.commit(
            "c1",
            {
                "lib/A.cpp": "int a() { return 2; }\nint helperWidth(int x) {\n  return x;\n}\n",
                "python/m.py": "x = 1\n\n\ndef is_hopper():\n    return True\n",
            },
        )
    )
    shas.append(repo.commit("c2", {"python/m.py": None, "python/n.py": "x = 1\n", "bin.dat": "\0\2"}))
    return repo, shas


def test_read_back_equals_a_fresh_analysis(make_repo: Callable[[str], GitRepo], tmp_path: Path) -> None:
    repo, shas = _history(make_repo)
    pg, git = pygit2.Repository(str(repo.path)), Repository(repo.path)
    fresh = commit_changes_many(pg, git, shas)
    assert cached_commit_changes(pg, git, shas, folder=tmp_path) == fresh  # written
    assert (tmp_path / CHANGES_CACHE_FILE).exists()
    assert cached_commit_changes(pg, git, shas, folder=tmp_path) == fresh  # read back
    assert "helperWidth" in fresh[shas[1]].introduced


def test_symbols_are_read_when_first_skipped_and_other_rules_start_over(
    make_repo: Callable[[str], GitRepo], tmp_path: Path
) -> None:
    repo, shas = _history(make_repo)
    pg, git = pygit2.Repository(str(repo.path)), Repository(repo.path)
    bare = cached_commit_changes(pg, git, shas, analyse=(), folder=tmp_path)
    assert bare[shas[1]].introduced == frozenset() and bare[shas[1]].ranges  # ranges only
    full = cached_commit_changes(pg, git, shas, folder=tmp_path)
    assert "helperWidth" in full[shas[1]].introduced  # analysed again, with symbols
    assert cached_commit_changes(pg, git, shas, analyse=(), folder=tmp_path) == full  # a full one serves both
    other = BUILTIN_STOPLIST | {"helperWidth"}
    assert (
        "helperWidth" not in cached_commit_changes(pg, git, shas, other, folder=tmp_path)[shas[1]].introduced
    )
    (tmp_path / CHANGES_CACHE_FILE).write_text("garbage\n[1, 2]\n")
    assert cached_commit_changes(pg, git, shas, folder=tmp_path) == commit_changes_many(pg, git, shas)
