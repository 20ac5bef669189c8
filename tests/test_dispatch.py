"""Dispatch: the Redis fast path writes real Celery messages, deduplicated atomically."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from bot.dispatch import DispatchError, RedisTaskQueue, _mask_url
from core import tasknames


@pytest.fixture
def url(redis_url: Callable[[int], str]) -> str:
    """Database 14 of the session's private Redis."""
    return redis_url(14)


@pytest.fixture
def queue(url: str) -> Iterator[RedisTaskQueue]:
    q = RedisTaskQueue(url, ttl_s=60, prefix=f"forksync-test:{uuid.uuid4().hex}:")
    client = redis.Redis.from_url(url)
    client.delete(tasknames.Q_GITHUB)
    yield q
    for key in client.scan_iter(match=q.prefix + "*"):
        client.delete(key)
    client.delete(tasknames.Q_GITHUB)


def test_send_once_enqueues_once_per_delivery(queue: RedisTaskQueue, url: str) -> None:
    """The same delivery id twice → one message on the routed queue; the id key has the TTL."""
    client = redis.Redis.from_url(url)
    assert queue.send_once("d-1", tasknames.ON_PUSH, {"repo": "a/b", "delivery": "d-1"}) is True
    assert queue.send_once("d-1", tasknames.ON_PUSH, {"repo": "a/b", "delivery": "d-1"}) is False
    assert client.llen(tasknames.Q_GITHUB) == 1
    assert 0 < client.ttl(queue.prefix + "d-1") <= 60


