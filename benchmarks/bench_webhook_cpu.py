"""CPU and instructions per webhook delivery, in process: the WSGI app called directly, no HTTP.

What the intake itself costs, apart from gunicorn, wrk and the scheduler of a shared box:
``bot:create_app()`` (Redis dedup + enqueue, the SQLite delivery log in a fresh data dir) and the
bare Flask view of ``benchmarks/bench_webhook.py`` each get ``--n`` signed ``push`` deliveries (the
real 8.8 kB payload, a new delivery id each) through their WSGI callable, rounds alternated, CPU
per delivery from ``time.process_time`` (medians). ``--stages`` times the intake's parts on their
own. ``--callgrind`` counts instructions instead (valgrind, user space of this process only, so
load-independent): a run of ``--n`` + 20 deliveries minus one of 20, divided by ``--n``.

    python -m benchmarks.bench_webhook_cpu [--n 2000] [--rounds 3] [--stages] [--callgrind [--n 200]]

Uses (and flushes) Redis db ``--redis-db`` (default 13).
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import io
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAYLOAD = ROOT / "tests" / "data" / "github-payloads" / "push.with-new-branch.json"
SECRET = "bench-secret"
WARM = 20


# gunicorn hands the app its client socket; the intake arms its read deadline on it.
_SOCKETS = socket.socketpair()


def environ(body: bytes, signature: str, delivery: str) -> dict[str, Any]:
    """What gunicorn hands the app for one delivery (the headers GitHub sends)."""
    return {
        "gunicorn.socket": _SOCKETS[0],
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/webhook",
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_HOST": "127.0.0.1:8000",
        "HTTP_ACCEPT": "*/*",
        "HTTP_USER_AGENT": "GitHub-Hookshot/bench",
        "HTTP_X_GITHUB_EVENT": "push",
        "HTTP_X_GITHUB_DELIVERY": delivery,
        "HTTP_X_GITHUB_HOOK_ID": "1",
        "HTTP_X_HUB_SIGNATURE_256": signature,
    }


def make_apps(redis_url: str, data_dir: Path) -> dict[str, Any]:
    from benchmarks.bench_webhook import bare_app
    from bot import create_app

    config = {"FORKSYNC_WEBHOOK_SECRET": SECRET, "REDIS_URL": redis_url, "FORKSYNC_DATA_DIR": str(data_dir)}
    return {"bare Flask view": bare_app(), "forksync POST /webhook": create_app(config)}


def deliverer(app: Any, body: bytes, run: str) -> Callable[[int], None]:
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    statuses: list[str] = []

    def start_response(status: str, _headers: Any, _exc: Any = None) -> None:
        statuses.append(status)

    def deliver(i: int) -> None:
        result = app(environ(body, signature, f"{run}-{i}"), start_response)
        b"".join(result)
        close = getattr(result, "close", None)
        if close is not None:
            close()
        if not statuses[-1].startswith("202"):
            raise SystemExit(f"delivery {run}-{i} answered {statuses[-1]}")
        statuses.clear()

    return deliver


def cpu_per_call(call: Callable[[int], None], n: int, start: int = 0) -> float:
    """Milliseconds of this process's CPU per call."""
    t = time.process_time()
    for i in range(start, start + n):
        call(i)
    return (time.process_time() - t) * 1000 / n


