"""The durable L2 result store: every benchmark run per trunk commit, as time series, in SQLite.

One file under the data dir (``<data_dir>/l2-results.sqlite``), written by L2 workers and read
by the dashboard, the beat and the tracking planner. Redis may cache reads; it never holds the
only copy. WAL mode lets readers read while a worker writes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from workers.testing.regression import OK, L2Run
from workers.testing.signatures import Failure

FILENAME = "l2-results.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    repo TEXT NOT NULL,
    benchmark TEXT NOT NULL,
    sha TEXT NOT NULL,
    status TEXT NOT NULL,
    verdict TEXT NOT NULL,
    exit_code INTEGER,
    duration_s REAL NOT NULL,
    reason TEXT NOT NULL,
    output_tail TEXT NOT NULL,
    failures TEXT NOT NULL,
    recorded_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_benchmark ON runs (repo, benchmark, id);
CREATE INDEX IF NOT EXISTS runs_by_sha ON runs (repo, sha);
CREATE TABLE IF NOT EXISTS metrics (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (run_id, name)
);
"""


@dataclass(frozen=True)
class Point:
    """One value of a metric's time series."""

    sha: str
    value: float
    verdict: str
    recorded_at: str
    run_id: int


class ResultStore:
    """L2 runs keyed by repository and benchmark, in the order they were recorded."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._db() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)

    @classmethod
    def in_data_dir(cls, data_dir: str | Path) -> ResultStore:
        return cls(Path(data_dir) / FILENAME)

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30)
        try:
            db.execute("PRAGMA foreign_keys=ON")
            with db:  # one transaction: committed on success, rolled back on error
                yield db
        finally:
            db.close()

    def record(self, repo: str, run: L2Run) -> L2Run:
        """Append ``run``; returns it with its ``run_id``."""
        failures = json.dumps([{"test_id": f.test_id, "text": f.text} for f in run.failures])
        with self._db() as db:
            cur = db.execute(
                "INSERT INTO runs (repo, benchmark, sha, status, verdict, exit_code, duration_s, reason,"
                " output_tail, failures, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (repo, run.benchmark, run.sha, run.status, run.verdict, run.exit_code, run.duration_s,
                 run.reason, run.output_tail, failures, run.recorded_at),
            )
            run_id = int(cur.lastrowid or 0)
            db.executemany(
                "INSERT INTO metrics (run_id, name, value) VALUES (?, ?, ?)",
                [(run_id, name, value) for name, value in sorted(run.metrics.items())],
            )
        return replace(run, run_id=run_id)

    def history(self, repo: str, benchmark: str, limit: int | None = None) -> list[L2Run]:
        """The benchmark's runs, oldest first (the last ``limit`` when given)."""
        return self._runs(repo, benchmark, "", limit)

    def _runs(self, repo: str, benchmark: str, verdict: str, limit: int | None) -> list[L2Run]:
        where = " AND verdict = ?" if verdict else ""
        params: tuple[object, ...] = (repo, benchmark, *((verdict,) if verdict else ()), -1 if limit is None else limit)
        with self._db() as db:
            rows = db.execute(
                "SELECT id, benchmark, sha, status, verdict, exit_code, duration_s, reason, output_tail,"
                f" failures, recorded_at FROM runs WHERE repo = ? AND benchmark = ?{where} ORDER BY id DESC LIMIT ?",
                params,
            ).fetchall()
            ids = [r[0] for r in rows]
            metrics: dict[int, dict[str, float]] = {i: {} for i in ids}
            if ids:
                marks = ",".join("?" * len(ids))
                for run_id, name, value in db.execute(
                    f"SELECT run_id, name, value FROM metrics WHERE run_id IN ({marks})", ids
                ):
                    metrics[run_id][name] = value
        return [
            L2Run(
                benchmark=r[1], sha=r[2], status=r[3], verdict=r[4], exit_code=r[5], duration_s=r[6], reason=r[7],
                output_tail=r[8], failures=tuple(Failure(f["test_id"], f["text"]) for f in json.loads(r[9])),
                recorded_at=r[10], metrics=metrics[r[0]], run_id=r[0],
            )
            for r in reversed(rows)
        ]

    def series(self, repo: str, benchmark: str, metric: str) -> list[Point]:
        """The metric's values over trunk commits, oldest first, with each run's verdict."""
        with self._db() as db:
            rows = db.execute(
                "SELECT r.sha, m.value, r.verdict, r.recorded_at, r.id FROM runs r JOIN metrics m ON m.run_id = r.id"
                " WHERE r.repo = ? AND r.benchmark = ? AND m.name = ? ORDER BY r.id",
                (repo, benchmark, metric),
            ).fetchall()
        return [Point(*row) for row in rows]

    def benchmarks(self, repo: str) -> list[str]:
        with self._db() as db:
            return [r[0] for r in db.execute(
                "SELECT DISTINCT benchmark FROM runs WHERE repo = ? ORDER BY benchmark", (repo,))]

    def last_good(self, repo: str, benchmark: str) -> L2Run | None:
        """The newest run whose verdict was ok: the "good" end of a bisection."""
        good = self._runs(repo, benchmark, OK, 1)
        return good[-1] if good else None
