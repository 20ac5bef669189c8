"""Webhook throughput: gunicorn serving ``bot:create_app()`` under wrk, side by side with a bare Flask app.

For each run: gunicorn on 127.0.0.1, wrk (``apt-get install wrk``) posting signed ``push``
deliveries with a unique ``X-GitHub-Delivery`` per request for ``--duration`` seconds. The
forksync run does everything a real delivery costs (HMAC check, Redis ``SET NX EX`` dedup,
Celery ``send_task`` into Redis); the baseline is the same gunicorn serving a Flask view that
reads the body and answers 202 (the floor a user pays for any Python webhook receiver).
Afterwards the Redis queue is read back: every 202 must be one message, each delivery id once.

    python benchmarks/bench_webhook.py [--duration 10] [--rounds 3] [--connections 8,64] [--no-procfile]

gunicorn runs the Procfile's ``web:`` command line exactly (gthread, ``$WEB_CONCURRENCY`` or 3
workers, 8 threads, access log on stdout, written to a file); the two apps run side by side and
their wrk rounds alternate (baseline, forksync, baseline, ...), medians reported with the load
average of each round. Prints requests/s, p50/p99 latency for both, the ratio, CPU and voluntary
context switches per request from /proc, and the exactly-once count. The delivery log is on
(SQLite in a fresh data dir). Uses Redis db ``--redis-db`` (default 11) and deletes only the keys
it created.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAYLOAD = ROOT / "tests" / "data" / "github-payloads" / "push.with-new-branch.json"
SECRET = "bench-secret"
QUEUE = "github"  # core.tasknames.Q_GITHUB: where forksync.on_push is routed

WRK_SCRIPT = """
local body = [==[%(body)s]==]
local signature = "%(signature)s"
local run = "%(run)s"
local threads = {}
-- globals, not locals: done() reads them from each thread with thread:get()
counter = 0
accepted = 0
other = 0

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function request()
  counter = counter + 1
  local headers = {}
  headers["Content-Type"] = "application/json"
  headers["X-GitHub-Event"] = "push"
  headers["X-GitHub-Delivery"] = run .. "-" .. tid .. "-" .. counter
  headers["X-Hub-Signature-256"] = signature
  return wrk.format("POST", "/webhook", headers, body)
end

function response(status, headers, body)
  if status == 202 then accepted = accepted + 1 else other = other + 1 end
end

function done(summary, latency, requests)
  local acc, oth = 0, 0
  for _, t in ipairs(threads) do
    acc = acc + t:get("accepted")
    oth = oth + t:get("other")
  end
  io.write(string.format(
    'RESULT {"requests": %%d, "duration_us": %%d, "p50_us": %%d, "p90_us": %%d, "p99_us": %%d, "max_us": %%d, ' ..
    '"accepted": %%d, "other": %%d, "errors": %%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, acc, oth, summary.errors.connect + summary.errors.read + summary.errors.write +
    summary.errors.status + summary.errors.timeout))