def stages(redis_url: str, data_dir: Path, body: bytes, n: int) -> list[tuple[str, float]]:
    """The intake's parts timed on their own (CPU ms per call)."""
    import json

    from bot import webhooks
    from bot.dispatch import RedisTaskQueue, StoreDeliveryLog
    from bot.events import parse_event
    from core import tasknames

    kwargs = {
        "installation_id": 1,
        "repo": "acme/fork",
        "ref": "refs/heads/x",
        "before": "0" * 40,
        "after": "1" * 40,
        "delivery": "d",
    }
    queue = RedisTaskQueue(redis_url, 3600, prefix=f"bench-cpu-{uuid.uuid4().hex[:8]}:")
    log = StoreDeliveryLog(None, data_dir / "stages")
    run = uuid.uuid4().hex[:8]
    payload = json.loads(body)
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    parts: list[tuple[str, Callable[[int], Any]]] = [
        (
            "signature check + body read",
            lambda i: webhooks._read_verified(
                environ(body, signature, "x"), SECRET, signature, 25 * 1024 * 1024, 20.0
            ),
        ),
        ("JSON decode", lambda i: webhooks._decode(body, "application/json")),
        ("typed event + task", lambda i: webhooks.task_for(parse_event("push", payload), "d")),
        (
            "delivery log INSERT (SQLite)",
            lambda i: log.accept(f"{run}-{i}", "push", "acme/fork", 1, tasknames.ON_PUSH, kwargs),
        ),
        ("task message (Celery protocol 2)", lambda i: queue.message(tasknames.ON_PUSH, kwargs)),
        (
            "Redis claim + push (one EVALSHA)",
            lambda i: queue.send_once(f"{run}-{i}", tasknames.ON_PUSH, kwargs),
        ),
    ]
    out = []
    for label, call in parts:
        cpu_per_call(call, 50, start=10**6)  # warm
        out.append((label, cpu_per_call(call, n)))
    return out


def callgrind(app: str, n: int, redis_db: int) -> float:
    """Instructions per delivery (user space of this process), from two runs under callgrind."""
    counts = []
    for total in (WARM, WARM + n):
        proc = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--callgrind-out-file=/dev/null",
                sys.executable,
                "-m",
                "benchmarks.bench_webhook_cpu",
                "--only",
                app,
                "--n",
                str(total),
                "--rounds",
                "1",
                "--redis-db",
                str(redis_db),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        found = re.search(r"Collected : (\d+)", proc.stderr)
        if not found:
            raise SystemExit(f"callgrind printed no count: {proc.stderr[-500:]}")
        counts.append(int(found.group(1)))
    return (counts[1] - counts[0]) / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="deliveries per round (per app)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stages", action="store_true", help="also time the intake's parts on their own")
    parser.add_argument("--callgrind", action="store_true", help="count instructions under valgrind")
    parser.add_argument("--only", help=argparse.SUPPRESS)  # one app, no warm-up (callgrind's runs)
    parser.add_argument("--redis-db", type=int, default=13)
    args = parser.parse_args()
    import logging

    import redis

    logging.disable(logging.WARNING)  # the start-up warning about Redis persistence, per run
    redis_url = f"redis://127.0.0.1:6379/{args.redis_db}"
    client = redis.Redis.from_url(redis_url)
    client.ping()
    if args.callgrind:
        print(f"callgrind, {args.n} deliveries after {WARM}; load average {os.getloadavg()[0]:.1f}")
        for name in ("bare Flask view", "forksync POST /webhook"):
            print(f"  {name:28s} {callgrind(name, args.n, args.redis_db) / 1e6:6.2f} M instructions/delivery")
        client.flushdb()
        return 0
    body = PAYLOAD.read_bytes()
    work = Path(tempfile.mkdtemp(prefix="forksync-bench-cpu-"))
    try:
        apps = make_apps(redis_url, work / "data")
        if args.only:
            cpu_per_call(deliverer(apps[args.only], body, uuid.uuid4().hex[:8]), args.n)
            return 0
        results: dict[str, list[float]] = {name: [] for name in apps}
        loads = []
        for app in apps.values():
            cpu_per_call(deliverer(app, body, uuid.uuid4().hex[:8]), 100)  # warm: imports, connections
        for _ in range(args.rounds):
            for name, app in apps.items():  # alternated
                loads.append(os.getloadavg()[0])
                results[name].append(cpu_per_call(deliverer(app, body, uuid.uuid4().hex[:8]), args.n))
        print(
            f"in process, {args.rounds} alternated rounds of {args.n} push deliveries; load average "
            f"{min(loads):.1f}-{max(loads):.1f}"
        )
        for name, values in results.items():
            print(
                f"  {name:28s} {statistics.median(values):.3f} ms CPU/delivery (rounds: "
                + ", ".join(f"{v:.3f}" for v in values)
                + ")"
            )
        if args.stages:
            print(f"parts on their own (load average {os.getloadavg()[0]:.1f}):")
            for label, ms in stages(redis_url, work, body, args.n):
                print(f"  {label:36s} {ms * 1000:6.1f} us CPU")
    finally:
        client.flushdb()
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
