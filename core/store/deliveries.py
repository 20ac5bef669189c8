"""The accepted-delivery log in the SQL store: one insert per accepted webhook delivery, whose
primary key decides duplicates (durable where Redis is not), what each delivery runs, and how far
it got.

The web process calls :func:`accept` before answering 2xx (with the task name and its kwargs);
a redelivery of an id already there is a duplicate, even after Redis was flushed. The webhook
task calls :func:`begin` first (``run``; ``done``: it finished before, never run it again;
``busy``: another worker holds it now), then :func:`finish`; a retry calls :func:`release`.
The replay pass (``workers/jobs/replay_deliveries.py``) reads :func:`unfinished` and sends lost
deliveries again (:func:`mark_replayed`). Command recovery reads :func:`recent_repositories`;
:func:`prune` drops old rows.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, and_, delete, func, insert, or_, select, update

from core.store.db import Store
from core.store.models import AcceptedDeliveryRow

_INSERT = insert(AcceptedDeliveryRow)


@dataclass(frozen=True)
class AcceptedDelivery:
    delivery: str
    event: str
    repo: str
    installation_id: int | None
    accepted_at: float
    task: str = ""
    kwargs: str = ""  # JSON object: the task's kwargs as the web process sent them


@dataclass(frozen=True)
class Unfinished:
    """A logged delivery that did not finish (what the replay planner reads)."""

    delivery: str
    task: str
    kwargs: str
    accepted_at: float
    touched_at: float
    started_at: float | None
    replays: int


# begin()'s answers
RUN = "run"  # this worker now holds the delivery: run it
DONE = "done"  # it finished before: do not run it again
BUSY = "busy"  # another worker holds it (its lease has not expired)
UNKNOWN = "unknown"  # not in the log (sent by something other than the web process): run it


def accept(store: Store, record: AcceptedDelivery) -> bool:
    """Record ``record``; True the first time, False when its delivery id was accepted before."""
    return accept_many(store, [record])[0]


def accept_many(store: Store, records: list[AcceptedDelivery]) -> list[bool]:
    """Record ``records`` in one transaction (the web process's group commit, bot/dispatch.py);
    for each, True the first time, False when its delivery id was accepted before (earlier in the
    list included). Nothing is recorded when it raises."""
    insert = _insert_for(store)
    if not insert.ignores_conflicts:  # a dialect without ON CONFLICT DO NOTHING: one at a time
        return [_accept_one(store, insert, record) for record in records]
    # One INSERT per record and one COMMIT, on a pooled DBAPI connection (the same pool,
    # connect-time pragmas and pre-ping as the engine's): SQLAlchemy's Core execution around the
    # same statements cost as much CPU as SQLite itself (benchmarks/README.md, webhook intake).
    # The store's write lock: on SQLite, the web processes take turns through flock instead of
    # SQLite's sleeping busy handler (Store.write_lock).
    with store.write_lock():
        conn = store.engine.raw_connection()
        try:
            cursor = conn.cursor()
            try:
                firsts = []
                for record in records:
                    cursor.execute(insert.sql, insert.params(_values(record)))
                    firsts.append(cursor.rowcount == 1)  # 0: the id was there (DO NOTHING)
            finally:
                cursor.close()
            conn.commit()
        finally:
            conn.close()  # back to the pool, which rolls back what was not committed
    return firsts


def _accept_one(store: Store, insert: _CompiledInsert, record: AcceptedDelivery) -> bool:
    conn = store.engine.raw_connection()
    try:
        cursor = conn.cursor()
        try:
            cursor.execute(insert.sql, insert.params(_values(record)))
        finally:
            cursor.close()
        conn.commit()
    except insert.integrity_error:
        conn.rollback()
        return False
    finally:
        conn.close()
    return True


def _values(record: AcceptedDelivery) -> dict[str, Any]:
    return {
        "delivery": record.delivery,
        "event": record.event,
        "repo": record.repo,
        "installation_id": record.installation_id,
        "accepted_at": record.accepted_at,
        "task": record.task,
        "kwargs": record.kwargs,
        "touched_at": record.accepted_at,
        "started_by": "",
        "outcome": "",
        "replays": 0,
    }


@dataclass(frozen=True)
class _CompiledInsert:
    """The accepted-delivery INSERT compiled for one engine's dialect (its paramstyle; ``ON
    CONFLICT DO NOTHING`` on SQLite and PostgreSQL), with the dialect's bind processors for the
    columns that have one."""

    sql: str
    keys: tuple[str, ...]
    positional: bool
    processors: tuple[tuple[str, Callable[[Any], Any]], ...]
    integrity_error: type[Exception]
    ignores_conflicts: bool

    def params(self, values: dict[str, Any]) -> Any:
        for key, process in self.processors:
            values[key] = process(values[key])
        return tuple(values[k] for k in self.keys) if self.positional else values


_COMPILED: weakref.WeakKeyDictionary[Engine, _CompiledInsert] = weakref.WeakKeyDictionary()


def _insert_for(store: Store) -> _CompiledInsert:
    found = _COMPILED.get(store.engine)
    if found is None:
        dialect = store.engine.dialect
        keys = (
            "delivery",
            "event",
            "repo",
            "installation_id",
            "accepted_at",
            "task",
            "kwargs",
            "touched_at",
            "started_by",
            "outcome",
            "replays",
        )
        statement: Any = _INSERT
        if dialect.name == "sqlite":
            from sqlalchemy.dialects import sqlite

            statement = sqlite.insert(AcceptedDeliveryRow).on_conflict_do_nothing(index_elements=["delivery"])
        elif dialect.name == "postgresql":
            from sqlalchemy.dialects import postgresql

            statement = postgresql.insert(AcceptedDeliveryRow).on_conflict_do_nothing(
                index_elements=["delivery"]
            )
        compiled = statement.compile(dialect=dialect, column_keys=list(keys))
        columns = AcceptedDeliveryRow.__table__.c
        processors = tuple(
            (key, process)
            for key in keys
            if (process := columns[key].type.dialect_impl(dialect).bind_processor(dialect)) is not None
        )
        found = _CompiledInsert(
            str(compiled),
            tuple(compiled.positiontup or keys) if compiled.positional else keys,
            bool(compiled.positional),
            processors,
            dialect.loaded_dbapi.IntegrityError,
            statement is not _INSERT,
        )
        _COMPILED[store.engine] = found
    return found


def begin(
    store: Store,
    delivery: str,
    now: float,
    lease_s: float,
    holder: str = "",
    holder_gone: Callable[[str], bool] = lambda _: False,
) -> str:
    """Take ``delivery`` for this run (``holder``: who runs it, "host:pid"): :data:`RUN`, or why
    not (:data:`DONE`, :data:`BUSY`), or :data:`UNKNOWN`. Atomic across workers: conditional
    UPDATEs. A holder that died frees it when its lease (the task's time limit) passes, or at once
    when ``holder_gone(its holder)`` says that process is gone (a pool process killed on this host)."""
    row = AcceptedDeliveryRow
    take = (
        update(row)
        .where(
            row.delivery == delivery,
            row.finished_at.is_(None),
            or_(row.started_at.is_(None), row.started_at < now - lease_s),
        )
        .values(started_at=now, started_by=holder, touched_at=now)
    )
    with store.engine.begin() as conn:
        if conn.execute(take).rowcount == 1:
            return RUN
        found = conn.execute(select(row.finished_at, row.started_by).where(row.delivery == delivery)).first()
        if found is None:
            return UNKNOWN
        if found[0] is not None:
            return DONE
        previous = str(found[1] or "")
        if previous and previous != holder and holder_gone(previous):
            took = conn.execute(
                update(row)
                .where(row.delivery == delivery, row.finished_at.is_(None), row.started_by == previous)
                .values(started_at=now, started_by=holder, touched_at=now)
            )
            if took.rowcount == 1:
                return RUN
    return BUSY


def finish(store: Store, delivery: str, outcome: str, now: float) -> None:
    """``delivery`` ran to the end (``done``, or ``failed`` for good): it is never run again."""
    row = AcceptedDeliveryRow
    with store.engine.begin() as conn:
        conn.execute(
            update(row)
            .where(row.delivery == delivery, row.finished_at.is_(None))
            .values(finished_at=now, outcome=outcome, touched_at=now)
        )


def release(store: Store, delivery: str, now: float) -> None:
    """The run of ``delivery`` will be retried: free its lease (the retry takes it again)."""
    row = AcceptedDeliveryRow
    with store.engine.begin() as conn:
        conn.execute(
            update(row)
            .where(row.delivery == delivery, row.finished_at.is_(None))
            .values(started_at=None, started_by="", touched_at=now)
        )


def unfinished(store: Store, touched_before: float, limit: int = 500) -> list[Unfinished]:
    """Deliveries with a task that did not finish and nothing happened to since ``touched_before``,
    oldest first."""
    row = AcceptedDeliveryRow
    query = (
        select(
            row.delivery, row.task, row.kwargs, row.accepted_at, row.touched_at, row.started_at, row.replays
        )
        .where(
            row.finished_at.is_(None),
            row.task != "",
            or_(
                row.touched_at < touched_before,
                and_(row.touched_at.is_(None), row.accepted_at < touched_before),
            ),
        )
        .order_by(row.accepted_at)
        .limit(limit)
    )
    with store.engine.connect() as conn:
        return [
            Unfinished(
                str(d),
                str(t),
                str(k),
                float(a),
                float(tt if tt is not None else a),
                None if s is None else float(s),
                int(r or 0),
            )
            for d, t, k, a, tt, s, r in conn.execute(query)
        ]


def mark_replayed(store: Store, delivery: str, now: float) -> None:
    """``delivery``'s task was sent again: count it and restart its grace period."""
    row = AcceptedDeliveryRow
    with store.engine.begin() as conn:
        conn.execute(
            update(row)
            .where(row.delivery == delivery, row.finished_at.is_(None))
            .values(replays=row.replays + 1, touched_at=now)
        )


def forget(store: Store, delivery: str) -> None:
    """Remove ``delivery`` (its enqueue failed), so that GitHub's redelivery is processed."""
    with store.session() as db:
        db.execute(delete(AcceptedDeliveryRow).where(AcceptedDeliveryRow.delivery == delivery))


def get(store: Store, delivery: str) -> AcceptedDelivery | None:
    with store.session() as db:
        row = db.get(AcceptedDeliveryRow, delivery)
        if row is None:
            return None
        return AcceptedDelivery(
            row.delivery, row.event, row.repo, row.installation_id, row.accepted_at, row.task, row.kwargs
        )


def outcome(store: Store, delivery: str) -> tuple[str, int] | None:
    """(outcome, replays) of ``delivery`` (outcome "" while unfinished), None when not logged."""
    with store.engine.connect() as conn:
        found = conn.execute(
            select(AcceptedDeliveryRow.outcome, AcceptedDeliveryRow.replays).where(
                AcceptedDeliveryRow.delivery == delivery
            )
        ).first()
    return None if found is None else (str(found[0]), int(found[1] or 0))


def recent_repositories(store: Store, since: float) -> list[tuple[str, int]]:
    """(repo, installation id) of every repository that sent a delivery at or after ``since``,
    sorted; the newest installation id of each repository."""
    query = (
        select(AcceptedDeliveryRow.repo, func.max(AcceptedDeliveryRow.installation_id))
        .where(
            AcceptedDeliveryRow.accepted_at >= since,
            AcceptedDeliveryRow.repo != "",
            AcceptedDeliveryRow.installation_id.is_not(None),
        )
        .group_by(AcceptedDeliveryRow.repo)
        .order_by(AcceptedDeliveryRow.repo)
    )
    with store.session() as db:
        return [(str(repo), int(inst or 0)) for repo, inst in db.execute(query)]


def first_accepted(store: Store, repo: str) -> float | None:
    """When the oldest delivery still logged for ``repo`` was accepted (None: none is): since then,
    at least, forksync has been receiving its webhooks."""
    query = select(func.min(AcceptedDeliveryRow.accepted_at)).where(AcceptedDeliveryRow.repo == repo)
    with store.session() as db:
        value = db.execute(query).scalar()
    return None if value is None else float(value)


def prune(store: Store, before: float) -> int:
    """Delete rows accepted before ``before`` (older than GitHub would redeliver); how many."""
    with store.session() as db:
        result = db.execute(delete(AcceptedDeliveryRow).where(AcceptedDeliveryRow.accepted_at < before))
        return int(getattr(result, "rowcount", 0) or 0)