end
"""


def bare_app() -> Any:
    """The baseline: Flask reading the body and answering 202, nothing else."""
    from flask import Flask, Response, request

    app = Flask("bare")

    @app.post("/webhook")
    def webhook() -> Response:
        request.get_data()
        return Response("accepted\n", status=202, mimetype="text/plain")

    return app


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its live children (gunicorn master + workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def context_switches(pid: int) -> int:
    """Voluntary context switches of every thread of a process and its live children (a thread
    that blocks: a round trip, a lock, a GIL hand-over)."""
    total = 0
    pids = [pid]
    with contextlib.suppress(OSError):
        pids += [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    for p in pids:
        try:
            tasks = list(Path(f"/proc/{p}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                for line in (task / "status").read_text().splitlines():
                    if line.startswith("voluntary_ctxt_switches:"):
                        total += int(line.split()[1])
            except OSError:
                continue
    return total


def connections_per_worker(port: int) -> list[int] | None:
    """Established connections on ``port`` per gunicorn worker, largest first (from ``ss``; None
    without it). The workers race for ``accept``: at 64 connections one worker often holds most
    of them (e.g. 46 / 18 / 0) while another idles, and its requests queue behind each other."""
    if shutil.which("ss") is None:
        return None
    out = subprocess.run(
        ["ss", "-tnpH", "state", "established", f"( sport = :{port} )"], capture_output=True, text=True
    ).stdout
    counts: dict[str, int] = {}
    for pid in re.findall(r"pid=(\d+)", out):
        counts[pid] = counts.get(pid, 0) + 1
    return sorted(counts.values(), reverse=True)


def redis_pid(client: Any) -> int | None:
    try:
        return int(client.info("server")["process_id"])
    except Exception:
        return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def procfile_web(port: int, app: str) -> list[str]:
    """The Procfile's ``web:`` command line exactly, with ``$PORT`` and ``$WEB_CONCURRENCY`` as a
    platform sets them (unset: the Procfile's defaults) and, for the baseline, its app swapped."""
    line = next(line for line in (ROOT / "Procfile").read_text().splitlines() if line.startswith("web:"))
    command = line.split(":", 1)[1].strip()
    command = re.sub(r"\$\{PORT:-\d+\}", str(port), command)
    command = re.sub(
        r"\$\{WEB_CONCURRENCY:-(\d+)\}", lambda m: os.environ.get("WEB_CONCURRENCY", m.group(1)), command
    )
    argv = shlex.split(command)
    argv[0] = str(Path(sys.executable).with_name(argv[0]))
    return [app if a == "bot:create_app()" else a for a in argv]


def start_gunicorn(
    app: str, env: dict[str, str], workers: int, threads: int, procfile: bool, access_log: Path
) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    if procfile:
        argv = procfile_web(port, app)
    else:
        gunicorn = str(Path(sys.executable).with_name("gunicorn"))
        argv = [gunicorn, "--bind", f"127.0.0.1:{port}", "--workers", str(workers), "--log-level", "warning"]
        if threads > 1:
            argv += ["--worker-class", "gthread", "--threads", str(threads)]
        argv.append(app)
    # stdout (the access log with the Procfile's "--access-logfile -") goes to a file, as a
    # platform's log pipe would take it: written per request, never read back by the bench.
    with access_log.open("ab") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{port}/healthz" if "create_app" in app else f"http://127.0.0.1:{port}/",
                timeout=1,
            ):
                pass
            return proc, port
        except urllib.error.HTTPError:
            return proc, port  # the bare app has no /: a 404 still means it is up
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("gunicorn did not start within 20 s")


