"""``forksync store``: the shared SQL store (``core/store``): show where it is and its schema
revision (migrating it), and import a node's legacy SQLite files into it.

Before the store, each worker kept ``<data dir>/l1/results.sqlite`` (trunk L1 results),
``<data dir>/l2-results.sqlite`` (L2 runs) and ``<data dir>/state/series.sqlite`` (metric series),
and the web process ``<data dir>/dashboard.sqlite`` (the dashboard's feeds and the last ingest's
facts, among them when each pick first reached the fork's trunk, which the digest dates by).
``forksync store import-legacy`` copies them into the store (``FORKSYNC_DATABASE_URL`` or the
data dir's own) and renames each file to ``*.imported``, so running it again imports nothing twice.
With ``REDIS_URL`` set it also copies the feeds and facts Redis held (``forksync:dashboard:*``).
A fork whose feed or facts the store has already keeps them: newer than any legacy copy.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from core.errors import ForksyncError

LEGACY_L1 = Path("l1") / "results.sqlite"
LEGACY_L2 = Path("l2-results.sqlite")
LEGACY_SERIES = Path("state") / "series.sqlite"
LEGACY_DASHBOARD = Path("dashboard.sqlite")
LEGACY_REDIS_FEEDS = "forksync:dashboard:feeds"
LEGACY_REDIS_FACTS = "forksync:dashboard:facts"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "store",
        help="the shared SQL store: where it is, its schema revision, importing legacy files",
        description=(
            "Show the store (PostgreSQL from FORKSYNC_DATABASE_URL, else SQLite under the data dir) and "
            "migrate it to the newest revision; or import a worker's legacy per-node SQLite files."
        ),
    )
    p.add_argument("action", choices=("info", "import-legacy"))
    p.add_argument("--data-dir", help="the data dir (default $FORKSYNC_DATA_DIR or .forksync)")
    p.add_argument(
        "--database-url", help="the store (default $FORKSYNC_DATABASE_URL; unset: SQLite in the data dir)"
    )
    p.add_argument(
        "--repo-name", help="owner/name the legacy trunk L1 results belong to (they did not record it)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.store import open_store

    data_dir = Path(args.data_dir or os.environ.get("FORKSYNC_DATA_DIR") or ".forksync").resolve()
    store = open_store(args.database_url or os.environ.get("FORKSYNC_DATABASE_URL"), data_dir)
    if args.action == "info":
        print(json.dumps({"backend": store.dialect, "revision": store.revision()}, sort_keys=True))
        return 0
    if (data_dir / LEGACY_L1).exists() and not args.repo_name:
        raise ForksyncError(
            f"{data_dir / LEGACY_L1} holds trunk L1 results of one repository, unnamed",
            "pass --repo-name OWNER/NAME",
        )
    counts = import_legacy(store, data_dir, args.repo_name or "")
    if os.environ.get("REDIS_URL"):
        counts.update(import_legacy_redis(store, os.environ["REDIS_URL"]))
    print(json.dumps(counts, sort_keys=True))
    return 0


def import_legacy(store: Any, data_dir: Path, repo: str) -> dict[str, int]:
    """Copy the legacy files under ``data_dir`` into ``store``; returns rows imported per kind."""
    from workers.adapters.state import SeriesStore
    from workers.testing.regression import L2Run
    from workers.testing.results import ResultStore
    from workers.testing.signatures import Failure
    from workers.testing.triage import TrunkResults

    counts = {
        "l1_suite_runs": 0,
        "l2_runs": 0,
        "series_points": 0,
        "dashboard_feeds": 0,
        "dashboard_facts": 0,
    }
    l1 = data_dir / LEGACY_L1
    if l1.exists():
        results = TrunkResults(store, repo)
        with sqlite3.connect(l1) as db:
            for commit, suite, status, at in db.execute(
                "SELECT commit_sha, suite, status, recorded_at FROM suite_runs ORDER BY seq"
            ).fetchall():
                tests = db.execute(
                    "SELECT test_id, outcome FROM test_results WHERE commit_sha = ? AND suite = ?",
                    (commit, suite),
                ).fetchall()
                results.record(commit, suite, status, [(t, o) for t, o in tests], at=at)
                counts["l1_suite_runs"] += 1
        l1.rename(l1.with_name(l1.name + ".imported"))
    l2 = data_dir / LEGACY_L2
    if l2.exists():
        runs = ResultStore(store)
        with sqlite3.connect(l2) as db:
            for row in db.execute(
                "SELECT id, repo, benchmark, sha, status, verdict, exit_code, duration_s, reason,"
                " output_tail, failures, recorded_at FROM runs ORDER BY id"
            ).fetchall():
                metrics = dict(
                    db.execute("SELECT name, value FROM metrics WHERE run_id = ?", (row[0],)).fetchall()
                )
                runs.record(
                    row[1],
                    L2Run(
                        benchmark=row[2],
                        sha=row[3],
                        status=row[4],
                        metrics=metrics,
                        verdict=row[5],
                        exit_code=row[6],
                        duration_s=row[7],
                        reason=row[8],
                        output_tail=row[9],
                        failures=tuple(Failure(f["test_id"], f["text"]) for f in json.loads(row[10])),
                        recorded_at=row[11],
                    ),
                )
                counts["l2_runs"] += 1
        l2.rename(l2.with_name(l2.name + ".imported"))
    series_file = data_dir / LEGACY_SERIES
    if series_file.exists():
        series = SeriesStore(store)
        with sqlite3.connect(series_file) as db:
            for name, point in db.execute("SELECT name, point FROM series ORDER BY seq").fetchall():
                series.append(name, json.loads(point))
                counts["series_points"] += 1
        series_file.rename(series_file.with_name(series_file.name + ".imported"))
    dashboard = data_dir / LEGACY_DASHBOARD
    if dashboard.exists():
        with sqlite3.connect(dashboard) as db:
            tables = {t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            feeds = [d for (d,) in db.execute("SELECT doc FROM feeds")] if "feeds" in tables else []
            facts = db.execute("SELECT repo, doc FROM facts").fetchall() if "facts" in tables else []
        got = _import_dashboard(store, feeds, facts)
        counts["dashboard_feeds"] += got[0]
        counts["dashboard_facts"] += got[1]
        dashboard.rename(dashboard.with_name(dashboard.name + ".imported"))
    return counts


def import_legacy_redis(store: Any, redis_url: str) -> dict[str, int]:
    """Copy the dashboard feeds and facts a Redis deployment kept (left in Redis, unused after)."""
    import redis

    client = redis.Redis.from_url(redis_url, socket_connect_timeout=2, socket_timeout=10)
    feeds = [v.decode() if isinstance(v, bytes) else str(v) for v in client.hvals(LEGACY_REDIS_FEEDS)]
    facts = [
        (k.decode() if isinstance(k, bytes) else str(k), v.decode() if isinstance(v, bytes) else str(v))
        for k, v in client.hgetall(LEGACY_REDIS_FACTS).items()
    ]
    got = _import_dashboard(store, feeds, facts)
    return {"dashboard_feeds_redis": got[0], "dashboard_facts_redis": got[1]}


def _import_dashboard(store: Any, feeds: list[str], facts: list[tuple[str, str]]) -> tuple[int, int]:
    """Feeds (JSON documents) and (repo, facts JSON) into the store, except where it has its own."""
    from core.dashboard.feed import ForkFeed
    from core.dashboard.store import SqlFeedStore

    target = SqlFeedStore(None, ".", store)
    fed = told = 0
    for doc in feeds:
        feed = ForkFeed.from_json(json.loads(doc))
        if target.version(feed.repo) is None:
            target.put(feed)
            fed += 1
    for repo, doc in facts:
        if not target.facts(repo):
            target.put_facts(repo, json.loads(doc))
            told += 1
    return fed, told
