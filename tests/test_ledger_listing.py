"""The upstream file listing behind the patch-id stage: a path-limited walk gives the same ledger.

With few candidate paths (fork commits no marker claims) and a long upstream range, the ledger
lists only the upstream commits touching those paths (``history.touching_files_raw``) instead
of every upstream commit's changes. These tests build the same ledger both ways and compare
the JSON byte for byte, on a generated pair (every recogniser style, marker-less picks and
fork-only commits touching upstream files) and on hand-made cases.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.gen_pair import PairSpec, generate_pair
from core.config import LedgerConfig
from tests.fixtures.ledger import ForkedPair
from workers.engine import history
from workers.engine.decisions import Disposition
from workers.engine.ledger import build as ledger_mod
from workers.engine.ledger import cache as ledger_cache
from workers.engine.pair import open_pair

Forked = Callable[[], ForkedPair]


def _build(
    upstream: Path, fork: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, *, limited: bool
) -> tuple[str, list[str]]:
    """The ledger JSON built with a fresh cache, and which listings ran ("full" / "limited")."""
    monkeypatch.setenv("FORKSYNC_CACHE_DIR", str(cache))
    monkeypatch.setattr(ledger_mod, "PATH_LIMITED_MAX", 10_000 if limited else -1)
    monkeypatch.setattr(ledger_mod, "PATH_LIMITED_MIN_RANGE", 0)
    ran: list[str] = []
    full, part = history.changed_files_raw, history.touching_files_raw
    monkeypatch.setattr(ledger_mod, "changed_files_raw", lambda *a, **k: ran.append("full") or full(*a, **k))
    monkeypatch.setattr(
        ledger_mod, "touching_files_raw", lambda *a, **k: ran.append("limited") or part(*a, **k)
    )
    pair = open_pair(str(upstream), str(fork))
    data = ledger_mod.build_ledger(pair, LedgerConfig()).as_json()
    return json.dumps(data, sort_keys=True), ran


def test_path_limited_listing_gives_the_same_ledger_on_a_generated_pair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gen = generate_pair(tmp_path / "pair", PairSpec(upstream_commits=400, fork_commits=80, files=60, seed=5))
    full, ran_full = _build(gen.upstream, gen.fork, tmp_path / "c1", monkeypatch, limited=False)
    limited, ran_limited = _build(gen.upstream, gen.fork, tmp_path / "c2", monkeypatch, limited=True)
    assert ran_full == ["full"] and ran_limited == ["limited"]
    assert limited == full
    data = json.loads(full)
    carried = sum(1 for e in data["entries"] if e["carriers"])
    assert carried == sum(gen.expected_picked.values())
    assert any("patch-id" in r for e in data["entries"] for r in e.get("recognisers", ()))


def test_path_limited_listing_finds_a_marker_less_pick_among_commits_touching_other_files(
    forked: Forked, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An upstream commit that changes a candidate's file exactly as the fork did, and another
    file too, is no match (the path-limited walk lists its whole file set: ``--full-diff``)."""
    p = forked()
    a = p.up(10, "Readme and more", {"README.md": "triton 2\n", "src/other.py": "o = 1\n"})
    b = p.up(11, "Add the tuner", {"src/tune.py": "t = 1\n"})
    p.up(12, "Unrelated", {"src/far.py": "f = 1\n"})
    p.fork.commit("Fork readme", {"README.md": "triton 2\n"}, author="Fork Dev <dev@fork>")
    p.fork.commit("Adopt the tuner", {"src/tune.py": "t = 1\n"}, author="Fork Dev <dev@fork>")
    full, _ = _build(p.upstream.path, p.fork.path, tmp_path / "c1", monkeypatch, limited=False)
    limited, ran = _build(p.upstream.path, p.fork.path, tmp_path / "c2", monkeypatch, limited=True)
    assert ran == ["limited"] and limited == full
    entries = {e["sha"]: e for e in json.loads(limited)["entries"]}
    assert entries[a]["disposition"] == Disposition.PENDING.value
    assert entries[b]["disposition"] == Disposition.PICKED.value and entries[b]["recognisers"] == ["patch-id"]


def test_a_candidate_the_early_guess_missed_falls_back_to_the_full_listing(
    forked: Forked, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A message with a pick hint ("backport") that names nothing is a patch-id candidate the
    path-limited walk did not cover: the full listing runs, and the answer is the same."""
    p = forked()
    a = p.up(10, "Fix core", {"src/core.py": "x = 3\n"})
    p.up(11, "Fix readme", {"README.md": "triton 2\n"})
    p.fork.commit("Backport the core fix", {"src/core.py": "x = 3\n"}, author="Fork Dev <dev@fork>")
    p.fork.commit("Fork readme", {"README.md": "fork\n"})
    full, _ = _build(p.upstream.path, p.fork.path, tmp_path / "c1", monkeypatch, limited=False)
    limited, ran = _build(p.upstream.path, p.fork.path, tmp_path / "c2", monkeypatch, limited=True)
    assert ran == ["limited", "full"] and limited == full
    entry = next(e for e in json.loads(limited)["entries"] if e["sha"] == a)
    assert entry["recognisers"] == ["patch-id"]


def test_the_cache_keeps_the_ledger_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache's positional rows read back to the same ledger (every field, carriers,
    recognisers and decisions included), and a warm load builds nothing."""
    gen = generate_pair(tmp_path / "pair", PairSpec(upstream_commits=300, fork_commits=60, files=40, seed=7))
    monkeypatch.setenv("FORKSYNC_CACHE_DIR", str(tmp_path / "cache"))
    pair = open_pair(str(gen.upstream), str(gen.fork))
    built = ledger_cache.load_ledger(pair, LedgerConfig())
    monkeypatch.setattr(ledger_cache, "build_ledger", lambda *a, **k: pytest.fail("rebuilt"))
    warm = ledger_cache.load_ledger(pair, LedgerConfig())
    assert warm.as_json() == built.as_json() and warm.entries == built.entries
    assert any(e.recognisers for e in warm.entries) and any(not e.carriers for e in warm.entries)


def test_a_log_without_files_reads_the_same_commits(forked: Forked) -> None:
    """``read_range(files=False)`` (the upstream log's lean parse) gives the records
    ``files=True`` gives, without the changes; messages included."""
    p = forked()
    p.up(10, "Tune", {"src/a.py": "a\n"})
    p.pick(p.up(11, "Fix", {"src/b.py": "b\n"}))
    p.fork.commit("Fork only\n\nBody line\nwith two lines", {"src/c.py": "c\n"})
    pair = open_pair(str(p.upstream.path), str(p.fork.path))
    for tip, messages in ((pair.upstream_tip, False), (pair.fork_tip, True)):
        full = history.read_range(
            pair.repo, tip, [pair.base], first_parent=False, messages=messages, files=True
        )
        bare = history.read_range(
            pair.repo, tip, [pair.base], first_parent=False, messages=messages, files=False
        )
        assert [dataclasses.replace(c, files=(), changes=frozenset()) for c in full] == bare
        assert any(c.files for c in full) and (not messages or any("\n" in c.message for c in bare))
