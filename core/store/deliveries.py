"""The accepted-delivery log in the SQL store: one insert per accepted webhook delivery, whose
primary key decides duplicates (durable where Redis is not), and the reads recovery needs.

The web process calls :func:`accept` before answering 2xx; a redelivery of an id already there
is a duplicate, even after Redis was flushed. Workers read :func:`recent_repositories` (which
repositories and installations sent deliveries lately: where missed comment commands are looked
for) and :func:`prune` old rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, func, insert, select
from sqlalchemy.exc import IntegrityError

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


def accept(store: Store, record: AcceptedDelivery) -> bool:
    """Record ``record``; True the first time, False when its delivery id was accepted before."""
    try:  # one Core INSERT on a pooled connection: the web request's only store round trip
        with store.engine.begin() as conn:
            conn.execute(_INSERT, {"delivery": record.delivery, "event": record.event, "repo": record.repo,
                                   "installation_id": record.installation_id, "accepted_at": record.accepted_at})
    except IntegrityError:
        return False
    return True


def forget(store: Store, delivery: str) -> None:
    """Remove ``delivery`` (its enqueue failed), so that GitHub's redelivery is processed."""
    with store.session() as db:
        db.execute(delete(AcceptedDeliveryRow).where(AcceptedDeliveryRow.delivery == delivery))


def get(store: Store, delivery: str) -> AcceptedDelivery | None:
    with store.session() as db:
        row = db.get(AcceptedDeliveryRow, delivery)
        if row is None:
            return None
        return AcceptedDelivery(row.delivery, row.event, row.repo, row.installation_id, row.accepted_at)


def recent_repositories(store: Store, since: float) -> list[tuple[str, int]]:
    """(repo, installation id) of every repository that sent a delivery at or after ``since``,
    sorted; the newest installation id of each repository."""
    query = (select(AcceptedDeliveryRow.repo, func.max(AcceptedDeliveryRow.installation_id))
             .where(AcceptedDeliveryRow.accepted_at >= since, AcceptedDeliveryRow.repo != "",
                    AcceptedDeliveryRow.installation_id.is_not(None))
             .group_by(AcceptedDeliveryRow.repo).order_by(AcceptedDeliveryRow.repo))
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
