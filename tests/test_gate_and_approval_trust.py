"""The in-process command gate stays bounded; an approval counts only when written by our own App."""

from __future__ import annotations

from typing import Any

from tests.fixtures.commands import FORK, CommandWorld
from workers.commands.approval import approval_body, approval_marker, is_approved
from workers.commands.gate import MemoryGate


def test_memory_gate_evicts_expired_and_stays_under_its_cap() -> None:
    now = [0.0]
    gate = MemoryGate(clock=lambda: now[0], max_entries=100)
    for i in range(1000):
        gate.permission("acme/fork", f"user{i}", 60, lambda: "read")
        gate.take("acme/fork", f"user{i}", 1, 10, 600)
        now[0] += 1
    assert gate.size() <= 200
    # A live window is still counted: the rate limit holds for the newest user.
    assert not gate.take("acme/fork", "user999", 10, 10, 600).allowed


def test_another_apps_approval_record_is_not_trusted_without_our_login(command_world: CommandWorld) -> None:
    """A bot comment by another App with a perfect approval body is ignored, with own_login or not."""
    from tests.fixtures.commands import add_user_comment

    w = command_world
    pr = w.open_pull("patch", head_repo="stranger/fork", author="stranger")
    head = w.gh.head("stranger/fork", "patch")
    cid = add_user_comment(w.gh, pr, approval_body(pr, head, "maint"), "other-app[bot]")
    with w.gh.lock:
        w.gh.state.comments[FORK][cid]["author_type"] = "Bot"
    adapter: Any = w.gh.adapter(w.gh.installation)
    assert approval_marker(pr) in approval_body(pr, head, "maint")
    assert not is_approved(adapter, FORK, pr)
    assert not is_approved(adapter, FORK, pr, own_login="forksync[bot]")


def test_rate_limit_is_taken_before_the_thread_is_searched(fake_github: Any) -> None:
    """An outsider's 30 command comments cost at most ``rate_limit`` searches of the thread (each
    search pages through it): the rest are refused by the gate before any search."""
    from workers.commands.handler import CommentTask, handle

    gh = fake_github
    gh.config = "commands: {rate_limit: 3, rate_window_s: 600}\n"
    searches = [0]
    original = gh.list_comments

    def counting(repo: str, issue: int) -> Any:
        searches[0] += 1
        return original(repo, issue)

    gh.list_comments = counting
    gate = MemoryGate()
    for _ in range(30):
        cid = gh.add(5, "/status")
        task = CommentTask(
            installation_id=1,
            repo="o/fork",
            issue_number=5,
            comment_id=cid,
            author="rita",
            author_type="User",
            is_pull_request=False,
        )
        handle(task, gh, gate, {})
    assert searches[0] <= 3


class _Later(Exception):
    """What the GitHub adapter raises for a 5xx or a rate limit (it carries ``retry_after_s``)."""

    retry_after_s = 1.0


def test_a_transient_error_on_the_reply_does_not_run_the_commands_again(fake_github: Any) -> None:
    """/urgent + /bundle whose reply fails once: the retried task posts the kept reply alone; each
    command's side effect happened once."""
    import pytest

    from workers.commands.handler import CommentTask, handle

    gh = fake_github
    ran: list[str] = []

    def action(ctx: Any, command: Any) -> Any:
        from core.render import commands as render

        ran.append(command.name)
        return render.started(command, "enqueued")

    actions = {"urgent": action, "bundle": action}
    original_post = gh.create_comment
    failures = [1]

    def flaky_post(*args: Any, **kwargs: Any) -> Any:
        if failures[0]:
            failures[0] -= 1
            raise _Later("502 from GitHub")
        return original_post(*args, **kwargs)

    gh.create_comment = flaky_post
    cid = gh.add(5, "/urgent abcd123\n/bundle")
    task = CommentTask(installation_id=1, repo="o/fork", issue_number=5, comment_id=cid, author="alice")
    gate = MemoryGate()
    with pytest.raises(_Later):
        handle(task, gh, gate, actions)
    answer = handle(task, gh, gate, actions)
    assert ran == ["urgent", "bundle"], "side effects ran again on the retry"
    assert answer is not None and len(gh.posted) == 1 and "enqueued" in gh.posted[0][1]
    assert handle(task, gh, gate, actions) is None  # and a third delivery sees it answered
