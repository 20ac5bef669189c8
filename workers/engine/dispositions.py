"""Which decision stands for each upstream commit, and the reason a ledger entry gives.

Decisions come from two places: git notes written by ``forksync mark`` (or the comment
commands), and the fork's own messages (``Reactor Defer Revision: <sha>``, ``Reactor WontPort
Revision: <sha>``, a bundle's Deferred / Won't-port items; the newest message wins). The notes
win when both exist; the reason always says which source decided. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from workers.engine.decisions import Decision, Decisions, Disposition


@dataclass(frozen=True)
class MessageDecision:
    """A decision a fork commit's message records."""

    sha: str  # the upstream commit
    disposition: Disposition
    fork_commit: str
    where: str  # "trailer" or "section"

    def describe(self) -> str:
        deferred = self.disposition is Disposition.DEFERRED
        if self.where == "trailer":
            source = "its defer trailer" if deferred else "its won't-port trailer"
        else:
            source = "its Deferred section" if deferred else "its Won't-port section"
        return f"{self.disposition.value} by fork commit {self.fork_commit[:12]} ({source})"


@dataclass(frozen=True)
class Standing:
    """The decision that stands on one upstream commit, and where it came from."""

    decision: Decision
    source: str  # "notes" or "message"
    text: str  # how the reason names it


def standing(notes: Decisions, messages: Mapping[str, MessageDecision]) -> dict[str, Standing]:
    """Notes first, then messages, per upstream sha."""
    out: dict[str, Standing] = {}
    for sha, m in messages.items():
        out[sha] = Standing(Decision(sha, m.disposition, m.describe()), "message", m.describe())
    for sha, d in notes.by_sha.items():
        text = f"marked {d.disposition.value} in the decisions notes" + (f": {d.reason}" if d.reason else "")
        if sha in messages:
            text += f" (wins over: {messages[sha].describe()})"
        out[sha] = Standing(d, "notes", text)
    return out


def reason(
    sha: str,
    d: Disposition,
    *,
    carriers: Sequence[tuple[str, str, str | None]],  # (fork commit, recogniser, reverted by)
    merged: bool,
    decision: Standing | None,
    carried: bool,
    behind_frontier: bool,
) -> str:
    """The ledger entry's reason: who carries it (and how it was recognised), what reverted a
    pick, which decision stands and from where, and whether it is a hole behind the frontier."""
    parts: list[str] = []
    for fork_sha, how, reverted in carriers:
        if reverted:
            parts.append(f"pick {fork_sha[:12]} ({how}) reverted by {reverted[:12]}")
        else:
            parts.append(f"picked by {fork_sha[:12]} ({how})")
    if merged:
        parts.append("reachable from the fork (merged)")
    if decision is not None:
        text = decision.text
        if carried and decision.decision.disposition is not Disposition.URGENT:
            text += " (ignored: the fork carries it)"
        parts.append(text)
    elif d is Disposition.URGENT:
        parts.append("the pick is tagged urgent")
    if d is Disposition.PENDING and behind_frontier:
        parts.append("hole behind the frontier (backlog, not marked)")
    return "; ".join(parts)
