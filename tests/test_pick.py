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
    up = repo.commit(
        "upstream",
        {"lib/Analysis/Allocation.cpp": BASE["lib/Analysis/Allocation.cpp"].replace("line 2\n", "LINE 2\n")},
    )
    repo.git("checkout", "-q", "fork")
    fork_tip = repo.commit(
        "fork",
        {
            "lib/Analysis/Allocation.cpp": BASE["lib/Analysis/Allocation.cpp"].replace(
                "line 25\n", "FORK 25\n"
            )
        },
    )
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
        repo.commit(
            f"c{i}",
            {
                f"src/f{i % 3}.py": f"v{i}\n",
                "lib/Analysis/Allocation.cpp": BASE["lib/Analysis/Allocation.cpp"] + f"tail {i}\n",
            },
        )
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


def _whole_tree_pick(
    pg: pygit2.Repository, target_tree: pygit2.Oid, sha: str
) -> tuple[str | None, tuple[str, ...]]:
    """Reference result: libgit2's whole-tree merge, renames off."""
    c = commit_changes(pg, sha)
    merged = pg.merge_trees(c.parent_tree, target_tree, c.tree, flags=pygit2.enums.MergeFlag(0))
    if merged.conflicts is not None:
        return None, tuple(sorted({s.path for t in merged.conflicts for s in t if s is not None}))
    return str(merged.write_tree(pg)), ()


def test_per_file_merge_agrees_with_whole_tree_merge(make_repo: Callable[[str], GitRepo]) -> None:
    """On random overlapping edits, per-file merges give libgit2 merge_trees' tree or its conflicts."""
    import random

    rng = random.Random(5)
    repo = make_repo("repo")
    files = {f"src/m{i}.py": "".join(f"line {k}\n" for k in range(40)) for i in range(6)}
    base = repo.commit("base", files)
    ups = []
    state = dict(files)
    for n in range(25):
        path = rng.choice(sorted(state))
        lines = state[path].splitlines(keepends=True)
        k = rng.randrange(len(lines))
        lines[k] = f"up {n}\n"
        state[path] = "".join(lines)
        change: dict[str, str | None] = {path: state[path]}
        if n % 7 == 3:
            change[f"new/{n}.txt"] = f"new {n}\n"
        ups.append(repo.commit(f"up {n}", change))
    repo.git("checkout", "-q", "-b", "fork", base)
    fork_state = dict(files)
    for path in sorted(fork_state)[:4]:
        lines = fork_state[path].splitlines(keepends=True)
        lines[rng.randrange(len(lines))] = "fork\n"
        fork_state[path] = "".join(lines)
    fork_tip = repo.commit("fork", fork_state)
    pg = pygit2.Repository(str(repo.path))
    target = PickTarget(pg, pg.get(fork_tip).tree.id)  # type: ignore[union-attr]
    outcomes = set()
    for sha in ups:
        expected_tree, expected_conflicts = _whole_tree_pick(pg, target.tree(), sha)
        result = target.pick(commit_changes(pg, sha))
        assert result.conflicts == expected_conflicts
        if expected_tree is not None:
            assert str(target.tree()) == expected_tree
        outcomes.add("conflict" if result.conflicts else "fast" if result.fast else "merged")
    assert outcomes == {"conflict", "fast", "merged"}  # every branch of the logic ran


def test_binary_and_mode_changes(make_repo: Callable[[str], GitRepo]) -> None:
    """A binary file changed on both sides conflicts (via the whole-tree fallback); a mode change merges."""
    repo = make_repo("repo")
    (repo.path / "blob.bin").write_bytes(b"\x00base\x00")
    repo.git("add", "blob.bin")
    base = repo.commit("base", {"run.sh": "echo 1\necho 2\necho 3\n"})
    (repo.path / "blob.bin").write_bytes(b"\x00upstream\x00")
    repo.git("add", "blob.bin")
    up_binary = repo.commit("binary")
    (repo.path / "run.sh").chmod(0o755)
    repo.git("add", "run.sh")
    up_mode = repo.commit("mode")
    repo.git("checkout", "-q", "-b", "fork", base)
    (repo.path / "blob.bin").write_bytes(b"\x00fork\x00")
    repo.git("add", "blob.bin")
    fork_tip = repo.commit("fork", {"run.sh": "echo 1\necho 2\necho FORK\n"})
    pg = pygit2.Repository(str(repo.path))
    target = PickTarget(pg, pg.get(fork_tip).tree.id)  # type: ignore[union-attr]
    assert target.pick(commit_changes(pg, up_binary)).conflicts == ("blob.bin",)
    assert target.pick(commit_changes(pg, up_mode)).clean
    assert target.entry("run.sh")[1] == 0o100755  # type: ignore[index]
    assert _tree_text(pg, target.tree(), "run.sh") == "echo 1\necho 2\necho FORK\n"
