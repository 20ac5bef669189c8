"""The backport-forms benchmark's three answers, on a real repository made here (the mirrors it
is measured on are not part of the repository)."""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.bench_backport_forms import measure
from tests.gitrepo import GitRepo


def test_messages_patch_id_and_markers_are_counted_apart(make_repo: Callable[[str], GitRepo]) -> None:
    """A release branch with a MeeseeksDev backport (same patch), an edited backport (its message
    says so, its patch differs), and an unmarked cherry-pick: messages find the first two,
    patch-id the first and the last, the markers the first two; each difference is listed."""
    repo = make_repo("proj")
    repo.commit("Start", {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
    base = repo.head()
    one = repo.commit("Fix a (#1)", {"a.txt": "a1\n"})
    two = repo.commit("Fix b (#2)", {"b.txt": "b2\n"})
    three = repo.commit("Fix c (#3)", {"c.txt": "c3\n"})
    repo.git("checkout", "-q", "-b", "v1.x", base)
    repo.cherry_pick(one)
    repo.git(
        "commit", "-q", "--amend", "-m", "Backport PR #1 on branch v1.x (Fix a) (#4)\n\nBackport PR #1: Fix a"
    )
    repo.commit("Fix b differently\n\nBackport of #2.", {"b.txt": "b2 but older\n"})
    repo.cherry_pick(three)
    repo.git("commit", "-q", "--amend", "-m", "Make c right")
    r = measure(repo.path, "main", "v1.x", "https://github.com/o/proj", misses=5)
    assert (r["upstream_commits"], r["fork_commits"]) == (3, 3)
    assert (r["messages"], r["patch_id"], r["markers"]) == (2, 2, 2)
    assert (r["messages_and_patch_id"], r["union"], r["patch_id_only"]) == (1, 3, 1)
    assert r["recognisers"] == {"pr-form": 2}
    assert [row["upstream"] for row in r["lists"]["patch_id_only"]] == [three[:10]]
    assert r["messages_not_in_patch_id"] == 1 and r["messages_not_in_patch_id_no_shared_file"] == 0
    assert two  # the edited backport's upstream commit: found by its message alone
