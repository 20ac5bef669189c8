"""``GET /metrics``: forksync's Prometheus metrics (see ``core/telemetry.py`` for the series).

Behind a bearer token when ``FORKSYNC_METRICS_TOKEN`` is set (``Authorization: Bearer <token>``;
Prometheus' ``authorization`` scrape setting). Queue depths and the per-fork figures are read at
scrape time, so they are right whichever process last changed them.
"""

from __future__ import annotations

import hmac
import logging
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from flask import Blueprint, Flask, Response, current_app, request

from core import tasknames
from core.config import Settings
from core.dashboard.store import FeedStore

log = logging.getLogger("forksync.metrics")

blueprint = Blueprint("metrics", __name__)


def queue_depths(settings: Settings) -> dict[str, int]:
    """Messages waiting per queue: Redis list lengths, or visible rows of the embedded broker."""
    if settings.redis_url:
        import redis

        client = redis.Redis.from_url(settings.redis_url, socket_timeout=2, socket_connect_timeout=2)
        return {q: int(client.llen(q)) for q in tasknames.QUEUES}
    path = Path(settings.data_dir).resolve() / "celery-broker.sqlite"
    depths = dict.fromkeys(tasknames.QUEUES, 0)
    if not path.exists():
        return depths
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        rows = db.execute(
            "SELECT q.name, COUNT(m.id) FROM kombu_queue q LEFT JOIN kombu_message m ON m.queue_id = q.id AND m.visible = 1 GROUP BY q.name"
        ).fetchall()
    except sqlite3.Error:
        rows = []
    finally:
        db.close()
    depths.update({str(name): int(n) for name, n in rows if name in depths})
    return depths


class ScrapeCollector:
    """Figures computed at scrape time: queue depths, days behind and backlog per fork."""

    def __init__(self, settings: Settings, feeds: FeedStore) -> None:
        self.settings, self.feeds = settings, feeds

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        depth = GaugeMetricFamily("forksync_queue_depth", "Task messages waiting per queue", labels=["queue"])
        try:
            for queue, n in sorted(queue_depths(self.settings).items()):
                depth.add_metric([queue], n)
        except Exception as exc:  # a broker blip must not break the whole scrape
            log.warning("queue depths unknown: %s", exc)
        yield depth
        behind = GaugeMetricFamily(
            "forksync_days_behind", "Days behind upstream (frontier), per fork", labels=["repo"]
        )
        backlog = GaugeMetricFamily(
            "forksync_backlog_commits", "Backlog commits behind the frontier, per fork", labels=["repo"]
        )
        pin = GaugeMetricFamily(
            "forksync_pin_days_behind", "Days behind upstream (contiguous pin), per fork", labels=["repo"]
        )
        try:
            for repo in self.feeds.repos():
                feed = self.feeds.get(repo)
                if feed is not None and feed.series:
                    last = feed.series[-1]
                    behind.add_metric([feed.repo], last.days_behind)
                    backlog.add_metric([feed.repo], last.backlog)
                    pin.add_metric([feed.repo], last.pin_days_behind)
        except Exception as exc:
            log.warning("fork figures unknown: %s", exc)
        yield behind
        yield backlog
        yield pin


def exposition(settings: Settings, feeds: FeedStore) -> bytes:
    from prometheus_client import REGISTRY, CollectorRegistry, generate_latest

    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # every process's files
    else:
        registry = REGISTRY  # this process's own series (the workers' need multiprocess mode)
    output = generate_latest(registry)
    scrape = CollectorRegistry()
    scrape.register(ScrapeCollector(settings, feeds))
    return output + generate_latest(scrape)


@blueprint.get("/metrics")
def metrics() -> Response:
    from prometheus_client import CONTENT_TYPE_LATEST

    state = current_app.extensions["forksync.metrics"]
    settings: Settings = state["settings"]
    if settings.metrics_token:
        given = request.headers.get("Authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {settings.metrics_token}".encode()):
            return Response(
                "unauthorized: /metrics needs 'Authorization: Bearer <FORKSYNC_METRICS_TOKEN>'\n",
                status=401,
                mimetype="text/plain",
                headers={"WWW-Authenticate": "Bearer"},
            )
    return Response(exposition(settings, state["feeds"]), mimetype=CONTENT_TYPE_LATEST)


def register(app: Flask, settings: Settings, feeds: FeedStore) -> None:
    app.extensions["forksync.metrics"] = {"settings": settings, "feeds": feeds}
    app.register_blueprint(blueprint)
