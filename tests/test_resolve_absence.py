"""A file the fork lacks: skipped only when the fork dropped it; one still on its way waits for the
upstream commit that brings it (real repositories, ``resolve_pick`` and ``GitFileHistory``)."""

from __future__ import annotations

from collections.abc import Callable

import pygit2

from tests.gitrepo import GitRepo
from workers.engine.git import Repository
from workers.engine.resolve import resolve_pick
from workers.engine.resolve.history import GitFileHistory, plan_locator
from workers.engine.resolve.model import FORK_LACKS_FILE, Dropped, WaitsFor
from workers.engine.resolve.pipeline import Conflict, resolve_text

LIB = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(8))


def _upstream_adds_then_edits(make_repo: Callable[[str], GitRepo]) -> tuple[GitRepo, str, str, str]:
    """Fork point, a fork commit, then upstream adds ``lib.py`` (A) and edits it (C): (repo, A, C, fork tip)."""
    repo = make_repo("r")
    repo.commit("base", {"app.py": "x = 1\n"})
    repo.git("checkout", "-q", "-b", "fork")
    fork = repo.commit("fork change", {"app.py": "x = 2\n"})
    repo.git("checkout", "-q", "main")
    added = repo.commit("add lib", {"lib.py": LIB})
    edit = repo.commit("edit lib", {"lib.py": LIB.replace("x + 3", "x * 3")})
    return repo, added, edit, fork


def test_a_file_an_unlanded_upstream_commit_adds_waits_for_it(make_repo: Callable[[str], GitRepo]) -> None:
    """Upstream adds lib.py then edits it; the fork has neither: the edit is declined, naming the add."""
    repo, added, edit, fork = _upstream_adds_then_edits(make_repo)
    out = resolve_pick(pygit2.Repository(str(repo.path)), edit, fork)
    assert not out.resolved and out.tree is None
    assert not any(e.strategy == FORK_LACKS_FILE for e in out.entries)
    [waiting] = out.waiting
    assert waiting.path == "lib.py" and waiting.needs == added
    assert added[:10] in waiting.reason and "(add lib) adds it" in waiting.reason
    assert out.needs == (added,) and out.as_json()["needs"] == [added]


def test_the_plan_says_where_the_commit_it_waits_for_is(make_repo: Callable[[str], GitRepo]) -> None:
    """With the plan's placement, the note names the bundle (and its branch) holding the add."""
    repo, added, edit, fork = _upstream_adds_then_edits(make_repo)
    base = repo.git("merge-base", "fork", "main")
    where = plan_locator({added: ("bundle-abc1234", "forksync/bundle/abc1234")}, {})
    history = GitFileHistory(Repository(repo.path), base, fork, where=where)
    out = resolve_pick(pygit2.Repository(str(repo.path)), edit, fork, history=history)
    assert not out.resolved
    assert "in bundle bundle-abc1234 (forksync/bundle/abc1234), not landed yet" in out.waiting[0].reason
    assert plan_locator({}, {added: "chain-1"})(added) == "in chain chain-1, not landed yet"
    assert "no bundle or chain" in plan_locator({}, {})(added)


def test_a_file_the_fork_carried_and_dropped_is_skipped(make_repo: Callable[[str], GitRepo]) -> None:
    """The ledger says the fork carries the add (and the fork has no lib.py): the fork dropped it, skipped."""
    repo, added, edit, fork = _upstream_adds_then_edits(make_repo)
    base = repo.git("merge-base", "fork", "main")
    history = GitFileHistory(Repository(repo.path), base, fork, carried={added})
    assert isinstance(history.absence("lib.py", added), Dropped)
    out = resolve_pick(pygit2.Repository(str(repo.path)), edit, fork, history=history)
    assert out.resolved and [(e.path, e.strategy) for e in out.entries] == [("lib.py", FORK_LACKS_FILE)]
    assert "carries upstream" in out.entries[0].reason


