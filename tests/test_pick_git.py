"""The trial pick agrees with ``git cherry-pick`` on the same inputs: renames, histogram vs myers, random edits.

Each test makes real commits, runs real ``git cherry-pick`` in a work tree, and compares the
verdict (clean or conflicting) and, when clean, the tree with the in-memory pick's.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pygit2

from tests.gitrepo import GitRepo
from workers.engine.changes import commit_changes
from workers.engine.merges import GitMerger
from workers.engine.pick import PickTarget

# Found by search: myers (libgit2's merge) and histogram (git's merge-ort) read these edits
# differently; git reports a conflict where libgit2 merges cleanly.
HIST_BASE = "\na();\n{\n\n{\ny\nb();\na();\ny\nb();\nreturn 0;\nx\n\n"
HIST_OURS = "\na();\n{\n\n{\ny\nb();\na();\nb();\nreturn 0;\nx\na();\n\n"
HIST_THEIRS = "\na();\nreturn 0;\n{\n\n{\ny\nb();\na();\ny\nb();\nx\n\n}\n"


def git_pick(repo: GitRepo, fork_tip: str, sha: str) -> str | None:
    """``git cherry-pick sha`` onto ``fork_tip`` in a work tree: the tree it makes, None on conflict."""
    repo.git("checkout", "-q", "--detach", fork_tip)
    try:
        head = repo.cherry_pick(sha)
    except Exception:
        repo.git("cherry-pick", "--abort", check=False)
        return None
    return repo.git("rev-parse", f"{head}^{{tree}}").strip()


def ours_pick(repo: GitRepo, fork_tip: str, sha: str, git: bool) -> str | None:
    pg = pygit2.Repository(str(repo.path))
    tip = pg.get(fork_tip)
    assert isinstance(tip, pygit2.Commit)
    target = PickTarget(pg, tip.tree.id, GitMerger(pg) if git else None)
    result = target.pick(commit_changes(pg, sha))
    return str(target.tree()) if result.clean else None


def fork_and_upstream(
    make_repo: Callable[[str], GitRepo],
    base: dict[str, str | None],
    fork: dict[str, str | None],
    upstream: dict[str, str | None],
) -> tuple[GitRepo, str, str]:
    repo = make_repo("repo")
    start = repo.commit("base", base)
    up = repo.commit("upstream", upstream)
    repo.git("checkout", "-q", "-b", "fork", start)
    tip = repo.commit("fork", fork)
    return repo, tip, up


def test_fork_side_rename_is_followed_like_git(make_repo: Callable[[str], GitRepo]) -> None:
    """The fork moved a file; upstream edits it at its old path: git follows the rename (clean), so does the trial pick."""
    text = "".join(f"int f{i}() {{ return {i}; }}\n" for i in range(40))
    repo, tip, up = fork_and_upstream(
        make_repo,
        {"lib/Old.cpp": text},
        {"lib/Old.cpp": None, "lib/New.cpp": text},
        {"lib/Old.cpp": text.replace("return 7;", "return 70;")},
    )
    expected = git_pick(repo, tip, up)
    assert expected is not None  # git: clean, the edit lands in lib/New.cpp
    assert ours_pick(repo, tip, up, git=True) == expected
    assert ours_pick(repo, tip, up, git=False) is None  # libgit2 without renames: a false conflict


def test_histogram_and_myers_difference_follows_git(make_repo: Callable[[str], GitRepo]) -> None:
    """Where myers and histogram disagree, the trial pick gives git's verdict (a conflict here)."""
    repo, tip, up = fork_and_upstream(make_repo, {"f.c": HIST_BASE}, {"f.c": HIST_OURS}, {"f.c": HIST_THEIRS})
    assert git_pick(repo, tip, up) is None
    assert ours_pick(repo, tip, up, git=True) is None
    assert ours_pick(repo, tip, up, git=False) is not None  # libgit2's myers merges it cleanly


def test_random_edits_agree_with_git_cherry_pick(make_repo: Callable[[str], GitRepo]) -> None:
    """On random edits of one shared file (and a file each side only), every verdict and tree is git's."""
    rng = random.Random(7)
    words = ["{", "}", "x", "y", "return 0;", "", "a();", "b();"]

    def mutate(lines: list[str]) -> list[str]:
        out = list(lines)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(out) + 1)
            op = rng.random()
            if op < 0.4 and out:
                out.pop(min(i, len(out) - 1))
            elif op < 0.8:
                out.insert(i, rng.choice(words))
            elif out:
                out[min(i, len(out) - 1)] = rng.choice(words)
        return out

    repo = make_repo("repo")
    verdicts = set()
    for n in range(12):
        base = [rng.choice(words) for _ in range(rng.randint(5, 14))]
        start = repo.commit(f"base {n}", {"f.c": "\n".join(base) + "\n", "up.c": "u\n", "fk.c": "k\n"})
        up = repo.commit(f"up {n}", {"f.c": "\n".join(mutate(base)) + "\n", "up.c": f"u{n}\n"})
        repo.git("checkout", "-q", "--detach", start)
        tip = repo.commit(f"fork {n}", {"f.c": "\n".join(mutate(base)) + "\n", "fk.c": f"k{n}\n"})
        expected = git_pick(repo, tip, up)
        assert ours_pick(repo, tip, up, git=True) == expected, n
        verdicts.add(expected is None)
        repo.git("checkout", "-q", "main")
    assert verdicts == {True, False}  # both outcomes were exercised


def test_a_file_the_fork_added_to_a_directory_upstream_renames_conflicts_like_git(
    make_repo: Callable[[str], GitRepo],
) -> None:
    """Upstream moves a whole directory; the fork added a file into it: git cherry-pick reports a
    conflict (git's directory rename would move the fork's file), so the trial pick must not take
    the fast path and call it clean. Where the fork left the directory alone, both are clean."""
    files = {f"old/{n}.c": "".join(f"{n} {i}\n" for i in range(50)) for n in "abc"}
    moved: dict[str, str | None] = {path: None for path in files}
    moved.update({path.replace("old/", "new/"): text for path, text in files.items()})
    repo, tip, up = fork_and_upstream(make_repo, dict(files), {"old/extra.c": "extra\n"}, moved)
    assert git_pick(repo, tip, up) is None
    assert ours_pick(repo, tip, up, git=True) is None

    repo, tip, up = fork_and_upstream(
        lambda name: make_repo(f"{name}-alone"), {**files, "README": "r\n"}, {"README": "fork\n"}, moved
    )
    expected = git_pick(repo, tip, up)
    assert expected is not None
    assert ours_pick(repo, tip, up, git=True) == expected
