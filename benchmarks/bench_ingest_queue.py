"""Ingest-queue throughput of one Celery worker, and webhook → bundle PR latency (issue 5).

Everything real except GitHub (the loopback server over HTTP): a ``celery worker -Q ingest
-c 1`` process, the broker (Redis db 3 of the local server, or the embedded SQLite broker),
bare git remotes, the engine. Three figures per broker:

* **queue ceiling**: ``celery.accumulate`` (Celery's built-in no-op) sent N times to the ingest
  queue: tasks/s the worker sustains when the task costs nothing (broker + worker overhead);
* **ingest, steady state**: N ``forksync.ingest`` of the sample fork with nothing new upstream
  (what overlapping polls cost): fetch, ledger (cached), plan, build, no-op push, upserts that
  find their PR and issue, a check run. Side by side: the same ``ingest_repository`` called
  directly in this process (no queue): the ratio is the queue's overhead;
* **webhook → bundle PR**: a signed push webhook to the web app (real socket) until the loopback
  holds the bundle PR (fresh fork each time).

Run: ``python -m benchmarks.bench_ingest_queue [--n 500] [--ingests 20] [--latency-runs 5]``.
The Redis rows use a redis-server of their own on a free port (``redis-server`` on PATH), so
test suites running at the same time cannot take its tasks.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))


def _hermetic(home: Path) -> None:
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n"
    )
    os.environ.update(
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        FORKSYNC_CACHE_DIR=str(home / "cache"),
        GIT_COMMITTER_NAME="Bench",
        GIT_COMMITTER_EMAIL="bench@example.com",
    )


def _make_repo_factory(root: Path):  # type: ignore[no-untyped-def]
    from tests.gitrepo import Clock, GitRepo

    clock = Clock()
    return lambda name, branch="main": GitRepo(root / name, clock, branch)


def _pending(app, redis_url: str | None, data_dir: Path) -> int:  # type: ignore[no-untyped-def]
    if redis_url:
        import redis

        return int(redis.Redis.from_url(redis_url).llen("ingest"))
    import sqlite3

    db = sqlite3.connect(data_dir / "celery-broker.sqlite")
    try:
        row = db.execute(
            "SELECT COUNT(*) FROM kombu_message m JOIN kombu_queue q ON m.queue_id = q.id "
            "WHERE q.name = 'ingest' AND m.visible = 1"
        ).fetchone()
        return int(row[0])
    finally:
        db.close()


def bench(redis_url: str | None, n: int, ingests: int, latency_runs: int) -> dict[str, float]:
    from core.settings import WorkerSettings
    from tests.fixtures.workers import E2E, FORK, wait_for
    from workers.app.celery_app import create_celery

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        root = Path(tmp)
        if redis_url:
            import redis

            redis.Redis.from_url(redis_url).flushdb()
        h = E2E(root / "h", _make_repo_factory(root / "repos"), redis_url)
        try:
            app = create_celery(WorkerSettings.from_mapping(h.env))
            h.start_worker(queues="ingest", concurrency=1)
            # queue ceiling: no-op tasks
            for _ in range(20):
                app.send_task("celery.accumulate", args=(1,), queue="ingest")
            wait_for(lambda: _pending(app, redis_url, h.data_dir) == 0, 60, "warm-up")
            time.sleep(0.5)
            start = time.monotonic()
            for _ in range(n):
                app.send_task("celery.accumulate", args=(1,), queue="ingest")
            wait_for(lambda: _pending(app, redis_url, h.data_dir) == 0, 600, "no-op tasks", interval=0.01)
            out["noop_tasks_per_s"] = n / (time.monotonic() - start)
            # steady-state ingests through the queue
            kwargs = {"installation_id": h.installation, "repo": FORK, "reason": "bench"}
            app.send_task("forksync.ingest", kwargs=kwargs)  # first run opens the PR and issue
            wait_for(lambda: len(h.checks()) == 1, 120, "the first ingest")
            start = time.monotonic()
            for _ in range(ingests):
                app.send_task("forksync.ingest", kwargs=kwargs)
            wait_for(lambda: len(h.checks()) == 1 + ingests, 600, "steady-state ingests", interval=0.02)
            queued = time.monotonic() - start
            out["ingest_tasks_per_s"] = ingests / queued
            assert len(h.bundle_pulls()) == 1 and len(h.issues()) == 1, "duplicates opened"
            # the same ingests called directly (no queue, no worker process)
            from workers.adapters.gitcache import GitCache
            from workers.adapters.state import open_state
            from workers.app import runtime
            from workers.jobs.ingestion import IngestEnv, ingest_repository

            settings = WorkerSettings.from_mapping({**h.env, "FORKSYNC_DATA_DIR": str(root / "direct")})
            env = IngestEnv(
                settings,
                runtime.github_for(settings, h.installation),
                GitCache(settings.data_dir / "git"),
                open_state(settings),
                runtime.engine(),
            )
            ingest_repository(env, FORK)
            start = time.monotonic()
            for _ in range(ingests):
                ingest_repository(env, FORK)
            out["direct_ingests_per_s"] = ingests / (time.monotonic() - start)
        finally:
            h.close()
        # webhook -> bundle PR, a fresh fork each run
        latencies = []
        for i in range(latency_runs):
            if redis_url:
                import redis

                redis.Redis.from_url(redis_url).flushdb()
            h = E2E(root / f"lat{i}", _make_repo_factory(root / f"lat-repos{i}"), redis_url)
            try:
                h.start_web()
                h.start_worker()
                start = time.monotonic()
                h.push_to_fork()
                wait_for(h.bundle_pulls, 120, "the bundle PR", interval=0.01)
                latencies.append(time.monotonic() - start)
            finally:
                h.close()
        out["webhook_to_pr_median_s"] = statistics.median(latencies)
        out["webhook_to_pr_max_s"] = max(latencies)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=300, help="no-op tasks for the queue ceiling")
    parser.add_argument("--ingests", type=int, default=20, help="steady-state ingests")
    parser.add_argument("--latency-runs", type=int, default=5)
    parser.add_argument("--broker", choices=("redis", "embedded", "both"), default="both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-home-") as home:
        _hermetic(Path(home))
        rows = []
        if args.broker in ("redis", "both"):
            from tests.fixtures.workers import PrivateRedis

            server = PrivateRedis(Path(home) / "redis", persistent=False).start()
            try:
                rows.append(("Redis", bench(server.url, args.n, args.ingests, args.latency_runs)))
            finally:
                server.stop()
        if args.broker in ("embedded", "both"):
            rows.append(("embedded SQLite", bench(None, args.n, args.ingests, args.latency_runs)))
    print(
        "| broker | no-op tasks/s | ingest tasks/s (queue) | ingests/s (direct call) | queue overhead | webhook → bundle PR (median / max) |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for name, r in rows:
        overhead = r["direct_ingests_per_s"] / r["ingest_tasks_per_s"]
        print(
            f"| {name} | {r['noop_tasks_per_s']:.0f} | {r['ingest_tasks_per_s']:.2f} | {r['direct_ingests_per_s']:.2f} | "
            f"{overhead:.2f}× | {r['webhook_to_pr_median_s']:.2f} s / {r['webhook_to_pr_max_s']:.2f} s |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
