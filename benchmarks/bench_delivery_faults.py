"""Delivery accounting under faults (issue 14): is every accepted webhook delivery executed exactly
once when workers are killed and the broker restarts?

Real parts, as the Procfile runs them: gunicorn (gthread) serving ``bot:create_app()``, ``celery
worker -Q github`` processes (prefork), a private ``redis-server`` (or the embedded SQLite broker),
the delivery log in the SQLite store. A load of signed ``check_run`` ``rerequested`` deliveries (of a check
named ``bench / marker``: forksync's own handler, which re-runs only its L1 check, does nothing) is posted from client threads; the workers also load
``benchmarks/fault_marker.py``, whose handler writes one marker row per execution. A client that
gets a 5xx (the broker is down) redelivers the same id after a pause, as GitHub's redelivery would.
During the load one fault is injected:

* ``none``: no fault (the baseline);
* ``worker-kill``: SIGKILL of a worker's main process (its pool children too), restarted 1 s later;
* ``child-kill``: SIGKILL of the pool processes running tasks (the main process lives);
* ``redis-volatile``: Redis restarted without persistence (queued messages and keys are gone);
* ``redis-aof``: Redis restarted with its append-only file (appendfsync always);
* ``embedded-kill``: no Redis, the embedded broker, and a worker SIGKILL.

The replay pass (``forksync.replay_deliveries``, which beat sends every
``schedule.recover_commands_minutes``) is sent every ``--replay-every`` seconds, with
``FORKSYNC_REPLAY_GRACE_S=--grace``. Per fault: accepted (deliveries answered ``accepted``, or
``duplicate`` on a retry whose first try was accepted but its answer lost), executed (deliveries with a
marker), lost (accepted, no marker after ``--settle`` s), duplicated (marker rows beyond one per
delivery), replays sent, and the time until the last accepted delivery was executed.

    python benchmarks/bench_delivery_faults.py [--n 300] [--faults none,worker-kill,...] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FAULTS = ("none", "worker-kill", "child-kill", "redis-volatile", "redis-aof", "embedded-kill")


@dataclass
class Result:
    fault: str
    sent: int
    accepted: int = 0
    executed: int = 0
    lost: int = 0
    duplicated: int = 0
    rerun_after_finish: int = 0
    refused_5xx: int = 0
    replayed: int = 0
    drain_s: float = 0.0
    notes: list[str] = field(default_factory=list)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


class Web:
    """gunicorn as the Procfile's ``web`` line runs it (fewer processes: a small shared box)."""

    def __init__(self, env: dict[str, str], log: Path, workers: int = 2) -> None:
        self.port = _free_port()
        self.log = log
        out = log.open("ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--worker-class",
                "gthread",
                "--workers",
                str(workers),
                "--threads",
                "8",
                "--timeout",
                "30",
                "bot:create_app()",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        out.close()

        def up() -> bool:
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as answer,
            ):
                return bool(answer.status == 200)
            return False

        _wait(up, 60, "gunicorn to answer /healthz")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def deliver(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    """POST one delivery: (status, the answer's line); 599 when the connection failed."""
    request = urllib.request.Request(f"{url}/webhook", data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=15) as answer:
            return int(answer.status), answer.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode(errors="replace")
    except OSError as exc:
        return 599, str(exc)


def check_run_payload(i: int) -> dict[str, Any]:
    from tests.datafiles import GITHUB_PAYLOADS

    payload: dict[str, Any] = json.loads((GITHUB_PAYLOADS / "check_run.rerequested.json").read_text())
    payload["installation"] = {"id": 1}
    payload["check_run"].update(name="bench / marker", id=10_000 + i)
    return payload


def markers(path: Path) -> list[str]:
    if not path.exists():
        return []
    db = sqlite3.connect(path, timeout=30)
    try:
        return [str(d) for (d,) in db.execute("SELECT delivery FROM markers")]
    except sqlite3.OperationalError:  # the table is created by the first marker
        return []
    finally:
        db.close()


def marker_times(path: Path) -> list[tuple[str, float]]:
    """(delivery, when its handler's side effect was written) of every marker row."""
    if not path.exists():
        return []
    db = sqlite3.connect(path, timeout=30)
    try:
        return [(str(d), float(t)) for d, t in db.execute("SELECT delivery, at FROM markers")]
    except sqlite3.OperationalError:
        return []
    finally:
        db.close()


def _finished_at(store: Any, ids: set[str]) -> dict[str, float]:
    from sqlalchemy import select

    from core.store.models import AcceptedDeliveryRow as Row

    with store.engine.connect() as conn:
        rows = conn.execute(select(Row.delivery, Row.finished_at).where(Row.finished_at.is_not(None)))
        return {str(d): float(f) for d, f in rows if d in ids}


def run_fault(
    fault: str,
    n: int,
    root: Path,
    *,
    threads: int = 4,
    grace_s: float = 10.0,
    replay_every_s: float = 5.0,
    settle_s: float = 150.0,
    concurrency: int = 2,
    visibility_s: int | None = None,
    work_s: float = 0.02,
) -> Result:
    """One load of ``n`` deliveries with ``fault`` injected after a third of them."""
    from celery import Celery

    from core import tasknames
    from core.store import deliveries as delivery_log
    from core.store import open_store
    from tests.fixtures.webhooks import SECRET, signed
    from tests.fixtures.workers import PrivateRedis, WorkerProcess

    root.mkdir(parents=True, exist_ok=True)
    data = root / "data"
    marker_file = root / "markers.sqlite"
    redis_server = None
    if fault != "embedded-kill":
        redis_server = PrivateRedis(root / "redis", persistent=(fault != "redis-volatile")).start()
    env = {
        **os.environ,
        "FORKSYNC_WEBHOOK_SECRET": SECRET,
        "FORKSYNC_DATA_DIR": str(data),
        "PYTHONPATH": str(ROOT),
        "FORKSYNC_REPLAY_GRACE_S": str(grace_s),
    }
    for name in (
        "REDIS_URL",
        "FORKSYNC_DATABASE_URL",
        "GITHUB_APP_ID",
        "GITHUB_PRIVATE_KEY",
        "GITHUB_PRIVATE_KEY_PATH",
    ):
        env.pop(name, None)
    if redis_server is not None:
        env["REDIS_URL"] = redis_server.url
    worker_env = {
        **env,
        "FORKSYNC_WORKER_QUEUES": tasknames.Q_GITHUB,
        "FORKSYNC_BENCH_MARKERS": str(marker_file),
        "FORKSYNC_BENCH_WORK_S": str(work_s),
    }
    if visibility_s is not None:
        worker_env["FORKSYNC_VISIBILITY_TIMEOUT_S"] = str(visibility_s)
    result = Result(fault, n)
    web = Web(env, root / "web.log")
    workers = [
        WorkerProcess(
            worker_env,
            root / f"worker-{i}.log",
            queues=tasknames.Q_GITHUB,
            concurrency=concurrency,
            extra=("--include", "benchmarks.fault_marker"),
        ).start(timeout=60)
        for i in range(2)
    ]
    bodies = [signed("check_run", check_run_payload(i), delivery=str(uuid.uuid4())) for i in range(n)]
    accepted: set[str] = set()
    lock = threading.Lock()
    next_index = iter(range(n))
    faulted = threading.Event()
    refused = [0]

    def client() -> None:
        while True:
            with lock:
                i = next(next_index, None)
            if i is None:
                return
            body, headers = bodies[i]
            for attempt in range(40):  # a 5xx is redelivered (same id) as GitHub's redelivery would
                status, text = deliver(web.url, body, headers)
                if status < 500:
                    break
                with lock:
                    refused[0] += 1
                time.sleep(0.25 + 0.1 * attempt)
            # accepted: the first 2xx that is not "ignored" ("duplicate" when an earlier try was
            # accepted but its answer was lost in the fault: GitHub sees it delivered all the same)
            if status in (200, 202) and text.startswith(("accepted", "duplicate")):
                with lock:
                    accepted.add(headers["X-GitHub-Delivery"])
            time.sleep(0.005)

    def inject() -> None:
        _wait(lambda: len(accepted) >= n // 3, 120, "a third of the load")
        victim = workers[0]
        if fault in ("worker-kill", "embedded-kill"):
            victim.kill()
            result.notes.append(
                f"SIGKILL worker main pid {victim.proc.pid if victim.proc else '?'} and its pool"
            )
            time.sleep(1.0)
            workers[0] = WorkerProcess(
                worker_env,
                root / "worker-0b.log",
                queues=tasknames.Q_GITHUB,
                concurrency=concurrency,
                extra=("--include", "benchmarks.fault_marker"),
            )
            workers[0].start(timeout=60)
        elif fault == "child-kill":
            pids = [p for w in workers for p in w.pool_pids()]
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            result.notes.append(f"SIGKILL {len(pids)} pool processes")
        elif fault in ("redis-volatile", "redis-aof") and redis_server is not None:
            redis_server.restart(down_s=1.0)
            result.notes.append("redis-server SIGTERM, down 1 s, started again")
        faulted.set()

    started = time.monotonic()
    injector = threading.Thread(target=inject, daemon=True)
    if fault != "none":
        injector.start()
    clients = [threading.Thread(target=client) for _ in range(threads)]
    for t in clients:
        t.start()
    for t in clients:
        t.join()
    if fault != "none":
        injector.join(180)
    result.accepted = len(accepted)
    result.refused_5xx = refused[0]
    # the replay pass, as beat sends it (by name, on the github queue), every replay_every_s
    sender = Celery("bench-beat", broker=env.get("REDIS_URL") or tasknames.embedded_broker_url(str(data)))
    if "REDIS_URL" not in env:
        from workers.app import embedded

        embedded.register()
    deadline = time.monotonic() + settle_s
    last_replay = 0.0
    while time.monotonic() < deadline:
        done = set(markers(marker_file))
        if accepted <= done:
            break
        if time.monotonic() - last_replay >= replay_every_s:
            with contextlib.suppress(Exception):
                sender.send_task(
                    tasknames.REPLAY_DELIVERIES, queue=tasknames.queue_for(tasknames.REPLAY_DELIVERIES)
                )
            last_replay = time.monotonic()
        time.sleep(0.5)
    result.drain_s = round(time.monotonic() - started, 1)
    time.sleep(3.0)  # late duplicates (a restored message running again) would land now
    rows = markers(marker_file)
    executed = set(rows) & accepted
    result.executed = len(executed)
    result.lost = len(accepted - executed)
    result.duplicated = len(rows) - len(set(rows))
    store = open_store(None, data)
    finished = _finished_at(store, accepted)
    result.rerun_after_finish = sum(
        1 for d, at in marker_times(marker_file) if d in finished and at > finished[d]
    )
    result.replayed = sum((delivery_log.outcome(store, d) or ("", 0))[1] for d in accepted)
    outcomes: dict[str, int] = {}
    for d in accepted:
        state = (delivery_log.outcome(store, d) or ("missing", 0))[0] or "unfinished"
        outcomes[state] = outcomes.get(state, 0) + 1
    result.notes.append(f"delivery log outcomes {outcomes}")
    for worker in workers:
        worker.stop()
    web.stop()
    if redis_server is not None:
        redis_server.stop()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--grace", type=float, default=10.0, help="FORKSYNC_REPLAY_GRACE_S (production: 300)")
    parser.add_argument(
        "--replay-every", type=float, default=5.0, help="seconds between replay passes (beat: 10 min)"
    )
    parser.add_argument("--settle", type=float, default=150.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import tempfile

    results = []
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-delivery-faults-") as tmp:
        for fault in args.faults.split(","):
            result = run_fault(
                fault,
                args.n,
                Path(tmp) / fault,
                grace_s=args.grace,
                replay_every_s=args.replay_every,
                settle_s=args.settle,
            )
            results.append(result)
            print(json.dumps(asdict(result)), flush=True)
    after = os.getloadavg()
    print(f"\nload average before {load[0]:.2f} {load[1]:.2f}, after {after[0]:.2f} {after[1]:.2f}")
    print(
        "| fault | accepted | executed | lost | duplicated side effects | of which re-runs after finishing | "
        "5xx answers redelivered | replays sent | all executed after |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(
            f"| {r.fault} | {r.accepted} | {r.executed} | {r.lost} | {r.duplicated} | {r.rerun_after_finish} "
            f"| {r.refused_5xx} | {r.replayed} | {r.drain_s} s |"
        )
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=2))
    return 0 if all(r.lost == 0 and r.duplicated == 0 and r.accepted == r.executed for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
