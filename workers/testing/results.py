"""The durable L2 result store: every benchmark run per trunk commit, as time series.

The rows live in the shared SQL store (:mod:`core.store`: PostgreSQL when distributed, SQLite
under the data dir on the embedded default), written by L2 workers and read by the dashboard,
the beat and the tracking planner. Redis may cache reads; it never holds the only copy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from sqlalchemy import select

from core.store import Store, open_store
from core.store.models import L2MetricRow, L2RegressionRow, L2RunRow
from workers.testing.regression import OK, L2Run
from workers.testing.signatures import Failure


@dataclass(frozen=True)
class Point:
    """One value of a metric's time series."""

    sha: str
    value: float
    verdict: str
    recorded_at: str
    run_id: int


@dataclass(frozen=True)
class RegressionRecord:
    """A regression (or new failure) an L2 run found, with its bisection and tracking issue.

    One record per regressed metric (``metric`` "" and ``kind`` "failed" for a failed run); the
    bisection fields are those of the run's benchmark bisection, shared by its metrics.
    """

    benchmark: str
    metric: str
    kind: str  # regressed | failed
    first_bad: str  # the run's commit
    run_id: int
    delta_pct: float | None = None  # value against the baseline median, signed
    good: str | None = None  # the bisection's good end
    culprit: str | None = None
    culprit_subject: str = ""
    bisect_status: str = "none"  # found | ambiguous | over-budget | no-good | none (not bisected)
    bisect_steps: int = 0  # benchmark runs the bisection made
    candidates: int = 0  # commits in good..first_bad
    note: str = ""  # why there is no culprit, when there is none
    tracking_issue: int | None = None
    recorded_at: float = 0.0


class ResultStore:
    """L2 runs keyed by repository and benchmark, in the order they were recorded."""

    def __init__(self, store: Store) -> None:
        self.store = store

    @classmethod
    def in_data_dir(cls, data_dir: str | Path, database_url: str | None = None) -> ResultStore:
        """The L2 results of ``FORKSYNC_DATABASE_URL`` (``database_url``), else of the embedded store."""
        return cls(open_store(database_url, data_dir))

    def record(self, repo: str, run: L2Run) -> L2Run:
        """Append ``run``; returns it with its ``run_id``."""
        failures = json.dumps([{"test_id": f.test_id, "text": f.text} for f in run.failures])
        with self.store.session() as db:
            row = L2RunRow(
                repo=repo,
                benchmark=run.benchmark,
                sha=run.sha,
                status=run.status,
                verdict=run.verdict,
                exit_code=run.exit_code,
                duration_s=run.duration_s,
                reason=run.reason,
                output_tail=run.output_tail,
                failures=failures,
                recorded_at=run.recorded_at,
            )
            db.add(row)
            db.flush()
            db.add_all(
                L2MetricRow(run_id=row.id, name=name, value=value)
                for name, value in sorted(run.metrics.items())
            )
            run_id = row.id
        return replace(run, run_id=run_id)

    def history(self, repo: str, benchmark: str, limit: int | None = None) -> list[L2Run]:
        """The benchmark's runs, oldest first (the last ``limit`` when given)."""
        return self._runs(repo, benchmark, "", limit)

    def _runs(self, repo: str, benchmark: str, verdict: str, limit: int | None) -> list[L2Run]:
        query = select(L2RunRow).where(L2RunRow.repo == repo, L2RunRow.benchmark == benchmark)
        if verdict:
            query = query.where(L2RunRow.verdict == verdict)
        query = query.order_by(L2RunRow.id.desc())
        if limit is not None:
            query = query.limit(limit)
        with self.store.session() as db:
            rows = list(db.scalars(query))
            ids = [r.id for r in rows]
            metrics: dict[int, dict[str, float]] = {i: {} for i in ids}
            if ids:
                for m in db.scalars(select(L2MetricRow).where(L2MetricRow.run_id.in_(ids))):
                    metrics[m.run_id][m.name] = m.value
        return [
            L2Run(
                benchmark=r.benchmark,
                sha=r.sha,
                status=r.status,
                verdict=r.verdict,
                exit_code=r.exit_code,
                duration_s=r.duration_s,
                reason=r.reason,
                output_tail=r.output_tail,
                failures=tuple(Failure(f["test_id"], f["text"]) for f in json.loads(r.failures)),
                recorded_at=r.recorded_at,
                metrics=metrics[r.id],
                run_id=r.id,
            )
            for r in reversed(rows)
        ]

    def series(self, repo: str, benchmark: str, metric: str) -> list[Point]:
        """The metric's values over trunk commits, oldest first, with each run's verdict."""
        query = (
            select(L2RunRow.sha, L2MetricRow.value, L2RunRow.verdict, L2RunRow.recorded_at, L2RunRow.id)
            .join(L2MetricRow, L2MetricRow.run_id == L2RunRow.id)
            .where(L2RunRow.repo == repo, L2RunRow.benchmark == benchmark, L2MetricRow.name == metric)
            .order_by(L2RunRow.id)
        )
        with self.store.session() as db:
            return [Point(*row) for row in db.execute(query).all()]

    def benchmarks(self, repo: str) -> list[str]:
        with self.store.session() as db:
            return list(
                db.scalars(
                    select(L2RunRow.benchmark)
                    .where(L2RunRow.repo == repo)
                    .distinct()
                    .order_by(L2RunRow.benchmark)
                )
            )

    def last_good(self, repo: str, benchmark: str) -> L2Run | None:
        """The newest run whose verdict was ok: the "good" end of a bisection."""
        good = self._runs(repo, benchmark, OK, 1)
        return good[-1] if good else None

    def record_regressions(self, repo: str, records: list[RegressionRecord]) -> None:
        """Store ``records`` beside their runs (deleted with the run)."""
        if not records:
            return
        with self.store.session() as db:
            db.add_all(
                L2RegressionRow(
                    run_id=r.run_id,
                    repo=repo,
                    benchmark=r.benchmark,
                    metric=r.metric,
                    kind=r.kind,
                    first_bad=r.first_bad,
                    delta_pct=r.delta_pct,
                    good=r.good,
                    culprit=r.culprit,
                    culprit_subject=r.culprit_subject,
                    bisect_status=r.bisect_status,
                    bisect_steps=r.bisect_steps,
                    candidates=r.candidates,
                    note=r.note,
                    tracking_issue=r.tracking_issue,
                    recorded_at=r.recorded_at,
                )
                for r in records
            )

    def regressions(
        self, repo: str, benchmark: str | None = None, limit: int = 200
    ) -> list[RegressionRecord]:
        """The regressions recorded for ``repo`` (one benchmark's when given), oldest first."""
        query = select(L2RegressionRow).where(L2RegressionRow.repo == repo)
        if benchmark is not None:
            query = query.where(L2RegressionRow.benchmark == benchmark)
        with self.store.session() as db:
            rows = list(db.scalars(query.order_by(L2RegressionRow.id.desc()).limit(limit)))
        return [
            RegressionRecord(
                benchmark=r.benchmark,
                metric=r.metric,
                kind=r.kind,
                first_bad=r.first_bad,
                run_id=r.run_id,
                delta_pct=r.delta_pct,
                good=r.good,
                culprit=r.culprit,
                culprit_subject=r.culprit_subject,
                bisect_status=r.bisect_status,
                bisect_steps=r.bisect_steps,
                candidates=r.candidates,
                note=r.note,
                tracking_issue=r.tracking_issue,
                recorded_at=r.recorded_at,
            )
            for r in reversed(rows)
        ]
