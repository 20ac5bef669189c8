"""Typed records of a conflict resolution: hunks, per-hunk and per-file outcomes, the pick's outcome.

Everything here is plain data (frozen dataclasses, JSON-able through ``as_json``) so the
renderer, the CLI, the memory and the chain builder read the same records.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

# Strategy names, in the order the pipeline tries them (docs/conflicts.md explains each).
MEMORY = "memory"
IDENTICAL = "identical-sides"
WHITESPACE = "whitespace-only"
ALREADY_APPLIED = "already-applied"
FORK_UNCHANGED = "fork-unchanged"
UPSTREAM_INSERTS = "upstream-inserts"
TOKEN_MERGE = "token-merge"
LIST_UNION = "list-union"
FORK_LACKS_REGION = "fork-lacks-region"
IMPORT_MERGE = "import-merge"
DEPENDENCY_PINS = "dependency-pins"
FORK_LACKS_FILE = "fork-lacks-file"
GIT_MERGE = "git-merge"
AGENT = "agent"
HUMAN = "human"


@dataclass(frozen=True)
class Hunk:
    """One conflict block of git's zdiff3 merge: the three sides, as lines with their endings."""

    index: int  # 0-based position among the file's conflict blocks
    ours: tuple[str, ...]
    base: tuple[str, ...]
    theirs: tuple[str, ...]
    line: int  # 1-based line of the block's first line in the clean part of the merge

    def digest(self) -> str:
        """Exact identity of the three sides (what a resolution was computed for)."""
        return sides_digest(self.ours, self.base, self.theirs)


def sides_digest(ours: tuple[str, ...], base: tuple[str, ...], theirs: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for side in (ours, base, theirs):
        h.update(b"\x00side\x00")
        h.update("".join(side).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


@dataclass(frozen=True)
class HunkResolution:
    """How one hunk was resolved: the lines that replace it, which strategy, and why."""

    hunk: int
    strategy: str
    lines: tuple[str, ...]
    reason: str
    digest: str  # Hunk.digest() of the hunk this resolution was computed for (the fuzz rail checks it)

    def as_json(self) -> dict[str, Any]:
        return {"hunk": self.hunk, "strategy": self.strategy, "reason": self.reason, "lines": len(self.lines)}


@dataclass(frozen=True)
class RailFailure:
    """A rail a proposed resolution broke: which one, and a one-line why."""

    rail: str
    detail: str

    def as_json(self) -> dict[str, str]:
        return {"rail": self.rail, "detail": self.detail}


@dataclass(frozen=True)
class FileEntry:
    """One conflicted file resolved: fbtriton's File/Action/Reason, plus who produced it."""

    path: str
    strategy: str  # the strategy, or several joined with "+" when hunks differ; "agent:<name>" for an agent
    action: str
    reason: str
    hunks: tuple[HunkResolution, ...] = ()
    diff3: str = ""  # git's raw conflict (zdiff3) for the file
    resolution_diff: str = ""  # unified diff from the conflicted merge to the resolution
    content: bytes | None = None  # the resolved file (None: the file is absent in the result)

    def as_json(self, text: bool = False) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "path": self.path,
            "strategy": self.strategy,
            "action": self.action,
            "reason": self.reason,
            "hunks": [h.as_json() for h in self.hunks],
        }
        if text:
            doc["diff3"] = self.diff3
            doc["resolution_diff"] = self.resolution_diff
        return doc


@dataclass(frozen=True)
class Waiting:
    """A conflicted file no strategy may resolve: what a human must do, and the rails that refused."""

    path: str
    reason: str
    hunks_left: int = 0
    rails: tuple[RailFailure, ...] = ()
    diff3: str = ""
    needs: str | None = None  # the pending upstream commit the file waits for (it brings the file)

    def as_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "path": self.path,
            "reason": self.reason,
            "hunks_left": self.hunks_left,
            "rails": [r.as_json() for r in self.rails],
        }
        if self.needs is not None:
            doc["needs"] = self.needs
        return doc


@dataclass(frozen=True)
class Dropped:
    """The fork had the file and dropped it (deleted it, or carries the upstream commit that brought
    it and no longer has it): upstream's change to it does not apply."""

    reason: str


@dataclass(frozen=True)
class WaitsFor:
    """The fork lacks the file only because the upstream commit that adds it (or renames a file to
    it) has not landed: a pick changing the file depends on that commit."""

    commit: str
    subject: str
    where: str  # "in bundle bundle-1a2b3c4 (forksync/bundle/1a2b3c4), not landed", "not planned yet", ...
    renamed_from: str | None = None


# Why the fork has no file an upstream pick changes, as the pipeline is told it (by the git layer).
Absence = Dropped | WaitsFor


@dataclass(frozen=True)
class FileOutcome:
    """The pipeline's answer for one file: an entry (resolved) or a waiting note, never both."""

    path: str
    entry: FileEntry | None = None
    waiting: Waiting | None = None

    @property
    def resolved(self) -> bool:
        return self.entry is not None


@dataclass(frozen=True)
class ResolveOutcome:
    """The outcome of resolving one pick: ``tree`` is set exactly when every file is resolved."""

    commit: str
    onto: str
    resolved: bool
    tree: str | None
    entries: tuple[FileEntry, ...] = ()
    waiting: tuple[Waiting, ...] = ()
    clean: bool = False  # the pick did not conflict at all
    error: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def needs(self) -> tuple[str, ...]:
        """The pending upstream commits this pick waits for (they bring files it changes), in file order."""
        return tuple(dict.fromkeys(w.needs for w in self.waiting if w.needs is not None))

    @property
    def resolved_by(self) -> str | None:
        """Who resolved this pick's conflicts, as the ``Resolved-By:`` trailer names it (the
        dashboard counts resolutions by it): ``agent`` when any file came from the agent, else
        ``memory`` when any hunk was replayed from memory, else ``deterministic``; None for a pick
        that needed no resolution."""
        if not self.resolved or not self.entries:
            return None
        strategies = [part for e in self.entries for part in e.strategy.split("+")]
        if any(s == AGENT or s.startswith(AGENT + ":") for s in strategies):
            return "agent"
        if MEMORY in strategies:
            return "memory"
        return "deterministic"

    def as_json(self, text: bool = False) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "onto": self.onto,
            "resolved": self.resolved,
            "clean": self.clean,
            "tree": self.tree,
            "entries": [e.as_json(text) for e in self.entries],
            "waiting": [w.as_json() for w in self.waiting],
            "error": self.error,
            "notes": list(self.notes),
            "needs": list(self.needs),
        }
