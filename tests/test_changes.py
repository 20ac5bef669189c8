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


def test_batched_reader_cuts_sections_and_hunks_only_at_headers(make_repo: Callable[[str], GitRepo]) -> None:
    """Changed lines that look like diff-tree's own lines (a commit's sha alone, ``diff --git``,
    ``@@``, a raw ``:`` entry), a last line without newline, CRLF, bytes that are not UTF-8, and a
    commit whose section spans many of the pipe's blocks are read as libgit2 reads them; commits
    outside ``analyse`` get the same paths, entries, size and ranges, and no symbols."""
    repo = make_repo("up")
    shas = [repo.commit("root", {"a.py": "def alpha():\n    return 1\n", "b.cpp": "int beta();\n"})]
    head = repo.head()
    tricky = (
        f"{head}\n"
        "diff --git a/x b/x\n"
        "@@ -1 +1 @@ void fake()\n"
        ":100644 100644 " + "0" * 40 + " " + "1" * 40 + " M\tx\n"
        "\\ No newline at end of file\n"
    )
    shas.append(repo.commit("lines like headers", {"a.py": "def alpha():\n" + tricky + "    return 2\n"}))
    shas.append(repo.commit("no newline at the end", {"b.cpp": "int beta();\nint gamma(int x)"}))
    (repo.path / "crlf.cpp").write_bytes(b"int delta(int);\r\nint eps\xff(int);\r\n")
    repo.git("add", "crlf.cpp")
    shas.append(repo.commit("crlf and bad bytes"))
    big = "".join(f"int fn{i}(int x) {{ return x + {i}; }}\n" for i in range(40000))  # ~1.5 MB of patch
    shas.append(repo.commit("big", {"big.cpp": big}))
    shas.append(repo.commit("after big", {"big.cpp": big.replace("fn7(", "fn7b("), "a.py": "A = 1\n"}))
    pg = pygit2.Repository(str(repo.path))
    many = commit_changes_many(pg, Repository(repo.path), shas)
    for sha in shas:
        assert many[sha] == commit_changes(pg, sha), repo.git("log", "-1", "--format=%s", sha)
    assert "fn7b" in many[shas[-1]].symbols and many[shas[-2]].lines == 40000
    some = commit_changes_many(pg, Repository(repo.path), shas, analyse=shas[::2])
    for sha in shas:
        full, part = many[sha], some[sha]
        assert (part.deltas, part.lines, part.ranges, part.tree) == (
            full.deltas,
            full.lines,
            full.ranges,
            full.tree,
        )
        if sha in shas[::2]:
            assert part == full
        else:
            assert not (part.symbols or part.defined or part.introduced or part.used)
