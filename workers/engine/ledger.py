"""The ledger: every upstream commit after the base → disposition and the fork commits carrying it.

Entry points:

* ``load_ledger(pair, config) -> Ledger`` -- cached by (upstream tip, fork tip, notes tip,
  config digest); a warm call reads one JSON file.
* ``build_ledger(pair, config) -> Ledger`` -- always recomputes: two ``git log`` passes (the
  upstream first-parent range and the fork range, both from the base), one read of the
  decisions notes, and -- only when the fork has marker-less commits touching upstream
  files -- upstream changes with blobs (kept per commit between runs); a candidate whose
  nearest same-file upstream commit has the same blobs is matched at once, the rest by
  ``patch-id`` among commits that share a file set, nearest first, in at most three batches.
* ``load_status(pair, config) -> StatusView`` -- what ``forksync status`` prints (metrics,
  warnings, and the pins the fork states itself: ``UPSTREAM_HASH``, ``UPSTREAM_FRONTIER_HASH``).
* ``compute_ledger(...)`` -- the pure core, for tests and for callers that already hold history.

For the bundling engine: ``Ledger.backlog_commits`` (holes behind the frontier, oldest first)
then ``Ledger.pending_commits`` (not carried and not deferred/wont_port after the frontier,
oldest first) is the order of work. Entries never change order: ``Ledger.entries`` is upstream
first-parent order, oldest first, and the JSON is byte-for-byte deterministic.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.config import LedgerConfig
from workers.engine import dispositions, forkpins, patchmatch, reverts
from workers.engine.decisions import Decisions, Disposition, read_decisions
from workers.engine.history import (
    Change,
    Commit,
    change_ids,
    changed_files_raw,
    commit_files_raw,
    file_records,
    merged_side_commits,
    patch_ids,
    paths_of,
    read_range,
    touching_files_raw,
    tree_paths,
)
from workers.engine.metrics import Fact, Metrics, compute_metrics
from workers.engine.pair import FORK_NOTES_REF, Pair
from workers.engine.recognise import recognise, recognise_merge
from workers.engine.recognise.index import UpstreamIndex
from workers.engine.recognise.model import MERGE, Recognition
from workers.engine.recognise.rules import Rules

__all__ = [
    "Disposition",
    "Ledger",
    "LedgerEntry",
    "Metrics",
    "Pick",
    "StatusView",
    "build_ledger",
    "compute_ledger",
    "load_ledger",
    "load_status",
]

# Bump when the ledger's meaning or JSON shape changes: old caches are then ignored.
LEDGER_VERSION = 10  # 4: fbtriton fixes; 5: [Hotfix] is upstream's; 6: union recognition, message decisions, fork pins; 7: cache rows; 8: backport PR forms, Linux-stable trailers; 9: branch-tagged backports, patchback, Gerrit Change-Id; 10: inline bundle items split at commas
_KEEP_CACHED = 8


@dataclass(frozen=True)
class LedgerEntry:
    """One upstream commit: who made it, what the fork does with it, and why."""

    sha: str
    subject: str
    author: str
    author_time: int
    committer_time: int
    pr_number: int | None
    disposition: Disposition
    carriers: tuple[str, ...]  # fork commits that carry it now (reverted picks excluded)
    reason: str
    recognisers: tuple[str, ...] = ()  # per carrier, the recogniser that found it there
    decided_by: str | None = None  # "notes" or "message" when a recorded decision stands

    def as_json(self) -> dict[str, Any]:
        out = {
            "sha": self.sha,
            "subject": self.subject,
            "author": self.author,
            "author_time": self.author_time,
            "committer_time": self.committer_time,
            "pr_number": self.pr_number,
            "disposition": self.disposition.value,
            "carriers": list(self.carriers),
            "reason": self.reason,
        }
        # Only where there is something to say: most entries of a long range have neither.
        if self.recognisers:
            out["recognisers"] = list(self.recognisers)
        if self.decided_by is not None:
            out["decided_by"] = self.decided_by
        return out

    def as_row(self) -> list[Any]:
        """The cache's form: positional (a third cheaper to write and read than ``as_json``)."""
        row = [
            self.sha,
            self.subject,
            self.author,
            self.author_time,
            self.committer_time,
            self.pr_number,
            self.disposition.value,
            list(self.carriers),
            self.reason,
        ]
        if self.recognisers or self.decided_by is not None:
            row += [list(self.recognisers), self.decided_by]
        return row

    @classmethod
    def from_row(cls, r: list[Any]) -> LedgerEntry:
        sha, subject, author, author_time, committer_time, pr, disposition, carriers, reason = r[:9]
        return cls(
            sha,
            subject,
            author,
            author_time,
            committer_time,
            pr,
            Disposition(disposition),
            tuple(carriers),
            reason,
            tuple(r[9]) if len(r) > 9 else (),
            r[10] if len(r) > 10 else None,
        )

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LedgerEntry:
        return cls(
            sha=d["sha"],
            subject=d["subject"],
            author=d["author"],
            author_time=d["author_time"],
            committer_time=d["committer_time"],
            pr_number=d["pr_number"],
            disposition=Disposition(d["disposition"]),
            carriers=tuple(d["carriers"]),
            reason=d["reason"],
            recognisers=tuple(d.get("recognisers", ())),
            decided_by=d.get("decided_by"),
        )


