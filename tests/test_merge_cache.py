"""The merge cache: git's merge outcomes read back across runs, never a stale or foreign one."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pygit2

from tests.gitrepo import GitRepo
from tests.test_pick_git import HIST_BASE, HIST_OURS, HIST_THEIRS, fork_and_upstream
from workers.engine.changes import commit_changes
from workers.engine.merges import MERGE_CACHE_FILE, GitMerger, MergeCache
from workers.engine.pick import PickTarget


def _pick(
    repo: GitRepo, tip: str, up: str, cache: MergeCache
) -> tuple[str | None, tuple[str, ...], GitMerger]:
    pg = pygit2.Repository(str(repo.path))
    commit = pg.get(tip)
    assert isinstance(commit, pygit2.Commit)
    merger = GitMerger(pg, cache, prove=False)  # git's merges and their cache, not the proof
    target = PickTarget(pg, commit.tree.id, merger)
    result = target.pick(commit_changes(pg, up))
    return (str(target.tree()) if result.clean else None), result.conflicts, merger


def _clean_and_conflicting(make_repo: Callable[[str], GitRepo]) -> list[tuple[GitRepo, str, str]]:
    text = "".join(f"line {i}\n" for i in range(30))
    clean = fork_and_upstream(
        lambda name: make_repo(f"{name}-clean"),
        {"a.c": text},
        {"a.c": text.replace("line 2\n", "fork 2\n")},
        {"a.c": text.replace("line 25\n", "up 25\n")},
    )
    conflict = fork_and_upstream(
        lambda name: make_repo(f"{name}-conflict"),
        {"f.c": HIST_BASE},
        {"f.c": HIST_OURS},
        {"f.c": HIST_THEIRS},
    )
    return [clean, conflict]


def test_outcomes_are_read_back_by_the_next_run(make_repo: Callable[[str], GitRepo], tmp_path: Path) -> None:
    """A clean merge and a conflicting one: the second run gets the same outcomes without running git."""
    for n, (repo, tip, up) in enumerate(_clean_and_conflicting(make_repo)):
        folder = tmp_path / str(n)
        pg = pygit2.Repository(str(repo.path))
        first = MergeCache.open(folder, pg)
        tree, conflicts, merger = _pick(repo, tip, up, first)
        assert merger.calls == 1 and merger.hits == 0
        first.save()
        again_tree, again_conflicts, again = _pick(repo, tip, up, MergeCache.open(folder, pg))
        assert (again_tree, again_conflicts) == (tree, conflicts)
        assert again.calls == 0 and again.hits == 1
    assert conflicts == ("f.c",)  # the second pair conflicts (git's histogram verdict), the first did not


def test_a_foreign_or_broken_cache_is_not_trusted(
    make_repo: Callable[[str], GitRepo], tmp_path: Path
) -> None:
    """Another git version's file, a merged tree missing from the object database, a garbled line:
    each is ignored and the merge runs again, with git's own outcome."""
    repo, tip, up = _clean_and_conflicting(make_repo)[0]
    pg = pygit2.Repository(str(repo.path))
    cache = MergeCache.open(tmp_path, pg)
    expected, _, _ = _pick(repo, tip, up, cache)
    cache.save()
    path = tmp_path / MERGE_CACHE_FILE
    key, entry = path.read_text().splitlines()
    assert json.loads(key)[2].startswith("git version")

    path.write_text(key.replace("git version", "git version 0.0 (another)") + "\n" + entry + "\n")
    tree, _, merger = _pick(repo, tip, up, MergeCache.open(tmp_path, pg))
    assert merger.calls == 1 and tree == expected

    base, ours, theirs, _tree, conflicts = json.loads(entry)
    missing = json.dumps([base, ours, theirs, "1" * 40, conflicts])
    path.write_text(f"{key}\n{missing}\nnot json\n")
    tree, _, merger = _pick(repo, tip, up, MergeCache.open(tmp_path, pg))
    assert merger.calls == 1 and merger.hits == 0 and tree == expected


def test_a_prefetched_merge_is_git_s_outcome_and_runs_once(make_repo: Callable[[str], GitRepo]) -> None:
    """A merge started ahead (prefetch) and collected by the pick gives what an unprefetched pick
    gives, clean and conflicting, and git runs once for it; prefetching it twice starts nothing more."""
    for repo, tip, up in _clean_and_conflicting(make_repo):
        expected = _pick(repo, tip, up, MergeCache(None, "k"))[:2]
        pg = pygit2.Repository(str(repo.path))
        commit = pg.get(tip)
        assert isinstance(commit, pygit2.Commit)
        merger = GitMerger(pg, prove=False)
        target = PickTarget(pg, commit.tree.id, merger)
        change = commit_changes(pg, up)
        target.prefetch(change)
        target.prefetch(change)
        result = target.pick(change)
        assert ((str(target.tree()) if result.clean else None), result.conflicts) == expected
        assert (merger.calls, merger.prefetched, merger.unclaimed) == (1, 1, 0)


def test_an_unclaimed_prefetch_is_kept_not_lost(make_repo: Callable[[str], GitRepo], tmp_path: Path) -> None:
    """A prefetched merge nobody asks for is collected by close() into the cache (the next pick
    reads it back without running git); a trivial pick prefetches nothing."""
    repo, tip, up = _clean_and_conflicting(make_repo)[0]
    pg = pygit2.Repository(str(repo.path))
    commit = pg.get(tip)
    assert isinstance(commit, pygit2.Commit)
    cache = MergeCache.open(tmp_path, pg)
    merger = GitMerger(pg, cache, prove=False)
    PickTarget(pg, commit.tree.id, merger).prefetch(commit_changes(pg, up))
    merger.close()
    assert merger.unclaimed == 1 and merger.calls == 0
    tree, conflicts, again = _pick(repo, tip, up, cache)
    assert again.calls == 0 and again.hits == 1 and tree is not None and not conflicts
    base = pg.get(tip).parents[0]  # the fork's parent: upstream's change applies to it trivially
    trivial = GitMerger(pg)
    PickTarget(pg, base.tree.id, trivial).prefetch(commit_changes(pg, up))
    trivial.close()
    assert trivial.unclaimed == 0


def test_scratch_writes_no_tree_and_leaves_the_target(make_repo: Callable[[str], GitRepo]) -> None:
    """A scratch copy of a target with unwritten picks tries a pick on the same state, writes no
    tree until a merge needs one, and its picks never move the target."""
    text = "".join(f"line {i}\n" for i in range(30))
    repo = make_repo("repo")
    start = repo.commit("base", {"a.c": text, "b.c": text})
    one = repo.commit("one", {"a.c": text.replace("line 3\n", "one 3\n")})
    two = repo.commit("two", {"b.c": text.replace("line 4\n", "two 4\n")})
    pg = pygit2.Repository(str(repo.path))
    base = pg.get(start)
    assert isinstance(base, pygit2.Commit)
    target = PickTarget(pg, base.tree.id, GitMerger(pg))
    assert target.pick(commit_changes(pg, one)).fast
    before = {str(o) for o in pg.odb}
    scratch = target.scratch()
    assert scratch.pick(commit_changes(pg, two)).fast
    assert {str(o) for o in pg.odb} == before  # nothing written for the copy
    assert target.entry("b.c") == (pg.get(start).tree["b.c"].id, int(pg.get(start).tree["b.c"].filemode))
    tree = pg.get(target.tree())
    assert isinstance(tree, pygit2.Tree)
    assert pg.get(tree["a.c"].id).data.decode() == text.replace("line 3\n", "one 3\n")
    assert pg.get(tree["b.c"].id).data.decode() == text
