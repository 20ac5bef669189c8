"""Saturated validation: one suite run on two or more runner pools, and the comparison of their results.

A suite with ``pools: [cpu, gpu-a]`` runs as one job per pool (each on its own queue,
``core.tasknames.l1_pool_queue``). Each job records a :class:`PoolResult` in the shared store
(a series per commit and run, ``pool_series``, written under the repository lock), and the
job that finds every pool reported concludes ``forksync / L1 pools`` from :func:`compare`, a pure
function over those stored results: so two pool jobs finishing together cannot both conclude, and
the verdict never depends on which one finished last.

A pool that executed fewer tests than another (beyond the suite's ``pool_tolerance``) omitted
tests: that is an omission, never a pass, and so is a pool whose outcome differs from another's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from workers.testing.l1 import FAILURE, SUCCESS

PENDING = "pending"
POOL_SERIES = "l1-pools:"


@dataclass(frozen=True)
class PoolResult:
    """What one pool's job gave for one suite: tests executed (passed + failed) and its conclusion."""

    suite: str
    pool: str
    executed: int
    outcome: str  # the suite's own conclusion: success, failure, cancelled


@dataclass(frozen=True)
class Disagreement:
    """Two pools that should agree on a suite and do not: ``fewer`` ran less, or they differ in outcome."""

    suite: str
    kind: str  # "fewer" or "outcome"
    pool: str
    other: str
    pool_executed: int
    other_executed: int
    pool_outcome: str
    other_outcome: str


@dataclass(frozen=True)
class PoolComparison:
    """The verdict over every pooled suite: ``pending`` until each pool has reported."""

    conclusion: str  # pending, success, failure, cancelled
    missing: tuple[tuple[str, str], ...]  # (suite, pool) not reported yet
    disagreements: tuple[Disagreement, ...]
    results: tuple[PoolResult, ...]


def newest(results: Iterable[PoolResult]) -> dict[tuple[str, str], PoolResult]:
    """The last result recorded per (suite, pool): a rerun of one pool replaces its earlier report."""
    out: dict[tuple[str, str], PoolResult] = {}
    for r in results:
        out[(r.suite, r.pool)] = r
    return out


def compare(
    expected: Mapping[str, Sequence[str]],
    results: Iterable[PoolResult],
    tolerance: Mapping[str, int] | None = None,
) -> PoolComparison:
    """Compare the pools of each suite in ``expected`` (suite -> its pools) over ``results``.

    Missing any pool: ``pending`` (nothing is concluded). Otherwise every pool is held against
    the pool that executed the most: fewer by more than ``tolerance[suite]`` is an omission; a
    different outcome is one too. Both fail the check; so does a suite all pools fail alike.
    """
    tolerance = tolerance or {}
    latest = newest(results)
    missing = tuple((s, p) for s, pools in expected.items() for p in pools if (s, p) not in latest)
    reported = tuple(latest[(s, p)] for s, pools in expected.items() for p in pools if (s, p) in latest)
    if missing:
        return PoolComparison(PENDING, missing, (), reported)
    found: list[Disagreement] = []
    outcomes: list[str] = []
    for suite, pools in expected.items():
        rows = [latest[(suite, p)] for p in pools]
        most = max(rows, key=lambda r: r.executed)
        for r in rows:
            if r is not most and most.executed - r.executed > tolerance.get(suite, 0):
                found.append(
                    Disagreement(
                        suite, "fewer", r.pool, most.pool, r.executed, most.executed, r.outcome, most.outcome
                    )
                )
        first = rows[0]
        for r in rows[1:]:
            if r.outcome != first.outcome:
                found.append(
                    Disagreement(
                        suite,
                        "outcome",
                        r.pool,
                        first.pool,
                        r.executed,
                        first.executed,
                        r.outcome,
                        first.outcome,
                    )
                )
        outcomes += [r.outcome for r in rows]
    if found or FAILURE in outcomes:
        conclusion = FAILURE
    elif all(o == SUCCESS for o in outcomes):
        conclusion = SUCCESS
    else:
        conclusion = "cancelled"  # only the infrastructure failed, on every pool alike
    return PoolComparison(conclusion, (), tuple(found), reported)


def pool_series(repo: str, sha: str, run_id: str) -> str:
    """The store series of one pooled L1 run on a commit (``run_id``: a new one per dispatch)."""
    return f"{POOL_SERIES}{repo}:{sha}:{run_id}"


def from_point(point: Mapping[str, object]) -> PoolResult:
    return PoolResult(
        str(point["suite"]), str(point["pool"]), int(str(point["executed"])), str(point["outcome"])
    )


def as_point(result: PoolResult) -> dict[str, object]:
    return {
        "suite": result.suite,
        "pool": result.pool,
        "executed": result.executed,
        "outcome": result.outcome,
    }
