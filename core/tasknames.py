"""The task-name contract between the bot (which sends tasks by name) and the workers (which run them).

The bot never imports workers: it enqueues ``send_task(NAME, kwargs=...)`` with primitive
kwargs only, and the workers' Celery app imports :data:`TASK_ROUTES` and :data:`QUEUES` from
here, so a name or a queue is changed in one place. Every kwargs sent by the webhook view
also carries ``delivery`` (the ``X-GitHub-Delivery`` id), for logs and idempotency.
``installation_id`` is None when the payload has no ``installation`` (a plain repository
webhook rather than the App's): resolve it with ``GitHubApp.installation_for_repo(repo)``.
"""

from __future__ import annotations

from typing import Final

# --- sent by the webhook view (bot/webhooks.py); kwargs listed beside each name.
ON_PUSH: Final = "forksync.on_push"
"""installation_id, repo, ref, before, after, delivery"""
ON_PULL_REQUEST: Final = "forksync.on_pull_request"
"""installation_id, repo, number, action, head_sha, head_ref, base_ref, merged, delivery"""
ON_COMMENT: Final = "forksync.on_comment"
"""installation_id, repo, issue_number, comment_id, author, author_type, is_pull_request, delivery
(only action ``created``; comments by bots are dropped by the view)"""
ON_CHECK_RUN: Final = "forksync.on_check_run"
"""installation_id, repo, check_run_id, name, head_sha, action, requested_action, delivery
(``requested_action`` is the button's identifier, or None for ``rerequested``)"""
ON_CHECK_SUITE: Final = "forksync.on_check_suite"
"""installation_id, repo, check_suite_id, head_sha, head_branch, action, delivery"""
ON_INSTALLATION: Final = "forksync.on_installation"
"""installation_id, action, repos (list of "owner/name" added), removed (list), delivery"""

# --- reserved for the workers (beat schedule, follow-up tasks); the bot does not send them.
INGEST: Final = "forksync.ingest"
SNAPSHOT_METRICS: Final = "forksync.snapshot_metrics"
DIGEST: Final = "forksync.digest"
"""(no kwargs) beat: every installed repository; or installation_id, repo[, reason, delivery]: refresh
that fork's pin-update digest issue (``/digest`` sends this)"""
NOTIFY: Final = "forksync.notify"
"""url, text, repo: POST a Slack-compatible message to the fork's digest.notify_url (signed, retried)"""
RUN_L1: Final = "forksync.run_l1"
RUN_L2: Final = "forksync.run_l2"
BISECT: Final = "forksync.bisect"
RUN_L3: Final = "forksync.run_l3"
"""repo, head_sha, workload, check_run_id, installation_id: run an L3 workload's command"""
POLL_UPSTREAM: Final = "forksync.poll_upstream"
"""(no kwargs) beat: ingest every installed repository whose upstream moved"""
L1_COVERAGE: Final = "forksync.l1_coverage"
"""installation_id, repo, head_sha: recompute ``forksync / coverage`` (another CI's suite finished)"""
L1_WATCHDOG: Final = "forksync.l1_watchdog"
"""(no kwargs) beat: conclude L1 checks a dead queue never finished; report trunk runs that stopped"""
RECOVER_COMMANDS: Final = "forksync.recover_commands"
"""(no kwargs) worker start-up and beat: answer comment commands whose delivery was lost"""
REPLAY_DELIVERIES: Final = "forksync.replay_deliveries"
"""(no kwargs) worker start-up and beat: send again the accepted deliveries whose task never finished
(its queued message was lost: a Redis restart without persistence, a killed worker on the embedded broker)"""
EXPLAIN_NO_RERUN: Final = "forksync.explain_no_rerun"
"""installation_id, repo, check_run_id, head_sha, name, note: say on a forksync check run why its
Re-run starts no job and what to do instead (workers/jobs/rerun.py)"""
RERUN_SUITE: Final = "forksync.rerun_suite"
"""installation_id, repo, head_sha, delivery: "Re-run all checks" on forksync's suite: each of
forksync's check runs on the head does what its own Re-run does (workers/jobs/rerun.py)"""
L3_RESET: Final = "forksync.l3_reset"
"""installation_id, repo, before, after: reset L3 sign-offs of a branch that moved"""

# --- queues: git-heavy and GPU work get their own (style.md, "Tasks").
Q_INGEST: Final = "ingest"
Q_GITHUB: Final = "github"
Q_L1_CPU: Final = "l1-cpu"
Q_L1_GPU: Final = "l1-gpu"
Q_L2: Final = "l2"
QUEUES: Final[tuple[str, ...]] = (Q_INGEST, Q_GITHUB, Q_L1_CPU, Q_L1_GPU, Q_L2)

