"""Commit analyses kept between runs: read back equal to a fresh analysis, never for other rules."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pygit2

from tests.gitrepo import GitRepo
from workers.engine.changes import (
    CHANGES_CACHE_FILE,
    AnalysisCache,
    analysis_row,
    cached_commit_changes,
    commit_changes_many,
)
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


def test_rows_read_back_are_written_as_read_and_new_ones_encoded_once(
    make_repo: Callable[[str], GitRepo], tmp_path: Path
) -> None:
    """Saving after one new analysis keeps the other rows' lines byte for byte (not encoded
    again); a row encoded ahead is the row save would have written."""
    repo, shas = _history(make_repo)
    pg, git = pygit2.Repository(str(repo.path)), Repository(repo.path)
    cached_commit_changes(pg, git, shas[:2], folder=tmp_path)
    path = tmp_path / CHANGES_CACHE_FILE
    key, *rows = path.read_text().splitlines()
    spaced = [row.replace(", ", ",  ") for row in rows]  # the same JSON, other bytes
    path.write_text("\n".join([key, *spaced]) + "\n")
    cache = AnalysisCache(tmp_path, BUILTIN_STOPLIST)
    fresh = commit_changes_many(pg, git, shas[2:])
    cache.add(True, fresh[shas[2]])
    assert cache.encode_one() and not cache.encode_one()
    cache.save()
    key2, *after = path.read_text().splitlines()
    assert key2 == key and after[:2] == spaced
    assert after[2] == analysis_row(True, fresh[shas[2]])
    assert cached_commit_changes(pg, git, shas, folder=tmp_path) == commit_changes_many(pg, git, shas)
