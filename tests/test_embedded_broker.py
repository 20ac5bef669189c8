"""The embedded broker (kombu's SQLAlchemy transport on SQLite, tuned): works with the installed
kombu/SQLAlchemy, without warnings, requeues rejected messages, and does not grow forever."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path
from queue import Empty

import pytest
from kombu import Connection

from workers.app import embedded


def url(tmp_path: Path) -> str:
    embedded.register()
    return f"embedded+sqlite:///{tmp_path / 'broker.sqlite'}"


def rows(tmp_path: Path) -> tuple[int, int]:
    db = sqlite3.connect(tmp_path / "broker.sqlite")
    try:
        visible = db.execute("SELECT COUNT(*) FROM kombu_message WHERE visible = 1").fetchone()[0]
        total = db.execute("SELECT COUNT(*) FROM kombu_message").fetchone()[0]
        return int(visible), int(total)
    finally:
        db.close()


def test_messages_round_trip_in_order(tmp_path: Path) -> None:
    """What is put comes out once, in order, with the transport's tuned polling (no warnings raised)."""
    with Connection(url(tmp_path)) as conn:
        assert conn.transport.polling_interval == embedded.POLL_INTERVAL_S
        queue = conn.SimpleQueue("ingest")
        for i in range(3):
            queue.put({"n": i})
        got = []
        for _ in range(3):
            message = queue.get(timeout=5)
            got.append(message.payload["n"])
            message.ack()
        assert got == [0, 1, 2]
        assert rows(tmp_path)[0] == 0
        queue.close()


def test_rejected_message_is_requeued(tmp_path: Path) -> None:
    """A message rejected with requeue (what a lost pool process causes) is delivered again."""
    with Connection(url(tmp_path)) as conn:
        queue = conn.SimpleQueue("ingest")
        queue.put({"n": 1})
        first = queue.get(timeout=5)
        first.reject(requeue=True)
        again = queue.get(timeout=5)
        assert again.payload == {"n": 1}
        again.ack()
        queue.close()


def test_acked_rows_are_deleted_and_held_ones_kept(tmp_path: Path) -> None:
    """Delivered messages do not pile up in the file: an acked row goes at once; a taken, unacked
    one stays (invisible) until its consumer acks it; pending ones are never deleted."""
    with Connection(url(tmp_path)) as conn:
        queue = conn.SimpleQueue("ingest")
        for i in range(5):
            queue.put({"n": i})
        for _ in range(3):
            queue.get(timeout=5).ack()
        conn.default_channel.delete_acked()  # the consumer thread's next poll does it
        assert rows(tmp_path) == (2, 2)
        held = queue.get(timeout=5)
        assert rows(tmp_path) == (1, 2)
        held.ack()
        assert conn.default_channel.delete_acked() == 1
        assert rows(tmp_path) == (1, 1)
        assert queue.get(timeout=5).payload["n"] == 4
        queue.close()


def _killed(conn: Connection) -> None:
    """Drop ``conn`` as a SIGKILL would: nothing acked, nothing requeued on the way out."""
    conn.default_channel.qos.restore_at_shutdown = False
    conn.close()


def test_a_killed_consumers_message_comes_back_after_its_queues_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14 finding 5 on the embedded broker: a message taken by a consumer that died is
    delivered again once its queue's lease passes (1 s here; 45 s for the webhook queue), and a
    consumer that is alive keeps renewing what it holds, so it is never handed out twice."""
    monkeypatch.setattr(embedded, "RENEW_EVERY_S", 0.1)
    options = {"queue_visibility_timeouts": {"github": 1}}
    dead = Connection(url(tmp_path), transport_options=options)
    dead.SimpleQueue("github").put({"n": 1})
    taken = dead.SimpleQueue("github").get(timeout=5)
    assert taken.payload == {"n": 1}
    _killed(dead)
    with Connection(url(tmp_path), transport_options=options) as conn:
        queue = conn.SimpleQueue("github")
        started = time.monotonic()
        again = queue.get(timeout=10)
        assert again.payload == {"n": 1} and 0.5 < time.monotonic() - started < 5
        # held by this live consumer past the lease: renewed, not delivered to a second consumer
        with Connection(url(tmp_path), transport_options=options) as other:
            rival = other.SimpleQueue("github")
            deadline = time.monotonic() + 2.5
            while time.monotonic() < deadline:
                with contextlib.suppress(Empty):
                    queue.get(timeout=0.2)  # keeps this consumer's channel draining (renewing)
                with pytest.raises(Empty):
                    rival.get(timeout=0.2)
            rival.close()
        again.ack()
        conn.default_channel.delete_acked()
        assert rows(tmp_path) == (0, 0)
        queue.close()


def test_webhook_queue_leases_are_under_a_minute_and_long_queues_outlast_their_runs(tmp_path: Path) -> None:
    from core import tasknames
    from core.settings import WorkerSettings
    from workers.app.celery_app import celery_config

    config = celery_config(WorkerSettings.from_mapping({"FORKSYNC_DATA_DIR": str(tmp_path / "data")}))
    leases = config["broker_transport_options"]["queue_visibility_timeouts"]
    assert leases[tasknames.Q_GITHUB] < 60
    for queue in tasknames.QUEUES:
        assert leases[queue] > tasknames.QUEUE_TIME_LIMIT_S[queue]
    tuned = celery_config(
        WorkerSettings.from_mapping(
            {"FORKSYNC_DATA_DIR": str(tmp_path / "data"), "FORKSYNC_VISIBILITY_TIMEOUT_S": "3"}
        )
    )
    assert set(tuned["broker_transport_options"]["queue_visibility_timeouts"].values()) == {3}
