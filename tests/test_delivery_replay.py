"""Lost deliveries of every event kind are sent again from the accepted-delivery log, and nothing
runs again once it finished (issue 14, finding 4): the web process logs the task and kwargs, the
webhook task takes and finishes its delivery, the replay pass (worker start-up, beat) sends what
never finished. Through the real view, Redis flushed in between, the store on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis

from bot import create_app
from core import tasknames
from core.store import deliveries, open_store
from tests.datafiles import GITHUB_PAYLOADS
from tests.fixtures.webhooks import SECRET, signed
from workers.jobs import replay_deliveries as replay

KNOWN = frozenset(tasknames.WEBHOOK_TASKS)


def _worker_app(store_url: str, tmp_path: Path) -> Any:
    from core.settings import WorkerSettings
    from workers.app.celery_app import create_celery

    return create_celery(
        WorkerSettings.from_mapping(
            {"FORKSYNC_DATABASE_URL": store_url, "FORKSYNC_DATA_DIR": str(tmp_path / "data")}
        )
    )


def _deliver_all(web: Any) -> dict[str, str]:
    """One signed delivery of each kind that runs a task: {delivery id: task name}."""
    cases = [
        ("push", "push.with-new-branch.json"),
        ("pull_request", "pull_request.opened.json"),
        ("check_run", "check_run.rerequested.json"),
        ("installation", "installation.created.json"),
    ]
    sent = {}
    for event, name in cases:
        path = GITHUB_PAYLOADS / name
        if not path.exists():
            continue
        body, headers = signed(event, json.loads(path.read_text()))
        answer = web.post("/webhook", data=body, headers=headers)
        if answer.status_code == 202:
            sent[headers["X-GitHub-Delivery"]] = answer.get_data(as_text=True).split(": ", 1)[1].strip()
    return sent


def test_lost_deliveries_of_every_kind_are_sent_again_once_and_never_after_they_ran(
    store_url: str,
    redis_url: Callable[[int], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = redis_url(13)
    web = create_app(
        {
            "FORKSYNC_WEBHOOK_SECRET": SECRET,
            "REDIS_URL": url,
            "FORKSYNC_DATABASE_URL": store_url,
            "FORKSYNC_DATA_DIR": str(tmp_path / "data"),
        }
    ).test_client()
    accepted = _deliver_all(web)
    assert len(set(accepted.values())) >= 3, accepted  # several event kinds, not only comments
    redis.Redis.from_url(url).flushdb()  # Redis restarted without persistence: every queued message is gone
    store = open_store(store_url, ".")
    sent: list[tuple[str, dict[str, Any]]] = []
    now = deliveries.get(store, next(iter(accepted))).accepted_at  # type: ignore[union-attr]
    # inside the grace period nothing is sent (the messages may just be queued)
    assert (
        replay.replay_deliveries(store, lambda t, k: sent.append((t, k)), known_tasks=KNOWN, now=now + 10)
        == []
    )
    done = replay.replay_deliveries(store, lambda t, k: sent.append((t, k)), known_tasks=KNOWN, now=now + 400)
    assert sorted(k["delivery"] for _, k in sent) == sorted(accepted) and len(done) == len(accepted)
    assert {k["delivery"]: t for t, k in sent} == accepted
    # the replayed messages run, once each, through the real webhook task
    ran: list[str] = []
    from workers.tasks import webhooks

    monkeypatch.setattr(webhooks, "dispatch", lambda name, kwargs: ran.append(kwargs["delivery"]) or 1)
    app = _worker_app(store_url, tmp_path)
    for task, kwargs in sent:
        assert app.tasks[task].apply(kwargs=kwargs).get() == 1
    # the same messages again (a broker restored them, a later pass, GitHub's queue): none runs twice
    for task, kwargs in sent:
        assert app.tasks[task].apply(kwargs=kwargs).get() == 0
    assert sorted(ran) == sorted(accepted)
    assert all(deliveries.outcome(store, d) == ("done", 1) for d in accepted)
    again: list[Any] = []
    assert (
        replay.replay_deliveries(store, lambda t, k: again.append(t), known_tasks=KNOWN, now=now + 4000) == []
    )
    assert again == []


def test_a_delivery_held_by_a_live_worker_is_left_to_it_and_a_dead_holders_is_taken(store_url: str) -> None:
    store = open_store(store_url, ".")
    deliveries.accept(
        store, deliveries.AcceptedDelivery("d1", "push", "o/r", 1, 100.0, tasknames.ON_PUSH, "{}")
    )
    assert deliveries.begin(store, "d1", 110.0, lease_s=40) == deliveries.RUN
    assert (
        deliveries.begin(store, "d1", 120.0, lease_s=40) == deliveries.BUSY
    )  # a restored copy while it runs
    assert (
        deliveries.begin(store, "d1", 151.0, lease_s=40) == deliveries.RUN
    )  # its holder died (past the lease)
    deliveries.release(store, "d1", 152.0)  # will be retried
    assert deliveries.begin(store, "d1", 153.0, lease_s=40) == deliveries.RUN
    deliveries.finish(store, "d1", "done", 154.0)
    assert deliveries.begin(store, "d1", 9999.0, lease_s=40) == deliveries.DONE
    assert deliveries.begin(store, "never-logged", 1.0, lease_s=40) == deliveries.UNKNOWN


def test_a_final_failure_is_finished_and_a_retry_frees_the_lease(
    store_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A handler that fails for good marks its delivery failed (not replayed); a transient error
    frees it so that the retry runs it."""
    from core.github.errors import RetryableGitHubError
    from workers.tasks import webhooks

    store = open_store(store_url, ".")
    for name in ("bad", "flaky"):
        deliveries.accept(
            store, deliveries.AcceptedDelivery(name, "push", "o/r", 1, 100.0, tasknames.ON_PUSH, "{}")
        )
    calls: list[str] = []

    def dispatch(name: str, kwargs: dict[str, Any]) -> int:
        calls.append(kwargs["delivery"])
        if kwargs["delivery"] == "bad":
            raise ValueError("a bug")
        if calls.count("flaky") == 1:
            raise RetryableGitHubError("502", 0.0)
        return 1

    monkeypatch.setattr(webhooks, "dispatch", dispatch)
    app = _worker_app(store_url, tmp_path)
    base = {"installation_id": 1, "repo": "o/r", "ref": "refs/heads/x", "before": "a", "after": "b"}
    app.tasks[tasknames.ON_PUSH].apply(kwargs={**base, "delivery": "bad"})
    assert deliveries.outcome(store, "bad") == ("failed", 0)
    app.tasks[tasknames.ON_PUSH].apply(kwargs={**base, "delivery": "flaky"})
    assert calls.count("flaky") == 2  # the eager retry ran it again: the lease was freed
    assert deliveries.outcome(store, "flaky") == ("done", 0)


