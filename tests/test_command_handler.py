"""The comment handler's flow rules, against a recording fake GitHub (no git, no HTTP).

End-to-end behaviour (signed webhooks, the loopback GitHub, real effects) is in
``test_commands_e2e.py``; here: bots ignored, answered once, config, rate limit and
permission gates before any action, and failures that never leak a trace.
"""

from __future__ import annotations

from datetime import UTC, datetime

from core.commands import Command
from core.render import commands as render
from tests.fixtures.commands import FakeCommentGitHub
from workers.commands.gate import MemoryGate
from workers.commands.handler import Action, CommentTask, Context, handle

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def recording_actions(ran: list[str]) -> dict[str, Action]:
    def act(ctx: Context, command: Command) -> render.Outcome:
        ran.append(command.text())
        return render.done(command, "done")

    def boom(ctx: Context, command: Command) -> render.Outcome:
        raise RuntimeError("secret internals /home/worker/token=abc")

    names = ["skip", "status", "help", "urgent", "bundle"]
    actions: dict[str, Action] = dict.fromkeys(names, act)
    actions["defer"] = boom
    return actions


def task_for(
    gh: FakeCommentGitHub, comment_id: int, author: str = "alice", author_type: str = "User"
) -> CommentTask:
    return CommentTask(1, "o/fork", gh.issue_of[comment_id], comment_id, author, author_type, False, "d-1")


def run(gh: FakeCommentGitHub, comment_id: int, ran: list[str], gate: MemoryGate | None = None, **kw: str):  # type: ignore[no-untyped-def]
    return handle(
        task_for(gh, comment_id, **kw), gh, gate or MemoryGate(), recording_actions(ran), now=lambda: NOW
    )


def test_success_reacts_eyes_then_thumbs_and_replies_once(fake_github: FakeCommentGitHub) -> None:
    """A valid command: 👀 on receipt, the action runs, one reply, then 👍."""
    cid = fake_github.add(5, "/skip abcd not for us")
    ran: list[str] = []
    answer = run(fake_github, cid, ran)
    assert answer is not None
    assert ran == ['/skip abcd "not for us"']
    assert fake_github.reactions_on(cid) == ["eyes", "+1"]
    assert len(fake_github.posted) == 1 and fake_github.posted[0][0] == 5
    assert '👍 `/skip abcd "not for us"` — done' in fake_github.posted[0][1]


def test_answered_comment_is_not_run_again(fake_github: FakeCommentGitHub) -> None:
    """A redelivered task finds the marked reply and runs nothing, posts nothing."""
    cid = fake_github.add(5, "/skip abcd x")
    ran: list[str] = []
    run(fake_github, cid, ran)
    assert run(fake_github, cid, ran) is None
    assert len(ran) == 1 and len(fake_github.posted) == 1
    assert fake_github.reactions_on(cid).count("eyes") == 1


def test_forged_reply_marker_by_a_user_does_not_silence_the_bot(fake_github: FakeCommentGitHub) -> None:
    """Only the bot's own marked comment counts as an answer."""
    cid = fake_github.add(5, "/status")
    fake_github.add(5, render.reply_marker(cid), author="mallory")
    ran: list[str] = []
    assert run(fake_github, cid, ran) is not None and ran == ["/status"]


def test_bot_comments_are_ignored(fake_github: FakeCommentGitHub) -> None:
    """Our own replies and other bots' comments never run commands and get no reaction."""
    ours = fake_github.add(5, "/skip abcd x", author="forksync[bot]", author_type="Bot")
    other = fake_github.add(5, "/bundle", author="dependabot[bot]", author_type="User")
    ran: list[str] = []
    assert run(fake_github, ours, ran, author="forksync[bot]", author_type="Bot") is None
    assert run(fake_github, other, ran, author="dependabot[bot]") is None
    assert ran == [] and fake_github.reactions == [] and fake_github.posted == []


def test_comment_without_commands_gets_no_answer(fake_github: FakeCommentGitHub) -> None:
    """Ordinary discussion (and commands inside code blocks) is left alone: no reaction, no reply."""
    cid = fake_github.add(5, "LGTM, but see\n```\n/skip abcd x\n```")
    assert run(fake_github, cid, []) is None
    assert fake_github.reactions == [] and fake_github.posted == []


def test_deleted_comment_is_ignored(fake_github: FakeCommentGitHub) -> None:
    """A comment deleted before the task ran is not answered (nothing to reply to)."""
    cid = fake_github.add(5, "/status")
    del fake_github.comments[cid]
    assert run(fake_github, cid, []) is None and fake_github.posted == []


def test_read_only_user_is_denied_and_nothing_runs(fake_github: FakeCommentGitHub) -> None:
    """A read-only user's /skip is refused naming the permission; /status and /help still answer."""
    cid = fake_github.add(5, "/skip abcd x\n/status\n/help", author="rita")
    ran: list[str] = []
    answer = run(fake_github, cid, ran, author="rita")
    assert answer is not None
    assert ran == ["/status", "/help"]
    assert (
        "denied: `/skip` needs **write**, **maintain** or **admin** permission on o/fork (you have read)"
        in answer.body
    )
    assert fake_github.reactions_on(cid) == ["eyes", "+1", "confused"]


