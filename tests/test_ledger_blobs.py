"""Marker-less picks matched by equal blobs: same files changed from and to the same blobs."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pytest

from tests.fixtures.ledger import ForkedPair
from tests.test_ledger_recognisers import RULES, commit, sha
from workers.engine.decisions import Decisions
from workers.engine.history import Change, Commit, read_range
from workers.engine.ledger import build as ledger_module
from workers.engine.ledger.compute import compute_ledger
from workers.engine.pair import open_pair

Forked = Callable[[], ForkedPair]


def _with(c: Commit, *changes: Change) -> Commit:
    return Commit(**{**c.__dict__, "changes": frozenset(changes)})


def _run(
    ups: list[Commit], fork: list[Commit], changes: dict[str, frozenset[Change]], ids: dict[str, str]
) -> tuple[list[set[str]], object]:
    asked: list[set[str]] = []

    def patch_id(shas: Iterable[str]) -> dict[str, str]:
        wanted = set(shas)
        asked.append(wanted)
        return {s: ids.get(s, s) for s in wanted}

    ledger = compute_ledger(
        ups,
        fork,
        Decisions({}),
        RULES,
        base="0" * 40,
        base_time=900,
        upstream_tip=ups[-1].sha,
        fork_tip=fork[-1].sha,
        patch_id=patch_id,
        files_touching=lambda paths: {u.sha: frozenset(u.files) for u in ups},
        changes_of=changes.get,
    )
    return asked, ledger


CHANGE = ("lib/x.cpp", "100644:" + "a" * 40, "100644:" + "b" * 40)
OTHER = ("lib/x.cpp", "100644:" + "c" * 40, "100644:" + "d" * 40)


def test_equal_blobs_match_without_asking_for_patch_ids() -> None:
    """The nearest same-file candidate with the fork commit's exact blobs is its pick; no patch-id is computed."""
    ups = [
        commit(sha(1000 + i), f"Change {i} (#{500 + i})", files=(f"lib/{i}.cpp",), time=1000 + i)
        for i in range(2)
    ]
    ups.append(commit(sha(1002), "Change 2 (#502)", files=("lib/x.cpp",), time=1002))
    fork = [_with(commit(sha(2000), "Adopt a fix", files=("lib/x.cpp",), time=5000), CHANGE)]
    changes = {ups[2].sha: frozenset([CHANGE])}
    asked, ledger = _run(ups, fork, changes, {})
    assert ledger.entry(ups[2].sha).carriers == (sha(2000),)  # type: ignore[attr-defined]
    assert "(patch-id)" in ledger.entry(ups[2].sha).reason  # type: ignore[attr-defined]
    assert asked == []


def test_same_files_other_blobs_are_left_to_patch_ids() -> None:
    """Same file set, different blobs: not matched by blobs; unequal patch-ids then match nothing."""
    ups = [commit(sha(1000), "Change (#500)", files=("lib/x.cpp",), time=1000)]
    fork = [_with(commit(sha(2000), "Fork work", files=("lib/x.cpp",), time=5000), CHANGE)]
    asked, ledger = _run(ups, fork, {ups[0].sha: frozenset([OTHER])}, {})
    assert asked and sha(2000) in asked[0]
    assert ledger.metrics.picked == 0  # type: ignore[attr-defined]
    asked, ledger = _run(ups, fork, {ups[0].sha: frozenset([OTHER])}, {sha(2000): "p", sha(1000): "p"})
    assert ledger.metrics.picked == 1  # type: ignore[attr-defined]  # equal patch-ids still match


def test_a_nearer_candidate_is_not_skipped_for_a_farther_blob_match() -> None:
    """When the nearest candidate's blobs differ, patch-ids decide in nearest-first order as before."""
    ups = [
        commit(sha(1000 + i), f"Change {i} (#{500 + i})", files=("lib/x.cpp",), time=1000 + i)
        for i in range(3)
    ]
    fork = [_with(commit(sha(2000), "Adopt a fix", files=("lib/x.cpp",), time=5000), CHANGE)]
    changes = {
        ups[0].sha: frozenset([OTHER]),
        ups[1].sha: frozenset([OTHER]),
        ups[2].sha: frozenset([CHANGE]),
    }
    # ups[0] is nearest and has the same patch-id (the same edit on another pre-image).
    asked, ledger = _run(ups, fork, changes, {sha(2000): "p", ups[0].sha: "p", ups[2].sha: "p"})
    assert asked
    assert ledger.entry(ups[0].sha).carriers == (sha(2000),)  # type: ignore[attr-defined]
    assert ledger.entry(ups[2].sha).carriers == ()  # type: ignore[attr-defined]


def test_real_pick_of_an_untouched_file_is_found_without_git_patch_id(
    forked: Forked, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A retitled pick by another author (no marker) of a file the fork never changed: blobs match, git
    patch-id never runs; paths with spaces and non-ASCII letters are read exactly."""
    p = forked()
    path = "src/dir with space/modulé.py"
    a = p.up(10, "Tune the pass", {path: "depth = 3\n"})
    p.up(11, "Other work", {"src/other.py": "y = 2\n"})
    picked = p.fork.cherry_pick(a)
    p.fork.git("commit", "--amend", "-q", "-m", "Adopt the pass tuning", "--author", "Fork Dev <dev@fork>")
    picked = p.fork.head()
    pair = open_pair(str(p.upstream.path), str(p.fork.path))
    fork = read_range(pair.repo, pair.fork_tip, [pair.base], first_parent=False, messages=True)
    assert [c.files for c in fork] == [(path,)]
    up = read_range(pair.repo, pair.upstream_tip, [pair.base], first_parent=True, messages=False, files=True)
    assert fork[0].changes == next(c for c in up if c.sha == a).changes != frozenset()

    def no_patch_ids(*args: object) -> dict[str, str]:
        raise AssertionError("git patch-id was asked for")

    monkeypatch.setattr(ledger_module, "patch_ids", no_patch_ids)
    from core.config import LedgerConfig

    built = ledger_module.build_ledger(pair, LedgerConfig())
    assert built.entry(a).carriers == (picked,)  # type: ignore[union-attr]
    assert built.metrics.picked == 1