def matching(entries: Sequence[LedgerEntry], ref: str) -> tuple[LedgerEntry, ...]:
    """The entries a REF names: upstream PR ``#N``, or a sha prefix. One is an answer; none or
    several are for the caller to explain (the CLI and the comment commands word it their way)."""
    if ref.startswith("#"):
        number = int(ref[1:])
        return tuple(e for e in entries if e.pr_number == number)
    prefix = ref.lower()
    return tuple(e for e in entries if e.sha.startswith(prefix))


@dataclass(frozen=True)
class Pick:
    """A fork commit recognised as carrying upstream commits."""

    sha: str
    subject: str
    upstream: tuple[str, ...]
    recogniser: str  # the strongest recogniser that found something
    reverted_by: str | None = None
    found_by: tuple[str, ...] = ()  # per upstream commit, the recogniser that named it

    def as_json(self) -> dict[str, Any]:
        return {
            "sha": self.sha,
            "subject": self.subject,
            "upstream": list(self.upstream),
            "recogniser": self.recogniser,
            "reverted_by": self.reverted_by,
            "found_by": list(self.found_by),
        }


@dataclass(frozen=True)
class Ledger:
    """The mapping upstream commit → disposition, with the metrics computed from it."""

    base: str
    upstream_tip: str
    fork_tip: str
    entries: tuple[LedgerEntry, ...]
    metrics: Metrics
    picks: tuple[Pick, ...] = ()  # fork commits that carry upstream commits, fork order
    warnings: tuple[str, ...] = ()
    fork_pins: forkpins.ForkPins = field(
        default_factory=forkpins.ForkPins
    )  # UPSTREAM_HASH / UPSTREAM_FRONTIER_HASH as stated
    _by_sha: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_sha.update({e.sha: i for i, e in enumerate(self.entries)})

    def entry(self, sha: str) -> LedgerEntry | None:
        i = self._by_sha.get(sha)
        return self.entries[i] if i is not None else None

    def matching(self, ref: str) -> tuple[LedgerEntry, ...]:
        return matching(self.entries, ref)

    @property
    def frontier_index(self) -> int:
        """Position of the frontier in ``entries`` (-1 when the frontier is the base)."""
        return self._by_sha.get(self.metrics.frontier, -1)

    @property
    def backlog_commits(self) -> tuple[LedgerEntry, ...]:
        """Holes behind the frontier (neither picked nor wont_port), oldest first."""
        wanted = set(self.metrics.backlog_commits)
        return tuple(e for e in self.entries if e.sha in wanted)

    @property
    def pending_commits(self) -> tuple[LedgerEntry, ...]:
        """Commits after the frontier still to take (not carried, not deferred or wont_port), oldest first."""
        after = self.entries[self.frontier_index + 1 :]
        return tuple(
            e
            for e in after
            if not e.carriers and e.disposition not in (Disposition.WONT_PORT, Disposition.DEFERRED)
        )

    def with_disposition(self, disposition: Disposition) -> tuple[LedgerEntry, ...]:
        return tuple(e for e in self.entries if e.disposition is disposition)

    def as_json(self) -> dict[str, Any]:
        head = self.as_json_head()
        return {
            **{k: head[k] for k in ("version", "base", "upstream_tip", "fork_tip", "metrics")},
            "entries": [e.as_json() for e in self.entries],
            **{k: head[k] for k in ("picks", "warnings", "fork_pins")},
        }

    def as_cache(self) -> dict[str, Any]:
        """:meth:`as_json` with the entries as rows (``LedgerEntry.as_row``): what the cache keeps."""
        return {**self.as_json_head(), "entries": [e.as_row() for e in self.entries]}

    def as_json_head(self) -> dict[str, Any]:
        return {
            "version": LEDGER_VERSION,
            "base": self.base,
            "upstream_tip": self.upstream_tip,
            "fork_tip": self.fork_tip,
            "metrics": self.metrics.as_json(),
            "picks": [p.as_json() for p in self.picks],
            "warnings": list(self.warnings),
            "fork_pins": self.fork_pins.as_json(),
        }

    @classmethod
    def from_cache(cls, d: dict[str, Any]) -> Ledger:
        return cls.from_json(d, entries=tuple(LedgerEntry.from_row(r) for r in d["entries"]))

    @classmethod
    def from_json(cls, d: dict[str, Any], entries: tuple[LedgerEntry, ...] | None = None) -> Ledger:
        return cls(
            base=d["base"],
            upstream_tip=d["upstream_tip"],
            fork_tip=d["fork_tip"],
            entries=entries if entries is not None else tuple(LedgerEntry.from_json(e) for e in d["entries"]),
            metrics=Metrics.from_json(d["metrics"]),
            picks=tuple(
                Pick(
                    p["sha"],
                    p["subject"],
                    tuple(p["upstream"]),
                    p["recogniser"],
                    p["reverted_by"],
                    tuple(p["found_by"]),
                )
                for p in d["picks"]
            ),
            warnings=tuple(d["warnings"]),
            fork_pins=forkpins.ForkPins.from_json(d["fork_pins"]),
        )