def run_wrk(
    port: int, body: bytes, signature: str, run: str, duration: int, connections: int, threads: int
) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(WRK_SCRIPT % {"body": body.decode(), "signature": signature, "run": run})
        script = f.name
    try:
        out = subprocess.run(
            [
                "wrk",
                "-t",
                str(threads),
                "-c",
                str(connections),
                "-d",
                f"{duration}s",
                "--timeout",
                "5s",
                "-s",
                script,
                f"http://127.0.0.1:{port}/webhook",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        os.unlink(script)
    line = next(line for line in out.splitlines() if line.startswith("RESULT "))
    result: dict[str, Any] = json.loads(line[len("RESULT ") :])
    result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
    return result


def queued_deliveries(client: Any, run: str) -> list[str]:
    """Delivery ids of the forksync.on_push messages this run put in the Redis queue."""
    ids = []
    for raw in client.lrange(QUEUE, 0, -1):
        message = json.loads(raw)
        if message.get("headers", {}).get("task") != "forksync.on_push":
            continue
        args = json.loads(base64.b64decode(message["body"]))
        delivery = args[1].get("delivery", "")
        if delivery.startswith(run + "-"):
            ids.append(delivery)
    return ids


def _measure(
    client: Any,
    proc: subprocess.Popen[bytes],
    port: int,
    body: bytes,
    signature: str,
    run: str,
    duration: int,
    connections: int,
    wrk_threads: int,
) -> dict[str, Any]:
    rpid = redis_pid(client)
    web0, redis0 = cpu_seconds(proc.pid), cpu_seconds(rpid) if rpid else 0.0
    switches0 = context_switches(proc.pid)
    load0 = os.getloadavg()[0]
    spread: list[list[int] | None] = []
    sampler = threading.Timer(duration / 2, lambda: spread.append(connections_per_worker(port)))
    sampler.start()
    r = run_wrk(port, body, signature, run, duration, connections, wrk_threads)
    sampler.join()
    r["web_cpu_ms"] = (cpu_seconds(proc.pid) - web0) * 1000 / max(1, r["requests"])
    r["switches"] = (context_switches(proc.pid) - switches0) / max(1, r["requests"])
    r["redis_cpu_ms"] = ((cpu_seconds(rpid) - redis0) * 1000 / max(1, r["requests"])) if rpid else 0.0
    r["load"] = (load0 + os.getloadavg()[0]) / 2
    r["per_worker"] = spread[0] if spread else None
    return r


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per measured round")
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds per app (medians reported)")
    parser.add_argument("--connections", default="8,64", help="comma-separated wrk connection counts")
    parser.add_argument(
        "--no-procfile",
        action="store_true",
        help="use --workers/--threads without an access log instead of the Procfile's command line",
    )
    parser.add_argument(
        "--workers", type=int, default=3, help="gunicorn worker processes (with --no-procfile)"
    )
    parser.add_argument(
        "--threads", type=int, default=8, help="gunicorn threads per worker (with --no-procfile)"
    )
    parser.add_argument("--wrk-threads", type=int, default=1)
    parser.add_argument("--redis-db", type=int, default=11)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install wrk")
    import redis

    redis_url = f"redis://127.0.0.1:6379/{args.redis_db}"
    client = redis.Redis.from_url(redis_url)
    client.ping()
    body = (
        PAYLOAD.read_bytes()
        if PAYLOAD.exists()
        else json.dumps(
            {
                "ref": "refs/heads/main",
                "before": "0" * 40,
                "after": "1" * 40,
                "repository": {"full_name": "acme/fork"},
                "installation": {"id": 1},
            }
        ).encode()
    )
    import hashlib
    import hmac

    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    work = Path(tempfile.mkdtemp(prefix="forksync-bench-webhook-"))
    # The delivery log on its embedded default (SQLite in the data dir), in a fresh directory.
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "FORKSYNC_WEBHOOK_SECRET": SECRET,
        "REDIS_URL": redis_url,
        "FORKSYNC_DATA_DIR": str(work / "data"),
    }
    env.pop("PORT", None)
    env.pop("FORKSYNC_DATABASE_URL", None)
    shape = (
        "Procfile web: "
        + " ".join(procfile_web(0, "bot:create_app()")[1:]).replace("0.0.0.0:0", "0.0.0.0:$PORT")
        if not args.no_procfile
        else f"gunicorn workers={args.workers} threads={args.threads}, no access log"
    )
    print(
        f"{shape}\nwrk -t{args.wrk_threads}, {args.rounds} alternated rounds of {args.duration}s per app; "
        f"{os.cpu_count()} CPUs; body {len(body)} bytes; load average before: {os.getloadavg()[0]:.1f}"
    )
    all_ok = True
    apps = (
        ("bare Flask (baseline)", "benchmarks.bench_webhook:bare_app()"),
        ("forksync POST /webhook", "bot:create_app()"),
    )
    for connections in [int(c) for c in str(args.connections).split(",")]:
        servers = {
            name: start_gunicorn(
                app, env, args.workers, args.threads, not args.no_procfile, work / f"access-{i}.log"
            )
            for i, (name, app) in enumerate(apps)
        }
        rounds: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in apps}
        runs: list[str] = []
        try:
            for _proc, port in servers.values():  # warm the workers (imports, connections)
                run_wrk(port, body, signature, uuid.uuid4().hex[:12] + "w", 2, connections, args.wrk_threads)
            for _ in range(args.rounds):
                for name, (proc, port) in servers.items():  # alternated: baseline, forksync, baseline, ...
                    run = uuid.uuid4().hex[:12]
                    if "forksync" in name:
                        runs.append(run)
                    rounds[name].append(
                        _measure(
                            client,
                            proc,
                            port,
                            body,
                            signature,
                            run,
                            args.duration,
                            connections,
                            args.wrk_threads,
                        )
                    )
        finally:
            for proc, _ in servers.values():
                proc.terminate()
                proc.wait(10)
        ids = [i for run in runs for i in queued_deliveries(client, run)]
        accepted = sum(r["accepted"] for r in rounds["forksync POST /webhook"])
        other = sum(r["other"] for r in rounds["forksync POST /webhook"])
        dedup = sum(
            1 for run in runs for _ in client.scan_iter(match=f"forksync:delivery:{run}-*", count=1000)
        )
        for key in client.scan_iter(match="forksync:delivery:*", count=1000):
            client.delete(key)
        client.delete(QUEUE)
        print(f"-- {connections} connections")
        med: dict[str, dict[str, float]] = {}
        for name, rs in rounds.items():
            for i, r in enumerate(rs):
                print(
                    f"  round {i + 1} {name:24s} {r['rps']:7.0f} req/s  p50 {r['p50_us'] / 1000:6.2f} ms  "
                    f"p99 {r['p99_us'] / 1000:6.2f} ms  CPU/request web {r['web_cpu_ms']:.2f} ms, redis "
                    f"{r['redis_cpu_ms']:.2f} ms  switches/request {r['switches']:.1f}  load {r['load']:.1f}  "
                    f"non-202 {r['other']}  errors {r['errors']}  connections/worker "
                    f"{'/'.join(map(str, r['per_worker'])) if r['per_worker'] else '?'}"
                )
            med[name] = {
                k: statistics.median(r[k] for r in rs)
                for k in ("rps", "p50_us", "p99_us", "web_cpu_ms", "redis_cpu_ms", "switches", "load")
            }
        for name, m in med.items():
            print(
                f"median {name:24s} {m['rps']:7.0f} req/s  p50 {m['p50_us'] / 1000:6.2f} ms  p99 "
                f"{m['p99_us'] / 1000:6.2f} ms  CPU/request web {m['web_cpu_ms']:.2f} ms, redis {m['redis_cpu_ms']:.2f} ms"
                f"  switches/request {m['switches']:.1f}"
                f"  load {m['load']:.1f}"
            )
        fs, base = med["forksync POST /webhook"], med["bare Flask (baseline)"]
        print(
            f"ratio forksync/baseline: throughput {fs['rps'] / base['rps']:.2f}x, "
            f"p99 {fs['p99_us'] / max(1, base['p99_us']):.2f}x, web CPU per request "
            f"{fs['web_cpu_ms'] / max(1e-9, base['web_cpu_ms']):.2f}x"
        )
        capacity = (os.cpu_count() or 1) * 1000 / max(1e-9, fs["web_cpu_ms"] + fs["redis_cpu_ms"])
        print(
            f"CPU-bound capacity of an idle {os.cpu_count()}-core box for forksync "
            f"(CPUs / (web + redis CPU per request)): ~{capacity:.0f} req/s"
        )
        exactly_once = (
            len(ids) == len(set(ids)) == dedup
            and accepted <= len(ids) <= accepted + args.rounds * connections
            and other == 0
        )
        all_ok = all_ok and exactly_once
        print(
            f"exactly once: {accepted} answered 202, {len(ids)} messages queued, {len(set(ids))} distinct "
            f"delivery ids, {dedup} dedup keys -> {'OK' if exactly_once else 'MISMATCH'}"
        )
        target = fs["rps"] >= 2500 and fs["p99_us"] < 50_000
        print(f"target (>= 2,500 req/s, p99 < 50 ms): {'met' if target else 'NOT met'}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    shutil.rmtree(work, ignore_errors=True)
    return 0 if all_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
