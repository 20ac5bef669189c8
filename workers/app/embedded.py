"""The embedded broker: kombu's SQLAlchemy transport over SQLite, tuned for one machine.

``forksync serve`` without ``REDIS_URL`` runs web, worker and beat on one machine with the
broker in ``<data dir>/celery-broker.sqlite`` (URL ``embedded+sqlite:///...``) and results in
``db+sqlite:///...``. Three tunings over kombu's stock ``sqla`` transport, which is otherwise used
unchanged:

* its channel hands every transport option to ``sqlalchemy.create_engine``, so the stock
  transport cannot take ``polling_interval`` (it crashes); we strip the transport-only keys and
  poll every :data:`POLL_INTERVAL_S` instead of kombu's default 1 s, which would add a second
  per hop of the ingestion loop;
* several processes (web, worker, beat) write the same SQLite file: connections wait for the
  file lock (``timeout``) instead of failing at once with "database is locked".

* kombu marks a taken message invisible and never looks at it again, so a worker killed with
  messages in hand (SIGKILL of its main process) lost them for good. Here a taken row is
  *leased*: the consumer deletes it when the message is acked (or requeued), renews the lease of
  the rows it holds every :data:`RENEW_EVERY_S` while it is alive, and every consumer makes rows
  whose lease expired visible again. The lease of each queue is its visibility timeout
  (``queue_visibility_timeouts``, from ``core/tasknames.QUEUE_TIME_LIMIT_S`` like Redis's: the
  webhook queue 45 s), so a dead worker's webhook messages run again within a minute and a
  live worker's long run is never taken from it (it keeps renewing). Rows no longer pile up:
  acked rows are deleted at once.
"""

from __future__ import annotations

import collections
import datetime
import logging
import time
import warnings
from queue import Empty
from typing import Any

from kombu.transport import TRANSPORT_ALIASES
from kombu.transport import sqlalchemy as kombu_sqla
from kombu.utils.encoding import bytes_to_str
from kombu.utils.json import loads

from core import tasknames

log = logging.getLogger(__name__)

POLL_INTERVAL_S = 0.2
SQLITE_BUSY_TIMEOUT_S = 30
# A live consumer renews the lease of the rows it holds this often, and restores expired ones.
RENEW_EVERY_S = 5.0
# A queue's lease when the transport options do not name it: its tasks' time limit and a margin
# (core.settings.visibility_for gives the same figures to Redis workers).
LEASE_MARGIN_S = 5

# Options kombu's virtual transport (or this module) reads itself; never forwarded to create_engine.
_TRANSPORT_ONLY = ("polling_interval", "visibility_timeout", "queue_visibility_timeouts")


def default_lease_s(queue: str) -> int:
    """The lease of a queue without a configured one: its time limit plus a margin (unknown: L2's)."""
    try:
        limit = tasknames.queue_time_limit(queue)
    except KeyError:
        limit = max(tasknames.QUEUE_TIME_LIMIT_S.values())
    return limit + (LEASE_MARGIN_S if limit < 120 else 15 * 60)