def test_plan_gives_up_after_max_replays_and_on_unknown_tasks() -> None:
    rows = [
        deliveries.Unfinished("a", tasknames.ON_PUSH, '{"repo": "o/r"}', 1.0, 1.0, None, 0),
        deliveries.Unfinished("b", tasknames.ON_PUSH, '{"repo": "o/r"}', 1.0, 1.0, None, replay.MAX_REPLAYS),
        deliveries.Unfinished("c", "forksync.gone", "{}", 1.0, 1.0, None, 0),
        deliveries.Unfinished("d", tasknames.ON_PUSH, "[]", 1.0, 1.0, None, 0),
    ]
    actions = replay.plan(rows, known_tasks=KNOWN)
    assert [type(a).__name__ for a in actions] == ["Replay", "GiveUp", "GiveUp", "GiveUp"]
    first = actions[0]
    assert isinstance(first, replay.Replay) and first.kwargs == {"repo": "o/r"} and first.attempt == 1


def test_beat_and_worker_start_send_the_replay_pass() -> None:
    from core.config import load_repo_config
    from workers.app.celery_app import beat_schedule

    entry = beat_schedule(load_repo_config(""))["replay-deliveries"]
    assert entry["task"] == tasknames.REPLAY_DELIVERIES
    assert tasknames.queue_for(tasknames.REPLAY_DELIVERIES) == tasknames.Q_GITHUB


def test_a_pool_process_killed_mid_task_frees_its_delivery_at_once(store_url: str) -> None:
    """The requeued message of a killed pool process (reject_on_worker_lost) runs at once: its
    holder (this host, a pid that is gone) no longer exists; another host's holder keeps its lease."""
    import subprocess
    import sys

    from workers.tasks.webhooks import holder, holder_gone

    store = open_store(store_url, ".")
    deliveries.accept(
        store, deliveries.AcceptedDelivery("k", "push", "o/r", 1, 100.0, tasknames.ON_PUSH, "{}")
    )
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    host = holder().rpartition(":")[0]
    assert deliveries.begin(store, "k", 110.0, 40, f"{host}:{gone.pid}", holder_gone) == deliveries.RUN
    assert deliveries.begin(store, "k", 111.0, 40, holder(), holder_gone) == deliveries.RUN
    assert (
        deliveries.begin(store, "k", 112.0, 40, f"{host}:{gone.pid}", holder_gone) == deliveries.BUSY
    )  # we live
    deliveries.accept(
        store, deliveries.AcceptedDelivery("m", "push", "o/r", 1, 100.0, tasknames.ON_PUSH, "{}")
    )
    assert deliveries.begin(store, "m", 110.0, 40, "elsewhere:1", holder_gone) == deliveries.RUN
    assert deliveries.begin(store, "m", 111.0, 40, holder(), holder_gone) == deliveries.BUSY