def test_send_once_survives_a_flushed_script_cache_and_a_dropped_connection(
    queue: RedisTaskQueue, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim-and-push script is sent whole when the server forgot it (SCRIPT FLUSH, as after a
    restart), a pooled connection the server dropped is replaced, and a connection that breaks
    during the call is dropped and the call made once more: each delivery is still queued exactly
    once, and a repeat is still "seen"."""
    client = redis.Redis.from_url(url)
    assert queue.send_once("d-a", tasknames.ON_PUSH, {"delivery": "d-a"}) is True
    client.script_flush()
    assert queue.send_once("d-b", tasknames.ON_PUSH, {"delivery": "d-b"}) is True
    assert queue.send_once("d-b", tasknames.ON_PUSH, {"delivery": "d-b"}) is False
    client.client_kill_filter(_type="normal", skipme=True)  # every connection but this one
    assert queue.send_once("d-c", tasknames.ON_PUSH, {"delivery": "d-c"}) is True
    assert queue.send_once("d-a", tasknames.ON_PUSH, {"delivery": "d-a"}) is False
    real_send = redis.connection.Connection.send_packed_command
    breaks = [redis.ConnectionError("Error 104 while writing to socket. Connection reset by peer.")]

    def send_breaking_once(conn: Any, command: Any, check_health: bool = True) -> None:
        if breaks:
            conn.disconnect()
            raise breaks.pop()
        real_send(conn, command, check_health)

    monkeypatch.setattr(redis.connection.Connection, "send_packed_command", send_breaking_once)
    assert queue.send_once("d-d", tasknames.ON_PUSH, {"delivery": "d-d"}) is True
    assert breaks == []
    assert client.llen(tasknames.Q_GITHUB) == 4


def test_message_runs_on_a_real_celery_worker(
    queue: RedisTaskQueue, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A message pushed by the fast path is consumed by a Celery worker and calls the task with the kwargs."""
    from celery import Celery
    from celery.contrib.testing.worker import start_worker

    # A name of its own, routed like a webhook task: a recording task under a real name
    # (forksync.on_push) stays in Celery's set of live apps, and the workers' @shared_task of that
    # name, imported later by create_celery, would collide with it (DuplicateTaskNameWarning).
    name = f"forksync.test_dispatch_{uuid.uuid4().hex[:8]}"
    monkeypatch.setitem(tasknames.TASK_ROUTES, name, {"queue": tasknames.Q_GITHUB})
    app = Celery("forksync-test", broker=url, set_as_current=False)
    app.conf.update(
        task_routes=dict(tasknames.TASK_ROUTES),
        worker_hijack_root_logger=False,
        broker_connection_retry_on_startup=True,
    )
    received: list[dict[str, Any]] = []

    @app.task(name=name, shared=False)  # never leak into other tests' Celery apps
    def record(**kwargs: Any) -> None:
        received.append(kwargs)

    kwargs = {
        "installation_id": 7,
        "repo": "acme/fork",
        "ref": "refs/heads/main",
        "before": "a" * 40,
        "after": "b" * 40,
        "delivery": "d-42",
    }
    assert queue.send_once("d-42", name, kwargs)
    assert queue.send_once("d-42", name, kwargs) is False
    with start_worker(app, pool="solo", perform_ping_check=False, queues=[tasknames.Q_GITHUB]):
        deadline = time.time() + 15
        while not received and time.time() < deadline:
            time.sleep(0.05)
    assert received == [kwargs]


def test_redis_down_is_a_dispatch_error() -> None:
    """An unreachable Redis → DispatchError naming REDIS_URL (the view answers 503)."""
    q = RedisTaskQueue("redis://127.0.0.1:1/0", ttl_s=60)
    with pytest.raises(DispatchError, match="REDIS_URL"):
        q.send_once("x", tasknames.ON_PUSH, {})


def test_broker_password_is_masked() -> None:
    """Broker URLs on the status page and in errors never show the password."""
    assert _mask_url("redis://:hunter2@redis.internal:6379/0") == "redis://***@redis.internal:6379/0"
    assert "hunter2" not in _mask_url("redis://user:hunter2@h/0")


def test_embedded_mode_enqueues_into_the_sqlite_broker(tmp_path: Any) -> None:
    """Without REDIS_URL the default app dedups in SQLite and enqueues into the embedded broker file."""
    import sqlite3

    from bot import create_app
    from tests.fixtures.webhooks import SECRET, signed

    app = create_app({"FORKSYNC_WEBHOOK_SECRET": SECRET, "FORKSYNC_DATA_DIR": str(tmp_path)})
    body, headers = signed(
        "push",
        {
            "ref": "refs/heads/main",
            "before": "0" * 40,
            "after": "1" * 40,
            "repository": {"full_name": "acme/fork"},
            "installation": {"id": 3},
        },
    )
    client = app.test_client()
    assert client.post("/webhook", data=body, headers=headers).status_code == 202
    assert client.post("/webhook", data=body, headers=headers).status_code == 200
    db = sqlite3.connect(tmp_path / "celery-broker.sqlite")
    try:
        assert db.execute("SELECT count(*) FROM kombu_message").fetchone() == (1,)
    finally:
        db.close()


def test_fast_path_message_has_the_shape_celery_send_task_writes(queue: RedisTaskQueue, url: str) -> None:
    """The hand-built message (bot/dispatch.py, RedisTaskQueue: why it is not send_task) against what
    Celery's own ``send_task`` pushes to the same Redis: same envelope, headers, properties and body,
    ids aside. A Celery upgrade that changes its wire format fails here, not in production."""
    import base64
    import json

    from bot.dispatch import CelerySender

    kwargs = {"installation_id": 7, "repo": "acme/fork", "delivery": "d-7"}
    client = redis.Redis.from_url(url)
    CelerySender(url).send(tasknames.ON_PUSH, kwargs)
    theirs = json.loads(client.rpop(tasknames.Q_GITHUB) or b"{}")
    ours = json.loads(queue.message(tasknames.ON_PUSH, kwargs))
    # Per message or per process; reply_to is the sending app's id, read only by a result backend (none here).
    per_message = {
        "id",
        "root_id",
        "origin",
        "correlation_id",
        "delivery_tag",
        "traceparent",
        "request_id",
        "reply_to",
    }

    def shape(message: dict[str, Any]) -> dict[str, Any]:
        return {
            "envelope": sorted(message),
            "headers": {k: v for k, v in message["headers"].items() if k not in per_message},
            "properties": {k: v for k, v in message["properties"].items() if k not in per_message},
            "body": json.loads(base64.b64decode(message["body"])),
        }

    assert shape(ours) == shape(theirs)
