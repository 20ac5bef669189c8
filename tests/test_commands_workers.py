"""Comment commands through the real processes: the web app on a socket, a `celery worker` process
(on the embedded broker), the loopback GitHub and real bare remotes: nothing in-process stands in."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import pytest

from tests.fixtures.commands import add_user_comment, bot_reactions, bot_replies, comment_payload
from tests.fixtures.workers import E2E, FORK, REPO_ROOT, deliver, wait_for

pytestmark = pytest.mark.slow


def test_skip_through_web_and_worker(e2e: Callable[..., E2E]) -> None:
    """A signed /skip comment webhook → 202 → a worker answers 👀 then 👍 with one reply, and the
    decision is in the fork's notes (forksync status counts it); a reader's /skip is denied."""
    h = e2e(None)
    h.gh.set_permission(FORK, "maint", "write")
    h.gh.set_permission(FORK, "reader", "read")
    issue = h.gh.add_issue(FORK, "Steering forksync")
    url = h.start_web()
    h.start_worker(queues="github")
    denied = add_user_comment(h.gh, issue, "/skip #104 nope", "reader")
    assert deliver(url, "issue_comment", comment_payload(h.gh, h.installation, denied))[0] == 202
    cid = add_user_comment(h.gh, issue, "/skip #102 AMD only", "maint")
    assert deliver(url, "issue_comment", comment_payload(h.gh, h.installation, cid))[0] == 202
    wait_for(lambda: len(bot_reactions(h.gh, cid)) == 2 and bot_replies(h.gh, cid), 60, "the answer to /skip")
    assert bot_reactions(h.gh, cid) == ["eyes", "+1"]
    (reply,) = bot_replies(h.gh, cid)
    assert "as **wont_port**: AMD only" in reply["body"]
    wait_for(lambda: bot_replies(h.gh, denied), 30, "the answer to the reader")
    assert "denied" in bot_replies(h.gh, denied)[0]["body"] and bot_reactions(h.gh, denied) == [
        "eyes",
        "confused",
    ]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "workers.cli",
            "status",
            "--json",
            "--upstream",
            str(h.pair.upstream_bare),
            "--fork",
            str(h.gh.bare(FORK)),
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO_ROOT,
        env=h.env,
    )
    status = json.loads(out.stdout)
    assert status["wont_port"] == 1 and status["pending"] == 2
