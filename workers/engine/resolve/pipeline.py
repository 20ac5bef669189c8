"""The per-file pipeline: git's merge, then per hunk memory and the deterministic strategies, then rails.

``resolve_text`` answers one conflicted file (base, ours, theirs as text) with a
:class:`FileOutcome`: a :class:`FileEntry` (File/Action/Reason, strategies, the raw zdiff3
conflict and the resolution diff) when every hunk is resolved and every rail passes, else a
:class:`Waiting` note saying what a human must do. ``check_candidate`` runs the same rails on
a whole-file resolution from elsewhere (an agent, a human), so nothing gets past them.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from workers.engine.resolve import model, rails
from workers.engine.resolve.merge3 import Merged, git_merge
from workers.engine.resolve.model import (
    Absence,
    Dropped,
    FileEntry,
    FileOutcome,
    Hunk,
    HunkResolution,
    Waiting,
    WaitsFor,
)
from workers.engine.resolve.strategies import DETERMINISTIC, HunkContext, Strategy

MAX_DIFF_LINES = 400  # the diffs kept in an entry for PR bodies; longer ones are cut with a note


class HunkMemory(Protocol):
    """Resolution memory as the pipeline sees it (workers.engine.resolve.memory implements it)."""

    def lookup(self, hunk: Hunk) -> HunkResolution | None: ...


@dataclass(frozen=True)
class Conflict:
    """One conflicted file of a pick: each side's text, or None where that side has no file."""

    path: str
    base: str | None
    ours: str | None
    theirs: str | None


def resolve_text(
    conflict: Conflict,
    *,
    memory: HunkMemory | None = None,
    checks: Sequence[rails.Check] = (),
    strategies: Sequence[Strategy] = DETERMINISTIC,
    absence: Absence | None = None,
) -> tuple[FileOutcome, Merged | None]:
    """Resolve one file deterministically; the merge is returned for the agent and for rendering.

    ``absence``: where the fork has no such file, why (from its history, told by the git layer):
    dropped by the fork (upstream's change is skipped), or waiting for the pending upstream commit
    that brings it (declined: the pick depends on that commit). Not told: declined, it cannot tell."""
    path = conflict.path
    if conflict.ours is None:
        if conflict.theirs is None:
            return FileOutcome(path, entry=_absent(path, "both sides removed the file")), None
        return _fork_lacks(path, absence), None
    if conflict.theirs is None:
        return FileOutcome(
            path,
            waiting=Waiting(
                path,
                "upstream deletes this file and the fork changed it: decide whether the fork still needs it",
            ),
        ), None
    base = conflict.base or ""
    merged = git_merge(conflict.ours, base, conflict.theirs)
    ctx = HunkContext(path, conflict.ours, conflict.theirs, base)
    found: list[HunkResolution] = []
    left: list[Hunk] = []
    for hunk in merged.hunks:
        res = memory.lookup(hunk) if memory is not None else None
        if res is None:
            res = next((r for r in (s(hunk, ctx) for s in strategies) if r is not None), None)
        if res is None:
            left.append(hunk)
        else:
            found.append(res)
    if left:
        where = ", ".join(str(h.line) for h in left[:8])
        return FileOutcome(
            path,
            waiting=Waiting(
                path,
                f"{len(left)} of {len(merged.hunks)} conflict block(s) need a human or the agent: no deterministic "
                f"rule is safe there (merge lines {where})",
                hunks_left=len(left),
                diff3=merged.raw,
            ),
        ), merged
    if not merged.hunks:
        action, reason, strategy = (
            "Took git's own merge (zdiff3, rename detection): it merges cleanly file by file",
            "libgit2's whole-tree merge flagged the file but git's merge of its three versions has no conflict",
            model.GIT_MERGE,
        )
    else:
        action, reason, strategy = describe(found)
    result = merged.assemble([list(r.lines) for r in sorted(found, key=lambda r: r.hunk)])
    return finish(conflict, merged, result, strategy, action, reason, found, checks), merged


def finish(
    conflict: Conflict,
    merged: Merged,
    result: str,
    strategy: str,
    action: str,
    reason: str,
    resolutions: Sequence[HunkResolution],
    checks: Sequence[rails.Check],
) -> FileOutcome:
    """Run the rails on a resolved file and make its entry, or its waiting note naming the rail."""
    assert conflict.ours is not None and conflict.theirs is not None
    failures = rails.check_file(
        conflict.path,
        result,
        merged=merged,
        ours=conflict.ours,
        base=conflict.base or "",
        theirs=conflict.theirs,
        action=action,
        resolutions=resolutions,
        checks=checks,
    )
    if failures:
        names = ", ".join(f.rail for f in failures)
        return FileOutcome(
            conflict.path,
            waiting=Waiting(
                conflict.path,
                f"the {strategy} resolution broke the {names} rail(s): {failures[0].detail}; resolve it by hand",
                hunks_left=len(merged.hunks),
                rails=failures,
                diff3=merged.raw,
            ),
        )
    return FileOutcome(
        conflict.path,
        entry=FileEntry(
            conflict.path,
            strategy,
            action,
            reason,
            tuple(resolutions),
            diff3=merged.raw,
            resolution_diff=resolution_diff(conflict.path, merged.raw, result),
            content=result.encode("utf-8", "surrogateescape"),
        ),
    )


