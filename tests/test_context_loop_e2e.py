"""The context-sharing loop end to end: the web app on a socket, a real `celery worker` process,
the loopback GitHub. A push ingests (the feed is written), a merged bundle lands, `/digest` opens
the period's digest issue naming what landed; the dashboard and /metrics show the fork."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable

import pytest

from tests.fixtures.commands import add_user_comment, bot_replies, comment_payload
from tests.fixtures.workers import E2E, FORK, deliver, wait_for

pytestmark = pytest.mark.slow


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return str(answer.read().decode())


def test_push_merge_digest_dashboard_metrics(e2e: Callable[..., E2E]) -> None:
    h = e2e(None)
    h.gh.set_permission(FORK, "maint", "write")
    url = h.start_web()
    h.start_worker(queues="ingest,github")
    assert h.push_to_fork()[0] == 202
    wait_for(lambda: h.bundle_pulls(), 90, "the first bundle PR")
    first = h.bundle_pulls()[0]
    h.gh.merge(FORK, int(first["number"]))
    assert h.push_to_fork()[0] == 202
    wait_for(lambda: len(h.checks()) >= 2, 90, "the ingest after the merge")
    page = wait_for(
        lambda: (text := _get(f"{url}/{FORK}")) and 'data-figure="days behind upstream"' in text and text,
        30,
        "the fork's dashboard page",
    )
    assert FORK in page and "In flight" in page
    issue = h.gh.add_issue(FORK, "Steering forksync")
    cid = add_user_comment(h.gh, issue, "/digest", "maint")
    assert deliver(url, "issue_comment", comment_payload(h.gh, h.installation, cid))[0] == 202
    wait_for(lambda: bot_replies(h.gh, cid), 60, "the answer to /digest")
    assert "digest" in bot_replies(h.gh, cid)[0]["body"]
    digests = wait_for(
        lambda: [i for i in h.issues() if "Pin-update digest" in str(i.get("title"))], 60, "the digest issue"
    )
    (digest,) = digests
    landed = digest["title"].split(": ")[-1]
    assert "upstream commits landed" in landed and not landed.startswith("0 ")
    assert "## What landed" in digest["body"] and "## Who should look" in digest["body"]
    metrics = _get(f"{url}/metrics")
    assert (
        f'forksync_days_behind{{repo="{FORK}"}}' in metrics and "forksync_webhook_deliveries_total" in metrics
    )
