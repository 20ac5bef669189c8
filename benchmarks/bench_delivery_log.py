"""The durable delivery log (issue 14, finding 4): what it costs per delivery, and what it saves
when Redis is flushed.

In-process (Flask test client, no HTTP), the default Redis intake (one Lua call: dedup + enqueue)
with the SQL delivery log off (the baseline), on SQLite, and on PostgreSQL: ``--n`` signed
``push`` deliveries, wall and CPU time per delivery. Then the fault: the same ``--n`` delivery
ids are redelivered after ``FLUSHDB`` (a Redis restart without persistence) and the deliveries
accepted a second time are counted.

    python benchmarks/bench_delivery_log.py [--n 500] [--redis redis://127.0.0.1:6379/12]
        [--postgres postgresql://postgres@127.0.0.1:5432/postgres]

Uses (and flushes) the given Redis database; creates and drops its own PostgreSQL database.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def run(
    label: str, n: int, redis_url: str, database_url: str | None, data_dir: Path, log_on: bool
) -> dict[str, Any]:
    import redis

    from bot import create_app
    from tests.fixtures.webhooks import SECRET, signed

    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    app = create_app(
        {
            "FORKSYNC_WEBHOOK_SECRET": SECRET,
            "REDIS_URL": redis_url,
            "FORKSYNC_DATA_DIR": str(data_dir),
            **({"FORKSYNC_DATABASE_URL": database_url} if database_url else {}),
        }
    )
    if not log_on:
        app.extensions["forksync"].deliveries = None
    web = app.test_client()
    payload = json.loads(
        (ROOT / "tests" / "data" / "github-payloads" / "push.with-new-branch.json").read_text()
    )
    deliveries = [signed("push", payload, delivery=str(uuid.uuid4())) for _ in range(n + 20)]
    for body, headers in deliveries[:20]:  # warm-up: store opened and migrated, code paths hot
        web.post("/webhook", data=body, headers=headers)
    deliveries = deliveries[20:]
    wall0, cpu0 = time.perf_counter(), time.process_time()
    first = [web.post("/webhook", data=b, headers=h).status_code for b, h in deliveries]
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    client.flushdb()  # Redis restarted without persistence: dedup keys and queue gone
    again = [web.post("/webhook", data=b, headers=h).status_code for b, h in deliveries]
    client.flushdb()
    return {
        "label": label,
        "accepted": first.count(202),
        "wall_ms": 1000 * wall / n,
        "cpu_ms": 1000 * cpu / n,
        "accepted_again": again.count(202),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/12")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    import psycopg

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        rows.append(run("Redis only (log off)", args.n, args.redis, None, Path(tmp) / "a", log_on=False))
        rows.append(run("Redis + log on SQLite", args.n, args.redis, None, Path(tmp) / "b", log_on=True))
        name = f"forksync_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(args.postgres, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        url = args.postgres.rsplit("/", 1)[0] + f"/{name}"
        try:
            rows.append(
                run("Redis + log on PostgreSQL", args.n, args.redis, url, Path(tmp) / "c", log_on=True)
            )
        finally:
            from core.store.db import database_url_for, forget

            forget(database_url_for(url, "."))
            with psycopg.connect(args.postgres, autocommit=True) as admin:
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,)
                )
                admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
    print(
        f"| intake | accepted | wall ms/delivery | CPU ms/delivery | accepted again after FLUSHDB (of {args.n}) |"
    )
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r['label']} | {r['accepted']} | {r['wall_ms']:.2f} | {r['cpu_ms']:.2f} | {r['accepted_again']} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
