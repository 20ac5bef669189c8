"""Durable chains that heal: recorded chains re-checked against the current rules before each walk.

A chain recorded by an earlier run may no longer hold together: its seed is carried by the fork
now (picked, or landed by hand), or its members were linked under a coarser rule (``risk.link:
file``) and do not depend on each other by lines or definitions. Before the partition walks,
:func:`heal` re-reads each recorded chain in upstream order with the same link index the walk
uses (:class:`workers.engine.links.ChainLinks`):

* a member the rules put there by a link (``line``, ``symbol``, ``file``, ``pick``) stays only
  while it still links to an earlier member kept in the chain; otherwise it is **released** (it
  goes back to the walk, which may bundle it or put it in another chain);
* a member placed by hand (``manual``) stays where it was put;
* a member risky by itself (``conflict``, ``diverged_zone``, ``risky_path``, ``size``) stays; when
  it links to no earlier kept member, it starts a part of its own and the chain is **split** (the
  first part keeps the id; the others are named from their first member);
* a chain left with nothing is **dissolved**.

Each change comes with a one-line note for the plan. Pure: plain records and changes in,
records and notes out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from workers.engine.links import ChainLinks
from workers.engine.partition.records import ChainRecord, Change, Reason

LINK_KINDS = frozenset({"line", "symbol", "file", "pick"})


@dataclass(frozen=True)
class HealNote:
    """What healing did to one recorded chain, for the plan and the chain's PR."""

    chain: str
    action: str  # "released", "split", "dissolved"
    text: str


def heal(
    records: Sequence[ChainRecord],
    changes: Mapping[str, Change],
    order: Sequence[str],
    link: str,
    carried: frozenset[str] = frozenset(),
) -> tuple[tuple[ChainRecord, ...], tuple[HealNote, ...]]:
    """The recorded chains re-checked (module docstring); ``changes`` must hold every member to place."""
    position = {sha: i for i, sha in enumerate(order)}
    taken = {r.id for r in records}
    out: list[ChainRecord] = []
    notes: list[HealNote] = []
    for record in sorted(records, key=lambda r: r.id):
        pending = sorted((s for s in record.commits if s in position), key=position.__getitem__)
        if not pending:
            out.append(record)  # closed or waiting (deferred members): the walk drops or keeps it
            continue
        parts, released = _regroup(record, pending, changes, link)
        seed = record.commits[0] if record.commits else None
        why = (
            f"its seed {seed[:7]} is carried by the fork now"
            if seed in carried
            else (f"under risk.link: {link} they no longer depend on the chain")
        )
        if not parts:
            notes.append(
                HealNote(
                    record.id,
                    "dissolved",
                    f"{record.id} dissolved: none of its {len(pending)} "
                    f"pending commit(s) depends on another ({why}); they are placed afresh",
                )
            )
            continue
        ids = [record.id]
        for part in parts[1:]:
            base = f"chain-{part[0][:7]}"
            new_id, n = base, 2
            while new_id in taken:
                new_id, n = f"{base}-{n}", n + 1
            taken.add(new_id)
            ids.append(new_id)
        reasons = {r.commit: r for r in record.reasons}
        kept_picked = [s for s in record.commits if s not in position]
        for i, (chain_id, part) in enumerate(zip(ids, parts, strict=True)):
            members = (*kept_picked, *part) if i == 0 else tuple(part)
            out.append(
                ChainRecord(
                    chain_id,
                    tuple(members),
                    tuple(reasons.get(s) or Reason(s, "manual", f"recorded in {record.id}") for s in members),
                    record.excluded if i == 0 else (),
                )
            )
        if released:
            notes.append(
                HealNote(
                    record.id,
                    "released",
                    f"{record.id}: {len(released)} commit(s) released ({why}): " + _list(released),
                )
            )
        if len(parts) > 1:
            notes.append(
                HealNote(
                    record.id,
                    "split",
                    f"{record.id} split: {', '.join(ids[1:])} no longer depend on its first part",
                )
            )
    return tuple(sorted(out, key=lambda r: r.id)), tuple(notes)


def _regroup(
    record: ChainRecord, pending: Sequence[str], changes: Mapping[str, Change], link: str
) -> tuple[list[list[str]], list[str]]:
    """(parts that still hold together, in upstream order; released members)."""
    index = ChainLinks(link)
    alias: dict[str, str] = {}

    def find(part: str) -> str:
        while part in alias:
            part = alias[part]
        return part

    parts: dict[str, list[str]] = {}
    released: list[str] = []
    reasons = {r.commit: r for r in record.reasons}
    for sha in pending:
        change = changes[sha]
        linked = sorted(
            {find(c) for c in index.links_of(change, find)}, key=lambda p: parts[p][0] if p in parts else ""
        )
        reason = reasons.get(sha)
        kind = reason.kind if reason is not None else "manual"
        if not linked and kind in LINK_KINDS:
            released.append(sha)
            continue
        if not linked and kind == "manual" and parts:
            linked = [min(parts, key=lambda p: pending.index(parts[p][0]))]  # put there by hand: it stays
        if (
            not linked
            and parts
            and all(reasons_kind(reasons, m) == "manual" for p in parts.values() for m in p)
        ):
            linked = list(parts)  # the chain so far is what a maintainer put there: this joins it
        if linked:
            keep = min(linked, key=lambda p: pending.index(parts[p][0]))
            for other in linked:
                if other != keep:
                    parts[keep] += parts.pop(other)
                    alias[other] = keep
            parts[keep].append(sha)
            target = keep
        else:
            target = f"part-{len(parts) + len(alias)}"
            parts[target] = [sha]
        index.add(target, sha, change.paths, change.symbols, change.defined, change.introduced)
    ordered = sorted(
        (sorted(p, key=pending.index) for p in parts.values()), key=lambda p: pending.index(p[0])
    )
    return ordered, released


def reasons_kind(reasons: Mapping[str, Reason], sha: str) -> str:
    reason = reasons.get(sha)
    return reason.kind if reason is not None else "manual"


def _list(shas: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(s[:7] for s in shas[:limit])
    return shown + (f" and {len(shas) - limit} more" if len(shas) > limit else "")
