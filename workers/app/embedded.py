"""The embedded broker: kombu's SQLAlchemy transport over SQLite, tuned for one machine.

``forksync serve`` without ``REDIS_URL`` runs web, worker and beat on one machine with the
broker in ``<data dir>/celery-broker.sqlite`` (URL ``embedded+sqlite:///...``) and results in
``db+sqlite:///...``. Two tunings over kombu's stock ``sqla`` transport, which is otherwise used
unchanged:

* its channel hands every transport option to ``sqlalchemy.create_engine``, so the stock
  transport cannot take ``polling_interval`` (it crashes); we strip the transport-only keys and
  poll every :data:`POLL_INTERVAL_S` instead of kombu's default 1 s, which would add a second
  per hop of the ingestion loop;
* several processes (web, worker, beat) write the same SQLite file: connections wait for the
  file lock (``timeout``) instead of failing at once with "database is locked".

* kombu keeps every delivered message as an invisible row forever, so the file would grow
  without bound; we delete invisible rows every :data:`CLEANUP_EVERY` polls. That is safe: a
  taken message lives on in the worker's memory until acked, and a requeue (reject, worker
  lost, warm shutdown) writes it again as a new row.

Limitation (why Redis is the production broker): a message is invisible once taken, so if the
worker's *main* process dies by SIGKILL with messages in hand, they are lost; when only a pool
process dies (``task_reject_on_worker_lost``) or on a warm shutdown (SIGTERM), they are requeued.
"""

from __future__ import annotations

import warnings
from typing import Any

from kombu.transport import TRANSPORT_ALIASES
from kombu.transport import sqlalchemy as kombu_sqla

POLL_INTERVAL_S = 0.2
CLEANUP_EVERY = 200
SQLITE_BUSY_TIMEOUT_S = 30

# Options kombu's virtual transport reads itself; never forwarded to create_engine.
_TRANSPORT_ONLY = ("polling_interval", "visibility_timeout")


class Channel(kombu_sqla.Channel):
    _polls = 0

    def _get(self, queue: Any, timeout: Any = None) -> Any:
        self._polls += 1
        if self._polls % CLEANUP_EVERY == 0:
            self.delete_delivered()
        return super()._get(queue)  # type: ignore[no-untyped-call]

    def delete_delivered(self) -> int:
        """Delete the rows of messages already handed to a consumer; returns how many."""
        from sqlalchemy import delete

        try:
            result = self.session.execute(delete(self.message_cls).where(self.message_cls.visible.is_(False)))
            return int(getattr(result, "rowcount", 0) or 0)
        finally:
            self.session.commit()

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