# Default route per task; a GPU L1 run is sent with ``queue=Q_L1_GPU`` explicitly.
TASK_ROUTES: Final[dict[str, dict[str, str]]] = {
    ON_PUSH: {"queue": Q_GITHUB},
    ON_PULL_REQUEST: {"queue": Q_GITHUB},
    ON_COMMENT: {"queue": Q_GITHUB},
    ON_CHECK_RUN: {"queue": Q_GITHUB},
    ON_CHECK_SUITE: {"queue": Q_GITHUB},
    ON_INSTALLATION: {"queue": Q_GITHUB},
    INGEST: {"queue": Q_INGEST},
    SNAPSHOT_METRICS: {"queue": Q_INGEST},
    DIGEST: {"queue": Q_GITHUB},  # API calls only: the ingest already wrote what landed
    NOTIFY: {"queue": Q_GITHUB},
    RUN_L1: {"queue": Q_L1_CPU},
    RUN_L2: {"queue": Q_L2},
    BISECT: {"queue": Q_L2},
    RUN_L3: {"queue": Q_L2},
    POLL_UPSTREAM: {"queue": Q_INGEST},
    L1_COVERAGE: {"queue": Q_GITHUB},  # API calls only
    L3_RESET: {"queue": Q_GITHUB},  # API calls only
    EXPLAIN_NO_RERUN: {"queue": Q_GITHUB},  # API calls only
    RERUN_SUITE: {"queue": Q_GITHUB},  # one check-run listing, then sends
    L1_WATCHDOG: {"queue": Q_GITHUB},  # store reads and API calls only
    RECOVER_COMMANDS: {"queue": Q_GITHUB},  # store reads and one comment listing per repository
    REPLAY_DELIVERIES: {"queue": Q_GITHUB},  # store reads and sends only
}

WEBHOOK_TASKS: Final[tuple[str, ...]] = (
    ON_PUSH,
    ON_PULL_REQUEST,
    ON_COMMENT,
    ON_CHECK_RUN,
    ON_CHECK_SUITE,
    ON_INSTALLATION,
)


# Hard time limit of every task on a queue (seconds): what a worker's visibility timeout is sized
# from (workers/app/celery_app.py). Webhook tasks are API calls and quick git reads, killed (and
# answered as failed) past 40 s, so a message whose worker died is delivered again within a
# minute; the long queues keep timeouts above their longest run, so a healthy run is never redone.
QUEUE_TIME_LIMIT_S: Final[dict[str, int]] = {
    Q_GITHUB: 40,
    Q_INGEST: 40 * 60,
    Q_L1_CPU: 6 * 3600,
    Q_L1_GPU: 6 * 3600,
    Q_L2: 12 * 3600,
}


def l1_pool_queue(pool: str) -> str:
    """The queue of an L1 runner pool (``l1.suites[].pools``): ``cpu`` and ``gpu`` are the two
    standing L1 queues, any other pool ``l1-<pool>`` (its workers consume it: ``-Q l1-<pool>``).
    A pool job is ``RUN_L1`` with ``pool`` and ``pool_run`` added to its kwargs."""
    return {"cpu": Q_L1_CPU, "gpu": Q_L1_GPU}.get(pool, f"l1-{pool}")


def is_l1_pool_queue(queue: str) -> bool:
    """True for the queue of an L1 pool other than cpu and gpu (``l1-<pool>``)."""
    import re

    return queue not in QUEUES and re.fullmatch(r"l1-[a-z0-9][a-z0-9-]{0,30}", queue) is not None


def queue_time_limit(queue: str) -> int:
    """The hard time limit of ``queue``'s tasks; an L1 pool's queue has the L1 queues' limit."""
    return QUEUE_TIME_LIMIT_S[Q_L1_CPU if is_l1_pool_queue(queue) else queue]


def time_limit_for(name: str) -> int:
    """The hard time limit of task ``name`` (its queue's)."""
    return QUEUE_TIME_LIMIT_S[queue_for(name)]


def queue_for(name: str) -> str:
    """The queue a task name is routed to (KeyError names the unknown task)."""
    try:
        return TASK_ROUTES[name]["queue"]
    except KeyError:
        raise KeyError(f"unknown forksync task {name!r}; add it to core/tasknames.py") from None


def embedded_broker_url(data_dir: str) -> str:
    """The broker both bot and workers use without REDIS_URL: kombu's SQLAlchemy transport on SQLite.

    Bot and workers must agree on it, so it is computed here from ``Settings.data_dir``.
    """
    from pathlib import Path

    return f"sqla+sqlite:///{Path(data_dir).resolve() / 'celery-broker.sqlite'}"