def compute_ledger(
    upstream: Sequence[Commit],
    fork: Sequence[Commit],
    decisions: Decisions,
    rules: Rules,
    *,
    base: str,
    base_time: int,
    upstream_tip: str,
    fork_tip: str,
    patch_id: patchmatch.PatchIds,
    files_touching: patchmatch.FilesTouching | None = None,
    side: dict[str, str] | None = None,
    changes_of: patchmatch.ChangesOf | None = None,
    change_ids: Mapping[str, str] | None = None,
) -> Ledger:
    """The pure core: upstream range and fork range (oldest first) → ledger.

    ``side`` maps upstream commits merged in off the first-parent line to their merge;
    ``change_ids`` maps Gerrit Change-Ids to the upstream commits that have them.
    """
    index = UpstreamIndex(upstream, side, change_ids)
    fork_index = reverts.ForkIndex(fork)
    picks: dict[str, Recognition] = {}  # fork sha → what it carries
    active: dict[str, bool] = {}  # fork pick (or un-pick) → not reverted
    reverted_by: dict[str, str] = {}
    reverted: dict[str, str] = {}  # revert commit → fork commit it reverts
    unpicks: dict[str, tuple[str, ...]] = {}  # fork revert → upstream commits it un-picks
    merged: dict[str, str] = {}  # upstream sha reachable from the fork → itself
    said: dict[str, dispositions.MessageDecision] = {}  # decisions the fork's messages record
    unmatched: list[Commit] = []
    warnings: list[str] = list(decisions.problems)

    for commit in fork:
        if commit.sha in index.position:
            merged[commit.sha] = commit.sha
            continue
        if commit.sha in index.side:
            continue  # an upstream side commit the fork merged with its merge: carried below
        if commit.is_merge:
            # Only the PR forms of release tooling that speaks in its merges (recognise_merge).
            found = recognise_merge(commit, index, rules)
            if found.upstream:
                picks[commit.sha] = found
                active[commit.sha] = True
            continue
        undo = reverts.revert_of(commit, fork_index, index, rules)
        if undo is not None:
            if undo.fork is not None:
                reverted[commit.sha] = undo.fork
                _apply_revert(commit.sha, undo.fork, active, reverted, reverted_by)
                if undo.fork in picks and undo.fork in reverted:
                    active[undo.fork] = False  # a revert of a reapply (below) undoes it again
                orphans = [
                    u for u in unpicks.get(undo.fork, ()) if not any(u in f.upstream for f in picks.values())
                ]
                if orphans and not active.get(undo.fork):
                    # A revert of a revert whose pick nobody can name: it carries that pick again.
                    picks[commit.sha] = Recognition(
                        tuple(orphans), reverts.REAPPLY, found_by=(reverts.REAPPLY,) * len(orphans)
                    )
                    active[commit.sha] = True
            elif undo.upstream:
                unpicks[commit.sha] = undo.upstream
                active[commit.sha] = True
            elif undo.reapplies:
                picks[commit.sha] = Recognition(
                    undo.reapplies, reverts.REAPPLY, found_by=(reverts.REAPPLY,) * len(undo.reapplies)
                )
                active[commit.sha] = True
            continue  # a revert is never a pick (one of something we cannot name undoes nothing)
        found = recognise(commit, index, rules)
        for sha, disposition, where in found.decided:
            said[sha] = dispositions.MessageDecision(sha, Disposition(disposition), commit.sha, where)
        if found.upstream:
            picks[commit.sha] = found
            active[commit.sha] = True
        else:
            unmatched.append(commit)
            if found.urgent:
                picks[commit.sha] = found  # keeps the [URGENT] tag for a patch-id match below

    carried, undone = _carried(picks, active, unpicks, fork_index.position)
    for up in merged:
        carried.setdefault(up, []).append(up)

    # Where each fork commit sat in upstream order: just past the newest commit picked before it.
    expected: dict[str, int] = {}
    running = -1
    for commit in fork:
        known = picks.get(commit.sha)
        if known is not None and known.upstream:
            running = max(running, *(index.position.get(u, -1) for u in known.upstream))
        expected[commit.sha] = running + 1
    same = patchmatch.same_change(
        unmatched, upstream, carried, patch_id, files_touching, expected, changes_of
    )
    for fork_sha, up_sha, how in same:
        urgent = picks[fork_sha].urgent if fork_sha in picks else False
        picks[fork_sha] = Recognition((up_sha,), how, urgent, (how,))
        active[fork_sha] = fork_sha not in reverted_by
        if active[fork_sha]:
            carried.setdefault(up_sha, []).append(fork_sha)

    stands = dispositions.standing(decisions, said)
    urgent_by_tag = {up for sha, f in picks.items() if f.urgent and active.get(sha) for up in f.upstream}
    facts: list[Fact] = []
    for c in upstream:
        decision = stands[c.sha].decision if c.sha in stands else None
        facts.append(
            Fact(
                sha=c.sha,
                committer_time=c.committer_time,
                carried=c.sha in carried,
                urgent=c.sha in urgent_by_tag
                or (decision is not None and decision.disposition is Disposition.URGENT),
                decision=decision.disposition if decision else None,
            )
        )
    tip_time = upstream[-1].committer_time if upstream else base_time
    metrics, final = compute_metrics(
        facts,
        base=base,
        base_time=base_time,
        upstream_tip=upstream_tip,
        upstream_tip_time=tip_time,
        fork_tip=fork_tip,
    )
    frontier_pos = index.position.get(metrics.frontier, -1)
    how_found = {
        (sha, up): how for sha, f in picks.items() for up, how in zip(f.upstream, _found_by(f), strict=True)
    }
    all_carriers = _all_carriers(picks, fork_index.position)
    entries = []
    for i, (c, d) in enumerate(zip(upstream, final, strict=True)):
        sha = c.sha
        now = _in_fork_order(carried[sha], fork_index.position) if sha in carried else ()
        stand = stands.get(sha)
        if not now and stand is None and sha not in all_carriers and sha not in merged:
            why = (
                "hole behind the frontier (backlog, not marked)"
                if i < frontier_pos and d is Disposition.PENDING
                else ""
            )
            entries.append(
                LedgerEntry(
                    sha, c.subject, c.author, c.author_time, c.committer_time, c.pr_number, d, (), why
                )
            )
            continue  # most of a long upstream range: nothing carries it and nobody decided
        history = [
            (f, how_found[(f, sha)], reverted_by.get(f) or undone.get((f, sha)))
            for f in all_carriers.get(sha, ())
        ]
        entries.append(
            LedgerEntry(
                sha=sha,
                subject=c.subject,
                author=c.author,
                author_time=c.author_time,
                committer_time=c.committer_time,
                pr_number=c.pr_number,
                disposition=d,
                carriers=now,
                reason=dispositions.reason(
                    sha,
                    d,
                    carriers=history,
                    merged=sha in merged,
                    decision=stand,
                    carried=sha in carried,
                    behind_frontier=i < frontier_pos,
                ),
                recognisers=tuple(how_found.get((f, sha), MERGE) for f in now),
                decided_by=stand.source if stand is not None else None,
            )
        )
    subjects = {c.sha: c.subject for c in fork}
    pick_records = tuple(
        Pick(sha, subjects[sha], f.upstream, f.recogniser or "", reverted_by.get(sha), _found_by(f))
        for sha, f in sorted(picks.items(), key=lambda kv: fork_index.position[kv[0]])
        if f.upstream
    )
    return Ledger(
        base=base,
        upstream_tip=upstream_tip,
        fork_tip=fork_tip,
        entries=tuple(entries),
        metrics=metrics,
        picks=pick_records,
        warnings=tuple(warnings),
        fork_pins=forkpins.read_pins(fork, index),
    )


