"""Where the workers put each fork's dashboard feed and the web process reads it back.

The narrow query interface of the dashboard: ``put(feed)``, ``get(repo)``, ``version(repo)``,
``repos()``, and the last ingest's facts (``put_facts``, ``facts``). The rows live in the shared
SQL store (:mod:`core.store`: PostgreSQL with ``FORKSYNC_DATABASE_URL``, else SQLite under the
data dir), tables ``dashboard_feeds`` and ``dashboard_facts``: one copy for every web process and
worker, never only in Redis. The store is opened (and migrated) at the first read or write, not
when the web app is built; with no worker yet it answers "no forks".
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import select

from core.dashboard.feed import ForkFeed
from core.store import Store, open_store
from core.store.models import DashboardFactsRow, DashboardFeedRow


class FeedStore(Protocol):
    def put(self, feed: ForkFeed) -> None: ...

    def put_facts(self, repo: str, facts: dict[str, Any]) -> None:
        """The last ingest's facts of ``repo`` (one document, replaced each time)."""
        ...

    def facts(self, repo: str) -> dict[str, Any]: ...

    def version(self, repo: str) -> str | None:
        """The stored feed's version (``ForkFeed.version``) without reading the feed; None if none."""
        ...

    def get(self, repo: str) -> ForkFeed | None: ...

    def repos(self) -> list[str]: ...


class SqlFeedStore:
    """The feeds and facts in the shared SQL store (``database_url``, else SQLite under ``data_dir``)."""

    def __init__(self, database_url: str | None, data_dir: str | Path, store: Store | None = None) -> None:
        self.database_url = database_url
        self.data_dir = Path(data_dir)
        self._store = store
        self._lock = threading.Lock()

    @property
    def store(self) -> Store:
        with self._lock:
            if self._store is None:
                self._store = open_store(self.database_url, self.data_dir)
            return self._store

    def put(self, feed: ForkFeed) -> None:
        doc = json.dumps(feed.as_json(), sort_keys=True)
        with self.store.session() as db:
            db.merge(
                DashboardFeedRow(
                    repo=feed.repo.lower(),
                    name=feed.repo,
                    version=feed.version(),
                    doc=doc,
                    updated_at=feed.updated_at,
                )
            )

    def version(self, repo: str) -> str | None:
        with self.store.session() as db:
            value = db.scalar(select(DashboardFeedRow.version).where(DashboardFeedRow.repo == repo.lower()))
        return str(value) if value is not None else None

    def get(self, repo: str) -> ForkFeed | None:
        with self.store.session() as db:
            doc = db.scalar(select(DashboardFeedRow.doc).where(DashboardFeedRow.repo == repo.lower()))
        return ForkFeed.from_json(json.loads(doc)) if doc else None

    def put_facts(self, repo: str, facts: dict[str, Any]) -> None:
        with self.store.session() as db:
            db.merge(DashboardFactsRow(repo=repo.lower(), doc=json.dumps(facts, sort_keys=True)))

    def facts(self, repo: str) -> dict[str, Any]:
        with self.store.session() as db:
            doc = db.scalar(select(DashboardFactsRow.doc).where(DashboardFactsRow.repo == repo.lower()))
        data: dict[str, Any] = json.loads(doc) if doc else {}
        return data

    def repos(self) -> list[str]:
        """The forks with a feed, as their feeds spell them (owner/name), sorted."""
        with self.store.session() as db:
            return list(db.scalars(select(DashboardFeedRow.name).order_by(DashboardFeedRow.repo)))


def open_feed_store(database_url: str | None, data_dir: str | Path) -> FeedStore:
    """The feed store of this process: the shared SQL store of ``FORKSYNC_DATABASE_URL`` (``database_url``),
    else the embedded SQLite store under ``data_dir``."""
    return SqlFeedStore(database_url, data_dir)
