"""The durable accepted-delivery log (issue 14, finding 4): a delivery id accepted once is a
duplicate forever after, even when Redis (the fast dedup and the queue) was flushed in between;
through the real view, with the store on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from bot import create_app
from core import tasknames
from core.store import deliveries as log
from core.store import open_store
from tests.datafiles import GITHUB_PAYLOADS
from tests.fixtures.webhooks import SECRET, signed


def _payload(name: str) -> bytes:
    data: dict[str, Any] = json.loads((GITHUB_PAYLOADS / name).read_text())
    return json.dumps(data).encode()


def test_a_redelivery_after_a_redis_flush_is_still_a_duplicate(
    store_url: str,
    redis_url: Callable[[int], str],
    tmp_path: Path,
) -> None:
    """Accepted, then Redis flushed (a restart without persistence), then the same delivery id
    again: answered duplicate, nothing enqueued; the log says what was accepted and from where."""
    url = redis_url(14)
    client = redis.Redis.from_url(url)
    app = create_app(
        {
            "FORKSYNC_WEBHOOK_SECRET": SECRET,
            "REDIS_URL": url,
            "FORKSYNC_DATABASE_URL": store_url,
            "FORKSYNC_DATA_DIR": str(tmp_path / "data"),
        }
    )
    web = app.test_client()
    body, headers = signed("push", _payload("push.with-new-branch.json"))
    first = web.post("/webhook", data=body, headers=headers)
    assert first.status_code == 202, first.get_data(as_text=True)
    assert client.llen(tasknames.Q_GITHUB) == 1
    client.flushdb()
    again = web.post("/webhook", data=body, headers=headers)
    assert again.status_code == 200 and again.get_data(as_text=True).startswith("duplicate:")
    assert client.llen(tasknames.Q_GITHUB) == 0
    record = log.get(open_store(store_url, "."), headers["X-GitHub-Delivery"])
    assert record is not None and record.event == "push" and record.repo and record.installation_id


def test_a_delivery_not_enqueued_is_not_kept(store_url: str, tmp_path: Path) -> None:
    """When the queue is down the answer is 503 and the log forgets the id: GitHub's redelivery runs."""
    app = create_app(
        {
            "FORKSYNC_WEBHOOK_SECRET": SECRET,
            "REDIS_URL": "redis://127.0.0.1:1/0",
            "FORKSYNC_DATABASE_URL": store_url,
            "FORKSYNC_DATA_DIR": str(tmp_path / "data"),
        }
    )
    body, headers = signed("push", _payload("push.with-new-branch.json"))
    assert app.test_client().post("/webhook", data=body, headers=headers).status_code == 503
    assert log.get(open_store(store_url, "."), headers["X-GitHub-Delivery"]) is None


def test_recent_repositories_and_prune(store_url: str) -> None:
    store = open_store(store_url, ".")
    for i, (repo, inst, at) in enumerate(
        [("o/a", 1, 100.0), ("o/b", 2, 200.0), ("o/a", 1, 300.0), ("", 3, 300.0)]
    ):
        assert log.accept(store, log.AcceptedDelivery(f"d{i}", "push", repo, inst, at))
    assert not log.accept(store, log.AcceptedDelivery("d0", "push", "o/a", 1, 400.0))
    assert log.recent_repositories(store, 150.0) == [("o/a", 1), ("o/b", 2)]
    assert log.prune(store, 250.0) == 2
    assert log.recent_repositories(store, 0.0) == [("o/a", 1)]


def test_accept_is_once_per_id_and_a_duplicate_leaves_the_connection_usable(store_url: str) -> None:
    """accept: True, then False for the same id (the primary key), then True for the next id on the
    same pooled connections (a refused INSERT is rolled back, so PostgreSQL's transaction is not
    left aborted); the row holds what was given."""
    store = open_store(store_url, ".")
    record = log.AcceptedDelivery("acc-1", "push", "o/r", 2**40, 123.5, "forksync.on_push", '{"a": 1}')
    assert log.accept(store, record) is True
    for _ in range(3):
        assert log.accept(store, record) is False
    assert log.accept(store, log.AcceptedDelivery("acc-2", "ping", "", None, 124.0)) is True
    assert log.get(store, "acc-1") == record
    assert log.get(store, "acc-2") == log.AcceptedDelivery("acc-2", "ping", "", None, 124.0)
    assert log.outcome(store, "acc-1") == ("", 0)


def test_a_batch_on_sqlite_waits_for_the_write_lock_another_process_holds(tmp_path: Path) -> None:
    """accept_many on an SQLite file takes ``<database>.write.lock`` (flock) around its
    transaction: while another open file of it holds the lock (as another web process would), the
    batch does not commit; once released, it commits at once."""
    import fcntl
    import threading
    import time

    store = open_store(None, tmp_path)
    database = store.url.removeprefix("sqlite:///")
    other = os.open(f"{database}.write.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(other, fcntl.LOCK_EX)
    results: list[list[bool]] = []
    records = [log.AcceptedDelivery(f"lk-{i}", "push", "o/r", 1, 100.0 + i) for i in range(3)]
    writer = threading.Thread(target=lambda: results.append(log.accept_many(store, records)))
    try:
        writer.start()
        writer.join(0.3)
        assert writer.is_alive() and results == []
        assert log.get(store, "lk-0") is None
    finally:
        fcntl.flock(other, fcntl.LOCK_UN)
        os.close(other)
    started = time.monotonic()
    writer.join(5)
    assert results == [[True, True, True]]
    assert time.monotonic() - started < 1.0  # woken by the release, not after a busy-handler sleep
    assert [log.get(store, f"lk-{i}") for i in range(3)] == records
