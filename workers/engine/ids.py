"""The names a plan hands out: one rule for bundles, stacked parts, chains, urgent picks, holes.

An id names its first upstream commit (``bundle-<sha7>``, ``chain-<sha7>``, ``urgent-<sha7>``) and
a bundle's id is its branch (``forksync/bundle/<id>``) and so its PR: two bundles with one id
would push over each other's branch. Seven hex digits are short, not unique, so a plan names
each thing with :func:`fresh_id` against every id it has already given out or keeps from a
record: the seven digits where they are free (the normal case: names of existing installations
stay), else the full sha, else — only when a kept id from a record already is that full sha —
the full sha with a counter. Callers name in upstream order, so the same input gives the same
ids and the earliest commit keeps the short name.
"""

from __future__ import annotations

from collections.abc import Container, Iterable


def short(sha: str) -> str:
    """The seven hex digits an id shows of a commit."""
    return sha[:7]


def fresh_id(kind: str, sha: str, taken: Container[str]) -> str:
    """``<kind>-<sha7>`` unless ``taken`` holds it, else ``<kind>-<sha>``, else ``<kind>-<sha>-2``,
    ``-3``, … : the first that ``taken`` does not hold."""
    name = f"{kind}-{short(sha)}"
    if name not in taken:
        return name
    name = f"{kind}-{sha}"
    n = 2
    while name in taken:
        name, n = f"{kind}-{sha}-{n}", n + 1
    return name


def fresh_ids(kind: str, shas: Iterable[str], taken: Iterable[str] = ()) -> list[str]:
    """One :func:`fresh_id` for each of ``shas`` (in that order), unique among themselves too."""
    given = set(taken)
    out = []
    for sha in shas:
        name = fresh_id(kind, sha, given)
        given.add(name)
        out.append(name)
    return out
