"""The shared store against the per-node SQLite file it replaced: the cost of what a trunk L1 run
and a PR triage do (record a suite of N tests; read failing tests at the merge-base; baseline).

``python -m benchmarks.bench_store [--tests 300] [--runs 30]``: legacy raw ``sqlite3`` (the old
``TrunkResults`` schema and statements, inlined), the store on SQLite, and the store on the
PostgreSQL at 127.0.0.1:5432 when it answers (a private database, dropped afterwards).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from core.store import Store, database_url_for
from workers.testing.triage import TrunkResults

LEGACY_SCHEMA = """
CREATE TABLE IF NOT EXISTS suite_runs (seq INTEGER PRIMARY KEY AUTOINCREMENT, commit_sha TEXT NOT NULL,
    suite TEXT NOT NULL, status TEXT NOT NULL, total INTEGER NOT NULL, recorded_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS suite_runs_by_suite ON suite_runs (suite, seq);
CREATE TABLE IF NOT EXISTS test_results (commit_sha TEXT NOT NULL, suite TEXT NOT NULL, test_id TEXT NOT NULL,
    outcome TEXT NOT NULL, PRIMARY KEY (commit_sha, suite, test_id));
"""


def legacy(path: Path) -> tuple[Callable[[str, list[tuple[str, str]]], None], Callable[[str], object]]:
    db = sqlite3.connect(path, timeout=30)
    db.executescript(LEGACY_SCHEMA)
    db.close()

    def record(commit: str, tests: list[tuple[str, str]]) -> None:
        db = sqlite3.connect(path, timeout=30)
        with db:
            db.execute("DELETE FROM test_results WHERE commit_sha = ? AND suite = ?", (commit, "unit"))
            db.executemany(
                "INSERT OR REPLACE INTO test_results VALUES (?, ?, ?, ?)",
                [(commit, "unit", t, o) for t, o in tests],
            )
            db.execute(
                "INSERT INTO suite_runs (commit_sha, suite, status, total, recorded_at) VALUES (?, ?, ?, ?, ?)",
                (commit, "unit", "passed", len(tests), time.time()),
            )
        db.close()

    def triage(commit: str) -> object:
        db = sqlite3.connect(path, timeout=30)
        failing = db.execute(
            "SELECT test_id FROM test_results WHERE commit_sha = ? AND suite = ? AND outcome IN (?, ?)",
            (commit, "unit", "failed", "error"),
        ).fetchall()
        base = db.execute(
            "SELECT total FROM suite_runs WHERE suite = ? ORDER BY seq DESC LIMIT 5", ("unit",)
        ).fetchall()
        db.close()
        return failing, statistics.median(r[0] for r in base)

    return record, triage


def store_ops(store: Store) -> tuple[Callable[[str, list[tuple[str, str]]], None], Callable[[str], object]]:
    results = TrunkResults(store, "acme/fork")
    return (
        lambda commit, tests: results.record(commit, "unit", "passed", tests),
        lambda commit: (results.failing_at(commit, "unit"), results.baseline("unit")),
    )


def measure(
    name: str, ops: tuple[Callable[..., None], Callable[[str], object]], tests: int, runs: int
) -> None:
    record, triage = ops
    rows = [(f"tests/test_{i}.py::test_{i}", "failed" if i % 50 == 0 else "passed") for i in range(tests)]
    rec, tri = [], []
    for r in range(runs):
        t = time.perf_counter()
        record(f"c{r}", rows)
        rec.append(time.perf_counter() - t)
        t = time.perf_counter()
        triage(f"c{r}")
        tri.append(time.perf_counter() - t)
    print(f"| {name} | {statistics.median(rec) * 1000:.1f} ms | {statistics.median(tri) * 1000:.1f} ms |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tests", type=int, default=300)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    print(
        f"| backend ({args.tests} tests per suite run) | record (median) | triage read (median) |\n| --- | ---: | ---: |"
    )
    with tempfile.TemporaryDirectory() as tmp:
        measure("legacy per-node sqlite3 file", legacy(Path(tmp) / "results.sqlite"), args.tests, args.runs)
        sqlite_store = Store(database_url_for(None, Path(tmp) / "store"))
        measure("store, SQLite (embedded default)", store_ops(sqlite_store), args.tests, args.runs)
        sqlite_store.dispose()
    try:
        import psycopg

        admin = psycopg.connect(
            "postgresql://postgres@127.0.0.1:5432/postgres", connect_timeout=3, autocommit=True
        )
    except Exception as exc:
        print(f"(PostgreSQL not measured: {exc})")
        return
    name = f"forksync_bench_{uuid.uuid4().hex[:8]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        pg = Store(database_url_for(f"postgresql://postgres@127.0.0.1:5432/{name}", "."))
        measure("store, PostgreSQL (127.0.0.1)", store_ops(pg), args.tests, args.runs)
        pg.dispose()
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.close()


if __name__ == "__main__":
    main()
