"""Line dependencies across a file's moves follow the lines, as ``git blame`` and a cherry-pick's merge do.

Built from a real extract (pydantic's ``test_garbage_collection.py``, moved away and back on its
mainline, then edited: ``tests/data/renames/pydantic-gc``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pygit2

from tests.gitrepo import GitRepo
from workers.engine.changes import analysis_of_row, analysis_row, commit_changes, commit_changes_many
from workers.engine.git import Repository
from workers.engine.lines import FileRanges, Hunk, line_dependencies
from workers.engine.merges import GitMerger
from workers.engine.pick import PickTarget

DATA = Path(__file__).parent / "data" / "renames" / "pydantic-gc"
HOME = "pydantic-core/tests/test_garbage_collection.py"
AWAY = "tests/pydantic_core/test_garbage_collection.py"


def _history(make_repo: Callable[[str], GitRepo]) -> tuple[GitRepo, list[str]]:
    """created, moved away (a blank line dropped), moved back (restored), edited: pydantic's four steps."""
    repo = make_repo("up")
    back, away, fixed = (
        (DATA / n).read_text() for n in ("moved-back.py.txt", "moved-away.py.txt", "fixed.py.txt")
    )
    shas = [repo.commit("create", {HOME: back, "README.md": "pydantic-core\n"})]
    shas.append(repo.commit("Migrate `pydantic-core` tests (#13582)", {HOME: None, AWAY: away}))
    shas.append(repo.commit("Revert moving `pydantic-core` tests (#13589)", {AWAY: None, HOME: back}))
    shas.append(repo.commit("Fix missing GC traversal (#13624)", {HOME: fixed}))
    return repo, shas


def test_an_edit_after_moves_depends_on_who_wrote_its_lines_not_on_the_moves(
    make_repo: Callable[[str], GitRepo],
) -> None:
    """The edit of the moved file's imports depends on the commit that wrote those lines, never on
    the two moves that only carried them (each move depends on the lines it changed, not on the
    file's every line); the analysis says which path each move came from."""
    repo, (create, away, back, fix) = _history(make_repo)
    pg = pygit2.Repository(str(repo.path))
    changes = commit_changes_many(pg, Repository(repo.path), [create, away, back, fix])
    moved = {r.path: r.renamed_from for r in changes[away].ranges}
    assert moved == {AWAY: HOME}  # the deletion of HOME is folded into the move
    assert changes[away].paths == (HOME, AWAY)  # the pick's view keeps both paths (no renames)
    assert {r.path: r.renamed_from for r in changes[back].ranges} == {HOME: AWAY}
    deps = line_dependencies([(s, changes[s].ranges) for s in (create, away, back, fix)])
    assert {d.commit for d in deps[fix]} == {create}
    assert {d.commit for d in deps[back]} == {create}  # its restored blank line's neighbours
    assert {d.commit for d in deps[away]} == {create}
    assert all(d.path == AWAY for d in deps[back]) and all(d.path == HOME for d in deps[fix])


def test_the_edit_picks_where_the_moves_never_happened(make_repo: Callable[[str], GitRepo]) -> None:
    """Why the moves are no dependency: onto a fork that has the file where it was before the move
    back (the move back not picked), git's merge places the edit on the fork's path, cleanly."""
    repo, (_create, away, _back, fix) = _history(make_repo)
    pg = pygit2.Repository(str(repo.path))
    fork = pg.revparse_single(away).peel(pygit2.Tree).id
    target = PickTarget(pg, fork, GitMerger(pg))
    assert target.pick(commit_changes(pg, fix)).clean
    tree = pg.get(target.tree())
    assert isinstance(tree, pygit2.Tree)
    assert HOME not in tree and AWAY in tree
    assert tree[AWAY].id == pg.create_blob(
        (DATA / "fixed.py.txt").read_bytes().replace(b"\n\nfrom pydantic_core", b"\nfrom pydantic_core", 1)
    )


def test_both_readers_see_the_same_moves(make_repo: Callable[[str], GitRepo]) -> None:
    """The batched reader and the libgit2 one (merges) agree on moves, an unchanged move, a changed
    one and a binary one; the analysis cache's rows keep them."""
    repo, shas = _history(make_repo)
    (repo.path / "blob.bin").write_bytes(b"\x00\x01binary" * 20)
    repo.git("add", "blob.bin")
    shas.append(repo.commit("binary"))
    repo.git("mv", "blob.bin", "moved.bin")
    shas.append(repo.commit("binary moved as it was"))
    (repo.path / "moved.bin").write_bytes(b"\x00\x01binary" * 19 + b"\x00\x02binarz")
    repo.git("add", "moved.bin")
    repo.git("mv", "moved.bin", "again.bin")
    shas.append(repo.commit("binary moved and changed"))
    pg = pygit2.Repository(str(repo.path))
    many = commit_changes_many(pg, Repository(repo.path), shas)
    for sha in shas:
        assert many[sha] == commit_changes(pg, sha)
        assert analysis_of_row(analysis_row(True, many[sha]))[2] == many[sha]  # the cache keeps the moves
    assert many[shas[-2]].ranges == (FileRanges("moved.bin", renamed_from="blob.bin"),)
    assert many[shas[-1]].ranges == (FileRanges("again.bin", whole=True, renamed_from="moved.bin"),)


def test_a_moved_file_keeps_its_owners_and_a_changed_binary_move_owns_it() -> None:
    """Pure walk: lines carried by a move keep their owner at the new path; a later commit that
    deletes the old path's name again depends on nothing there; a binary changed while moved is
    owned whole by the move."""
    history = [
        ("a", [FileRanges("old.py", (Hunk(0, 0, 1, 10),))]),
        ("b", [FileRanges("new.py", (Hunk(3, 1, 3, 1),), renamed_from="old.py")]),
        ("c", [FileRanges("new.py", (Hunk(8, 1, 8, 1),))]),
        ("d", [FileRanges("new.py", (Hunk(3, 1, 3, 1),))]),
        ("e", [FileRanges("old.py", (Hunk(0, 0, 1, 2),))]),
        ("f", [FileRanges("img.png", whole=True)]),
        ("g", [FileRanges("art.png", whole=True, renamed_from="img.png")]),
        ("h", [FileRanges("art.png", whole=True)]),
    ]
    deps = line_dependencies(history)
    assert {x.commit for x in deps["b"]} == {"a"}
    assert {(x.commit, x.path) for x in deps["c"]} == {("a", "new.py")}
    assert {x.commit for x in deps["d"]} == {"a", "b"}  # line 3 is b's, its neighbours a's
    assert deps["e"] == ()
    assert {x.commit for x in deps["g"]} == {"f"}
    assert {x.commit for x in deps["h"]} == {"g"}
