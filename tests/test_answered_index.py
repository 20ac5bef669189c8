""" "Already answered" without reading the thread (issue 14, finding 8): the comment handler keeps an
index of the comments it answered in the SQL store, so a command on a 1,200-comment thread costs
no page of that thread, and a redelivered comment is found answered with no thread read either.
API calls counted on the loopback GitHub."""

from __future__ import annotations

from typing import Any

from core.store import answers
from tests.fixtures.commands import FORK, CommandWorld, add_user_comment


def _thread_reads(gh: Any, issue: int) -> int:
    path = f"/repos/{FORK}/issues/{issue}/comments"
    return sum(1 for (method, p, _status) in gh.requests if method == "GET" and p.split("?")[0] == path)


def test_a_command_on_a_1200_comment_thread_reads_no_page_of_it(command_world: CommandWorld) -> None:
    w = command_world
    for i in range(1200):
        add_user_comment(w.gh, w.issue, f"chatter {i}", "octocat")
    before = len(w.gh.requests)
    cid = w.say("/status")
    assert "forksync status" in w.reply(cid).lower() or w.reply(cid)
    calls = w.gh.requests[before:]
    assert _thread_reads(w.gh, w.issue) == 0, [c for c in calls if "/comments" in c[1]]
    assert len(calls) < 20, calls  # the comment, the config, the reply, reactions (was 46 at 1,200 comments)
    record = answers.get(w.settings.store(), FORK, cid)
    assert record is not None and record.state == answers.ANSWERED
    # the same comment delivered again (a recovery pass, a new delivery id): answered, not re-run
    from core.tasknames import ON_COMMENT
    from workers.tasks.webhooks import WEBHOOK_TASKS

    again = len(w.gh.requests)
    (kwargs,) = [k for n, k in w.sender.sent if n == ON_COMMENT]
    WEBHOOK_TASKS[ON_COMMENT](**{**kwargs, "delivery": "recovered-1"})
    assert _thread_reads(w.gh, w.issue) == 0
    assert len(w.replies(cid)) == 1
    assert not [c for c in w.gh.requests[again:] if c[0] != "GET"]  # nothing posted, reacted or edited


def test_a_reply_recorded_but_not_posted_is_posted_alone(command_world: CommandWorld) -> None:
    """The index says ``replying`` (the commands ran, the worker died before the reply was on
    GitHub): the next run posts the kept reply and runs nothing again."""
    w = command_world
    from core.render import commands as render

    cid = add_user_comment(w.gh, w.issue, "/status", "maint")
    kept = render.reply("maint", cid, [])
    answers.record(w.settings.store(), FORK, cid, w.issue, answers.REPLYING, kept, ("rocket",))
    w.deliver(cid)
    assert [r["body"] for r in w.replies(cid)] == [kept]
    record = answers.get(w.settings.store(), FORK, cid)
    assert record is not None and record.state == answers.ANSWERED
