"""A side-effect marker for the delivery-fault benchmark (``bench_delivery_faults.py``), loaded
into its workers with ``celery worker --include benchmarks.fault_marker``.

For every ``forksync.on_check_run`` it runs it does some work (``FORKSYNC_BENCH_WORK_S``) and then
appends one row (delivery id, pid, time) to the SQLite file ``FORKSYNC_BENCH_MARKERS``: no key,
so a delivery executed twice leaves two rows (counted as a duplicated side effect) and one
never executed leaves none (lost). Without ``FORKSYNC_BENCH_MARKERS`` it registers nothing.
"""

from __future__ import annotations

import os
import sqlite3
import time
from typing import Any

from core import tasknames
from workers.app.handlers import handles

SCHEMA = "CREATE TABLE IF NOT EXISTS markers (delivery TEXT NOT NULL, pid INTEGER NOT NULL, at REAL NOT NULL)"


def record(path: str, delivery: str) -> None:
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(SCHEMA)
        db.execute("INSERT INTO markers VALUES (?, ?, ?)", (delivery, os.getpid(), time.time()))
    finally:
        db.close()


def mark_check_run(delivery: str | None = None, **_: Any) -> None:
    """The benchmark's side effect of a check_run delivery (after its work, like a real handler's)."""
    time.sleep(float(os.environ.get("FORKSYNC_BENCH_WORK_S") or 0.02))
    record(os.environ["FORKSYNC_BENCH_MARKERS"], str(delivery))


if os.environ.get("FORKSYNC_BENCH_MARKERS"):
    handles(tasknames.ON_CHECK_RUN)(mark_check_run)
