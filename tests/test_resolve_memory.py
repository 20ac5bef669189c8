"""Resolution memory: durable in a ref, learned from merged picks and approved proposals, replayed exactly."""

from __future__ import annotations

from collections.abc import Callable

import pygit2

from tests.gitrepo import GitRepo
from workers.engine.resolve import resolve_pick
from workers.engine.resolve.memory import (
    ResolutionMemory,
    hunk_fingerprint,
    learn,
    learn_from_commit,
    write_records,
)
from workers.engine.resolve.merge3 import git_merge
from workers.engine.resolve.model import MEMORY

BASE = "a\nshared = 0\nz\n"
OURS = "a\nshared = 1  # fork\nz\n"
THEIRS = "a\nshared = 2\nz\n"
HUMAN = "a\nshared = 2  # fork\nz\n"


def test_fingerprint_ignores_whitespace_but_not_content() -> None:
    """A re-indented copy of the same conflict matches; a different one does not."""
    m1, m2 = git_merge(OURS, BASE, THEIRS), git_merge(OURS.replace("shared", "  shared"), BASE, THEIRS)
    assert hunk_fingerprint(m1.hunks[0]) == hunk_fingerprint(m2.hunks[0])
    m3 = git_merge(OURS.replace("1", "3"), BASE, THEIRS)
    assert hunk_fingerprint(m1.hunks[0]) != hunk_fingerprint(m3.hunks[0])


def test_learn_takes_one_record_per_hunk_of_a_human_resolution() -> None:
    """The human's file is split at the clean lines; each hunk's answer is remembered."""
    merged = git_merge(OURS, BASE, THEIRS)
    (rec,) = learn("f.txt", merged, HUMAN, "approved #7")
    assert rec.resolution == ("shared = 2  # fork\n",) and rec.source == "approved #7"


def test_learn_skips_a_resolution_that_changed_clean_lines() -> None:
    """Which part answered which block is unknowable then: nothing is learned."""
    assert learn("f.txt", git_merge(OURS, BASE, THEIRS), HUMAN.replace("z", "zz"), "x") == []


def _pair(make_repo: Callable[[str], GitRepo]) -> tuple[GitRepo, str, str, str]:
    """base, a fork commit, an upstream commit, and the human's resolved pick of it on the fork."""
    repo = make_repo("r")
    repo.commit("base", {"f.txt": BASE})
    repo.git("checkout", "-q", "-b", "fork")
    fork = repo.commit("fork", {"f.txt": OURS})
    repo.git("checkout", "-q", "main")
    up = repo.commit("upstream", {"f.txt": THEIRS})
    repo.git("checkout", "-q", "fork")
    resolved = repo.commit("[Cherry-pick][RESOLVED] upstream", {"f.txt": HUMAN})
    return repo, fork, up, resolved


def test_memory_round_trips_through_the_ref_and_replays(make_repo: Callable[[str], GitRepo]) -> None:
    """Learned from a merged RESOLVED pick, written to the ref, a fresh reader resolves the same conflict."""
    repo, fork, up, resolved = _pair(make_repo)
    r = pygit2.Repository(str(repo.path))
    records = learn_from_commit(r, resolved, up)
    assert len(records) == 1 and records[0].source.startswith("merged ")
    tip = write_records(r, records, "learn from RESOLVED pick", when=1_700_000_000)
    assert tip and r.references["refs/forksync/resolutions"].target == pygit2.Oid(hex=tip)
    assert write_records(r, records, "again") is None  # nothing new: no empty commit

    without = resolve_pick(r, up, fork)
    assert not without.resolved  # the conflict is real
    memory = ResolutionMemory(r)  # a new worker: reads the ref only
    out = resolve_pick(r, up, fork, memory=memory)
    assert out.resolved and [e.strategy for e in out.entries] == [MEMORY]
    tree = r.get(out.tree)
    assert isinstance(tree, pygit2.Tree)
    blob = r.get(tree["f.txt"].id)
    assert isinstance(blob, pygit2.Blob) and blob.data.decode() == HUMAN
    assert [rec.fingerprint for rec in memory.records()] == [records[0].fingerprint]


def test_memory_writes_stack_as_an_audit_log(make_repo: Callable[[str], GitRepo]) -> None:
    """Each write is a commit on top of the previous one (fast-forward pushes, git log as the log)."""
    repo, _fork, up, resolved = _pair(make_repo)
    r = pygit2.Repository(str(repo.path))
    first = write_records(r, learn_from_commit(r, resolved, up), "one", when=1)
    merged = git_merge("q\n1\n", "q\n0\n", "q\n2\n")
    second = write_records(r, learn("g.txt", merged, "q\n12\n", "approved #9"), "two", when=2)
    commit = r.get(second)
    assert isinstance(commit, pygit2.Commit) and [str(p) for p in commit.parent_ids] == [first]
    assert len(ResolutionMemory(r).records()) == 2
