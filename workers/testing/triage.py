"""Trunk-aware triage (like PyTorch's Dr. CI): is a PR's failing test new, broken on trunk, or flaky?

L1 runs on trunk pushes too and records every test's outcome per trunk commit in a
:class:`TrunkResults` store (SQLite under the data dir: durable, one file, no server; Redis is
only ever a cache). For each PR failure: failing on trunk at the PR's merge-base →
``broken_trunk``; passing on an automatic rerun → ``flaky``; otherwise ``new``.
"""

from __future__ import annotations

import contextlib
import sqlite3
import statistics
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

NEW, FLAKY, BROKEN_TRUNK = "new", "flaky", "broken_trunk"
CLASSES = (NEW, FLAKY, BROKEN_TRUNK)
LABELS = {NEW: "new", FLAKY: "flaky", BROKEN_TRUNK: "broken trunk"}

# Outcomes that count as a test failing (JUnit "failure" and "error").
_FAILING = ("failed", "error")
# Trunk runs whose counts make a baseline: a run that crashed or was omitted must not lower it.
_COUNTED = ("passed", "failed")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS suite_runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    commit_sha TEXT NOT NULL,
    suite TEXT NOT NULL,
    status TEXT NOT NULL,
    total INTEGER NOT NULL,
    recorded_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS suite_runs_by_suite ON suite_runs (suite, seq);
CREATE TABLE IF NOT EXISTS test_results (
    commit_sha TEXT NOT NULL,
    suite TEXT NOT NULL,
    test_id TEXT NOT NULL,
    outcome TEXT NOT NULL,
    PRIMARY KEY (commit_sha, suite, test_id)
);
"""


class TrunkResults:
    """Per-test results of L1 runs on trunk commits, and each suite's rolling test-count baseline."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._db() as db:
            db.executescript(_SCHEMA)

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30)
        try:
            with db:  # one transaction: committed on success, rolled back on error
                yield db
        finally:
            db.close()

    def record(self, commit: str, suite: str, status: str, tests: Iterable[tuple[str, str]]) -> None:
        """Store a trunk run of ``suite`` at ``commit``; a rerun at the same commit replaces its tests."""
        rows = list(tests)
        with self._db() as db:
            db.execute("DELETE FROM test_results WHERE commit_sha = ? AND suite = ?", (commit, suite))
            db.executemany(
                "INSERT OR REPLACE INTO test_results VALUES (?, ?, ?, ?)",
                [(commit, suite, test_id, outcome) for test_id, outcome in rows],
            )
            db.execute(
                "INSERT INTO suite_runs (commit_sha, suite, status, total, recorded_at) VALUES (?, ?, ?, ?, ?)",
                (commit, suite, status, len(rows), time.time()),
            )

    def has_run(self, commit: str, suite: str) -> bool:
        with self._db() as db:
            row = db.execute(
                "SELECT 1 FROM suite_runs WHERE commit_sha = ? AND suite = ? LIMIT 1", (commit, suite)
            ).fetchone()
        return row is not None

    def failing_at(self, commit: str, suite: str) -> frozenset[str] | None:
        """Tests of ``suite`` that failed on trunk at ``commit``; None when trunk has no run there."""
        if not self.has_run(commit, suite):
            return None
        with self._db() as db:
            rows = db.execute(
                "SELECT test_id FROM test_results WHERE commit_sha = ? AND suite = ? AND outcome IN (?, ?)",
                (commit, suite, *_FAILING),
            ).fetchall()
        return frozenset(r[0] for r in rows)

    def baseline(self, suite: str, window: int = 5) -> int | None:
        """The median test count of the suite's last ``window`` counted trunk runs (None: no history)."""
        with self._db() as db:
            rows = db.execute(
                "SELECT total FROM suite_runs WHERE suite = ? AND status IN (?, ?) ORDER BY seq DESC LIMIT ?",
                (suite, *_COUNTED, window),
            ).fetchall()
        if not rows:
            return None
        return int(statistics.median(r[0] for r in rows))


@dataclass(frozen=True)
class Verdict:
    test_id: str
    triage: str
    why: str


def classify(
    failing: Sequence[str],
    *,
    trunk_failing: frozenset[str] | None,
    rerun_passed: frozenset[str] = frozenset(),
    reran: bool = False,
    merge_base: str | None = None,
) -> tuple[Verdict, ...]:
    """Classify each failing test id; broken trunk first (a pre-existing failure is not flaky).

    ``trunk_failing``: what failed on trunk at the merge-base (None: trunk has no results there);
    ``rerun_passed``: the tests that passed when the suite was rerun (``reran``: it was).
    """
    out: list[Verdict] = []
    at = f" at merge-base {merge_base[:12]}" if merge_base else " at the merge-base"
    for test_id in failing:
        if trunk_failing is not None and test_id in trunk_failing:
            out.append(Verdict(test_id, BROKEN_TRUNK, f"also fails on trunk{at}"))
        elif test_id in rerun_passed:
            out.append(Verdict(test_id, FLAKY, "passed on an automatic rerun"))
        else:
            why = "fails here" + (f", passes on trunk{at}" if trunk_failing is not None else
                                  f"; no trunk results{at} to compare with")
            if reran:
                why += "; failed again on rerun"
            out.append(Verdict(test_id, NEW, why))
    return tuple(out)
