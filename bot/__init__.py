"""The GitHub-facing half of forksync: webhooks in, tasks out, one adapter to GitHub."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flask import Flask

    from bot.dispatch import DeliveryStore, StoreDeliveryLog, TaskSender
    from core.dashboard.store import FeedStore


def create_app(
    config: Mapping[str, Any] | None = None,
    *,
    sender: TaskSender | None = None,
    dedup: DeliveryStore | None = None,
    feeds: FeedStore | None = None,
    deliveries: StoreDeliveryLog | None = None,
) -> Flask:
    """The Flask app (gunicorn: ``'bot:create_app()'``); settings from ``config`` or the environment.

    ``sender`` and ``dedup`` default to Celery + Redis when ``REDIS_URL`` is set, else to the
    embedded broker and an SQLite dedup file under ``FORKSYNC_DATA_DIR``; ``feeds`` (the
    dashboard's data, written by the workers) likewise to a Redis hash or an SQLite file;
    ``deliveries`` (the durable accepted-delivery log) to the SQL store (``FORKSYNC_DATABASE_URL``,
    else SQLite under the data dir), opened at the first delivery.
    """
    from flask import Flask

    from bot import dispatch, metrics, webhooks
    from bot.dashboard import web
    from core import logs, logsafe
    from core.config import Settings
    from core.dashboard import store

    logsafe.install()
    settings = Settings.from_mapping(config)
    if dedup is None:  # our own Redis dedup: it must survive a restart (docs/security.md)
        dispatch.check_redis_persistence(settings.redis_url, os.environ if config is None else config)
    if (config or os.environ).get("FORKSYNC_LOG_FORMAT"):
        logs.configure(log_format=str((config or os.environ).get("FORKSYNC_LOG_FORMAT")))
    app = Flask("forksync")
    webhooks.register(
        app,
        webhooks.BotState(
            settings=settings,
            sender=sender
            or dispatch.default_sender(settings.redis_url, settings.data_dir, settings.delivery_ttl_s),
            dedup=dedup
            or dispatch.default_store(settings.redis_url, settings.data_dir, settings.delivery_ttl_s),
            deliveries=deliveries or dispatch.StoreDeliveryLog(settings.database_url, settings.data_dir),
        ),
    )
    feeds = feeds or store.open_feed_store(settings.database_url, settings.data_dir)
    web.register(app, settings, feeds)
    metrics.register(app, settings, feeds)
    return app
