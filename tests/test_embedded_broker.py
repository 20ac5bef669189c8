"""The embedded broker (kombu's SQLAlchemy transport on SQLite, tuned): works with the installed
kombu/SQLAlchemy, without warnings, requeues rejected messages, and does not grow forever."""

from __future__ import annotations

import sqlite3
from pathlib import Path

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


def test_delivered_rows_are_deleted(tmp_path: Path) -> None:
    """Delivered messages do not pile up in the file; pending ones are never deleted."""
    with Connection(url(tmp_path)) as conn:
        queue = conn.SimpleQueue("ingest")
        for i in range(5):
            queue.put({"n": i})
        for _ in range(3):
            queue.get(timeout=5).ack()
        assert rows(tmp_path) == (2, 5)
        deleted = conn.default_channel.delete_delivered()
        assert deleted == 3 and rows(tmp_path) == (2, 2)
        assert [queue.get(timeout=5).payload["n"] for _ in range(2)] == [3, 4]
        queue.close()
