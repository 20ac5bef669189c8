"""Lost deliveries sent again (issue 14, finding 4), for every event kind.

The web process logs each accepted delivery with its task and kwargs (``core/store/deliveries.py``)
before it answers 2xx; the webhook task marks it finished. A delivery that stays unfinished with
nothing happening to it for the grace period was lost between the two: its message vanished in a
Redis restart without persistence, or a worker on the embedded broker was killed holding it.
:func:`plan` (pure, from the log's rows) decides what to send again; :func:`replay_deliveries`
(at worker start-up and by beat, ``forksync.replay_deliveries``) sends it by name. A replayed copy
that meets a finished delivery, or one another worker holds, does not run (``deliveries.begin``),
so nothing runs again after it completed.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from core.store import Store, deliveries

log = logging.getLogger(__name__)

# A delivery untouched this long (accepted, started, retried or replayed) is taken as lost. Above
# a webhook task's time limit (40 s) and a queue's normal wait; a replay of one that was only slow
# meets it finished (or held) and does not run.
GRACE_S = 5 * 60
# A delivery sent this often without finishing is given up on (and said so in the log): its task
# kills its worker, or its arguments can never run.
MAX_REPLAYS = 3


@dataclass(frozen=True)
class Replay:
    """Send ``task`` with ``kwargs`` again: delivery ``delivery`` was lost."""

    delivery: str
    task: str
    kwargs: dict[str, Any]
    attempt: int
    accepted_at: float


@dataclass(frozen=True)
class GiveUp:
    """Stop replaying ``delivery``; ``why`` goes to the log."""

    delivery: str
    task: str
    why: str


def plan(
    rows: Sequence[deliveries.Unfinished], *, known_tasks: frozenset[str], max_replays: int = MAX_REPLAYS
) -> list[Replay | GiveUp]:
    """What to do with each unfinished delivery past its grace period (rows from ``deliveries.unfinished``)."""
    actions: list[Replay | GiveUp] = []
    for row in rows:
        if row.task not in known_tasks:
            actions.append(GiveUp(row.delivery, row.task, f"task {row.task!r} is not one this version runs"))
            continue
        try:
            kwargs = json.loads(row.kwargs) if row.kwargs else None
        except ValueError:
            kwargs = None
        if not isinstance(kwargs, dict):
            actions.append(GiveUp(row.delivery, row.task, "its logged kwargs are not a JSON object"))
            continue
        if row.replays >= max_replays:
            actions.append(GiveUp(row.delivery, row.task, f"sent {row.replays + 1} times and never finished"))
            continue
        actions.append(Replay(row.delivery, row.task, kwargs, row.replays + 1, row.accepted_at))
    return actions


def replay_deliveries(
    store: Store,
    send_task: Callable[[str, dict[str, Any]], None],
    *,
    known_tasks: frozenset[str],
    now: float | None = None,
    grace_s: float = GRACE_S,
    max_replays: int = MAX_REPLAYS,
) -> list[Replay | GiveUp]:
    """One replay pass; returns what it did. A send that fails (broker down) is logged and left
    for the next pass."""
    now = time.time() if now is None else now
    done: list[Replay | GiveUp] = []
    for action in plan(
        deliveries.unfinished(store, now - grace_s), known_tasks=known_tasks, max_replays=max_replays
    ):
        if isinstance(action, GiveUp):
            log.error(
                "delivery %s (%s) is not sent again: %s; redeliver it from the App's advanced settings "
                "once the cause is fixed",
                action.delivery,
                action.task,
                action.why,
            )
            deliveries.finish(store, action.delivery, "abandoned", now)
            done.append(action)
            continue
        try:
            send_task(action.task, action.kwargs)
        except Exception as exc:  # kombu/redis raise many types; the next pass tries again
            log.warning(
                "delivery %s (%s) could not be sent again (%s); the next pass retries",
                action.delivery,
                action.task,
                type(exc).__name__,
            )
            continue
        deliveries.mark_replayed(store, action.delivery, now)
        log.warning(
            "delivery %s (%s) was accepted %.0f s ago and never finished (its message was lost); "
            "sent again (attempt %d)",
            action.delivery,
            action.task,
            now - action.accepted_at,
            action.attempt,
        )
        done.append(action)
    return done
