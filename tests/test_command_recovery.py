"""Recovery of comment commands whose delivery was lost (issue 14, finding 4): the pure planner on
plain comments, and the executor end to end through the loopback GitHub (the delivery log in the
web app's store names the repository; the real ``forksync.on_comment`` task answers once)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from core import tasknames
from core.github.records import CommentInfo
from core.render.commands import reply_marker
from core.store import open_store
from tests.fixtures.commands import FORK, CommandWorld
from tests.loopback_github import APP_BOT_LOGIN
from workers.commands.recovery import plan
from workers.jobs.recover_commands import recover_commands

NOW = 1_800_000_000.0
BOT = "forksync[bot]"


def _c(
    cid: int,
    body: str,
    author: str = "maint",
    age_s: float = 3600,
    issue: int = 7,
    url: str = "https://github.com/acme/fork/issues/7",
) -> CommentInfo:
    return CommentInfo(cid, issue, body, author, f"{url}#issuecomment-{cid}", NOW - age_s)


def test_plan_picks_unanswered_human_commands_past_the_grace_period() -> None:
    comments = [
        _c(1, "/status"),  # answered below
        _c(2, f"{reply_marker(1)}\nanswer", author=BOT),
        _c(3, "/skip #102 lost delivery"),  # never answered: recovered
        _c(4, "just talking"),  # no command
        _c(5, "/status", author="other-app[bot]"),  # a bot: never runs commands
        _c(6, "/status", age_s=30),  # too young: its delivery may be queued
        _c(7, f"quoting {reply_marker(8)}", author="mallory"),  # a user's marker answers nothing
        _c(8, "/help", url="https://github.com/acme/fork/pull/9", issue=9),
    ]
    actions = plan(FORK, 42, comments, own_login=BOT, now=NOW, grace_s=300)
    assert [(a.comment_id, a.is_pull_request) for a in actions] == [(3, False), (8, True)]
    kwargs = actions[1].task_kwargs()
    assert kwargs["installation_id"] == 42 and kwargs["issue_number"] == 9 and kwargs["author_type"] == "User"


def test_plan_trusts_only_our_own_replies_when_the_login_is_known() -> None:
    comments = [_c(1, "/status"), _c(2, f"{reply_marker(1)}\nanswer", author="other-app[bot]")]
    assert [a.comment_id for a in plan(FORK, 1, comments, own_login=BOT, now=NOW, grace_s=0)] == [1]
    assert plan(FORK, 1, comments, own_login=None, now=NOW, grace_s=0) == []


def test_a_command_whose_delivery_was_lost_is_answered_once(
    command_world: CommandWorld, tmp_path: Path
) -> None:
    """One comment delivered (answered), one whose webhook never came: the recovery pass answers the
    lost one with the real task; a second pass enqueues nothing and nothing runs twice."""
    from core.github.app import app_for
    from workers.tasks.webhooks import WEBHOOK_TASKS

    w = command_world
    answered = w.say("/status")
    lost = w.add_comment("/skip #102 AMD only", "maint")  # its webhook is never delivered
    store = open_store(None, tmp_path / "web")  # the web app's store: it logged the first delivery
    app = app_for(w.settings.bot)
    sent: list[tuple[str, dict[str, Any]]] = []

    def run(name: str, kwargs: dict[str, Any]) -> None:
        sent.append((name, kwargs))
        WEBHOOK_TASKS[name](**kwargs)

    later = time.time() + 600  # past the grace period
    done = recover_commands(store, app.adapter, run, own_login=app.bot_login(), now=later)
    assert [a.comment_id for a in done] == [lost] and [n for n, _ in sent] == [tasknames.ON_COMMENT]
    assert "as **wont_port**: AMD only" in w.reply(lost)
    assert w.status()["wont_port"] == 1 and len(w.replies(answered)) == 1
    assert app.bot_login() == APP_BOT_LOGIN
    assert recover_commands(store, app.adapter, run, own_login=app.bot_login(), now=later) == []
    assert len(sent) == 1 and len(w.replies(lost)) == 1


def test_a_worker_sends_one_recovery_pass_when_it_is_ready() -> None:
    """worker_ready → forksync.recover_commands and forksync.replay_deliveries sent once each; a
    broker error there is logged, not raised."""
    from celery import signals

    from workers.tasks import commands

    class App:
        def __init__(self, fail: bool = False) -> None:
            self.sent: list[str] = []
            self.fail = fail

        def send_task(self, name: str) -> None:
            if self.fail:
                raise ConnectionError("broker down")
            self.sent.append(name)

    class Consumer:
        def __init__(self, app: App) -> None:
            self.app = app

    ok, down = App(), App(fail=True)
    signals.worker_ready.send(sender=Consumer(ok))
    signals.worker_ready.send(sender=Consumer(down))
    assert (
        sorted(ok.sent) == sorted([tasknames.RECOVER_COMMANDS, tasknames.REPLAY_DELIVERIES])
        and down.sent == []
    )
    assert commands.recover_commands.name == tasknames.RECOVER_COMMANDS


def test_beat_runs_recovery_every_schedule_recover_commands_minutes() -> None:
    from datetime import timedelta

    from core.config import load_repo_config
    from workers.app.celery_app import beat_schedule

    default = beat_schedule(load_repo_config(""))["recover-commands"]
    assert default["task"] == tasknames.RECOVER_COMMANDS and default["schedule"] == timedelta(minutes=10)
    tuned = beat_schedule(load_repo_config("schedule:\n  recover_commands_minutes: 3\n"))["recover-commands"]
    assert tuned["schedule"] == timedelta(minutes=3)


def test_the_task_without_a_github_app_skips_with_a_warning(tmp_path: Path, monkeypatch: Any) -> None:
    """Demo mode (no App id or key): the start-up pass logs why and ends; it never fails the worker."""
    from core.settings import WorkerSettings
    from workers.app.celery_app import create_celery
    from workers.tasks import commands

    for name in ("GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_PRIVATE_KEY_PATH", "REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    app = create_celery(WorkerSettings.from_mapping({"FORKSYNC_DATA_DIR": str(tmp_path / "data")}))
    assert app.tasks[tasknames.RECOVER_COMMANDS].apply().get() == 0
    assert commands.recover_commands.name in app.tasks
