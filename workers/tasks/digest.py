"""Context-sharing tasks: ``forksync.digest`` (beat, daily; ``/digest``) and ``forksync.notify``
(the optional outgoing webhook). Thin shells around ``workers/jobs/digest.py`` and
``workers/adapters/notify.py``."""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from celery import shared_task

from core import tasknames
from core.config import CONFIG_PATH, ConfigError, load_repo_config
from core.dashboard.store import open_feed_store
from workers.adapters.notify import NotifyRetry, notifier_for, payload, post
from workers.app import celery_app, runtime
from workers.jobs.digest import run_digest

log = logging.getLogger(__name__)


@shared_task(
    name=tasknames.DIGEST,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,  # type: ignore[untyped-decorator]
    time_limit=tasknames.time_limit_for(tasknames.DIGEST),
)
def digest(
    self: Any,
    installation_id: int | None = None,
    repo: str | None = None,
    reason: str = "beat",
    delivery: str | None = None,
    **_: Any,
) -> Any:
    """Beat (no arguments): one digest task per installed repository. With ``repo``: refresh its
    digest issue for the current period (idempotent: the issue is found by its marker)."""
    settings = celery_app.settings_of(self.app)
    app = runtime.app_for(settings)
    if installation_id is None or repo is None:
        count = 0
        for inst, name in app.installed_repositories():
            digest.delay(installation_id=inst, repo=name, reason="beat")
            count += 1
        return count
    adapter = app.adapter(installation_id)
    text = adapter.read_file(repo, CONFIG_PATH)
    try:
        config = load_repo_config(text or "", CONFIG_PATH)
    except ConfigError as exc:
        log.warning("digest of %s skipped: %s", repo, exc.one_line())
        return {"status": "config_error", "message": exc.one_line()}
    feeds = open_feed_store(settings.bot.database_url, settings.data_dir)
    number = run_digest(
        adapter,
        repo,
        config,
        landed=feeds.facts(repo).get("landed", []),
        feed=feeds.get(repo),
        now=time.time(),
        web_url=settings.bot.web_url,
        notifier=notifier_for(config.digest.notify_url, repo),
    )
    log.info("digest of %s (%s): issue #%s", repo, reason, number)
    return {"status": "done", "issue": number}


@shared_task(
    name=tasknames.NOTIFY,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,  # type: ignore[untyped-decorator]
    max_retries=6,
    time_limit=tasknames.time_limit_for(tasknames.NOTIFY),
)
def notify(self: Any, url: str, text: str, repo: str = "", **_: Any) -> int:
    """POST one message to a fork's notify webhook; retried with backoff, never blocking the loop."""
    try:
        return post(url, payload(text, repo), os.environ.get("FORKSYNC_NOTIFY_SECRET") or None)
    except NotifyRetry as exc:
        countdown = min(600.0, 5.0 * 2**self.request.retries)
        log.warning(
            "notify webhook of %s not delivered (%s); retry %d in %.0f s",
            repo,
            exc,
            self.request.retries + 1,
            countdown,
        )
        raise self.retry(exc=exc, countdown=countdown) from None
