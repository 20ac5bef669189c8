"""The two ingestion metrics and their companions, computed from ledger facts (pure).

Definitions (design.md): the frontier is the newest upstream commit that is picked and not
urgent (the base when there is none); the contiguous pin is the newest commit such that every
commit up to it is picked or wont_port (the base when the first one is neither); days behind is
upstream tip committer time minus frontier committer time, in days, never negative; backlog
commits are the commits older than the frontier that are neither picked nor wont_port;
pending counts the commits after the frontier still to take (not carried, not deferred or
wont_port); deferred counts the commits a maintainer marked deferred and the fork lacks.
An unmarked hole behind the frontier has the disposition ``pending`` and is backlog.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workers.engine.decisions import Disposition

SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class Fact:
    """What the ledger knows about one upstream commit before dispositions are final."""

    sha: str
    committer_time: int
    carried: bool  # an active pick or a merge carries it
    urgent: bool  # marked urgent, or carried by a pick tagged [URGENT]
    decision: Disposition | None  # recorded decision (wont_port, deferred, urgent) if any


@dataclass(frozen=True)
class Metrics:
    """Everything ``forksync status --json`` prints. Shas are full; lists are oldest first."""

    base: str
    upstream_tip: str
    fork_tip: str
    frontier: str
    contiguous_pin: str
    days_behind: float
    backlog: int
    backlog_commits: tuple[str, ...]
    pending: int
    picked: int
    wont_port: int
    deferred: int
    urgent: tuple[str, ...]
    upstream_commits: int

    def as_json(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "upstream_tip": self.upstream_tip,
            "fork_tip": self.fork_tip,
            "frontier": self.frontier,
            "contiguous_pin": self.contiguous_pin,
            "days_behind": self.days_behind,
            "backlog": self.backlog,
            "backlog_commits": list(self.backlog_commits),
            "pending": self.pending,
            "picked": self.picked,
            "wont_port": self.wont_port,
            "deferred": self.deferred,
            "urgent": list(self.urgent),
            "upstream_commits": self.upstream_commits,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Metrics:
        return cls(
            base=data["base"],
            upstream_tip=data["upstream_tip"],
            fork_tip=data["fork_tip"],
            frontier=data["frontier"],
            contiguous_pin=data["contiguous_pin"],
            days_behind=float(data["days_behind"]),
            backlog=int(data["backlog"]),
            backlog_commits=tuple(data["backlog_commits"]),
            pending=int(data["pending"]),
            picked=int(data["picked"]),
            wont_port=int(data["wont_port"]),
            deferred=int(data["deferred"]),
            urgent=tuple(data["urgent"]),
            upstream_commits=int(data["upstream_commits"]),
        )


def frontier_position(facts: Sequence[Fact]) -> int:
    """Index of the newest carried, non-urgent commit; -1 when there is none (the base)."""
    for i in range(len(facts) - 1, -1, -1):
        if facts[i].carried and not facts[i].urgent:
            return i
    return -1


def contiguous_position(facts: Sequence[Fact]) -> int:
    """Index of the last commit of the unbroken run of carried/wont_port from the base; -1 if none."""
    pos = -1
    for i, fact in enumerate(facts):
        if fact.carried or fact.decision is Disposition.WONT_PORT:
            pos = i
        else:
            break
    return pos


def disposition(fact: Fact) -> Disposition:
    """The final disposition: history (what is carried) wins over a recorded decision."""
    if fact.carried:
        return Disposition.URGENT if fact.urgent else Disposition.PICKED
    if fact.decision is Disposition.WONT_PORT:
        return Disposition.WONT_PORT
    if fact.decision is Disposition.URGENT:
        return Disposition.URGENT  # marked urgent, not picked yet
    if fact.decision is Disposition.DEFERRED:
        return Disposition.DEFERRED  # a known hole: a maintainer marked it
    # Not taken and not decided: an unmarked hole when behind the frontier (backlog), else not
    # reached yet. Both are PENDING; ``Metrics.pending`` counts only the ones after the frontier.
    return Disposition.PENDING


def compute_metrics(
    facts: Sequence[Fact],
    *,
    base: str,
    base_time: int,
    upstream_tip: str,
    upstream_tip_time: int,
    fork_tip: str,
) -> tuple[Metrics, list[Disposition]]:
    """Metrics and the per-commit dispositions, from facts in upstream order (oldest first)."""
    f = frontier_position(facts)
    pin = contiguous_position(facts)
    final = [disposition(fact) for fact in facts]
    frontier_sha = facts[f].sha if f >= 0 else base
    frontier_time = facts[f].committer_time if f >= 0 else base_time
    days = (
        0.0 if frontier_sha == upstream_tip else max(0, upstream_tip_time - frontier_time) / SECONDS_PER_DAY
    )
    backlog = tuple(
        fact.sha
        for fact in facts[: max(f, 0)]
        if not fact.carried and fact.decision is not Disposition.WONT_PORT
    )
    pending = sum(
        1
        for fact, d in zip(facts[f + 1 :], final[f + 1 :], strict=True)
        if not fact.carried and d not in (Disposition.WONT_PORT, Disposition.DEFERRED)
    )
    metrics = Metrics(
        base=base,
        upstream_tip=upstream_tip,
        fork_tip=fork_tip,
        frontier=frontier_sha,
        contiguous_pin=facts[pin].sha if pin >= 0 else base,
        days_behind=days,
        backlog=len(backlog),
        backlog_commits=backlog,
        pending=pending,
        picked=final.count(Disposition.PICKED),
        wont_port=final.count(Disposition.WONT_PORT),
        deferred=final.count(Disposition.DEFERRED),
        urgent=tuple(fact.sha for fact, d in zip(facts, final, strict=True) if d is Disposition.URGENT),
        upstream_commits=len(facts),
    )
    return metrics, final
