"""The store's engine, sessions and start-up migrations (see :mod:`core.store`)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

STORE_FILENAME = "store.sqlite"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
# Any constant: the PostgreSQL advisory lock two workers take while migrating.
_MIGRATE_LOCK_KEY = 0x666F726B73796E63  # "forksync"

_lock = threading.Lock()
_stores: dict[str, Store] = {}


def database_url_for(database_url: str | None, data_dir: str | Path) -> str:
    """The SQLAlchemy URL: ``database_url`` (``postgresql://`` is driven by psycopg 3), or the
    embedded SQLite file under ``data_dir``."""
    if database_url:
        url = database_url.strip()
        for plain in ("postgres://", "postgresql://"):
            if url.startswith(plain):
                return "postgresql+psycopg://" + url[len(plain) :]
        return url
    return f"sqlite:///{Path(data_dir).resolve() / STORE_FILENAME}"


class Store:
    """One database: an engine, a session factory, and the schema at the newest revision."""

    def __init__(self, url: str) -> None:
        self.url = url
        parsed = make_url(url)
        self.dialect = parsed.get_backend_name()
        # The SQLite file the write and migration locks sit beside (None: not SQLite, or in memory);
        # parsed once here, not per delivery (make_url costs ~20 us, on every webhook's commit).
        database = parsed.database
        self._sqlite_file: str | None = (
            database if self.dialect == "sqlite" and database and database != ":memory:" else None
        )
        kwargs: dict[str, Any] = {"future": True}
        if self.dialect == "sqlite":
            if parsed.database:
                Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
            kwargs["connect_args"] = {"timeout": 30}
        else:
            kwargs["pool_pre_ping"] = True
        self.engine: Engine = create_engine(url, **kwargs)
        if self.dialect == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._writer = threading.Lock()
        self._writer_fd: tuple[int, int] | None = None  # (pid, fd): a forked child opens its own
        self.migrate()

    @contextlib.contextmanager
    def session(self) -> Iterator[Session]:
        """One transaction: committed when the block ends, rolled back if it raised."""
        with self._sessions.begin() as db:
            yield db

    def migrate(self) -> None:
        """Bring the schema to the newest Alembic revision (idempotent; serialised across processes)."""
        from alembic import command
        from alembic.config import Config

        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        with self._migration_lock(), self.engine.begin() as conn:
            if self.dialect == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATE_LOCK_KEY})
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")

    @contextlib.contextmanager
    def _migration_lock(self) -> Iterator[None]:
        database = self._sqlite_file
        if database is None:
            yield
            return
        fd = os.open(f"{database}.migrate.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def write_lock(self) -> Iterator[None]:
        """Held around a write transaction that many processes run at a high rate (the web
        processes' delivery-log group commits): on an SQLite file, one writer at a time across
        threads and processes through ``flock`` on ``<database>.write.lock``, elsewhere nothing.

        Why: SQLite's busy handler sleeps 1, 2, 5, 10, 15 ms... between tries while another
        process holds the write lock, so under gunicorn's 3 processes ~1% of the commits took
        over 10 ms (up to 80-180 ms) and the webhook p99 at 64 connections sat at 60-80 ms;
        waiting on ``flock`` instead wakes the next writer as soon as the lock is free (commits over
        10 ms 0.2-0.6%, max 13-18 ms; p99 39-47 ms; benchmarks/README.md). Writers that do not take
        it (workers, the dashboard) still wait in the busy handler, as before."""
        database = self._sqlite_file
        if database is None:
            yield
            return
        with self._writer:
            pid = os.getpid()
            if self._writer_fd is None or self._writer_fd[0] != pid:
                # flock belongs to the open file: a descriptor inherited over fork would be shared
                # with the parent and exclude nothing between them.
                self._writer_fd = (pid, os.open(f"{database}.write.lock", os.O_RDWR | os.O_CREAT, 0o600))
            fd = self._writer_fd[1]
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def revision(self) -> str | None:
        """The schema's current Alembic revision (None before the first migration)."""
        with self.engine.connect() as conn:
            from alembic.runtime.migration import MigrationContext

            return MigrationContext.configure(conn).get_current_revision()

    def dispose(self) -> None:
        self.engine.dispose()


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    # WAL: readers (dashboard, beat) read while a worker writes; foreign keys for the cascades.
    # synchronous=NORMAL: in WAL mode a commit is written to the WAL but not fsynced (the WAL is
    # synced at checkpoints). Committed rows survive any process crash or restart (the web's
    # delivery log exists for Redis restarts); only an OS crash or power loss can roll back the
    # last commits, never corrupt the file. FULL fsynced every commit: ~3 ms each, serialised by
    # SQLite's one writer, which capped the webhook intake at ~300 deliveries/s (benchmarks/README.md).
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def open_store(database_url: str | None, data_dir: str | Path) -> Store:
    """The process's store for this URL (``FORKSYNC_DATABASE_URL``; None: SQLite under ``data_dir``),
    created and migrated on first use and cached after that."""
    url = database_url_for(database_url, data_dir)
    with _lock:
        store = _stores.get(url)
        if store is None:
            store = _stores[url] = Store(url)
        return store


def forget(url: str) -> None:
    """Drop the cached store for ``url`` (tests that drop their database)."""
    with _lock:
        store = _stores.pop(url, None)
    if store is not None:
        store.dispose()
