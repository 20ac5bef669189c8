"""The L1 staleness watchdog: checks that a dead queue never finishes, trunk results that stop.

A worker records each ``forksync / L1`` check it leaves queued or in progress
(:class:`PendingChecks`, in the shared store), with a deadline of its suites' timeouts plus
``l1.stale_margin_minutes``, and forgets it when the check completes. Trunk pushes are recorded
when their L1 run is enqueued. Beat runs :func:`plan` over those records: a check past its
deadline is concluded ``timed_out`` with the reason, and the queue it waited on gets an
infrastructure issue; a trunk push with no trunk result recorded after it within
``schedule.trunk_silent_minutes`` is reported too. Pure decisions here; the executor is
``workers/jobs/l1_watchdog.py``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import delete, select

from core.store import Store
from core.store.models import PendingCheckRow


@dataclass(frozen=True)
class PendingCheck:
    """An L1 check run we left queued or in progress, waiting on ``queue``."""

    repo: str
    check_run_id: int
    head_sha: str
    installation_id: int
    queue: str
    started_at: float
    deadline: float


@dataclass(frozen=True)
class TrunkPush:
    """The newest push to a repository's trunk whose L1 run was enqueued."""

    repo: str
    sha: str
    pushed_at: float
    installation_id: int


@dataclass(frozen=True)
class ConcludeTimedOut:
    check: PendingCheck
    reason: str


@dataclass(frozen=True)
class ReportQueue:
    """File or update the infrastructure issue of a queue that left checks unfinished."""

    repo: str
    installation_id: int
    queue: str
    checks: tuple[PendingCheck, ...]


@dataclass(frozen=True)
class ReportTrunkSilent:
    push: TrunkPush
    last_recorded_at: float | None
    waited_s: float


Action = ConcludeTimedOut | ReportQueue | ReportTrunkSilent


def plan(
    pending: Iterable[PendingCheck],
    trunk_pushes: Iterable[TrunkPush],
    last_trunk_result: Mapping[str, float | None],
    *,
    now: float,
    trunk_silent_s: float,
) -> list[Action]:
    """What the watchdog does now: conclude every check past its deadline (then one issue per
    repository and queue), and report each trunk whose newest push has no result after it."""
    actions: list[Action] = []
    stale = sorted((c for c in pending if c.deadline <= now), key=lambda c: (c.repo, c.queue, c.started_at))
    for check in stale:
        waited = (now - check.started_at) / 60
        actions.append(ConcludeTimedOut(check, (
            f"No runner finished this check: it waited {waited:.0f} min on the `{check.queue}` queue, past its "
            f"suites' timeouts and the watchdog's margin. The queue may have no live worker; the maintainers "
            f"have an infrastructure issue for it. Comment `/retest` to run L1 again."
        )))
    by_queue: dict[tuple[str, str], list[PendingCheck]] = {}
    for check in stale:
        by_queue.setdefault((check.repo, check.queue), []).append(check)
    for (repo, queue), checks in sorted(by_queue.items()):
        actions.append(ReportQueue(repo, checks[0].installation_id, queue, tuple(checks)))
    for push in sorted(trunk_pushes, key=lambda p: p.repo):
        last = last_trunk_result.get(push.repo)
        waited = now - push.pushed_at
        if waited >= trunk_silent_s and (last is None or last < push.pushed_at):
            actions.append(ReportTrunkSilent(push, last, waited))
    return actions


class PendingChecks:
    """The L1 checks left queued or in progress, in the shared store (survives a Redis flush)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def remember(self, check: PendingCheck) -> None:
        """Record ``check`` (again: a hand-over to another queue moves its queue and deadline)."""
        with self.store.session() as db:
            db.merge(PendingCheckRow(
                repo=check.repo, check_run_id=check.check_run_id, head_sha=check.head_sha,
                installation_id=check.installation_id, queue=check.queue, started_at=check.started_at,
                deadline=check.deadline,
            ))

    def forget(self, repo: str, check_run_id: int) -> None:
        with self.store.session() as db:
            db.execute(delete(PendingCheckRow).where(
                PendingCheckRow.repo == repo, PendingCheckRow.check_run_id == check_run_id))

    def all(self) -> list[PendingCheck]:
        with self.store.session() as db:
            rows = list(db.scalars(select(PendingCheckRow).order_by(PendingCheckRow.started_at)))
        return [PendingCheck(r.repo, r.check_run_id, r.head_sha, r.installation_id, r.queue, r.started_at, r.deadline)
                for r in rows]


def deadline_for(timeouts: Sequence[int], margin_minutes: int, *, now: float | None = None) -> float:
    """When a check whose suites have these timeouts is stale: all of them run, plus the margin."""
    return (time.time() if now is None else now) + sum(timeouts) + margin_minutes * 60


TRUNK_PUSH_SERIES = "l1-trunk-pushes:"


def trunk_push_series(repo: str) -> str:
    """The series name of a repository's trunk pushes (``workers.adapters.state.SeriesStore``)."""
    return f"{TRUNK_PUSH_SERIES}{repo}"