def _found_by(found: Recognition) -> tuple[str, ...]:
    return (
        found.found_by
        if len(found.found_by) == len(found.upstream)
        else (found.recogniser or "",) * len(found.upstream)
    )


def _carried(
    picks: dict[str, Recognition],
    active: dict[str, bool],
    unpicks: dict[str, tuple[str, ...]],
    position: dict[str, int],
) -> tuple[dict[str, list[str]], dict[tuple[str, str], str]]:
    """Upstream commit → active fork commits carrying it, and (pick, upstream) → the revert
    that un-picked that one commit from that pick (a revert inside a bundle)."""
    undoing: dict[str, list[str]] = {}
    for revert, ups in unpicks.items():
        if active.get(revert):
            for up in ups:
                undoing.setdefault(up, []).append(revert)
    carried: dict[str, list[str]] = {}
    undone: dict[tuple[str, str], str] = {}
    for sha, found in picks.items():
        if not active.get(sha):
            continue
        for up in found.upstream:
            later = [r for r in undoing.get(up, ()) if position[r] > position[sha]]
            if later:
                undone[(sha, up)] = later[0]
            else:
                carried.setdefault(up, []).append(sha)
    return carried, undone


def _in_fork_order(shas: Sequence[str], position: dict[str, int]) -> tuple[str, ...]:
    return tuple(shas) if len(shas) < 2 else tuple(sorted(shas, key=position.__getitem__))


