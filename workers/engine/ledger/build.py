"""The ledger recomputed from git: ``build_ledger(pair, config)`` and the upstream file listing.

``build_ledger`` always recomputes: two ``git log`` passes (the upstream first-parent range and
the fork range, both from the base), one read of the decisions notes, and -- only when the fork
has marker-less commits touching upstream files -- upstream changes with blobs (kept per commit
between runs); a candidate whose nearest same-file upstream commit has the same blobs is matched
at once, the rest by ``patch-id`` among commits that share a file set, nearest first, in at most
three batches (:func:`workers.engine.ledger.compute.compute_ledger`). The upstream file listing
is a path-limited walk for few candidate paths on a long range (``PATH_LIMITED_MAX``), else the
whole listing, kept between runs in the pair's cache.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor

from core.config import LedgerConfig
from workers.engine.cycles import no_cycle_collection
from workers.engine.decisions import read_decisions
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
from workers.engine.ledger.compute import compute_ledger
from workers.engine.ledger.records import Ledger
from workers.engine.pair import FORK_NOTES_REF, Pair
from workers.engine.recognise.rules import Rules


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
    it overlaps the parsing and recognition done here. The cycle collector is paused meanwhile
    (:func:`~workers.engine.cycles.no_cycle_collection`).
    """
    with no_cycle_collection():
        return _build_ledger(pair, config, upstream_url)


def _build_ledger(pair: Pair, config: LedgerConfig, upstream_url: str | None) -> Ledger:
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