def test_a_file_the_fork_deleted_is_skipped_naming_the_deletion(make_repo: Callable[[str], GitRepo]) -> None:
    """The fork deleted gone.py after the fork point; upstream edits it: skipped, the note names the deletion."""
    repo = make_repo("r")
    repo.commit("base", {"app.py": "x = 1\n", "gone.py": LIB})
    repo.git("checkout", "-q", "-b", "fork")
    deletion = repo.commit("drop gone.py", {"gone.py": None})
    repo.git("checkout", "-q", "main")
    edit = repo.commit("edit gone", {"gone.py": LIB.replace("x + 3", "x * 3")})
    r = pygit2.Repository(str(repo.path))
    out = resolve_pick(r, edit, deletion)
    assert out.resolved and [(e.path, e.strategy) for e in out.entries] == [("gone.py", FORK_LACKS_FILE)]
    assert f"deleted this file in {deletion[:10]}" in out.entries[0].reason
    tree = r.get(out.tree)
    assert isinstance(tree, pygit2.Tree) and "gone.py" not in tree


def _renamed(
    make_repo: Callable[[str], GitRepo], fork_files: dict[str, str | None]
) -> tuple[GitRepo, str, str, str]:
    """Upstream renames old.py to new.py, reworking two functions (R), then edits new.py (C); the fork
    changes ``fork_files``. Returns (repo, R, C, fork tip)."""
    repo = make_repo("r")
    repo.commit("base", {"old.py": LIB})
    repo.git("checkout", "-q", "-b", "fork")
    fork = repo.commit("fork change", fork_files)
    repo.git("checkout", "-q", "main")
    moved = LIB.replace("x + 0", "x or 0").replace("x + 1", "abs(x) + 1")
    renamed = repo.commit("move old to new", {"old.py": None, "new.py": moved})
    edit = repo.commit("edit new", {"new.py": moved.replace("x + 3", "x * 3")})
    return repo, renamed, edit, fork


# The fork rewrote most of old.py, so git no longer sees upstream's new.py in it (no rename to follow).
REWRITTEN = "".join(f"def f{i}(x):\n    return fork_{i}(x)\n\n\n" for i in range(8))


def test_a_rename_upstream_has_not_landed_waits_for_it(make_repo: Callable[[str], GitRepo]) -> None:
    """Upstream renames old.py to new.py (R, pending) and then edits new.py: the fork has no new.py
    because R has not landed, so the edit is declined, naming R and the rename."""
    repo, renamed, edit, fork = _renamed(make_repo, {"old.py": REWRITTEN})
    out = resolve_pick(pygit2.Repository(str(repo.path)), edit, fork)
    assert not out.resolved and not any(e.strategy == FORK_LACKS_FILE for e in out.entries)
    waiting = {w.path: w for w in out.waiting}["new.py"]  # (libgit2 also pairs old.py: a human's call)
    assert waiting.needs == renamed and out.needs == (renamed,)
    assert f"upstream {renamed[:10]} (move old to new) renames old.py to it" in waiting.reason


def test_a_rename_of_a_file_the_fork_deleted_is_skipped(make_repo: Callable[[str], GitRepo]) -> None:
    """Upstream renames old.py to new.py, but the fork deleted old.py: nothing waits, the fork dropped it."""
    repo, renamed, edit, fork = _renamed(make_repo, {"old.py": None, "app.py": "x = 1\n"})
    base = repo.git("merge-base", "fork", "main")
    absence = GitFileHistory(Repository(repo.path), base, fork).absence("new.py", renamed)
    assert isinstance(absence, Dropped) and "deleted old.py" in absence.reason
    out = resolve_pick(pygit2.Repository(str(repo.path)), edit, fork)
    assert out.resolved and [(e.path, e.strategy) for e in out.entries] == [("new.py", FORK_LACKS_FILE)]


def test_without_history_a_missing_file_is_declined() -> None:
    """The pipeline alone, told nothing about the fork's history, cannot tell dropped from pending: it waits."""
    conflict = Conflict("lib.py", LIB, None, LIB.replace("x + 3", "x * 3"))
    outcome, _ = resolve_text(conflict)
    assert outcome.entry is None and outcome.waiting is not None
    assert "cannot tell" in outcome.waiting.reason
    dropped, _ = resolve_text(conflict, absence=Dropped("the fork deleted this file in abc (x)"))
    assert dropped.entry is not None and dropped.entry.strategy == FORK_LACKS_FILE
    waits, _ = resolve_text(conflict, absence=WaitsFor("a" * 40, "add lib", "pending"))
    assert waits.waiting is not None and waits.waiting.needs == "a" * 40
