"""The ledger on real repositories: recognisers end to end, reverts, merges, decisions, metrics."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.fixtures.ledger import ForkedPair
from workers.engine.decisions import Disposition
from workers.engine.ledger.cache import load_ledger
from workers.engine.pair import open_pair

Forked = Callable[[], ForkedPair]


def disp(pair: ForkedPair, sha: str) -> Disposition:
    entry = pair.ledger().entry(sha)
    assert entry is not None
    return entry.disposition


def test_cherry_pick_x_is_a_pick_and_moves_the_frontier(forked: Forked) -> None:
    """`git cherry-pick -x` carries the upstream commit; later commits stay pending."""
    p = forked()
    a, b = p.up(10), p.up(11)
    pick = p.pick(a)
    ledger = p.ledger()
    assert ledger.entry(a).carriers == (pick,)  # type: ignore[union-attr]
    assert ledger.entry(a).disposition is Disposition.PICKED  # type: ignore[union-attr]
    assert ledger.entry(b).disposition is Disposition.PENDING  # type: ignore[union-attr]
    assert ledger.metrics.frontier == a and ledger.metrics.pending == 1 and ledger.metrics.backlog == 0


def test_fork_pick_subject_with_fork_pr_number_trap(forked: Forked) -> None:
    """`[Cherry-pick] '<subject> (#20)' (#10)`: upstream #20 is picked, upstream #10 is not."""
    p = forked()
    ten = p.up(10, "Fix scheduler")
    twenty = p.up(20, "Fix layouts", {"src/layouts.py": "fixed\n"})
    p.fork.commit("[Cherry-pick] 'Fix layouts (#20)' (#10)", {"src/layouts.py": "fixed\n"})
    ledger = p.ledger()
    assert ledger.entry(twenty).disposition is Disposition.PICKED  # type: ignore[union-attr]
    assert ledger.entry(ten).disposition is Disposition.PENDING  # type: ignore[union-attr]
    assert ledger.metrics.backlog_commits == (ten,)


def test_plain_pick_without_markers_is_found_by_patch_id(forked: Forked) -> None:
    """A retitled pick by another author, no trailer, no PR number: patch-id equality finds it."""
    p = forked()
    a = p.up(10, "Tune pipeliner", {"src/pipe.py": "depth = 3\n"})
    p.up(11, "Unrelated same file set", {"src/other.py": "y\n"})
    p.fork.commit(
        "Adopt the new pipeliner depth", {"src/pipe.py": "depth = 3\n"}, author="Fork Dev <dev@fork>"
    )
    ledger = p.ledger()
    assert ledger.entry(a).disposition is Disposition.PICKED  # type: ignore[union-attr]
    assert "patch-id" in ledger.entry(a).reason  # type: ignore[union-attr]


def test_fork_only_commit_touching_the_same_file_is_not_a_pick(forked: Forked) -> None:
    """Same changed-file set but a different change: patch-ids differ, nothing is picked."""
    p = forked()
    a = p.up(10, "Tune pipeliner", {"src/pipe.py": "depth = 3\n"})
    p.fork.commit("Fork tuning (#5)", {"src/pipe.py": "depth = 4\n"})
    assert disp(p, a) is Disposition.PENDING


def test_a_commit_recognised_twice_is_one_pick(forked: Forked) -> None:
    """Two fork commits (and two trailers) carrying the same upstream commit count it once."""
    p = forked()
    a = p.up(10)
    first = p.pick(a)
    second = p.fork.commit(
        f"[Cherry-pick] 'Upstream change 10 (#10)' (#3)\n\nReactor Backport Revision: {a}\n"
        f"(cherry picked from commit {a})",
        {"src/pr10.py": "# change 10, again\n"},
    )
    ledger = p.ledger()
    assert ledger.entry(a).carriers == (first, second)  # type: ignore[union-attr]
    assert ledger.metrics.picked == 1