class Channel(kombu_sqla.Channel):
    _last_renew = 0.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # delivery tag -> row id of each message this channel took and has not acked yet
        self._held: dict[str, int] = {}
        # row ids of messages acked or requeued, deleted by the consumer thread (delete_acked)
        self._acked: collections.deque[int] = collections.deque()
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]

    def lease_s(self, queue: str) -> float:
        """How long a taken message of ``queue`` stays invisible without its consumer renewing it."""
        configured = (self.connection.client.transport_options.get("queue_visibility_timeouts") or {}).get(
            queue
        )
        return float(configured) if configured else float(default_lease_s(queue))

    def _get(self, queue: Any, timeout: Any = None) -> Any:
        self.delete_acked()
        # kombu's _get, keeping the row id of what it takes (its timestamp column is set to now on
        # the update: the lease starts)
        obj = self._get_or_create(queue)  # type: ignore[no-untyped-call]
        if self.session.bind.name == "sqlite":
            from sqlalchemy import text

            self.session.execute(text("BEGIN IMMEDIATE TRANSACTION"))
        try:
            msg = (
                self.session.query(self.message_cls)
                .with_for_update()
                .filter(self.message_cls.queue_id == obj.id)
                .filter(self.message_cls.visible.is_not(False))
                .order_by(self.message_cls.sent_at)
                .order_by(self.message_cls.id)
                .limit(1)
                .first()
            )
            if msg is None:
                raise Empty()
            msg.visible = False
            msg.sent_at = datetime.datetime.now()
            payload = loads(bytes_to_str(msg.payload))  # type: ignore[no-untyped-call]
            tag = (payload.get("properties") or {}).get("delivery_tag") if isinstance(payload, dict) else None
            if tag is not None:
                self._held[str(tag)] = int(msg.id)
            return payload
        finally:
            self.session.commit()

    def drain_events(self, timeout: Any = None, callback: Any = None) -> Any:
        self.delete_acked()
        now = time.monotonic()
        if now - self._last_renew >= RENEW_EVERY_S:
            self._last_renew = now
            self.renew_and_restore()
        return super().drain_events(timeout=timeout, callback=callback)  # type: ignore[no-untyped-call]

    def renew_and_restore(self) -> int:
        """Renew the lease of the rows this channel holds; make visible again the rows of every
        queue it consumes whose lease expired (their consumer died); returns how many it restored."""
        from sqlalchemy import update

        message = self.message_cls
        now = datetime.datetime.now()
        restored = 0
        try:
            if self._held:
                self.session.execute(
                    update(message).where(message.id.in_(list(self._held.values()))).values(sent_at=now)
                )
            for queue in list(self._active_queues):
                obj = self._get_or_create(queue)  # type: ignore[no-untyped-call]
                expired = now - datetime.timedelta(seconds=self.lease_s(queue))
                result = self.session.execute(
                    update(message)
                    .where(
                        message.queue_id == obj.id,
                        message.visible.is_(False),
                        message.sent_at < expired,
                        message.id.not_in(list(self._held.values()) or [-1]),
                    )
                    .values(visible=True, sent_at=now)
                )
                count = int(getattr(result, "rowcount", 0) or 0)
                if count:
                    log.warning(
                        "embedded broker: %d message(s) of queue %s were held by a consumer that stopped "
                        "renewing them for %.0f s (killed); delivering them again",
                        count,
                        queue,
                        self.lease_s(queue),
                    )
                restored += count
        finally:
            self.session.commit()
        return restored

    def _drop(self, delivery_tag: Any) -> None:
        # Acks may come from another thread than the consumer's (kombu's QoS says so), and the
        # channel's session is not thread-safe: queue the row for the consumer thread to delete.
        row = self._held.pop(str(delivery_tag), None)
        if row is not None:
            self._acked.append(row)

    def delete_acked(self) -> int:
        """Delete the rows of messages acked (or requeued) since the last call; how many."""
        from sqlalchemy import delete

        rows = []
        while self._acked:
            rows.append(self._acked.popleft())
        if not rows:
            return 0
        try:
            self.session.execute(delete(self.message_cls).where(self.message_cls.id.in_(rows)))
        finally:
            self.session.commit()
        return len(rows)

    def basic_ack(self, delivery_tag: Any, multiple: bool = False) -> None:
        super().basic_ack(delivery_tag, multiple)  # type: ignore[no-untyped-call]
        self._drop(delivery_tag)

    def basic_reject(self, delivery_tag: Any, requeue: bool = False) -> None:
        super().basic_reject(delivery_tag, requeue)  # type: ignore[no-untyped-call]
        self._drop(delivery_tag)

    def _restore(self, message: Any) -> None:
        # a requeue (reject, worker lost, warm shutdown) writes the message as a new row: the
        # leased one goes, or it would come back a second time when its lease expired
        super()._restore(message)  # type: ignore[no-untyped-call]
        self._drop(message.delivery_tag)

    def _engine_from_config(self) -> Any:
        options = self.connection.client.transport_options
        saved = {key: options.pop(key) for key in _TRANSPORT_ONLY if key in options}
        try:
            options.setdefault("connect_args", {"timeout": SQLITE_BUSY_TIMEOUT_S})
            return super()._engine_from_config()  # type: ignore[no-untyped-call]
        finally:
            options.update(saved)

    def _open(self) -> Any:
        # kombu's models use SQLAlchemy's ``noload`` strategy, deprecated in SQLAlchemy 2.1;
        # the warning fires once, when the mappers are configured on first use. It is kombu's
        # to fix and harmless here, and tests turn warnings into errors, so configure quietly.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*noload.*", category=DeprecationWarning)
            result = super()._open()  # type: ignore[no-untyped-call]
            from sqlalchemy.orm import configure_mappers

            configure_mappers()
        return result


class Transport(kombu_sqla.Transport):
    Channel = Channel
    polling_interval = POLL_INTERVAL_S


def register() -> None:
    """Make ``embedded+sqlite:///...`` broker URLs resolve to :class:`Transport` (idempotent)."""
    TRANSPORT_ALIASES.setdefault("embedded", "workers.app.embedded:Transport")


register()