def test_permission_is_looked_up_once_per_ttl(fake_github: FakeCommentGitHub) -> None:
    """Several commands and comments by one user cost one permission lookup (cached briefly)."""
    gate = MemoryGate()
    ran: list[str] = []
    for _ in range(2):
        run(fake_github, fake_github.add(5, "/skip abcd x\n/urgent #3"), ran, gate)
    assert len(ran) == 4 and fake_github.permission_lookups == 1


def test_rate_limit_refuses_politely_and_runs_nothing(fake_github: FakeCommentGitHub) -> None:
    """Past commands.rate_limit, every command of the comment is answered 😕 with when to retry."""
    fake_github.config = "commands: {rate_limit: 2, rate_window_s: 300}\n"
    gate = MemoryGate()
    ran: list[str] = []
    run(fake_github, fake_github.add(5, "/status\n/help"), ran, gate)
    cid = fake_github.add(5, "/status")
    answer = run(fake_github, cid, ran, gate)
    assert answer is not None and ran == ["/status", "/help"]
    assert "rate limited: @alice ran 2 commands in the last 5 min" in answer.body
    assert "retry in 5 min (after 12:05 UTC)" in answer.body
    assert fake_github.reactions_on(cid) == ["eyes", "confused"]


def test_bad_config_quotes_the_line_and_runs_nothing(fake_github: FakeCommentGitHub) -> None:
    """A broken .github/forksync.yml answers 😕 quoting the line at fault; no action runs."""
    fake_github.config = "bundle:\n  max_commits: many\nfork: {branch: main}\n"
    cid = fake_github.add(5, "/bundle")
    ran: list[str] = []
    answer = run(fake_github, cid, ran)
    assert answer is not None and ran == []
    assert "the repository config is invalid: .github/forksync.yml:2: bundle.max_commits" in answer.body
    assert ">   2 |   max_commits: many" in answer.body
    assert fake_github.reactions_on(cid) == ["eyes", "confused"]


def test_unknown_and_malformed_commands_are_answered_with_help(fake_github: FakeCommentGitHub) -> None:
    """Parse errors get 😕 with the closest command or the usage; valid siblings still run."""
    cid = fake_github.add(5, "/retset\n/skip abcd\n/status")
    ran: list[str] = []
    answer = run(fake_github, cid, ran)
    assert answer is not None and ran == ["/status"]
    assert "unknown command `/retset`" in answer.body and "did you mean `/retest`?" in answer.body
    assert "a reason is required" in answer.body and "`/skip REF REASON`" in answer.body


def test_unexpected_exception_becomes_internal_error_with_id(fake_github: FakeCommentGitHub) -> None:
    """An action that crashes is answered with an id; the exception text never reaches the comment."""
    cid = fake_github.add(5, "/defer abcd\n/status")
    ran: list[str] = []
    answer = run(fake_github, cid, ran)
    assert answer is not None and ran == ["/status"]
    assert "internal error, id `" in answer.body
    assert (
        "secret internals" not in answer.body
        and "RuntimeError" not in answer.body
        and "Traceback" not in answer.body
    )


def test_command_without_a_handler_says_not_available(fake_github: FakeCommentGitHub) -> None:
    """A command whose feature is not deployed is answered honestly, not faked."""
    cid = fake_github.add(5, "/l3 llama")
    answer = run(fake_github, cid, [])
    assert answer is not None and "is not available yet in this deployment" in answer.body
    assert fake_github.reactions_on(cid) == ["eyes", "confused"]


class BrokenGate(MemoryGate):
    def take(self, repo: str, user: str, count: int, limit: int, window_s: int):  # type: ignore[no-untyped-def]
        raise ConnectionError("redis is down")


def test_gate_failure_is_answered_not_silent(fake_github: FakeCommentGitHub) -> None:
    """If the rate-limit store is down, the comment is still answered (internal error with an id), not left at 👀."""
    cid = fake_github.add(5, "/status")
    ran: list[str] = []
    answer = run(fake_github, cid, ran, BrokenGate())
    assert answer is not None and ran == []
    assert "internal error, id `" in answer.body and "redis" not in answer.body
    assert fake_github.reactions_on(cid) == ["eyes", "confused"]


class Transient(Exception):
    retry_after_s = 3.0


def test_transient_github_error_before_any_command_retries_the_task(fake_github: FakeCommentGitHub) -> None:
    """A 5xx/rate limit while reading the config propagates (the task retries); nothing is posted yet."""
    import pytest

    def broken_config(repo: str, path: str, ref: str | None = None) -> str | None:
        raise Transient("502")

    fake_github.read_file = broken_config  # type: ignore[method-assign]
    cid = fake_github.add(5, "/status")
    with pytest.raises(Transient):
        run(fake_github, cid, [])
    assert fake_github.posted == []