def test_revert_of_a_pick_makes_it_a_hole_and_a_reapply_restores_it(forked: Forked) -> None:
    """`git revert` of a pick un-counts it; reverting that revert counts it again."""
    p = forked()
    a, b = p.up(10), p.up(11)
    pick_a = p.pick(a)
    p.pick(b)
    p.fork.git("revert", "--no-edit", pick_a)
    ledger = p.ledger()
    assert ledger.entry(a).disposition is Disposition.PENDING  # type: ignore[union-attr]
    assert ledger.entry(a).carriers == ()  # type: ignore[union-attr]
    assert "reverted by" in ledger.entry(a).reason  # type: ignore[union-attr]
    assert ledger.metrics.backlog_commits == (a,) and ledger.metrics.frontier == b
    assert ledger.metrics.deferred == 0  # an unmarked hole is backlog, not a known (deferred) one
    revert = p.fork.head()
    p.fork.git("revert", "--no-edit", revert)
    assert disp(p, a) is Disposition.PICKED


def test_fork_merging_upstream_carries_everything_merged(forked: Forked) -> None:
    """A fork that merged upstream carries those commits: the base moves to the merged commit."""
    p = forked()
    a, b = p.up(10), p.up(11)
    c = p.up(12)
    p.fork.commit("Fork work (#2)", {"fork.txt": "ours\n"})
    p.fork.git("merge", "-q", "--no-edit", b)
    ledger = p.ledger()
    assert ledger.base == b
    assert [e.sha for e in ledger.entries] == [c]
    assert ledger.entry(a) is None
    assert ledger.metrics.frontier == b and ledger.metrics.pending == 1


def test_urgent_pick_beyond_the_frontier_does_not_move_it(forked: Forked) -> None:
    """An urgent pick far ahead leaves the frontier, days behind and backlog where they were."""
    p = forked()
    a = p.up(10, date=1_700_000_000 + 86400)
    mid = [p.up(n) for n in (11, 12)]
    late = p.up(13, date=1_700_000_000 + 5 * 86400)
    p.pick(a)
    p.pick(late)
    before = p.ledger()
    assert before.metrics.frontier == late  # not urgent yet: it is simply the newest pick
    assert p.mark(late[:10], "urgent", "--reason", "prod miscompile").code == 0
    after = p.ledger()
    assert after.metrics.frontier == a
    assert after.metrics.urgent == (late,)
    assert after.metrics.backlog == 0 and after.metrics.pending == 2
    assert after.metrics.days_behind == pytest.approx(4.0, abs=0.01)
    assert all(after.entry(s).disposition is Disposition.PENDING for s in mid)  # type: ignore[union-attr]


def test_urgent_tag_in_the_pick_subject(forked: Forked) -> None:
    """A pick titled `[Cherry-pick][URGENT] ...` is urgent without any recorded decision."""
    p = forked()
    a, b = p.up(10), p.up(11)
    p.pick(a)
    p.fork.commit("[Cherry-pick][URGENT] 'Upstream change 11 (#11)' (#4)", {"src/pr11.py": "# change 11\n"})
    ledger = p.ledger()
    assert ledger.metrics.urgent == (b,) and ledger.metrics.frontier == a


def test_wont_port_closes_a_hole_and_extends_the_contiguous_pin(forked: Forked) -> None:
    """wont_port is not backlog and lets the contiguous pin pass; deferred is backlog and halts it."""
    p = forked()
    a, b, c, d = p.up(10), p.up(11), p.up(12), p.up(13)
    p.pick(a)
    p.pick(d)
    ledger = p.ledger()
    assert ledger.metrics.backlog_commits == (b, c) and ledger.metrics.contiguous_pin == a
    assert p.mark("#11", "wont_port", "--reason", "AMD only").code == 0
    assert p.mark("#12", "deferred", "--reason", "needs the layouts owner").code == 0
    ledger = p.ledger()
    assert ledger.metrics.backlog_commits == (c,) and ledger.metrics.contiguous_pin == b
    assert ledger.entry(b).disposition is Disposition.WONT_PORT  # type: ignore[union-attr]
    assert ledger.entry(c).reason == "marked deferred in the decisions notes: needs the layouts owner"  # type: ignore[union-attr]
    assert (ledger.metrics.wont_port, ledger.metrics.deferred, ledger.metrics.picked) == (1, 1, 2)
    assert p.mark("#12", "wont_port").code == 0
    assert p.ledger().metrics.contiguous_pin == d


