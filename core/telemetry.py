"""Prometheus metrics of forksync, shared by the web process and the workers.

The web process serves ``/metrics`` (``bot/metrics.py``). The workers are other processes: they
export theirs through prometheus_client's **multiprocess mode**: set ``PROMETHEUS_MULTIPROC_DIR``
to a directory shared by web and workers on one machine (``forksync serve`` sets
``<data dir>/prometheus`` when it is unset), and ``/metrics`` aggregates every process's files.
Without it, ``/metrics`` shows the web process's own series plus the figures it reads at scrape
time (queue depths from the broker, days behind and backlog from the dashboard feeds).

Series: ``forksync_webhook_deliveries_total{event,answer}``,
``forksync_task_duration_seconds{queue,task}``, ``forksync_task_failures_total{queue,task}``,
``forksync_github_api_calls_total{outcome}``, ``forksync_github_rate_limit_remaining``,
``forksync_l1_suite_duration_seconds{suite,status}`` and, read at scrape time,
``forksync_queue_depth{queue}``, ``forksync_days_behind{repo}``, ``forksync_backlog_commits{repo}``.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

WEBHOOK_DELIVERIES = Counter(
    "forksync_webhook_deliveries",
    "Webhook deliveries by event and the answer given (accepted, ignored, ...)",
    ["event", "answer"],
)
TASK_DURATION = Histogram(
    "forksync_task_duration_seconds",
    "Celery task run time by queue and task",
    ["queue", "task"],
    buckets=(0.05, 0.25, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 12 * 3600),
)
TASK_FAILURES = Counter(
    "forksync_task_failures", "Celery tasks that raised (retries included)", ["queue", "task"]
)
GITHUB_CALLS = Counter(
    "forksync_github_api_calls", "GitHub API interactions by outcome (ok or the error class)", ["outcome"]
)
GITHUB_RATE_REMAINING = Gauge(
    "forksync_github_rate_limit_remaining",
    "GitHub's x-ratelimit-remaining after the latest call",
    multiprocess_mode="mostrecent",
)
L1_SUITE_DURATION = Histogram(
    "forksync_l1_suite_duration_seconds",
    "L1 suite run time by suite and status",
    ["suite", "status"],
    buckets=(1, 5, 15, 60, 180, 600, 1800, 3600, 7200),
)


def answer_kind(text: str) -> str:
    """The outcome word a webhook answer starts with (``accepted: ...`` -> ``accepted``)."""
    return text.split(":", 1)[0].strip().split(" ", 1)[0] or "unknown"
