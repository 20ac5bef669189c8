"""The partition: pending upstream commits → large low-risk bundles and ordered risky chains.

Pure: it decides from plain data (the commits to place in upstream order with their paths,
symbols and size; the config; the open chains recorded by earlier runs) and one narrow
interface, :class:`Trial`, that answers "does this commit pick cleanly onto the fork tip plus
everything bundled before it?". Each commit, in upstream order:

1. **dependency** — it touches a file or a symbol of an open chain: it joins it (linking several
   chains merges them into the oldest one, upstream order preserved); reason ``file``/``symbol``;
2. **risk seed** — otherwise it starts a new chain when it touches a diverged zone
   (``diverged_zone``), a risky path (``risky_path``), exceeds ``risk.max_lines`` (``size``), or
   its trial pick conflicts (``conflict``, naming the files). The cheap checks run first so the
   trial pick is only paid for commits that would otherwise be bundled;
3. **otherwise** it joins the current bundle, which closes at ``bundle.max_commits`` commits or
   ``bundle.max_lines`` changed lines.

Recorded chains (``chains.py``) make the partition durable and idempotent: a recorded member is
placed in its chain when the walk reaches it (so a chain's footprint grows in upstream order
exactly as in the run that recorded it, and planning twice gives the same plan); members
already picked lend their files and symbols from the start; a commit removed by hand from a
chain (``excluded``) is never linked back into that chain, though it may still join another
chain or seed its own when it is risky by itself.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from core.config import RepoConfig

REASON_KINDS = ("conflict", "diverged_zone", "risky_path", "size", "file", "symbol", "manual")


@dataclass(frozen=True)
class Change:
    """One upstream commit as the partition sees it."""

    sha: str
    paths: tuple[str, ...]
    symbols: frozenset[str] = frozenset()
    lines: int = 0


@dataclass(frozen=True)
class Reason:
    """Why a commit is in its chain: ``kind`` among :data:`REASON_KINDS`, and a human detail."""

    commit: str
    kind: str
    detail: str

    def as_json(self) -> dict[str, str]:
        return {"commit": self.commit, "kind": self.kind, "detail": self.detail}


@dataclass(frozen=True)
class ChainRecord:
    """A chain as recorded durably: members in upstream order, a reason each, hand removals."""

    id: str
    commits: tuple[str, ...]
    reasons: tuple[Reason, ...] = ()
    excluded: tuple[str, ...] = ()

    def reason(self, sha: str) -> Reason | None:
        return next((r for r in self.reasons if r.commit == sha), None)


@dataclass(frozen=True)
class Bundle:
    id: str
    commits: tuple[str, ...]
    lines: int = 0


@dataclass(frozen=True)
class Chain:
    """An open risky chain: ``commits`` still to place (upstream order), one reason each."""

    id: str
    commits: tuple[str, ...]
    reasons: tuple[Reason, ...]
    picked: tuple[Reason, ...] = ()  # members already picked: they keep linking until all are
    excluded: tuple[str, ...] = ()

    def record(self) -> ChainRecord:
        """What to record durably: every member (picked ones first) and the hand removals."""
        members = (*self.picked, *self.reasons)
        return ChainRecord(self.id, tuple(r.commit for r in members), members, self.excluded)


@dataclass(frozen=True)
class Urgent:
    """A commit a maintainer marked urgent: picked alone onto the fork tip, ahead of everything else.

    ``conflicts`` are the paths its trial pick onto the fork tip conflicts in (empty: clean).
    """

    id: str  # "urgent-<sha7>"
    commit: str
    conflicts: tuple[str, ...] = ()

    @property
    def commits(self) -> tuple[str, ...]:
        return (self.commit,)

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "commits": [self.commit], "conflicts": list(self.conflicts)}


@dataclass(frozen=True)
class Plan:
    """The partition's result. ``deferred`` commits are known holes: in no bundle or chain.
    ``urgent`` commits are each in their own single-commit urgent bundle, and in nothing else."""

    bundles: tuple[Bundle, ...]
    chains: tuple[Chain, ...]
    deferred: tuple[str, ...] = ()
    urgent: tuple[Urgent, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """The ``plan --json`` contract: every pending or backlog commit in exactly one bundle or
        chain. Urgent commits appear as their own single-commit bundle (``"urgent": true``, built
        alone on the fork tip); each deferred hole as a ``manual`` chain of its own (``"deferred":
        true``, never built: it stays in the backlog, out of bundles). ``deferred`` and ``urgent``
        also list them apart, for readers that want only those."""
        urgent_bundles = [
            {"id": u.id, "commits": [u.commit], "lines": 0, "urgent": True, "conflicts": list(u.conflicts)}
            for u in self.urgent
        ]
        deferred_chains = [
            {
                "id": f"deferred-{sha[:7]}",
                "commits": [sha],
                "reasons": [
                    Reason(sha, "manual", "deferred by a maintainer: stays in the backlog, out of bundles "
                           "(`forksync mark REF clear` takes it back)").as_json()
                ],
                "deferred": True,
            }
            for sha in self.deferred
        ]
        return {
            "bundles": urgent_bundles
            + [{"id": b.id, "commits": list(b.commits), "lines": b.lines} for b in self.bundles],
            "chains": [
                {"id": c.id, "commits": list(c.commits), "reasons": [r.as_json() for r in c.reasons]}
                for c in self.chains
            ]
            + deferred_chains,
            "deferred": list(self.deferred),
            "urgent": [u.as_json() for u in self.urgent],
        }

    def to_json(self) -> str:
        """Byte-stable JSON: same inputs, same bytes."""
        return json.dumps(self.as_json(), indent=2, ensure_ascii=False) + "\n"

    def chain_of(self, sha: str) -> Chain | None:
        return next((c for c in self.chains if sha in c.commits), None)

    def bundle_of(self, sha: str) -> Bundle | None:
        return next((b for b in self.bundles if sha in b.commits), None)

    def urgent_of(self, sha: str) -> Urgent | None:
        return next((u for u in self.urgent if u.commit == sha), None)


class Trial(Protocol):
    """Trial cherry-picks onto the fork tip plus everything bundled so far, in memory."""

    def try_pick(self, sha: str) -> tuple[str, ...]:
        """Conflicting paths (sorted); empty when clean, in which case the target advances."""
        ...


# --------------------------------------------------------------------------- path globs


@lru_cache(maxsize=1024)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """``**`` spans directories, ``*``/``?``/``[...]`` stay inside one path component."""
    out = []
    i = 0
    pat = pattern.strip().lstrip("/")
    if pat.endswith("/"):
        pat += "**"
    while i < len(pat):
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pat.startswith("**", i):
            out.append(".*")
            i += 2
        elif pat[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pat[i] == "?":
            out.append("[^/]")
            i += 1
        elif pat[i] == "[":
            end = pat.find("]", i + 1)
            if end < 0:
                out.append(re.escape(pat[i]))
                i += 1
            else:
                out.append(fnmatch.translate(pat[i : end + 1]).removeprefix("(?s:").removesuffix(")\\Z"))
                i = end + 1
        else:
            out.append(re.escape(pat[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def path_matches(path: str, pattern: str) -> bool:
    """Whether ``path`` matches a config glob (``lib/Foo/**``, ``**/*.td``, ``cmake/llvm-hash.txt``)."""
    return _glob_regex(pattern).match(path) is not None


def first_match(paths: Iterable[str], patterns: Sequence[str]) -> tuple[str, str] | None:
    for path in paths:
        for pattern in patterns:
            if path_matches(path, pattern):
                return path, pattern
    return None


# --------------------------------------------------------------------------- the walk


@dataclass
class _Open:
    id: str
    order: int  # walk position of the oldest member (-1: a member is already picked)
    picked: list[Reason]
    members: list[str]
    reasons: dict[str, Reason]
    files: set[str]
    symbols: set[str]
    excluded: set[str]


def short(sha: str) -> str:
    return sha[:7]


def partition(
    commits: Sequence[Change],
    config: RepoConfig,
    trial: Trial,
    chains: Sequence[ChainRecord] = (),
    history: Mapping[str, Change] | None = None,
    deferred: Sequence[str] = (),
) -> Plan:
    """Place every commit of ``commits`` (upstream order) in exactly one bundle or chain.

    ``chains`` are the open chains recorded by earlier runs; ``history`` gives the changes of
    their members that are no longer to place (already picked), whose files and symbols keep
    linking. Members neither to place nor in ``history`` (won't port, deferred, gone) drop out.
    """
    history = history or {}
    position = {c.sha: i for i, c in enumerate(commits)}
    if len(position) != len(commits):
        raise ValueError("a commit appears twice in the walk")
    risk = config.risk

    opened: dict[str, _Open] = {}
    alias: dict[str, str] = {}  # merged chain id → surviving id
    forced: dict[str, str] = {}  # sha → recorded chain id
    taken_ids: set[str] = set()

    def find(chain_id: str) -> str:
        while chain_id in alias:
            chain_id = alias[chain_id]
        return chain_id

    for record in sorted(chains, key=lambda r: r.id):
        taken_ids.add(record.id)
        pending = [sha for sha in record.commits if sha in position and sha not in forced]
        if not pending:
            continue  # every member picked (or dropped): the chain is closed
        chain = _Open(record.id, min(position[s] for s in pending), [], [], {}, set(), set(), set(record.excluded))
        for sha in record.commits:
            if sha in position and sha not in forced:
                forced[sha] = record.id
                chain.reasons[sha] = record.reason(sha) or Reason(sha, "manual", f"recorded in {record.id}")
            elif sha in history and sha not in position:
                chain.picked.append(record.reason(sha) or Reason(sha, "manual", f"recorded in {record.id}"))
                chain.order = -1
                chain.files.update(history[sha].paths)
                chain.symbols.update(history[sha].symbols)
        opened[record.id] = chain

    def new_chain(change: Change, reason: Reason) -> None:
        base = f"chain-{short(change.sha)}"
        chain_id, n = base, 2
        while chain_id in taken_ids:
            chain_id, n = f"{base}-{n}", n + 1
        taken_ids.add(chain_id)
        opened[chain_id] = _Open(chain_id, position[change.sha], [], [], {}, set(), set(), set())
        join(chain_id, change, reason)

    # Which chains own each file and symbol: a commit's links are found by lookup, not by
    # scanning every open chain, so the walk stays linear in the number of commits. Ids may be
    # stale after a merge; find() resolves them.
    file_owner: dict[str, set[str]] = {}
    symbol_owner: dict[str, set[str]] = {}

    def own(chain_id: str, paths: Iterable[str], symbols: Iterable[str]) -> None:
        for path in paths:
            file_owner.setdefault(path, set()).add(chain_id)
        for symbol in symbols:
            symbol_owner.setdefault(symbol, set()).add(chain_id)

    for chain in opened.values():
        own(chain.id, chain.files, chain.symbols)

    def join(chain_id: str, change: Change, reason: Reason) -> None:
        chain = opened[find(chain_id)]
        chain.members.append(change.sha)
        chain.reasons[change.sha] = reason
        chain.files.update(change.paths)
        chain.symbols.update(change.symbols)
        own(chain.id, change.paths, change.symbols)

    def links_of(change: Change) -> list[tuple[str, Reason]]:
        """The open chains ``change`` links to, each with its reason (first file, else first symbol)."""
        files: dict[str, list[str]] = {}
        symbols: dict[str, list[str]] = {}
        for path in change.paths:
            for owner in file_owner.get(path, ()):
                files.setdefault(find(owner), []).append(path)
        for symbol in change.symbols:
            for owner in symbol_owner.get(symbol, ()):
                symbols.setdefault(find(owner), []).append(symbol)
        found = []
        for chain_id in sorted({*files, *symbols}):
            if change.sha in opened[chain_id].excluded:
                continue
            if chain_id in files:
                what = min(files[chain_id])
                found.append((chain_id, Reason(change.sha, "file", f"touches {what} of {chain_id}")))
            else:
                what = min(symbols[chain_id])
                found.append((chain_id, Reason(change.sha, "symbol", f"touches symbol {what} of {chain_id}")))
        return found

    def merge(ids: list[str]) -> str:
        ids = sorted(set(ids), key=lambda i: (opened[i].order, i))
        keep = opened[ids[0]]
        for other_id in ids[1:]:
            other = opened.pop(other_id)
            alias[other_id] = keep.id
            keep.picked.extend(other.picked)
            keep.members = sorted({*keep.members, *other.members}, key=position.__getitem__)
            keep.reasons.update(other.reasons)
            keep.files |= other.files
            keep.symbols |= other.symbols
            keep.excluded |= other.excluded
            keep.order = min(keep.order, other.order)
        return keep.id

    bundles: list[Bundle] = []
    current: list[str] = []
    current_lines = 0
    planned = 0

    def close_bundle() -> None:
        nonlocal current, current_lines
        if current:
            bundles.append(Bundle(f"bundle-{short(current[0])}", tuple(current), current_lines))
        current, current_lines = [], 0

    for change in commits:
        sha = change.sha
        if sha in forced:
            chain_id = find(forced[sha])
            join(chain_id, change, opened[chain_id].reasons[sha])
            continue

        links = links_of(change)
        if links:
            target = merge([chain_id for chain_id, _ in links])
            join(target, change, _link_reason(change, links))
            continue

        seed = _risk_seed(change, risk.diverged_zones, risk.risky_paths, risk.max_lines)
        if seed is None:
            conflicts = trial.try_pick(sha)
            if conflicts:
                seed = Reason(
                    sha,
                    "conflict",
                    f"trial pick onto the fork tip + {planned} planned commit(s) conflicts in "
                    + ", ".join(conflicts),
                )
        if seed is not None:
            new_chain(change, seed)
            continue

        if current and (
            len(current) + 1 > config.bundle.max_commits or current_lines + change.lines > config.bundle.max_lines
        ):
            close_bundle()
        current.append(sha)
        current_lines += change.lines
        planned += 1
    close_bundle()

    out = []
    for chain in opened.values():
        if not chain.members:
            continue
        members = sorted(chain.members, key=position.__getitem__)
        out.append(
            (
                position[members[0]],
                Chain(
                    chain.id,
                    tuple(members),
                    tuple(chain.reasons[s] for s in members),
                    picked=tuple({r.commit: r for r in chain.picked}.values()),
                    excluded=tuple(sorted(chain.excluded)),
                ),
            )
        )
    out.sort(key=lambda item: item[0])
    return Plan(tuple(bundles), tuple(chain for _, chain in out), tuple(deferred))


def _link_reason(change: Change, links: list[tuple[str, Reason]]) -> Reason:
    reasons = sorted(links, key=lambda link: (link[1].kind != "file", link[0]))
    first = reasons[0][1]
    if len(links) == 1:
        return first
    others = ", ".join(sorted(chain_id for chain_id, _ in links))
    return Reason(change.sha, first.kind, f"{first.detail}; links and merges {others}")


def _risk_seed(
    change: Change, zones: Sequence[str], risky: Sequence[str], max_lines: int
) -> Reason | None:
    paths = sorted(change.paths)
    hit = first_match(paths, zones)
    if hit:
        return Reason(change.sha, "diverged_zone", f"{hit[0]} is in diverged zone {hit[1]}")
    hit = first_match(paths, risky)
    if hit:
        return Reason(change.sha, "risky_path", f"touches risky path {hit[0]} ({hit[1]})")
    if change.lines > max_lines:
        return Reason(change.sha, "size", f"{change.lines} changed lines > risk.max_lines {max_lines}")
    return None