def test_deferred_after_the_frontier_is_not_pending(forked: Forked) -> None:
    """A commit deferred before the frontier reaches it is neither backlog nor pending work."""
    p = forked()
    a, b, c = p.up(10), p.up(11), p.up(12)
    p.pick(a)
    p.mark("#12", "deferred")
    ledger = p.ledger()
    assert ledger.metrics.pending == 1 and ledger.metrics.backlog == 0
    assert [e.sha for e in ledger.pending_commits] == [b]
    assert ledger.entry(c).disposition is Disposition.DEFERRED  # type: ignore[union-attr]


def test_decisions_survive_in_a_fresh_clone_of_the_fork(
    forked: Forked, make_repo: Callable[..., object]
) -> None:
    """Decisions live in the fork's notes ref: a fresh clone that fetches it sees them."""
    p = forked()
    a, b = p.up(10), p.up(11)
    p.pick(b)
    assert p.mark(a[:8], "wont_port", "--reason", "not for us").code == 0
    notes = p.fork.git("rev-parse", "refs/notes/forksync")
    assert p.fork.git("notes", "--ref", "forksync", "show", a).startswith("{")
    clone = p.fork.path.parent / "fresh-clone"
    p.fork.git("clone", "-q", str(p.fork.path), str(clone))
    p.fork.git("-C", str(clone), "fetch", "-q", "origin", "refs/notes/forksync:refs/notes/forksync")
    pair = open_pair(str(p.upstream.path), str(clone))
    assert pair.fork_notes_tip == notes
    from core.config import LedgerConfig

    ledger = load_ledger(pair, LedgerConfig())
    assert ledger.entry(a).disposition is Disposition.WONT_PORT  # type: ignore[union-attr]
    assert ledger.entry(a).reason == "marked wont_port in the decisions notes: not for us"  # type: ignore[union-attr]


def test_clear_removes_the_decision(forked: Forked) -> None:
    """`mark REF clear` deletes the note: the commit is a hole again."""
    p = forked()
    a, b = p.up(10), p.up(11)
    p.pick(b)
    p.mark("#10", "wont_port")
    assert p.mark("#10", "clear").code == 0
    assert disp(p, a) is Disposition.PENDING
    assert p.fork.git("notes", "--ref", "forksync", "list") == ""


def test_days_behind_is_tip_minus_frontier_committer_time(forked: Forked) -> None:
    """days_behind = (upstream tip committer time − frontier committer time) / 86400, 0 at tip."""
    p = forked()
    t0 = 1_700_000_000
    a = p.up(10, date=t0 + 86400)
    p.up(11, date=t0 + 86400 + 36 * 3600)
    p.pick(a)
    assert p.ledger().metrics.days_behind == pytest.approx(1.5)
    b = p.upstream.head()
    p.pick(b)
    assert p.ledger().metrics.days_behind == 0.0


def test_nothing_picked_means_the_frontier_is_the_base(forked: Forked) -> None:
    """With no picks the frontier and the contiguous pin are the base; days behind counts from it."""
    p = forked()
    p.up(10, date=1_700_000_000 + 2 * 86400)
    m = p.ledger().metrics
    assert m.frontier == p.base and m.contiguous_pin == p.base and m.backlog == 0 and m.pending == 1
    assert m.days_behind > 1.9


def test_body_link_pick_uses_the_configured_upstream_url(forked: Forked) -> None:
    """A body link to `<upstream.url>/pull/N` is a pick; the same number on another repo is not."""
    p = forked()
    a, b = p.up(10), p.up(11)
    p.fork.commit("Port it (#2)\n\nSee https://github.com/triton-lang/triton/pull/10", {"x": "1\n"})
    p.fork.commit("Port more (#3)\n\nSee https://github.com/someone/else/pull/11", {"y": "1\n"})
    ledger = p.ledger("upstream: {url: https://github.com/triton-lang/triton}\n")
    assert ledger.entry(a).disposition is Disposition.PICKED  # type: ignore[union-attr]
    assert ledger.entry(b).disposition is Disposition.PENDING  # type: ignore[union-attr]


def test_ledger_json_is_deterministic(forked: Forked) -> None:
    """The same repositories and config give the same ledger, byte for byte."""
    p = forked()
    for n in range(10, 16):
        p.up(n)
    p.pick(p.upstream.head("HEAD~3"))
    assert p.ledger().as_json() == p.ledger().as_json()


