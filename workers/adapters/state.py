"""Worker-side shared state: per-repository locks (Redis or on disk) and metric time series (SQL).

With ``REDIS_URL`` (distributed workers) locks are Redis locks with a timeout; without it (the
embedded default, one machine) they are ``flock`` files under the data dir. Both die with their
holder: a Redis lock expires after its timeout, a file lock is released by the kernel when the
process dies (even by SIGKILL), so a crashed task never wedges the next. Series always live in
the shared SQL store (:mod:`core.store`): flushing Redis loses only queue positions, locks and
caches, never a metric point (design.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import delete, select

from core.settings import WorkerSettings
from core.store import Store, open_store
from core.store.models import SeriesPointRow

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


class SeriesStore:
    """Named time series of JSON points (``metrics:owner/name``, ``snapshots:owner/name``) in the
    shared SQL store, each kept to its newest :data:`SERIES_MAX_POINTS`."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def append(self, series: str, point: dict[str, Any]) -> None:
        with self.store.session() as db:
            db.add(SeriesPointRow(name=series, point=json.dumps(point, sort_keys=True)))
            db.flush()
            cutoff = db.scalar(
                select(SeriesPointRow.seq)
                .where(SeriesPointRow.name == series)
                .order_by(SeriesPointRow.seq.desc())
                .offset(SERIES_MAX_POINTS)
                .limit(1)
            )
            if cutoff is not None:
                db.execute(
                    delete(SeriesPointRow).where(SeriesPointRow.name == series, SeriesPointRow.seq <= cutoff)
                )

    def names(self, prefix: str) -> list[str]:
        """The series whose name starts with ``prefix``, sorted."""
        with self.store.session() as db:
            return list(
                db.scalars(
                    select(SeriesPointRow.name)
                    .where(SeriesPointRow.name.startswith(prefix))
                    .distinct()
                    .order_by(SeriesPointRow.name)
                )
            )

    def series(self, series: str, limit: int = 1000) -> list[dict[str, Any]]:
        with self.store.session() as db:
            rows = list(
                db.scalars(
                    select(SeriesPointRow.point)
                    .where(SeriesPointRow.name == series)
                    .order_by(SeriesPointRow.seq.desc())
                    .limit(limit)
                )
            )
        return [json.loads(row) for row in reversed(rows)]


class RedisState:
    """Redis locks; series in the SQL store ``series`` (:func:`open_state` passes the settings')."""

    def __init__(self, url: str, series: SeriesStore | None = None) -> None:
        import redis

        self.redis = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=10)
        self._series = series

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
        lock = self.redis.lock(
            f"forksync:lock:{name}", timeout=ttl_s, blocking_timeout=wait_s, thread_local=False
        )
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
                    log.error(
                        "lock %s was lost (expired before renewal); another task may run concurrently", name
                    )
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
                    log.warning(
                        "could not release lock %s (%s); it expires by itself within %s s", name, exc, ttl_s
                    )
                    return
                time.sleep(0.5)

    def _points(self) -> SeriesStore:
        if self._series is None:
            raise RuntimeError("RedisState has no series store: pass SeriesStore(settings.store())")
        return self._series

    def append(self, series: str, point: dict[str, Any]) -> None:
        self._points().append(series, point)

    def series(self, series: str, limit: int = 1000) -> list[dict[str, Any]]:
        return self._points().series(series, limit)


class LocalState:
    """Locks as ``flock`` files under ``<data dir>/state``; series in the SQL store (``series``;
    default: the embedded store of ``data_dir``)."""

    def __init__(self, data_dir: Path, series: SeriesStore | None = None) -> None:
        self.root = data_dir / "state"
        (self.root / "locks").mkdir(parents=True, exist_ok=True)
        self._series = series or SeriesStore(open_store(None, data_dir))

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

    def append(self, series: str, point: dict[str, Any]) -> None:
        self._series.append(series, point)

    def series(self, series: str, limit: int = 1000) -> list[dict[str, Any]]:
        return self._series.series(series, limit)


def open_state(settings: WorkerSettings) -> StateStore:
    series = SeriesStore(settings.store())
    if settings.bot.redis_url:
        return RedisState(settings.bot.redis_url, series)
    return LocalState(settings.data_dir, series)