def check_candidate(
    conflict: Conflict,
    merged: Merged,
    content: str,
    *,
    strategy: str,
    action: str,
    reason: str,
    checks: Sequence[rails.Check] = (),
) -> FileOutcome:
    """Rails on a whole-file resolution from outside the pipeline (agent, human); hunks are recovered exactly."""
    split = rails.split_by_merge(content, merged)
    resolutions: list[HunkResolution] = []
    if split is not None:
        resolutions = [
            HunkResolution(h.index, strategy, tuple(lines), reason, h.digest())
            for h, lines in zip(merged.hunks, split, strict=True)
        ]
    return finish(conflict, merged, content, strategy, action, reason, resolutions, checks)


_ACTIONS = {
    model.MEMORY: "Replayed the resolution a maintainer merged before for the same conflict",
    model.IDENTICAL: "Took the change both sides made identically",
    model.WHITESPACE: "Kept the fork's side where the sides differ only in whitespace",
    model.ALREADY_APPLIED: "Kept the fork's side: upstream's change is already there",
    model.FORK_UNCHANGED: "Took upstream's change where the fork's side only differs from its parent in whitespace",
    model.UPSTREAM_INSERTS: "Kept upstream's inserted lines around the fork's version of the region",
    model.LIST_UNION: "Merged both sides' additions additively",
    model.IMPORT_MERGE: "Merged the fork's and upstream's imports by name",
    model.FORK_LACKS_REGION: "Kept the fork's side: the fork does not have the region upstream edits",
    model.TOKEN_MERGE: "Merged the fork's and upstream's edits word by word",
}


def describe(found: Sequence[HunkResolution]) -> tuple[str, str, str]:
    """The file's Action, Reason and strategy from its hunks' resolutions (grouped by strategy)."""
    by: dict[str, list[HunkResolution]] = {}
    for res in sorted(found, key=lambda r: r.hunk):
        by.setdefault(res.strategy, []).append(res)
    actions = []
    for strategy, items in by.items():
        hunks = ", ".join(str(r.hunk + 1) for r in items)
        actions.append(f"{_ACTIONS.get(strategy, strategy)} (hunk{'s' if len(items) > 1 else ''} {hunks})")
    reasons = []
    for items in by.values():
        for text in dict.fromkeys(r.reason for r in items):
            reasons.append(text)
    return "; ".join(actions), "; ".join(reasons), "+".join(by)


def resolution_diff(path: str, conflicted: str, result: str) -> str:
    """Unified diff from the conflicted file (markers included) to the resolution."""
    lines = list(
        difflib.unified_diff(
            conflicted.splitlines(keepends=True),
            result.splitlines(keepends=True),
            f"a/{path} (conflicted)",
            f"b/{path} (resolved)",
            n=2,
        )
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines[:MAX_DIFF_LINES])
    if len(lines) > MAX_DIFF_LINES:
        text += f"... ({len(lines) - MAX_DIFF_LINES} more diff lines)\n"
    return text


def _fork_lacks(path: str, absence: Absence | None) -> FileOutcome:
    """Skip upstream's change only where the fork dropped the file; a file still on its way waits."""
    if isinstance(absence, Dropped):
        entry = FileEntry(
            path,
            model.FORK_LACKS_FILE,
            "Skipped the file: the fork dropped it",
            f"{absence.reason}; upstream's change to it does not apply",
            content=None,
        )
        return FileOutcome(path, entry=entry)
    if isinstance(absence, WaitsFor):
        brings = f"renames {absence.renamed_from} to it" if absence.renamed_from else "adds it"
        reason = (
            f"the fork has no {path} yet: upstream {absence.commit[:10]} ({absence.subject}) {brings} and is "
            f"{absence.where}; this pick waits for it (land that commit first, then pick this one)"
        )
        return FileOutcome(path, waiting=Waiting(path, reason, needs=absence.commit))
    reason = (
        f"the fork has no {path} and its history was not given, so forksync cannot tell whether the fork "
        "dropped it or an upstream commit that adds it is still pending: check, then resolve by hand"
    )
    return FileOutcome(path, waiting=Waiting(path, reason))


def _absent(path: str, reason: str) -> FileEntry:
    return FileEntry(path, model.FORK_LACKS_FILE, "Left the file out", reason, content=None)
