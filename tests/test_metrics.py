"""``/metrics``: Prometheus exposition of deliveries, queues, tasks, GitHub calls and fork figures."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot import create_app
from core.dashboard.store import SqlFeedStore
from tests.fixtures.dashboard import recorded_feed
from tests.loopback_github import LoopbackGitHub

REPO_ROOT = Path(__file__).resolve().parents[1]


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _app(tmp_path: Path, **extra: str):  # type: ignore[no-untyped-def]
    store = SqlFeedStore(None, tmp_path)
    store.put(recorded_feed("acme/triton"))
    return create_app(
        {"FORKSYNC_DATA_DIR": str(tmp_path), "FORKSYNC_WEBHOOK_SECRET": "s3cret", **extra}, feeds=store
    )


def _ping(client, delivery: str) -> None:  # type: ignore[no-untyped-def]
    import hashlib
    import hmac

    body = b'{"zen": "Keep it logically awesome.", "hook_id": 1}'
    client.post(
        "/webhook",
        data=body,
        headers={
            "Content-Type": "application/json",
            "X-GitHub-Event": "ping",
            "X-GitHub-Delivery": delivery,
            "X-Hub-Signature-256": "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest(),
        },
    )


def test_metrics_count_deliveries_and_show_fork_figures_and_queue_depths(tmp_path: Path) -> None:
    app = _app(tmp_path)
    client = app.test_client()
    before = _samples(client.get("/metrics").text)
    key = ("forksync_webhook_deliveries_total", (("answer", "pong"), ("event", "ping")))
    _ping(client, "m-1")
    _ping(client, "m-2")
    client.post(
        "/webhook", data=b"{}", headers={"X-GitHub-Event": "../../etc", "X-Hub-Signature-256": "sha256=00"}
    )
    answer = client.get("/metrics")
    assert answer.status_code == 200 and answer.mimetype == "text/plain"
    after = _samples(answer.text)
    assert after[key] - before.get(key, 0.0) == 2
    assert after[("forksync_webhook_deliveries_total", (("answer", "unauthorized"), ("event", "other")))] >= 1
    last = recorded_feed().series[-1]
    assert after[("forksync_days_behind", (("repo", "acme/triton"),))] == last.days_behind
    assert after[("forksync_backlog_commits", (("repo", "acme/triton"),))] == last.backlog
    assert after[("forksync_queue_depth", (("queue", "ingest"),))] == 0


def test_metrics_need_the_token_when_one_is_configured(tmp_path: Path) -> None:
    client = _app(tmp_path, FORKSYNC_METRICS_TOKEN="tok-123").test_client()
    refused = client.get("/metrics")
    assert refused.status_code == 401 and "FORKSYNC_METRICS_TOKEN" in refused.text
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer tok-123"}).status_code == 200


def test_github_calls_and_the_rate_limit_are_recorded(loopback_github: LoopbackGitHub) -> None:
    from core import telemetry

    ok = telemetry.GITHUB_CALLS.labels(outcome="ok")
    before = ok._value.get()
    loopback_github.adapter(loopback_github.installation).permission("acme/fork", "alice")
    assert ok._value.get() == before + 1
    assert telemetry.GITHUB_RATE_REMAINING._value.get() == 4999  # the loopback's x-ratelimit-remaining


@pytest.mark.slow
def test_workers_series_reach_metrics_in_multiprocess_mode(tmp_path: Path) -> None:
    """A worker process's task duration and L1 suite time show on the web process's /metrics."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prom")}
    (tmp_path / "prom").mkdir()
    worker = textwrap.dedent("""
        from core import telemetry
        telemetry.TASK_DURATION.labels(queue="ingest", task="forksync.ingest").observe(2.5)
        telemetry.TASK_FAILURES.labels(queue="ingest", task="forksync.ingest").inc()
        telemetry.L1_SUITE_DURATION.labels(suite="lit", status="passed").observe(42)
    """)
    subprocess.run([sys.executable, "-c", worker], cwd=REPO_ROOT, env=env, check=True, timeout=60)
    web = textwrap.dedent(f"""
        from bot import create_app
        app = create_app({{"FORKSYNC_DATA_DIR": {str(tmp_path / "web")!r}}})
        print(app.test_client().get("/metrics").text)
    """)
    out = subprocess.run(
        [sys.executable, "-c", web],
        cwd=REPO_ROOT,
        env=env,
        check=True,
        timeout=60,
        capture_output=True,
        text=True,
    ).stdout
    samples = _samples(out)
    assert (
        samples[("forksync_task_duration_seconds_count", (("queue", "ingest"), ("task", "forksync.ingest")))]
        == 1
    )
    assert samples[("forksync_task_failures_total", (("queue", "ingest"), ("task", "forksync.ingest")))] == 1
    assert samples[("forksync_l1_suite_duration_seconds_sum", (("status", "passed"), ("suite", "lit")))] == 42
