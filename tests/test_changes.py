"""Commit analysis: the batched git reader agrees with the libgit2 one on awkward commits."""

from __future__ import annotations

from collections.abc import Callable

import pygit2

from tests.gitrepo import GitRepo
from workers.engine.changes import commit_changes, commit_changes_many
from workers.engine.git import Repository


def test_batched_reader_matches_libgit2_on_awkward_commits(make_repo: Callable[[str], GitRepo]) -> None:
    """Adds, deletes, mode changes, binary files, odd path names, merges (first parent), empty and root commits."""
    repo = make_repo("up")
    shas = [
        repo.commit(
            "root",
            {"a.py": "def alpha():\n    return 1\n", "dir/b.cpp": "int beta(int x) {\n  return x;\n}\n"},
        )
    ]
    shas.append(repo.commit("odd names", {'with space/ü "q".py': "X_CONST = 1\n", "tab\tname.txt": "t\n"}))
    (repo.path / "bin.dat").write_bytes(b"\x00\x01\x02binary")
    repo.git("add", "bin.dat")
    shas.append(repo.commit("binary"))
    repo.git("update-index", "--chmod=+x", "a.py")
    shas.append(repo.commit("mode"))
    shas.append(
        repo.commit(
            "delete and edit",
            {"dir/b.cpp": None, "a.py": "def alpha():\n    return 2\n\ndef gamma():\n    pass\n"},
        )
    )
    shas.append(repo.commit("empty"))
    repo.git("checkout", "-q", "-b", "side", shas[-1])
    side = repo.commit("side", {"side.py": "SIDE = 1\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("main moves", {"main.py": "MAIN = 1\n"})
    repo.git("merge", "-q", "--no-ff", "-m", "Merge pull request #7 from x/side", side)
    shas.append(repo.head())
    pg = pygit2.Repository(str(repo.path))
    many = commit_changes_many(pg, Repository(repo.path), shas)
    for sha in shas:
        assert many[sha] == commit_changes(pg, sha), repo.git("log", "-1", "--format=%s", sha)
    assert many[shas[-1]].paths == ("side.py",)  # the merge: what it brought to the mainline
    assert many[shas[1]].paths == ("tab\tname.txt", 'with space/ü "q".py')
    assert "X_CONST" in many[shas[1]].symbols and "gamma" in many[shas[4]].symbols
    assert many[shas[5]].deltas == () and many[shas[5]].lines == 0
