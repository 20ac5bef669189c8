"""Worker-side shared state: per-repository locks and metric time series, on Redis or on disk.

With ``REDIS_URL`` (distributed workers) locks are Redis locks with a timeout, and series are
Redis lists. Without it (the embedded default, one machine) locks are ``flock`` files and series
live in SQLite under the data dir. Both locks die with their holder: a Redis lock expires after
its timeout, a file lock is released by the kernel when the process dies (even by SIGKILL), so
a crashed task never wedges the next. Nothing here is a source of truth: flushing Redis loses
only queue positions and recomputable figures (design.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from workers.settings import WorkerSettings

log = logging.getLogger(__name__)

SERIES_MAX_POINTS = 10_000


class LockBusy(Exception):
    """Another task holds the lock; the caller should retry later (not an error to report)."""

    def __init__(self, name: str, waited_s: float) -> None:
        super().__init__(f"lock {name!r} is held by another task (waited {waited_s:.1f} s)")
        self.name = name


class StateStore(Protocol):
    def lock(self, name: str, ttl_s: int, wait_s: float) -> contextlib.AbstractContextManager[None]: ...

    def append(self, series: str, point: dict[str, Any]) -> None: ...

    def series(self, series: str, limit: int = 1000) -> list[dict[str, Any]]: ...


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


class RedisState:
    def __init__(self, url: str) -> None:
        import redis

        self.redis = redis.Redis.from_url(url)

    @contextlib.contextmanager
    def lock(self, name: str, ttl_s: int, wait_s: float) -> Iterator[None]:
        from redis.exceptions import LockError

        lock = self.redis.lock(f"forksync:lock:{name}", timeout=ttl_s, blocking_timeout=wait_s)
        start = time.monotonic()
        if not lock.acquire():
            raise LockBusy(name, time.monotonic() - start)
        try:
            yield
        finally:
            try:
                lock.release()
            except LockError:
                # The lock outlived its timeout and someone else may hold it now: say so, since
                # that means the timeout is shorter than the task.
                log.warning("lock %s expired before release (ttl %s s); raise the task's lock ttl", name, ttl_s)

    def append(self, series: str, point: dict[str, Any]) -> None:
        key = f"forksync:series:{series}"
        pipe = self.redis.pipeline()
        pipe.rpush(key, json.dumps(point, sort_keys=True))
        pipe.ltrim(key, -SERIES_MAX_POINTS, -1)
        pipe.execute()

    def series(self, series: str, limit: int = 1000) -> list[dict[str, Any]]:
        raw = self.redis.lrange(f"forksync:series:{series}", -limit, -1)
        return [json.loads(item) for item in raw]


class LocalState:
    """Locks as ``flock`` files and series in SQLite under ``<data dir>/state``."""

    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir / "state"
        (self.root / "locks").mkdir(parents=True, exist_ok=True)
        self.db_path = self.root / "series.sqlite"

    @contextlib.contextmanager
    def lock(self, name: str, ttl_s: int, wait_s: float) -> Iterator[None]:
        # ttl_s is not needed: the kernel drops the lock when the holder dies.
        path = self.root / "locks" / f"{_safe(name)}.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        start = time.monotonic()
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() - start >= wait_s:
                        raise LockBusy(name, time.monotonic() - start) from None
                    time.sleep(0.05)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the flock

    def _db(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.db_path, timeout=30)
        db.execute("CREATE TABLE IF NOT EXISTS series (name TEXT, seq INTEGER PRIMARY KEY, point TEXT)")
        return db

    def append(self, series: str, point: dict[str, Any]) -> None:
        with contextlib.closing(self._db()) as db, db:
            db.execute("INSERT INTO series (name, point) VALUES (?, ?)", (series, json.dumps(point, sort_keys=True)))
            db.execute(
                "DELETE FROM series WHERE name = ? AND seq NOT IN "
                "(SELECT seq FROM series WHERE name = ? ORDER BY seq DESC LIMIT ?)",
                (series, series, SERIES_MAX_POINTS),
            )

    def series(self, series: str, limit: int = 1000) -> list[dict[str, Any]]:
        with contextlib.closing(self._db()) as db:
            rows = db.execute(
                "SELECT point FROM series WHERE name = ? ORDER BY seq DESC LIMIT ?", (series, limit)
            ).fetchall()
        return [json.loads(row[0]) for row in reversed(rows)]


def open_state(settings: WorkerSettings) -> StateStore:
    if settings.bot.redis_url:
        return RedisState(settings.bot.redis_url)
    return LocalState(settings.data_dir)
