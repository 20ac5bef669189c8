"""Where the workers put each fork's dashboard feed and the web process reads it back.

The narrow query interface of the dashboard: ``put(feed)``, ``get(repo)``, ``repos()``. One
SQLite file under the data dir on the embedded default, a Redis hash with ``REDIS_URL``. A feed
is recomputable (the next ingest or snapshot writes it again), so losing it loses nothing.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any, Protocol

from core.dashboard.feed import ForkFeed

REDIS_KEY = "forksync:dashboard:feeds"
FACTS_KEY = "forksync:dashboard:facts"
VERSIONS_KEY = "forksync:dashboard:versions"
FILENAME = "dashboard.sqlite"


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


class SqliteFeedStore:
    def __init__(self, path: str | Path) -> None:
        # Nothing is created until the first put: a web process with no workers yet reads "no forks".
        self.path = Path(path)

    def _create(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._db() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE IF NOT EXISTS feeds (repo TEXT PRIMARY KEY, version TEXT, doc TEXT, updated_at REAL)")
            db.execute("CREATE TABLE IF NOT EXISTS facts (repo TEXT PRIMARY KEY, doc TEXT)")

    @contextlib.contextmanager
    def _db(self) -> Any:
        db = sqlite3.connect(self.path, timeout=30)
        try:
            with db:
                yield db
        finally:
            db.close()

    def put(self, feed: ForkFeed) -> None:
        self._create()
        with self._db() as db:
            db.execute(
                "INSERT OR REPLACE INTO feeds (repo, version, doc, updated_at) VALUES (?, ?, ?, ?)",
                (feed.repo.lower(), feed.version(), json.dumps(feed.as_json(), sort_keys=True), feed.updated_at),
            )

    def version(self, repo: str) -> str | None:
        if not self.path.exists():
            return None
        with self._db() as db:
            row = db.execute("SELECT version FROM feeds WHERE repo = ?", (repo.lower(),)).fetchone()
        return str(row[0]) if row else None

    def get(self, repo: str) -> ForkFeed | None:
        if not self.path.exists():
            return None
        with self._db() as db:
            row = db.execute("SELECT doc FROM feeds WHERE repo = ?", (repo.lower(),)).fetchone()
        return ForkFeed.from_json(json.loads(row[0])) if row else None

    def put_facts(self, repo: str, facts: dict[str, Any]) -> None:
        self._create()
        with self._db() as db:
            db.execute("INSERT OR REPLACE INTO facts (repo, doc) VALUES (?, ?)", (repo.lower(), json.dumps(facts, sort_keys=True)))

    def facts(self, repo: str) -> dict[str, Any]:
        if not self.path.exists():
            return {}
        self._create()  # an older file may lack the table
        with self._db() as db:
            row = db.execute("SELECT doc FROM facts WHERE repo = ?", (repo.lower(),)).fetchone()
        data: dict[str, Any] = json.loads(row[0]) if row else {}
        return data

    def repos(self) -> list[str]:
        if not self.path.exists():
            return []
        with self._db() as db:
            rows = db.execute("SELECT doc FROM feeds ORDER BY repo").fetchall()
        return [json.loads(r[0])["repo"] for r in rows]


class RedisFeedStore:
    def __init__(self, url: str) -> None:
        import redis

        self.redis = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=10)

    def put(self, feed: ForkFeed) -> None:
        pipe = self.redis.pipeline()
        pipe.hset(REDIS_KEY, feed.repo.lower(), json.dumps(feed.as_json(), sort_keys=True))
        pipe.hset(VERSIONS_KEY, feed.repo.lower(), feed.version())
        pipe.execute()

    def version(self, repo: str) -> str | None:
        raw = self.redis.hget(VERSIONS_KEY, repo.lower())
        return raw.decode() if isinstance(raw, bytes) else raw

    def get(self, repo: str) -> ForkFeed | None:
        raw = self.redis.hget(REDIS_KEY, repo.lower())
        return ForkFeed.from_json(json.loads(raw)) if raw else None

    def repos(self) -> list[str]:
        return sorted(json.loads(v)["repo"] for v in self.redis.hvals(REDIS_KEY))

    def put_facts(self, repo: str, facts: dict[str, Any]) -> None:
        self.redis.hset(FACTS_KEY, repo.lower(), json.dumps(facts, sort_keys=True))

    def facts(self, repo: str) -> dict[str, Any]:
        raw = self.redis.hget(FACTS_KEY, repo.lower())
        data: dict[str, Any] = json.loads(raw) if raw else {}
        return data


def open_feed_store(redis_url: str | None, data_dir: str | Path) -> FeedStore:
    if redis_url:
        return RedisFeedStore(redis_url)
    return SqliteFeedStore(Path(data_dir) / FILENAME)
