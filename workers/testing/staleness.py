"""The L1 staleness watchdog: checks that a dead queue never finishes, trunk results that stop.

A worker records each ``forksync / L1`` check it leaves queued or in progress
(:class:`PendingChecks`, in the shared store), with a deadline of its suites' timeouts plus
``l1.stale_margin_minutes``, and forgets it when the check completes. Trunk pushes are recorded
when their L1 run is enqueued. Beat runs :func:`plan` over those records: a check past its
deadline is concluded ``timed_out`` with the reason, and the queue it waited on gets an
infrastructure issue; a trunk push with no trunk result recorded after it within
``schedule.trunk_silent_minutes`` is reported too. An open PR head with no L1 check at all past
its deadline (the job was lost before it created one) gets one, concluded ``timed_out`` with the
reason, and the queue where jobs start gets the issue. Pure decisions here; the executor is
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


@dataclass(frozen=True)
class UncheckedHead:
    """An open PR's head on which no ``forksync / L1`` check run exists: its L1 job was never
    enqueued, or no worker took it, or it died before creating the check. ``deadline``: its last
    update plus the trunk's suites' timeouts and ``l1.stale_margin_minutes``."""

    repo: str
    number: int
    head_sha: str
    installation_id: int
    updated_at: float
    deadline: float


@dataclass(frozen=True)
class ConcludeNeverStarted:
    """Create the missing ``forksync / L1`` check on ``head``, concluded ``timed_out`` with ``reason``."""

    head: UncheckedHead
    queue: str
    reason: str


Action = ConcludeTimedOut | ConcludeNeverStarted | ReportQueue | ReportTrunkSilent

# Where every L1 job starts (its default route): a job that never created its check was lost there.
FIRST_QUEUE = "l1-cpu"


def plan(
    pending: Iterable[PendingCheck],
    trunk_pushes: Iterable[TrunkPush],
    last_trunk_result: Mapping[str, float | None],
    *,
    now: float,
    trunk_silent_s: float,
    unchecked: Iterable[UncheckedHead] = (),
) -> list[Action]:
    """What the watchdog does now: conclude every check past its deadline, create and conclude
    the check of every open PR head that has none past its deadline (then one issue per
    repository and queue), and report each trunk whose newest push has no result after it."""
    actions: list[Action] = []
    stale = sorted((c for c in pending if c.deadline <= now), key=lambda c: (c.repo, c.queue, c.started_at))
    lost = sorted((h for h in unchecked if h.deadline <= now), key=lambda h: (h.repo, h.number))
    pending_heads = {(c.repo, c.head_sha) for c in pending}
    lost = [h for h in lost if (h.repo, h.head_sha) not in pending_heads]  # a check exists: the rule above
    for check in stale:
        waited = (now - check.started_at) / 60
        actions.append(
            ConcludeTimedOut(
                check,
                (
                    f"No runner finished this check: it waited {waited:.0f} min on the `{check.queue}` queue, past its "
                    f"suites' timeouts and the watchdog's margin. The queue may have no live worker; the maintainers "
                    f"have an infrastructure issue for it. Comment `/retest` to run L1 again."
                ),
            )
        )
    for head in lost:
        waited = (now - head.updated_at) / 60
        actions.append(
            ConcludeNeverStarted(
                head,
                FIRST_QUEUE,
                (
                    f"No L1 check was ever created for this head: {waited:.0f} min after the PR last changed, past the "
                    f"suites' timeouts and the watchdog's margin, no worker had started its L1 job. The job was never "
                    f"enqueued, or no worker takes the `{FIRST_QUEUE}` queue, or it died before starting; the maintainers "
                    f"have an infrastructure issue for it. Comment `/retest` (or re-run this check) to run L1 again."
                ),
            )
        )
    by_queue: dict[tuple[str, str], list[PendingCheck]] = {}
    for check in stale:
        by_queue.setdefault((check.repo, check.queue), []).append(check)
    for head in lost:  # as a check of id 0: the executor fills in the one it creates
        by_queue.setdefault((head.repo, FIRST_QUEUE), []).append(
            PendingCheck(
                head.repo, 0, head.head_sha, head.installation_id, FIRST_QUEUE, head.updated_at, head.deadline
            )
        )
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
            db.merge(
                PendingCheckRow(
                    repo=check.repo,
                    check_run_id=check.check_run_id,
                    head_sha=check.head_sha,
                    installation_id=check.installation_id,
                    queue=check.queue,
                    started_at=check.started_at,
                    deadline=check.deadline,
                )
            )

    def forget(self, repo: str, check_run_id: int) -> None:
        with self.store.session() as db:
            db.execute(
                delete(PendingCheckRow).where(
                    PendingCheckRow.repo == repo, PendingCheckRow.check_run_id == check_run_id
                )
            )

    def all(self) -> list[PendingCheck]:
        with self.store.session() as db:
            rows = list(db.scalars(select(PendingCheckRow).order_by(PendingCheckRow.started_at)))
        return [
            PendingCheck(
                r.repo, r.check_run_id, r.head_sha, r.installation_id, r.queue, r.started_at, r.deadline
            )
            for r in rows
        ]


def deadline_for(timeouts: Sequence[int], margin_minutes: int, *, now: float | None = None) -> float:
    """When a check whose suites have these timeouts is stale: all of them run, plus the margin."""
    return (time.time() if now is None else now) + sum(timeouts) + margin_minutes * 60


TRUNK_PUSH_SERIES = "l1-trunk-pushes:"


def trunk_push_series(repo: str) -> str:
    """The series name of a repository's trunk pushes (``workers.adapters.state.SeriesStore``)."""
    return f"{TRUNK_PUSH_SERIES}{repo}"
