"""The shared SQL store (core/store): migrations at first use, and each record kind (trunk L1
results and baselines, L2 runs and metric series, named series) on SQLite and on PostgreSQL."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from sqlalchemy import inspect

from core.store import Store, database_url_for, open_store
from workers.adapters.state import LocalState, SeriesStore
from workers.testing.regression import L2Run
from workers.testing.results import ResultStore
from workers.testing.triage import TrunkResults


def test_first_use_migrates_to_the_newest_revision(store: Store) -> None:
    """Opening a store creates every table through Alembic and records the revision; opening it
    again (another worker's start-up) changes nothing."""
    tables = set(inspect(store.engine).get_table_names())
    assert {
        "l1_suite_runs",
        "l1_test_results",
        "l2_runs",
        "l2_metrics",
        "series_points",
        "l1_pending_checks",
        "accepted_deliveries",
        "l2_regressions",
        "dashboard_feeds",
        "dashboard_facts",
        "comment_answers",
        "alembic_version",
    } <= tables
    assert store.revision() == "0004"
    again = Store(store.url)
    again.migrate()
    again.dispose()
    assert store.revision() == "0004"


def test_trunk_results_are_per_repository_and_baselines_count_executed_tests(store: Store) -> None:
    """Baselines are the median executed count (skips do not count); failing tests are per commit;
    two repositories with a suite of the same name never mix."""
    acme, other = TrunkResults(store, "acme/fork"), TrunkResults(store, "other/fork")
    acme.record("c1", "unit", "failed", [("t1", "failed"), ("t2", "passed"), ("t3", "skipped")])
    acme.record("c2", "unit", "passed", [("t1", "passed"), ("t2", "passed"), ("t3", "passed")])
    other.record("c1", "unit", "passed", [(f"x{i}", "passed") for i in range(10)])
    assert acme.failing_at("c1", "unit") == frozenset({"t1"})
    assert acme.failing_at("c2", "unit") == frozenset()
    assert acme.failing_at("c3", "unit") is None
    assert other.failing_at("c1", "unit") == frozenset()
    assert acme.baseline("unit") == 2  # median of 2 executed (c1) and 3 (c2), rounded down
    assert other.baseline("unit") == 10
    assert acme.passing_suites_at("c2") == frozenset({"unit"}) and acme.passing_suites_at("c1") == frozenset()
    acme.record("c1", "unit", "passed", [("t1", "passed")])  # a rerun at c1 replaces its tests
    assert acme.failing_at("c1", "unit") == frozenset()
    assert acme.last_recorded_at() is not None and TrunkResults(store, "nobody/x").last_recorded_at() is None


def test_l2_history_and_metric_series(store: Store) -> None:
    """L2 runs come back oldest first with their metrics; the series joins runs and values."""
    results = ResultStore(store)
    for i, value in enumerate((100.0, 101.0, 70.0)):
        results.record(
            "acme/fork",
            L2Run(
                benchmark="mm",
                sha=f"s{i}",
                status="ok",
                verdict="ok" if i < 2 else "regressed",
                metrics={"tflops": value},
                recorded_at=f"night {i}",
            ),
        )
    history = results.history("acme/fork", "mm")
    assert [r.sha for r in history] == ["s0", "s1", "s2"] and history[2].metrics == {"tflops": 70.0}
    assert [p.value for p in results.series("acme/fork", "mm", "tflops")] == [100.0, 101.0, 70.0]
    last_good = results.last_good("acme/fork", "mm")
    assert last_good is not None and last_good.sha == "s1"
    assert results.benchmarks("acme/fork") == ["mm"] and results.history("other/fork", "mm") == []


def test_l2_regressions_are_stored_with_their_run(store: Store) -> None:
    """A regression is stored with the run that found it (culprit, bisection range and steps,
    tracking issue), read back per repository and benchmark, and deleted with its run."""
    from sqlalchemy import delete

    from core.store.models import L2RunRow
    from workers.testing.results import RegressionRecord

    results = ResultStore(store)
    run = results.record(
        "acme/fork",
        L2Run(
            benchmark="mm",
            sha="s2",
            status="pass",
            verdict="regressed",
            metrics={"tflops": 70.0, "gbps": 10.0},
            recorded_at="night 2",
        ),
    )
    other = results.record("acme/fork", L2Run(benchmark="sm", sha="s2", status="fail", verdict="failed"))
    assert run.run_id is not None and other.run_id is not None
    found = RegressionRecord(
        "mm",
        "tflops",
        "regressed",
        "s2",
        run.run_id,
        delta_pct=-30.2,
        good="s1",
        culprit="c1",
        culprit_subject="Slow epilogue",
        bisect_status="found",
        bisect_steps=3,
        candidates=6,
        tracking_issue=12,
        recorded_at=5.0,
    )
    failed = RegressionRecord(
        "sm",
        "",
        "failed",
        "s2",
        other.run_id,
        bisect_status="none",
        note="no good run recorded to bisect from",
        recorded_at=6.0,
    )
    results.record_regressions("acme/fork", [found, failed])
    assert results.regressions("acme/fork") == [found, failed]
    assert results.regressions("acme/fork", "sm") == [failed] and results.regressions("other/fork") == []
    with store.session() as db:
        db.execute(delete(L2RunRow).where(L2RunRow.id == run.run_id))
    assert results.regressions("acme/fork") == [failed]


def test_named_series_keep_order_and_trim(store: Store, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Series points come back oldest first, limited to the newest; the oldest beyond the cap go."""
    import workers.adapters.state as state

    monkeypatch.setattr(state, "SERIES_MAX_POINTS", 3)
    series = SeriesStore(store)
    for i in range(5):
        series.append("metrics:acme/fork", {"t": i})
    assert [p["t"] for p in series.series("metrics:acme/fork")] == [2, 3, 4]
    assert [p["t"] for p in series.series("metrics:acme/fork", limit=1)] == [4]
    assert series.series("metrics:none") == []


def test_local_state_series_live_in_the_embedded_store(tmp_path: Path) -> None:
    """Without a database URL the series are in <data dir>/store.sqlite, not in a file of their own."""
    LocalState(tmp_path).append("metrics:o/r", {"t": 1})
    assert SeriesStore(open_store(None, tmp_path)).series("metrics:o/r") == [{"t": 1}]
    assert not (tmp_path / "state" / "series.sqlite").exists()


def _open_and_record(url: str, n: int) -> None:
    store = Store(url)
    TrunkResults(store, "acme/fork").record(f"c{n}", "unit", "passed", [("t", "passed")])
    store.dispose()


def test_workers_starting_together_migrate_once(store_url: str) -> None:
    """Four processes opening a fresh store at once all succeed (the migration is serialised)."""
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_open_and_record, args=(store_url, n)) for n in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    results = TrunkResults(open_store(store_url, "."), "acme/fork")
    assert all(results.has_run(f"c{n}", "unit") for n in range(4))


def test_postgres_urls_use_psycopg_and_sqlite_lives_in_the_data_dir(tmp_path: Path) -> None:
    """FORKSYNC_DATABASE_URL postgresql:// is driven by psycopg 3; unset, the store is a data-dir file."""
    assert database_url_for("postgresql://u@h:5432/db", tmp_path) == "postgresql+psycopg://u@h:5432/db"
    assert database_url_for("postgres://u@h/db", tmp_path) == "postgresql+psycopg://u@h/db"
    assert database_url_for(None, tmp_path) == f"sqlite:///{tmp_path.resolve() / 'store.sqlite'}"


LEGACY_L1 = """
CREATE TABLE suite_runs (seq INTEGER PRIMARY KEY AUTOINCREMENT, commit_sha TEXT NOT NULL, suite TEXT NOT NULL,
    status TEXT NOT NULL, total INTEGER NOT NULL, recorded_at REAL NOT NULL);
CREATE TABLE test_results (commit_sha TEXT NOT NULL, suite TEXT NOT NULL, test_id TEXT NOT NULL, outcome TEXT NOT NULL,
    PRIMARY KEY (commit_sha, suite, test_id));
INSERT INTO suite_runs (commit_sha, suite, status, total, recorded_at) VALUES ('c1', 'unit', 'failed', 2, 1.0);
INSERT INTO test_results VALUES ('c1', 'unit', 't1', 'failed'), ('c1', 'unit', 't2', 'passed');
"""
LEGACY_L2 = """
CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, repo TEXT NOT NULL, benchmark TEXT NOT NULL, sha TEXT NOT NULL,
    status TEXT NOT NULL, verdict TEXT NOT NULL, exit_code INTEGER, duration_s REAL NOT NULL, reason TEXT NOT NULL,
    output_tail TEXT NOT NULL, failures TEXT NOT NULL, recorded_at TEXT NOT NULL);
CREATE TABLE metrics (run_id INTEGER NOT NULL, name TEXT NOT NULL, value REAL NOT NULL, PRIMARY KEY (run_id, name));
INSERT INTO runs VALUES (1, 'acme/fork', 'mm', 's1', 'pass', 'ok', 0, 1.5, '', '', '[]', 'night 1');
INSERT INTO metrics VALUES (1, 'tflops', 101.0);
"""


def test_legacy_per_node_files_import_once(store: Store, tmp_path: Path) -> None:
    """`forksync store import-legacy` copies a node's old l1/results.sqlite, l2-results.sqlite and
    state/series.sqlite into the store and renames them, so a second run imports nothing."""
    import sqlite3

    from workers.cli.store import import_legacy

    node = tmp_path / "node"
    (node / "l1").mkdir(parents=True)
    (node / "state").mkdir()
    for path, script in (
        (node / "l1" / "results.sqlite", LEGACY_L1),
        (node / "l2-results.sqlite", LEGACY_L2),
        (
            node / "state" / "series.sqlite",
            "CREATE TABLE series (name TEXT, seq INTEGER PRIMARY KEY, point TEXT);"
            "INSERT INTO series (name, point) VALUES ('metrics:acme/fork', '{\"t\": 1}');",
        ),
    ):
        with sqlite3.connect(path) as db:
            db.executescript(script)
    assert import_legacy(store, node, "acme/fork") == {
        "l1_suite_runs": 1,
        "l2_runs": 1,
        "series_points": 1,
        "dashboard_feeds": 0,
        "dashboard_facts": 0,
    }
    assert TrunkResults(store, "acme/fork").failing_at("c1", "unit") == frozenset({"t1"})
    assert [r.metrics for r in ResultStore(store).history("acme/fork", "mm")] == [{"tflops": 101.0}]
    assert SeriesStore(store).series("metrics:acme/fork") == [{"t": 1}]
    assert import_legacy(store, node, "acme/fork") == {
        "l1_suite_runs": 0,
        "l2_runs": 0,
        "series_points": 0,
        "dashboard_feeds": 0,
        "dashboard_facts": 0,
    }
    assert (node / "l2-results.sqlite.imported").exists()


def test_legacy_dashboard_feeds_and_facts_import_without_overwriting_newer_ones(
    store: Store, tmp_path: Path, redis_url
) -> None:  # type: ignore[no-untyped-def]
    """The web process's old dashboard.sqlite and a Redis deployment's feed hashes move into the store
    (the facts date the picks for the digest); a fork the store already has keeps its own copy."""
    import json
    import sqlite3

    import redis as redis_lib

    from core.dashboard.feed import ForkFeed
    from core.dashboard.store import SqlFeedStore
    from workers.cli.store import import_legacy, import_legacy_redis

    node = tmp_path / "node"
    node.mkdir()
    old = ForkFeed("acme/fork", 10.0)
    with sqlite3.connect(node / "dashboard.sqlite") as db:
        db.executescript(
            "CREATE TABLE feeds (repo TEXT PRIMARY KEY, version TEXT, doc TEXT, updated_at REAL);"
            "CREATE TABLE facts (repo TEXT PRIMARY KEY, doc TEXT);"
        )
        db.execute(
            "INSERT INTO feeds VALUES (?, ?, ?, ?)",
            ("acme/fork", old.version(), json.dumps(old.as_json()), 10.0),
        )
        db.execute("INSERT INTO facts VALUES (?, ?)", ("acme/fork", json.dumps({"landed_at": {"f1": 5.0}})))
    feeds = SqlFeedStore(None, ".", store)
    newer = ForkFeed("other/fork", 99.0)
    feeds.put(newer)
    feeds.put_facts("other/fork", {"landed_at": {"f9": 90.0}})
    counts = import_legacy(store, node, "acme/fork")
    assert (counts["dashboard_feeds"], counts["dashboard_facts"]) == (1, 1)
    assert feeds.get("acme/fork") == old and feeds.facts("acme/fork") == {"landed_at": {"f1": 5.0}}
    assert (node / "dashboard.sqlite.imported").exists()
    url = redis_url(14)
    client = redis_lib.Redis.from_url(url)
    client.hset("forksync:dashboard:feeds", "other/fork", json.dumps(ForkFeed("other/fork", 1.0).as_json()))
    client.hset("forksync:dashboard:facts", "other/fork", json.dumps({"landed_at": {"f9": 1.0}}))
    client.hset("forksync:dashboard:facts", "third/fork", json.dumps({"private": True}))
    assert import_legacy_redis(store, url) == {"dashboard_feeds_redis": 0, "dashboard_facts_redis": 1}
    assert feeds.get("other/fork") == newer and feeds.facts("other/fork") == {"landed_at": {"f9": 90.0}}
    assert feeds.facts("third/fork") == {"private": True}