def test_warm_ledger_comes_from_the_cache_and_a_decision_invalidates_it(
    forked: Forked, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second status with unchanged tips and notes does not rebuild; a new decision does."""
    from core.config import LedgerConfig
    from workers.engine.ledger import cache as ledger_mod

    p = forked()
    a = p.up(10)
    pair = open_pair(str(p.upstream.path), str(p.fork.path))
    load_ledger(pair, LedgerConfig())
    calls: list[int] = []
    real = ledger_mod.build_ledger
    monkeypatch.setattr(ledger_mod, "build_ledger", lambda *a, **k: calls.append(1) or real(*a, **k))
    load_ledger(open_pair(str(p.upstream.path), str(p.fork.path)), LedgerConfig())
    assert calls == []
    p.mark(a[:10], "wont_port")
    fresh = load_ledger(open_pair(str(p.upstream.path), str(p.fork.path)), LedgerConfig())
    assert calls == [1] and fresh.entry(a).disposition is Disposition.WONT_PORT  # type: ignore[union-attr]


def test_patch_id_after_upstream_moves_uses_cached_file_sets(forked: Forked) -> None:
    """File sets cached by a first run are completed for new upstream commits, not trusted blindly."""
    from core.config import LedgerConfig

    p = forked()
    p.up(10, "Tune pipeliner", {"src/pipe.py": "depth = 3\n"})
    p.fork.commit("Fork readme (#5)", {"README.md": "triton fork\n"})
    pair = open_pair(str(p.upstream.path), str(p.fork.path))
    first = load_ledger(open_pair(str(p.upstream.path), str(p.fork.path)), LedgerConfig())
    assert first.metrics.picked == 0
    assert (pair.cache_dir / "upstream-changes.v2").exists()
    b = p.up(11, "Fix core", {"src/core.py": "x = 3\n"})
    p.fork.commit("Adopt the core fix", {"src/core.py": "x = 3\n"}, author="Fork Dev <dev@fork>")
    again = load_ledger(open_pair(str(p.upstream.path), str(p.fork.path)), LedgerConfig())
    assert again.entry(b).disposition is Disposition.PICKED  # type: ignore[union-attr]
    assert "patch-id" in again.entry(b).reason  # type: ignore[union-attr]


def test_marking_the_same_decision_twice_writes_once(forked: Forked) -> None:
    """Recording a decision that is already there adds no notes commit."""
    p = forked()
    p.up(10)
    assert p.mark("#10", "wont_port", "--reason", "AMD only").code == 0
    first = p.fork.git("rev-parse", "refs/notes/forksync")
    again = p.mark("#10", "wont_port", "--reason", "AMD only")
    assert again.code == 0 and "already recorded" in again.out
    assert p.fork.git("rev-parse", "refs/notes/forksync") == first


def test_upstream_that_merges_pull_requests(forked: Forked) -> None:
    """Upstream merge commits are the ledger's entries; a -x pick of a commit they merged counts for them."""
    p = forked()
    up = p.upstream
    up.git("checkout", "-q", "-b", "feature")
    side = up.commit("Add the pass", {"src/pass.py": "pass\n"})
    up.commit("Test the pass", {"tests/test_pass.py": "ok\n"})
    up.git("checkout", "-q", "main")
    up.git(
        "merge",
        "-q",
        "--no-ff",
        "-m",
        "Merge pull request #30 from dev/feature",
        "feature",
        env={"GIT_COMMITTER_DATE": "@1700009000 +0000", "GIT_AUTHOR_DATE": "@1700009000 +0000"},
    )
    merge = up.head()
    later = p.up(31)
    p.fork.fetch(up, into="refs/remotes/upstream/main")
    p.pick(side)
    ledger = p.ledger()
    assert [e.sha for e in ledger.entries] == [merge, later]
    assert ledger.entry(merge).pr_number == 30  # type: ignore[union-attr]
    assert ledger.entry(merge).disposition is Disposition.PICKED  # type: ignore[union-attr]
    assert ledger.entry(later).disposition is Disposition.PENDING  # type: ignore[union-attr]
