"""Marker-less picks: same author, date and subject, or equal ``git patch-id`` among candidates.

The recogniser of last resort, for fork commits no message recogniser claims. Patch-ids are
asked for in at most three batches (nearest upstream candidates first), and a candidate whose
nearest same-file upstream commit has the same blobs is matched without asking git.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from workers.engine.history import Change, Commit
from workers.engine.recognise.index import normalise
from workers.engine.recognise.model import PATCH_ID, SAME_CHANGE

PatchIds = Callable[[Iterable[str]], dict[str, str]]
# Given the fork candidates' paths: the changed-file sets of upstream commits (all of them, or
# at least every one that could touch those paths).
FilesTouching = Callable[[Iterable[str]], dict[str, frozenset[str]]]
# An upstream commit's changed files with their blobs, when known (see history.Change).
ChangesOf = Callable[[str], frozenset[Change] | None]


def same_change(
    unmatched: Sequence[Commit],
    upstream: Sequence[Commit],
    carried: dict[str, list[str]],
    patch_id: PatchIds,
    files_touching: FilesTouching | None,
    expected: dict[str, int],
    changes_of: ChangesOf | None = None,
) -> list[tuple[str, str, str]]:
    """Picks without markers: same author+date+subject, or equal patch-ids among same-file candidates.

    Patch-ids are computed only for fork commits and upstream commits that share an exact
    changed-file set (or an author and author date) with each other, nearest first in at most
    three batches (most picks are found in the first, a handful of patch-ids). Upstream
    file sets come from ``files_touching`` (cached per commit between runs) unless the
    upstream records already carry them. A candidate whose nearest pool member changes the
    same files from and to the same blobs (``changes_of``) has the same diff, hence the same
    patch-id: it is matched without asking git (most marker-less picks of unmodified files).
    """
    fork_side = [c for c in unmatched if c.files]
    if not fork_side:
        return []
    free = {c.sha: c for c in upstream if c.sha not in carried and not c.is_merge}
    by_author: dict[tuple[str, int], list[Commit]] = {}
    for c in free.values():
        by_author.setdefault((c.author_email.lower(), c.author_time), []).append(c)

    matches: list[tuple[str, str, str]] = []
    taken: set[str] = set()
    remaining: list[Commit] = []
    for f in fork_side:
        same_author = by_author.get((f.author_email.lower(), f.author_time), [])
        subject = normalise(f.subject)
        hit = next((u for u in same_author if u.sha not in taken and normalise(u.subject) == subject), None)
        if hit is not None:
            matches.append((f.sha, hit.sha, SAME_CHANGE))
            taken.add(hit.sha)
        else:
            remaining.append(f)
    if not remaining:
        return matches

    if files_touching is not None:
        touched = files_touching({p for f in remaining for p in f.files})
    else:
        touched = {c.sha: frozenset(c.files) for c in free.values() if c.files}
    wanted = {frozenset(f.files) for f in remaining}
    by_files: dict[frozenset[str], list[Commit]] = {}
    for sha, paths in touched.items():
        if paths in wanted and sha in free:
            by_files.setdefault(paths, []).append(free[sha])
    order = {c.sha: i for i, c in enumerate(upstream)}
    candidates: list[tuple[Commit, list[Commit]]] = []
    for f in remaining:
        same_author = by_author.get((f.author_email.lower(), f.author_time), [])
        pool = [
            u
            for u in dict.fromkeys((*same_author, *by_files.get(frozenset(f.files), ())))
            if u.sha not in taken
        ]
        if pool:
            # Forks ingest roughly in upstream order: try first the commits next to what the
            # fork had picked when it made this commit, then widen (rounds of patch-ids).
            near = expected.get(f.sha, 0)
            pool.sort(key=lambda u: (abs(order[u.sha] - near), order[u.sha]))
            candidates.append((f, pool))
    if changes_of is not None:
        rest = []
        for f, pool in candidates:
            nearest = next((u for u in pool if u.sha not in taken), None)
            if f.changes and nearest is not None and changes_of(nearest.sha) == f.changes:
                matches.append((f.sha, nearest.sha, PATCH_ID))
                taken.add(nearest.sha)
            else:
                rest.append((f, pool))
        candidates = rest
    if not candidates:
        return matches
    ids: dict[str, str] = {}
    done: set[str] = set()  # fork candidates matched
    tried: set[str] = set()  # shas whose patch-id was asked for
    for start, stop in _ROUNDS:
        want = set()
        for f, pool in candidates:
            if f.sha in done:
                continue
            want.add(f.sha)
            want.update(u.sha for u in pool[start:stop] if u.sha not in taken)
        want -= tried
        if not want:
            continue
        tried |= want
        ids.update(patch_id(want))
        for f, pool in candidates:
            pid = ids.get(f.sha)
            if f.sha in done or pid is None:
                continue
            hit = next((u for u in pool[:stop] if u.sha not in taken and ids.get(u.sha) == pid), None)
            if hit is not None:
                matches.append((f.sha, hit.sha, PATCH_ID))
                taken.add(hit.sha)
                done.add(f.sha)
    return matches


# Slices of each candidate's pool (nearest first) whose patch-ids are computed per round.
_ROUNDS = ((0, 2), (2, 10), (10, None))
