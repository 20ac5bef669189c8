"""Trunk-aware triage (like PyTorch's Dr. CI): is a PR's failing test new, broken on trunk, or flaky?

L1 runs on trunk pushes too and records every test's outcome per trunk commit in a
:class:`TrunkResults` store (the shared SQL store of :mod:`core.store`: one database for every
worker, so two workers triage from the same past; Redis is only ever a cache). For each PR failure: failing on trunk at the PR's merge-base →
``broken_trunk``; passing on an automatic rerun → ``flaky``; otherwise ``new``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import delete, insert, select

from core.store import Store
from core.store.models import SuiteRunRow, TestResultRow

NEW, FLAKY, BROKEN_TRUNK = "new", "flaky", "broken_trunk"
CLASSES = (NEW, FLAKY, BROKEN_TRUNK)
LABELS = {NEW: "new", FLAKY: "flaky", BROKEN_TRUNK: "broken trunk"}

# Outcomes that count as a test failing (JUnit "failure" and "error").
_FAILING = ("failed", "error")
# Outcomes of a test that actually ran (a skip is not a run).
EXECUTED = ("passed", "failed", "error")
# Trunk runs whose counts make a baseline: a run that crashed or was omitted must not lower it.
_COUNTED = ("passed", "failed")


def executed_count(tests: Iterable[tuple[str, str]]) -> int:
    """How many of ``(test id, outcome)`` executed: skipped tests are reported, not run."""
    return sum(1 for _, outcome in tests if outcome in EXECUTED)


class TrunkResults:
    """Per-test results of L1 runs on trunk commits of one repository, and each suite's rolling
    executed-test baseline, in the shared store (:mod:`core.store`)."""

    def __init__(self, store: Store, repo: str = "") -> None:
        self.store = store
        self.repo = repo

    def record(
        self,
        commit: str,
        suite: str,
        status: str,
        tests: Iterable[tuple[str, str]],
        *,
        pool: str = "",
        at: float | None = None,
    ) -> None:
        """Store a trunk run of ``suite`` at ``commit``; a rerun at the same commit replaces its tests."""
        rows = dict(tests)  # one outcome per test id (the last one reported)
        with self.store.session() as db:
            db.execute(
                delete(TestResultRow).where(
                    TestResultRow.repo == self.repo,
                    TestResultRow.commit_sha == commit,
                    TestResultRow.suite == suite,
                )
            )
            if rows:  # one executemany, not an ORM object per test
                db.execute(
                    insert(TestResultRow),
                    [
                        {
                            "repo": self.repo,
                            "commit_sha": commit,
                            "suite": suite,
                            "test_id": test_id,
                            "outcome": outcome,
                        }
                        for test_id, outcome in rows.items()
                    ],
                )
            db.add(
                SuiteRunRow(
                    repo=self.repo,
                    commit_sha=commit,
                    suite=suite,
                    status=status,
                    total=len(rows),
                    executed=executed_count(rows.items()),
                    pool=pool,
                    recorded_at=time.time() if at is None else at,
                )
            )

    def has_run(self, commit: str, suite: str) -> bool:
        with self.store.session() as db:
            return (
                db.scalar(
                    select(SuiteRunRow.seq)
                    .where(
                        SuiteRunRow.repo == self.repo,
                        SuiteRunRow.commit_sha == commit,
                        SuiteRunRow.suite == suite,
                    )
                    .limit(1)
                )
                is not None
            )

    def failing_at(self, commit: str, suite: str) -> frozenset[str] | None:
        """Tests of ``suite`` that failed on trunk at ``commit``; None when trunk has no run there."""
        if not self.has_run(commit, suite):
            return None
        with self.store.session() as db:
            rows = db.scalars(
                select(TestResultRow.test_id).where(
                    TestResultRow.repo == self.repo,
                    TestResultRow.commit_sha == commit,
                    TestResultRow.suite == suite,
                    TestResultRow.outcome.in_(_FAILING),
                )
            )
            return frozenset(rows)

    def passing_suites_at(self, commit: str) -> frozenset[str]:
        """Suites whose newest trunk run at ``commit`` passed."""
        with self.store.session() as db:
            rows = db.execute(
                select(SuiteRunRow.suite, SuiteRunRow.status)
                .where(SuiteRunRow.repo == self.repo, SuiteRunRow.commit_sha == commit)
                .order_by(SuiteRunRow.seq)
            ).all()
        last = {suite: status for suite, status in rows}
        return frozenset(s for s, status in last.items() if status == "passed")

    def baseline(self, suite: str, window: int = 5) -> int | None:
        """The median executed-test count of the suite's last ``window`` counted trunk runs
        (None: no history). Skipped tests never count: the watchdog's share is of what ran."""
        with self.store.session() as db:
            counts = list(
                db.scalars(
                    select(SuiteRunRow.executed)
                    .where(
                        SuiteRunRow.repo == self.repo,
                        SuiteRunRow.suite == suite,
                        SuiteRunRow.status.in_(_COUNTED),
                    )
                    .order_by(SuiteRunRow.seq.desc())
                    .limit(window)
                )
            )
        if not counts:
            return None
        return int(statistics.median(counts))

    def last_recorded_at(self) -> float | None:
        """When the newest trunk run of this repository was recorded (None: never)."""
        with self.store.session() as db:
            return db.scalar(
                select(SuiteRunRow.recorded_at)
                .where(SuiteRunRow.repo == self.repo)
                .order_by(SuiteRunRow.seq.desc())
                .limit(1)
            )


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
            why = "fails here" + (
                f", passes on trunk{at}"
                if trunk_failing is not None
                else f"; no trunk results{at} to compare with"
            )
            if reran:
                why += "; failed again on rerun"
            out.append(Verdict(test_id, NEW, why))
    return tuple(out)
