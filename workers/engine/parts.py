"""Bundle identity across re-cuts: each new bundle keeps the id of the recorded bundle it mostly is.

A bundle's id names its branch (``forksync/bundle/<sha7>``) and so its PR. The partition cuts
bundles afresh on every run; without a memory, a group of dependent commits re-cut because one
member moved (a landing, a merge with another group, an ejection) gets new ids for every part
after the change, and the ingestion loop closes the PRs under review as superseded and opens
new ones. ``forksync bundle`` records the bundles it built (their ids and upstream commits, in
``refs/forksync/chains`` beside the chains); the next plan's bundles are matched to that record
by the upstream commits they share (:func:`keep_ids`), so a bundle that still holds most of the
same commits keeps its id, its branch and its PR, updated in place. Only a genuinely new bundle
gets a new id; a recorded bundle matched by nothing disappears, and :func:`whereabouts` says where
its commits went, for the comment that closes its PR.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from workers.engine.ids import fresh_id


@dataclass(frozen=True)
class PartRecord:
    """A bundle as ``forksync bundle`` built it: its id and its upstream commits (upstream order)."""

    id: str
    commits: tuple[str, ...]


def keeps(shared: int, new_size: int, old_size: int) -> bool:
    """Whether a new bundle sharing ``shared`` commits with a recorded one is still that bundle:
    they share at least half of the smaller one (and at least one commit)."""
    return shared > 0 and 2 * shared >= min(new_size, old_size)


def keep_ids(
    cut: Sequence[Sequence[str]],
    recorded: Sequence[PartRecord],
    position: Mapping[str, int],
) -> list[str]:
    """The id of each bundle of ``cut`` (each a non-empty list of upstream shas, the bundles in
    any order), every one distinct.

    ``position`` ranks upstream commits (upstream order). Matching is deterministic and greedy:
    every (new, recorded) pair that shares commits, largest overlap first, ties by the new
    bundle's first commit then the recorded bundle's first commit in upstream order; a pair is
    taken when both are still free, no other bundle took that id (a record written before ids
    were unique may hold one twice), and the overlap :func:`keeps` the identity. A matched bundle
    takes the recorded id; the others, in upstream order of their first commit, get
    :func:`workers.engine.ids.fresh_id` of it against the kept ids and those given before:
    ``bundle-<sha7>``, the full sha where seven digits are taken. Bounded by the number of
    shared commits: each commit belongs to one new and at most one recorded bundle.
    """
    owner: dict[str, int] = {}
    for k, record in enumerate(recorded):
        for sha in record.commits:
            owner.setdefault(sha, k)
    shared: dict[tuple[int, int], int] = {}
    for i, part in enumerate(cut):
        for sha in part:
            held = owner.get(sha)
            if held is not None:
                shared[(i, held)] = shared.get((i, held), 0) + 1

    def first(commits: Sequence[str]) -> int:
        return min((position.get(sha, len(position)) for sha in commits), default=len(position))

    new_first = [first(part) for part in cut]
    old_first = [first(record.commits) for record in recorded]
    ranked = sorted(
        shared.items(), key=lambda item: (-item[1], new_first[item[0][0]], old_first[item[0][1]], item[0])
    )
    ids: list[str | None] = [None] * len(cut)
    used: set[int] = set()
    taken: set[str] = set()
    for (i, k), count in ranked:
        name = recorded[k].id
        if (
            ids[i] is not None
            or k in used
            or name in taken
            or not keeps(count, len(cut[i]), len(recorded[k].commits))
        ):
            continue
        ids[i] = name
        used.add(k)
        taken.add(name)
    for i in sorted(range(len(cut)), key=lambda i: (new_first[i], i)):
        if ids[i] is None:
            head = min(cut[i], key=lambda sha: position.get(sha, len(position)))
            name = fresh_id("bundle", head, taken)
            ids[i] = name
            taken.add(name)
    return [name for name in ids if name is not None]


@dataclass(frozen=True)
class Whereabouts:
    """Where the commits of a recorded bundle that is gone went: ``into`` (bundle or chain id →
    how many of its commits are there, in the plan's order), and how many are ``landed`` (the fork
    carries them) or ``out`` (in no bundle or chain: deferred, won't port, urgent, or gone)."""

    id: str
    into: tuple[tuple[str, int], ...]
    landed: int = 0
    out: int = 0


def whereabouts(
    gone: PartRecord, placed: Mapping[str, str], order: Sequence[str], carried: frozenset[str]
) -> Whereabouts:
    """Where ``gone``'s commits are now: ``placed`` maps each planned sha to its bundle or chain
    id, ``order`` lists those ids as the plan does, ``carried`` the shas the fork carries."""
    counts: dict[str, int] = {}
    landed = out = 0
    for sha in gone.commits:
        where = placed.get(sha)
        if where is not None:
            counts[where] = counts.get(where, 0) + 1
        elif sha in carried:
            landed += 1
        else:
            out += 1
    rank = {key: n for n, key in enumerate(order)}
    into = tuple(sorted(counts.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0])))
    return Whereabouts(gone.id, into, landed, out)
