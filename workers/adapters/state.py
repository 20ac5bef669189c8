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
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from core.settings import WorkerSettings

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


class StoreUnavailable(Exception):
    """Redis did not answer (restarting, network): the task should retry shortly."""


class RedisState:
    def __init__(self, url: str) -> None:
        import redis

        self.redis = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=10)

    @contextlib.contextmanager
    def lock(self, name: str, ttl_s: int, wait_s: float) -> Iterator[None]:
        """A Redis lock that expires ``ttl_s`` after its holder stops renewing it.

        A thread renews it every ``ttl_s / 3`` while the body runs, so a long ingest keeps it and
        a killed one (SIGKILL, lost machine) frees it within ``ttl_s``. Redis blips are waited out
        on release (the work is done; only the unlock is late), and reported as
        :class:`StoreUnavailable` on acquire (the task retries).
        """
        import redis
        from redis.exceptions import LockError

        # thread_local=False: the renewing thread must see the token the task thread acquired.
        lock = self.redis.lock(f"forksync:lock:{name}", timeout=ttl_s, blocking_timeout=wait_s, thread_local=False)
        start = time.monotonic()
        try:
            acquired = lock.acquire()
        except redis.ConnectionError as exc:
            raise StoreUnavailable(f"Redis unavailable while locking {name}: {exc}") from None
        if not acquired:
            raise LockBusy(name, time.monotonic() - start)
        stop = threading.Event()

        def renew() -> None:
            while not stop.wait(max(0.5, ttl_s / 3)):
                try:
                    lock.reacquire()
                except LockError:
                    log.error("lock %s was lost (expired before renewal); another task may run concurrently", name)
                    return
                except redis.RedisError as exc:  # a blip: try again at the next beat
                    log.warning("could not renew lock %s: %s", name, exc)

        renewer = threading.Thread(target=renew, name=f"renew {name}", daemon=True)
        renewer.start()
        try:
            yield
        finally:
            stop.set()
            renewer.join()
            self._release(lock, name, ttl_s)

    @staticmethod
    def _release(lock: Any, name: str, ttl_s: int) -> None:
        import redis
        from redis.exceptions import LockError

        deadline = time.monotonic() + max(15.0, float(ttl_s))
        while True:
            try:
                lock.release()
                return
            except LockError:
                log.warning("lock %s expired before release (ttl %s s)", name, ttl_s)
                return
            except redis.RedisError as exc:
                if time.monotonic() > deadline:
                    log.warning("could not release lock %s (%s); it expires by itself within %s s", name, exc, ttl_s)
                    return
                time.sleep(0.5)

    def append(self, series: str, point: dict[str, Any]) -> None:
        import redis

        key = f"forksync:series:{series}"
        try:
            pipe = self.redis.pipeline()
            pipe.rpush(key, json.dumps(point, sort_keys=True))
            pipe.ltrim(key, -SERIES_MAX_POINTS, -1)
            pipe.execute()
        except redis.RedisError as exc:
            # A point is recomputable (the next ingest or snapshot records another): say so, go on.
            log.warning("metrics point for %s not recorded (Redis: %s)", series, exc)

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
