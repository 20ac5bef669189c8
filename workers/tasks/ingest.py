"""Ingestion tasks: ``forksync.ingest`` per fork, the upstream poll, metric snapshots, and the
webhook handlers that trigger an ingest (a push to the fork, a merged bundle PR, an install)."""

from __future__ import annotations

import logging
import time
from typing import Any

from celery import shared_task

from core import tasknames
from workers.adapters.gitcache import GitCache
from workers.adapters.state import open_state
from workers.app import celery_app, runtime
from workers.app.handlers import handles
from workers.jobs.ingestion import BOT_BRANCH_PREFIX, INGEST_TIME_LIMIT_S, IngestEnv, ingest_repository

log = logging.getLogger(__name__)

ZERO_SHA = "0" * 40


def env_for(task: Any, installation_id: int) -> IngestEnv:
    settings = celery_app.settings_of(task.app)
    return IngestEnv(
        settings=settings,
        github=runtime.github_for(settings, installation_id),
        caches=GitCache.for_installation(settings.data_dir / "git", installation_id),
        state=open_state(settings),
        engine=runtime.engine(),
    )


@shared_task(
    name=tasknames.INGEST,
    bind=True,
    # Idempotent (upserts by head branch / marker; force-pushes of rebuilt branches), so a
    # message whose worker died is run again rather than lost.
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=INGEST_TIME_LIMIT_S,
    soft_time_limit=INGEST_TIME_LIMIT_S - 60,
)  # type: ignore[untyped-decorator]
def ingest(
    self: Any,
    installation_id: int,
    repo: str,
    reason: str = "poll",
    delivery: str | None = None,
    max_commits: int | None = None,
) -> dict[str, Any]:
    """Run the ingestion loop once for ``repo`` (see ``workers/jobs/ingestion.py``).

    ``max_commits`` (``/bundle max=N``) overrides ``bundle.max_commits`` for this run only.
    """
    log.info(
        "ingest %s (installation %s) because %s%s",
        repo,
        installation_id,
        reason,
        f", delivery {delivery}" if delivery else "",
    )
    report = ingest_repository(env_for(self, installation_id), repo, max_commits=max_commits)
    log.info("ingest %s: %s in %.2f s", repo, report.status, report.seconds)
    return report.as_json()


@shared_task(
    name=tasknames.POLL_UPSTREAM,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=tasknames.time_limit_for(tasknames.POLL_UPSTREAM),
)  # type: ignore[untyped-decorator]
def poll_upstream(self: Any) -> int:
    """Beat: enqueue one ingest per installed repository; returns how many were enqueued."""
    count = 0
    for installation_id, repo in runtime.app_for(celery_app.settings_of(self.app)).installed_repositories():
        ingest.delay(installation_id=installation_id, repo=repo, reason="poll")
        count += 1
    return count


@shared_task(
    name=tasknames.SNAPSHOT_METRICS,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=tasknames.time_limit_for(tasknames.SNAPSHOT_METRICS),
)  # type: ignore[untyped-decorator]
def snapshot_metrics(self: Any) -> int:
    """Beat: record each repository's latest figures as a point of its time series.

    The figures are those of the latest ingest (recorded as it ran); the snapshot re-records
    them on a fixed clock so that the dashboard's series has a point per period even when
    upstream is quiet. Returns how many repositories had figures.
    """
    settings = celery_app.settings_of(self.app)
    state = open_state(settings)
    app = runtime.app_for(settings)
    count = 0
    for installation, repo in app.installed_repositories():
        last = state.series(f"metrics:{repo}", limit=1)
        if last:
            state.append(f"snapshots:{repo}", {**last[-1], "t": round(time.time(), 3)})
            count += 1
            refresh_feed(settings, state, app, installation, repo)
    return count


def refresh_feed(settings: Any, state: Any, app: Any, installation: int, repo: str) -> None:
    """Rebuild the fork's dashboard feed on the snapshot clock too, so that trunk L1 and L2 runs,
    check states and tracking issues show without waiting for the next ingest."""
    from core.config import CONFIG_PATH, load_repo_config
    from core.dashboard.store import open_feed_store
    from workers.adapters.notify import notifier_for
    from workers.jobs.dashboard_feed import refresh

    try:
        adapter = app.adapter(installation)
        config = load_repo_config(adapter.read_file(repo, CONFIG_PATH) or "", CONFIG_PATH)
        refresh(
            settings,
            state,
            open_feed_store(settings.bot.database_url, settings.data_dir),
            repo,
            config,
            github=adapter,
            notifier=notifier_for(config.digest.notify_url, repo),
        )
    except Exception as exc:  # a bad config or a GitHub blip: the ingest reports those; the feed waits
        log.warning("dashboard feed of %s not refreshed on the snapshot: %s", repo, exc)


@handles(tasknames.ON_PUSH)
def ingest_on_push(
    installation_id: int, repo: str, ref: str, after: str, delivery: str | None = None, **_: Any
) -> None:
    """A push to the fork (trunk or a mirror branch) may move the ledger: ingest.

    Our own pushes (``forksync/*``) and branch deletions are not news.
    """
    if (
        not ref.startswith("refs/heads/")
        or ref.startswith(f"refs/heads/{BOT_BRANCH_PREFIX}")
        or after == ZERO_SHA
    ):
        return
    ingest.delay(installation_id=installation_id, repo=repo, reason=f"push to {ref}", delivery=delivery)


@handles(tasknames.ON_PULL_REQUEST)
def ingest_on_merge(
    installation_id: int,
    repo: str,
    number: int,
    action: str,
    merged: bool = False,
    delivery: str | None = None,
    head_ref: str = "",
    **_: Any,
) -> None:
    """A merged PR (a bundle, or a hand pick) moves the ledger: the next plan must reflect it. A
    bundle PR closed unmerged is declined: what is stacked on it is rebuilt without it now."""
    if action == "closed" and (merged or head_ref.startswith("forksync/bundle/")):
        what = "merged" if merged else "closed unmerged"
        ingest.delay(
            installation_id=installation_id, repo=repo, reason=f"PR #{number} {what}", delivery=delivery
        )


@handles(tasknames.ON_INSTALLATION)
def ingest_on_install(
    installation_id: int, action: str, repos: list[str] | None = None, delivery: str | None = None, **_: Any
) -> None:
    """A newly installed (or resumed) repository gets its first ingest right away, not at the next poll.

    The bot sends installation_repositories as ``repositories_<action>`` (bot/webhooks.py).
    """
    if action in ("created", "unsuspend", "repositories_added"):
        for repo in repos or ():
            ingest.delay(
                installation_id=installation_id, repo=repo, reason=f"installation {action}", delivery=delivery
            )