def _apply_revert(
    revert: str,
    target: str,
    active: dict[str, bool],
    reverts: dict[str, str],
    reverted_by: dict[str, str],
) -> None:
    """A revert undoes a pick; a revert of that revert (a reapply) restores it."""
    depth = 0
    original = target
    while original in reverts:
        original = reverts[original]
        depth += 1
    # Even depth: the original change is undone; odd: a revert was reverted (a reapply).
    if depth % 2 == 0:
        reverted_by[original] = revert
    else:
        reverted_by.pop(original, None)
    if original in active:
        active[original] = depth % 2 == 1


def _all_carriers(picks: dict[str, Recognition], position: dict[str, int]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for sha in sorted(picks, key=position.__getitem__):
        for up in picks[sha].upstream:
            out.setdefault(up, []).append(sha)
    return out


# --------------------------------------------------------------------------- git-backed entry points


def rules_for(pair: Pair, config: LedgerConfig, upstream_url: str | None = None) -> Rules:
    return Rules.build(
        trailer_patterns=config.trailer_patterns,
        pr_patterns=config.pr_patterns,
        upstream_url=upstream_url or pair.upstream_url,
        fork_url=pair.fork_url,
        defer_patterns=config.defer_patterns,
        wont_port_patterns=config.wont_port_patterns,
    )


def build_ledger(pair: Pair, config: LedgerConfig, *, upstream_url: str | None = None) -> Ledger:
    """Recompute the ledger from history: two ``git log`` passes and the decisions notes.

    The git processes run side by side (threads only wait on them): both range logs, the
    upstream tree listing, and, when the fork has commits without any marker that touch
    upstream paths, the upstream file listing the patch-id stage will need, started early so
    it overlaps the parsing and recognition done here.
    """
    repo = pair.repo
    rules = rules_for(pair, config, upstream_url)
    with ThreadPoolExecutor(max_workers=4) as pool:
        upstream_f = pool.submit(
            read_range, repo, pair.upstream_tip, [pair.base], first_parent=True, messages=False, files=False
        )
        fork_f = pool.submit(read_range, repo, pair.fork_tip, [pair.base], first_parent=False, messages=True)
        paths_f = pool.submit(tree_paths, repo, [pair.base, pair.upstream_tip])
        base_time_f = pool.submit(repo.text, "show", "-s", "--format=%ct", pair.base)
        decisions = read_decisions(repo, FORK_NOTES_REF if pair.fork_notes_tip else None)
        fork = fork_f.result()
        # Gerrit's Change-Ids, read from upstream only when the fork's messages carry one.
        ids_f = (
            pool.submit(change_ids, repo, pair.upstream_tip, [pair.base])
            if any("Change-Id:" in c.message for c in fork)
            else None
        )
        upstream_paths = paths_f.result()
        known: dict[str, frozenset[Change]] = {}
        known_raw = b""
        listing: Future[bytes] | None = None
        limited_to: frozenset[str] | None = None  # the listing covers only commits touching these
        guessed = frozenset(p for c in fork if _maybe_unmarked(c) for p in c.files)

        def list_all() -> Future[bytes]:
            # A long range and few candidate paths: only the upstream commits touching them (a
            # path-limited walk, not kept: a short range's full listing is cheap and is kept).
            nonlocal limited_to
            if len(guessed) <= PATH_LIMITED_MAX and len(upstream) >= PATH_LIMITED_MIN_RANGE:
                limited_to = guessed
                return pool.submit(touching_files_raw, repo, pair.upstream_tip, [pair.base], guessed)
            return pool.submit(changed_files_raw, repo, pair.upstream_tip, [pair.base])

        needed = any(_maybe_unmarked(c) and not upstream_paths.isdisjoint(c.files) for c in fork)
        if needed:
            # Upstream file sets never change for a commit: keep them between runs, list the rest.
            # With nothing kept yet and many candidate paths, start the whole listing now,
            # before the upstream log is in.
            known_raw = _load_file_sets(pair)
            known = file_records(known_raw)
            if not known and len(guessed) > PATH_LIMITED_MAX:
                listing = pool.submit(changed_files_raw, repo, pair.upstream_tip, [pair.base])
        upstream = upstream_f.result()
        if needed and listing is None:
            missing = [c.sha for c in upstream if c.sha not in known]
            if len(missing) > len(upstream) // 2:
                listing = list_all()
            elif missing:
                listing = pool.submit(commit_files_raw, repo, missing)

        changes: dict[str, frozenset[Change]] = {}

        def file_sets(paths: Iterable[str]) -> dict[str, frozenset[str]]:
            nonlocal listing, limited_to
            paths = set(paths)
            if not paths & upstream_paths:
                return {}
            if limited_to is not None and not paths <= limited_to:
                # A candidate the early guess missed (a pick hint no recogniser confirmed).
                limited_to = None
                listing = pool.submit(changed_files_raw, repo, pair.upstream_tip, [pair.base])
            fresh_raw = listing.result() if listing is not None else b""
            fresh = file_records(fresh_raw)
            if fresh and limited_to is None:  # a path-limited listing is not kept (partial)
                _store_file_sets(
                    pair, known_raw if len(known) + len(fresh) <= _FILE_SETS_KEPT else b"", fresh_raw
                )
            in_range = {c.sha for c in upstream}
            changes.update((sha, ch) for sha, ch in (*known.items(), *fresh.items()) if sha in in_range)
            return {sha: paths_of(ch) for sha, ch in changes.items()}

        return compute_ledger(
            upstream,
            fork,
            decisions,
            rules,
            base=pair.base,
            base_time=int(base_time_f.result() or 0),
            upstream_tip=pair.upstream_tip,
            fork_tip=pair.fork_tip,
            patch_id=lambda shas: patch_ids(repo, shas),
            files_touching=file_sets,
            side=merged_side_commits(repo, pair.upstream_tip, [pair.base], upstream),
            changes_of=changes.get,
            change_ids=ids_f.result() if ids_f is not None else None,
        )


# Up to this many distinct candidate paths, the upstream listing is a path-limited walk (git
# compares every tree entry with every path: 1 path 0.17 s, 10 paths 0.31 s, 25 paths 0.45 s,
# the full listing 0.64 s of CPU at 20,000 commits); beyond it, the full listing.
PATH_LIMITED_MAX = 16
PATH_LIMITED_MIN_RANGE = 2_000  # upstream commits; below it the full listing costs < 0.1 s and is kept
_FILE_SETS_KEPT = 400_000  # upstream commits whose file sets the cache keeps (a few tens of MB)


# Upstream commits' changes kept between runs: the listings exactly as git printed them
# (history.file_records reads them back), so keeping them costs a write, not an encoding.
_FILE_SETS = "upstream-changes.v2"


def _load_file_sets(pair: Pair) -> bytes:
    try:
        return (pair.cache_dir / _FILE_SETS).read_bytes()
    except OSError:
        return b""


def _store_file_sets(pair: Pair, known_raw: bytes, fresh_raw: bytes) -> None:
    path = pair.cache_dir / _FILE_SETS
    try:
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(known_raw + fresh_raw)
        tmp.replace(path)
    except OSError:
        pass  # only costs speed next time


_PICK_HINT = re.compile(
    r"(?i)cherry[\s_-]?pick|backport|upstream-commit|/pull/\d|/commit/[0-9a-f]|^revert\b|this reverts commit"
)


def _maybe_unmarked(commit: Commit) -> bool:
    """Cheap guess: a fork commit no marker recogniser will claim and that is no revert (a
    patch-id candidate). A wrong guess only costs time: the listing starts late or for nothing."""
    return not commit.is_merge and not _PICK_HINT.search(commit.message or commit.subject)


def cache_key(pair: Pair, config: LedgerConfig, upstream_url: str | None = None) -> str:
    """What the ledger depends on: both tips, the decisions, and the recognition rules."""
    parts = [
        str(LEDGER_VERSION),
        pair.upstream_tip,
        pair.fork_tip,
        pair.base,
        pair.fork_notes_tip or "-",
        repr(config),
        upstream_url or pair.upstream_url or "-",
        pair.fork_url or "-",
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def _cache_path(pair: Pair, key: str, kind: str) -> Path:
    return pair.cache_dir / "ledger" / f"{key}.{kind}.json"


def load_ledger(pair: Pair, config: LedgerConfig, *, upstream_url: str | None = None) -> Ledger:
    """The ledger, from the cache when both tips, the notes and the config are unchanged."""
    key = cache_key(pair, config, upstream_url)
    path = _cache_path(pair, key, "ledger")
    try:
        return Ledger.from_cache(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    ledger = build_ledger(pair, config, upstream_url=upstream_url)
    _store(pair, key, ledger)
    return ledger


@dataclass(frozen=True)
class StatusView:
    """What ``forksync status`` prints: the metrics, warnings, and the fork's own pins."""

    metrics: Metrics
    warnings: tuple[str, ...]
    fork_pins: forkpins.ForkPins

    def as_json(self) -> dict[str, Any]:
        return {
            "metrics": self.metrics.as_json(),
            "warnings": list(self.warnings),
            "fork_pins": self.fork_pins.as_json(),
        }


def load_status(pair: Pair, config: LedgerConfig, *, upstream_url: str | None = None) -> StatusView:
    """Metrics, warnings and fork pins only; a warm call reads a small file, not the whole ledger."""
    key = cache_key(pair, config, upstream_url)
    path = _cache_path(pair, key, "status")
    try:
        data = json.loads(path.read_text())
        return StatusView(
            Metrics.from_json(data["metrics"]),
            tuple(data["warnings"]),
            forkpins.ForkPins.from_json(data["fork_pins"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        pass
    ledger = load_ledger(pair, config, upstream_url=upstream_url)
    return StatusView(ledger.metrics, ledger.warnings, ledger.fork_pins)


def _store(pair: Pair, key: str, ledger: Ledger) -> None:
    """Write the cache atomically; a cache that cannot be written only costs speed."""
    folder = pair.cache_dir / "ledger"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for kind, data in (
            ("ledger", ledger.as_cache()),
            ("status", StatusView(ledger.metrics, ledger.warnings, ledger.fork_pins).as_json()),
        ):
            path = _cache_path(pair, key, kind)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            # Rows need no key sorting: every dict is built in a fixed order, so the bytes are deterministic.
            tmp.write_text(json.dumps(data, sort_keys=kind == "status", separators=(",", ":")))
            tmp.replace(path)
        stale = sorted(folder.glob("*.ledger.json"), key=lambda p: p.stat().st_mtime, reverse=True)[
            _KEEP_CACHED:
        ]
        for old in stale:
            for kind in ("ledger", "status"):
                old.with_name(old.name.replace(".ledger.json", f".{kind}.json")).unlink(missing_ok=True)
    except OSError:
        pass
