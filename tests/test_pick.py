"""In-memory cherry-picks: fast path, real three-way merge, conflicts; nothing on disk changes."""

from __future__ import annotations

from collections.abc import Callable

import pygit2

from tests.gitrepo import GitRepo
from workers.engine.changes import commit_changes
from workers.engine.pick import PickTarget

BASE = {
    "lib/Analysis/Allocation.cpp": "".join(f"line {i}\n" for i in range(30)),
    "python/triton/language/core.py": "X = 1\n",
    "README.md": "readme\n",
}


def _pair(make_repo: Callable[[str], GitRepo]) -> tuple[GitRepo, str]:
    """An upstream with a base commit, and a fork branch cut from it; returns (repo, base sha)."""
    repo = make_repo("repo")
    base = repo.commit("base", BASE)
    return repo, base


def _tree_text(repo: pygit2.Repository, tree: pygit2.Oid, path: str) -> str:
    obj = repo.get(tree)
    assert isinstance(obj, pygit2.Tree)
    blob = repo.get(obj[path].id)
    assert isinstance(blob, pygit2.Blob)
    return blob.data.decode()


def test_fast_path_when_target_unchanged_at_touched_paths(make_repo: Callable[[str], GitRepo]) -> None:
    """A commit whose paths are untouched in the target takes the fast path and matches git's result."""
    repo, base = _pair(make_repo)
    repo.git("branch", "fork", base)
    up = repo.commit("upstream edit", {"python/triton/language/core.py": "X = 2\n", "new.txt": "n\n"})
    repo.git("checkout", "-q", "fork")
    fork_tip = repo.commit("fork edit", {"README.md": "fork readme\n"})
    pg = pygit2.Repository(str(repo.path))
    target = PickTarget(pg, pg.get(fork_tip).tree.id)  # type: ignore[union-attr]
    result = target.pick(commit_changes(pg, up))
    assert result.clean and result.fast
    expected = repo.cherry_pick(up)
    assert str(target.tree()) == repo.git("rev-parse", f"{expected}^{{tree}}")


def test_three_way_merge_when_target_changed_same_file(make_repo: Callable[[str], GitRepo]) -> None:
    """When the fork changed another part of the same file, a real merge gives git's clean result."""
    repo, base = _pair(make_repo)
    repo.git("branch", "fork", base)
    up = repo.commit("upstream", {"lib/Analysis/Allocation.cpp": BASE["lib/Analysis/Allocation.cpp"].replace("line 2\n", "LINE 2\n")})
    repo.git("checkout", "-q", "fork")
    fork_tip = repo.commit("fork", {"lib/Analysis/Allocation.cpp": BASE["lib/Analysis/Allocation.cpp"].replace("line 25\n", "FORK 25\n")})
    pg = pygit2.Repository(str(repo.path))
    target = PickTarget(pg, pg.get(fork_tip).tree.id)  # type: ignore[union-attr]
    result = target.pick(commit_changes(pg, up))
    assert result.clean and not result.fast
    text = _tree_text(pg, target.tree(), "lib/Analysis/Allocation.cpp")
    assert "LINE 2\n" in text and "FORK 25\n" in text


def test_conflict_reports_paths_and_leaves_target_unchanged(make_repo: Callable[[str], GitRepo]) -> None:
    """A conflicting pick names the file and does not advance the target."""
    repo, base = _pair(make_repo)
    repo.git("branch", "fork", base)
    path = "lib/Analysis/Allocation.cpp"
    up = repo.commit("upstream", {path: BASE[path].replace("line 2\n", "UP 2\n"), "ok.txt": "ok\n"})
    repo.git("checkout", "-q", "fork")
    fork_tip = repo.commit("fork", {path: BASE[path].replace("line 2\n", "FORK 2\n")})
    pg = pygit2.Repository(str(repo.path))
    start = pg.get(fork_tip).tree.id  # type: ignore[union-attr]
    target = PickTarget(pg, start)
    result = target.pick(commit_changes(pg, up))
    assert not result.clean and result.conflicts == (path,)
    assert target.tree() == start
    assert target.entry("ok.txt") is None


def test_sequence_of_picks_matches_git_loop_and_touches_no_files(make_repo: Callable[[str], GitRepo]) -> None:
    """Picks in order equal a git cherry-pick loop's tree; the work tree, index and HEAD stay as they were."""
    repo, base = _pair(make_repo)
    shas = [
        repo.commit(f"c{i}", {f"src/f{i % 3}.py": f"v{i}\n", "lib/Analysis/Allocation.cpp": BASE["lib/Analysis/Allocation.cpp"] + f"tail {i}\n"})
        for i in range(6)
    ]
    repo.git("checkout", "-q", "-b", "fork", base)
    (repo.path / "README.md").write_text("dirty\n")
    status_before = repo.git("status", "--porcelain")
    head_before = repo.head()
    index_before = (repo.path / ".git" / "index").read_bytes()
    pg = pygit2.Repository(str(repo.path))
    target = PickTarget(pg, pg.get(base).tree.id)  # type: ignore[union-attr]
    for sha in shas:
        assert target.pick(commit_changes(pg, sha)).clean
    assert str(target.tree()) == repo.git("rev-parse", f"{shas[-1]}^{{tree}}")
    assert repo.git("status", "--porcelain") == status_before
    assert repo.head() == head_before
    assert (repo.path / ".git" / "index").read_bytes() == index_before
    assert (repo.path / "README.md").read_text() == "dirty\n"


def test_deletions_and_additions_apply(make_repo: Callable[[str], GitRepo]) -> None:
    """A deleted file disappears from the target, an added one appears, nested directories included."""
    repo, base = _pair(make_repo)
    up = repo.commit("rm and add", {"README.md": None, "a/b/c/d.txt": "deep\n"})
    pg = pygit2.Repository(str(repo.path))
    target = PickTarget(pg, pg.get(base).tree.id)  # type: ignore[union-attr]
    assert target.pick(commit_changes(pg, up)).clean
    assert str(target.tree()) == repo.git("rev-parse", f"{up}^{{tree}}")
    assert target.entry("README.md") is None
