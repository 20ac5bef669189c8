"""Stacks: a walk bundle that dependencies carried past its bound, as bounded, stacked bundles.

A bundle that dependencies carried past ``bundle.max_commits`` (or ``max_lines``) is
split, in upstream order, into bounded bundles. A split part whose members depend on an earlier
part is **stacked** on it (``Bundle.stacked_on``: its PR is based on that part's branch, and
lands after it; ``Bundle.needs`` says which lines or symbols tie it there); a part that depends on
no earlier part stays on the trunk. A part is stacked on the latest part it depends on when that
part's own stack holds every other part it needs (else on the first later part whose stack
does); when none does, the whole group is stacked in line (each part on the one before). A bundle whose PR a maintainer closed unmerged (``declined``) is
not a base any more: the members of the parts stacked on it that need it (directly, or through
another member that does) move to it, and those parts are re-based without it
(``Bundle.unstacked_from``, ``Bundle.left_behind``). A declined bundle stays in the plan
(``Bundle.declined``) holding its members, and is not rebuilt: its branch stays as it was closed.
A part is named by its first commit unless it still holds most of a bundle recorded by the last
build (``parts``, :func:`workers.engine.parts.keep_ids`): then it keeps that bundle's id, so its
branch and PR survive the re-cut.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from workers.engine.links import Link
from workers.engine.partition.records import Bundle, Reason

if TYPE_CHECKING:
    from workers.engine.partition.walk import OpenBundle


def stack(
    group: OpenBundle,
    parts: Sequence[Sequence[str]],
    ids: Sequence[str],
    needs: Mapping[str, Mapping[str, Link]],
    lines: Mapping[str, int],
    position: Mapping[str, int],
    declined: frozenset[str],
    emptied: list[tuple[str, str]],
) -> list[Bundle]:
    """One walk bundle, cut into ``parts`` (``split``) named ``ids``, as bounded bundles: each part
    stacked on the part it depends on, nothing stacked on a declined part (the module
    docstring). A part whose members all moved to a declined bundle is appended to ``emptied`` as
    (its id, the declined id)."""
    members = sorted(group.members, key=position.__getitem__)
    # Joins name the walk's bundle by its first commit; that name stands for the group's first part,
    # which may have kept a recorded id: name that.
    joins = [_renamed(r, group.id, ids[0]) for r in group.joined]
    if len(parts) == 1:
        return [Bundle(ids[0], tuple(members), group.lines, tuple(joins), declined=ids[0] in declined)]
    joined = {r.commit: r for r in joins}
    first_of = {sha: k for k, part in enumerate(parts) for sha in part}
    planned = _bases(parts, needs, set())
    # Whoever needs a member of a declined part (directly, or through a member that moved) moves to it.
    home = dict(first_of)
    left: dict[int, list[Reason]] = {}
    for k, part in enumerate(parts):
        if ids[k] in declined:
            continue
        for sha in part:
            for need in sorted(needs.get(sha, {}), key=position.__getitem__):
                to = home.get(need)
                if to is not None and to != k and ids[to] in declined:
                    home[sha] = to
                    why = _named(needs[sha][need].detail, need, ids[to])
                    left.setdefault(k, []).append(
                        Reason(sha, needs[sha][need].kind, f"{why}; moved there: its PR was closed unmerged")
                    )
                    break
    kept = [sorted((s for s in members if home[s] == k), key=position.__getitem__) for k in range(len(parts))]
    avoid = {k for k in range(len(parts)) if ids[k] in declined or not kept[k]}
    base = _bases(kept, needs, avoid)
    out = []
    for k, part in enumerate(kept):
        if not part:
            # Every member moved to a declined bundle: its branch goes, its PR is closed saying so.
            emptied.append((ids[k], ids[home[parts[k][0]]]))
            continue
        on = base[k]
        stack = {sha for below in _below(base, on) for sha in kept[below]}
        reasons = []
        for sha in part:
            hit = sorted((n for n in needs.get(sha, {}) if n in stack), key=position.__getitem__)
            if hit:
                link = needs[sha][hit[0]]
                reasons.append(Reason(sha, link.kind, _named(link.detail, hit[0], ids[home[hit[0]]])))
        was = next((ids[i] for i in _below(planned, planned[k]) if ids[i] in declined and i != on), None)
        out.append(
            Bundle(
                ids[k],
                tuple(part),
                sum(lines.get(sha, 0) for sha in part),
                tuple(joined[sha] for sha in part if sha in joined),
                stacked_on=ids[on] if on is not None else None,
                needs=tuple(reasons),
                unstacked_from=was,
                left_behind=tuple(left.get(k, ())),
                declined=ids[k] in declined,
            )
        )
    return out


def split(
    members: Sequence[str], lines: Mapping[str, int], max_commits: int, max_lines: int
) -> list[list[str]]:
    """``members`` (upstream order) cut into parts of at most ``max_commits`` commits and
    ``max_lines`` changed lines (a larger commit is a part alone)."""
    parts: list[list[str]] = [[]]
    size = 0
    for sha in members:
        if parts[-1] and (len(parts[-1]) + 1 > max_commits or size + lines.get(sha, 0) > max_lines):
            parts.append([])
            size = 0
        parts[-1].append(sha)
        size += lines.get(sha, 0)
    return parts


def _below(base: Sequence[int | None], at: int | None) -> Iterator[int]:
    """The parts a stack rests on, from ``at`` down to the trunk (``base``: each part's base)."""
    while at is not None:
        yield at
        at = base[at]


def _bases(
    parts: Sequence[Sequence[str]], needs: Mapping[str, Mapping[str, Link]], avoid: set[int]
) -> list[int | None]:
    """Each part's base (the index of an earlier part) or None (the trunk), never a part in ``avoid``.

    A part goes on the latest part it depends on when that part's stack holds every other part
    it needs, else on the first later part whose stack does (a tree of stacks); when none does,
    every part goes on the one before it (skipping ``avoid``), which holds all earlier parts."""
    of = {sha: k for k, part in enumerate(parts) for sha in part}
    base: list[int | None] = []
    for k, part in enumerate(parts):
        wants = {of[n] for sha in part for n in needs.get(sha, {}) if n in of and of[n] < k}
        if not wants:
            base.append(None)
            continue
        # The first part from the latest one it needs onwards whose stack holds all it needs.
        for top in range(max(wants), k):
            if top in avoid:
                continue
            if wants <= set(_below(base, top)):
                base.append(top)
                break
        else:
            line: list[int | None] = []
            previous: int | None = None
            for j in range(len(parts)):
                line.append(previous)
                if j not in avoid:
                    previous = j
            return line
    return base


def _renamed(reason: Reason, walk_id: str, bundle_id: str) -> Reason:
    """``reason`` naming ``bundle_id`` where it named the walk's ``walk_id``."""
    if walk_id == bundle_id:
        return reason
    return Reason(
        reason.commit, reason.kind, re.sub(rf" of {re.escape(walk_id)}\b", f" of {bundle_id}", reason.detail)
    )


def _named(detail: str, sha: str, bundle_id: str) -> str:
    """A member-level link's detail, naming the bundle of the commit it needs instead of the commit."""
    return detail.replace(f" of {sha}", f" of {bundle_id}")
