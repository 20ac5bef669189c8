"""``forksync serve``: the whole bot on one machine — web (Flask), one Celery worker and beat.

Without ``REDIS_URL`` everything runs on the embedded broker under ``FORKSYNC_DATA_DIR`` (SQLite
files); with it, the same processes use Redis, and more workers can join from other machines
with ``celery -A workers.app.celery_app worker -Q ingest,github``. The web server is werkzeug's
threaded server (enough for one machine; production runs gunicorn, see the Procfile).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
from typing import Any

from core import tasknames
from core.errors import ForksyncError
from core.settings import WorkerSettings

# The GPU queue is left out by default: only machines with a GPU should take l1-gpu work.
DEFAULT_QUEUES = ",".join(q for q in tasknames.QUEUES if q != tasknames.Q_L1_GPU)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "serve", help="run web, one worker and beat on this machine (embedded broker without REDIS_URL)"
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port for the webhook server (default 8000)")
    p.add_argument(
        "--queues", default=DEFAULT_QUEUES, help=f"queues the worker consumes (default {DEFAULT_QUEUES})"
    )
    p.add_argument("--concurrency", type=int, default=1, help="worker processes (default 1)")
    p.add_argument(
        "--no-beat", action="store_true", help="do not run the beat scheduler (another machine runs it)"
    )
    p.set_defaults(func=run)


def worker_command(queues: str, concurrency: int, beat: bool) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "workers.app.celery_app",
        "worker",
        "-Q",
        queues,
        "--concurrency",
        str(concurrency),
        "--loglevel",
        "INFO",
        "--without-gossip",
        "--without-mingle",
    ]
    if beat:
        cmd.append("--beat")
    return cmd


def prometheus_dir(data_dir: Any) -> str:
    """Multiprocess metrics for web + worker (core/telemetry.py): ``<data dir>/prometheus`` unless
    PROMETHEUS_MULTIPROC_DIR is set; emptied at start, as prometheus_client asks."""
    from pathlib import Path

    path = Path(os.environ.get("PROMETHEUS_MULTIPROC_DIR") or Path(data_dir) / "prometheus")
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob("*.db"):
        stale.unlink()
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(
        path
    )  # before prometheus_client is imported here or in the worker
    return str(path)


def check_settings(settings: WorkerSettings) -> None:
    """Refuse to start, in one line, without what every delivery needs: the App's id and key, and
    the webhook secret (otherwise the web process would accept deliveries the worker then fails)."""
    from core.github.app import GitHubApp

    bot = settings.bot
    missing = [
        name
        for name, value in (
            ("GITHUB_APP_ID", bot.app_id),
            ("GITHUB_PRIVATE_KEY or GITHUB_PRIVATE_KEY_PATH", bot.private_key),
            ("FORKSYNC_WEBHOOK_SECRET", bot.webhook_secret),
        )
        if not value
    ]
    if missing:
        raise ForksyncError(
            f"the GitHub App is not configured: {'; '.join(missing)} not set",
            "set them from the App's settings page (docs/github-app.md, section 2)",
        )
    GitHubApp.from_settings(bot)  # a non-numeric id or an unusable key: one line, key never echoed


def check_port_free(host: str, port: int) -> None:
    """Bind and release ``host:port`` as the web server will (werkzeug would print its own text and exit 1)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ForksyncError(
                f"cannot listen on {host}:{port}: {exc.strerror}",
                "pick another --port, or stop what listens there",
            ) from None


def run(args: argparse.Namespace) -> int:
    from werkzeug.serving import make_server

    from bot import create_app

    settings = WorkerSettings.from_mapping(None)
    unknown = set(args.queues.split(",")) - set(tasknames.QUEUES)
    if unknown:
        raise ForksyncError(
            f"unknown queue(s) {', '.join(sorted(unknown))}", f"use some of {', '.join(tasknames.QUEUES)}"
        )
    check_settings(settings)
    check_port_free(args.host, args.port)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    prometheus_dir(settings.data_dir)
    mode = (
        f"Redis at {settings.bot.redis_url.split('@')[-1]}"
        if settings.bot.redis_url
        else f"embedded broker in {settings.data_dir}"
    )
    try:
        server = make_server(args.host, args.port, create_app(), threaded=True)
    except OSError as exc:
        raise ForksyncError(
            f"cannot listen on {args.host}:{args.port}: {exc.strerror}", "pick another --port"
        ) from None
    worker = subprocess.Popen(
        worker_command(args.queues, args.concurrency, not args.no_beat), env=dict(os.environ)
    )
    print(
        f"forksync serve: web on http://{args.host}:{server.server_port}/ , worker pid {worker.pid} "
        f"(queues {args.queues}{', beat' if not args.no_beat else ''}), {mode}",
        flush=True,
    )
    stopping = threading.Event()
    worker_died = threading.Event()

    def stop(signum: int, _frame: Any) -> None:
        stopping.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    def watch_worker() -> None:
        worker.wait()
        if not stopping.is_set():
            print(
                f"forksync serve: the worker exited with status {worker.returncode}; stopping",
                file=sys.stderr,
                flush=True,
            )
            worker_died.set()
            stop(0, None)

    threading.Thread(target=watch_worker, daemon=True).start()
    try:
        server.serve_forever()
    finally:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)  # warm shutdown: unacked messages go back
            try:
                worker.wait(30)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
    return 1 if worker_died.is_set() else 0
