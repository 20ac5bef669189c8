"""What one upstream commit changes: paths with their before/after entries, lines, symbols.

Computed once per commit from its diff against its first parent (upstream history is read
first-parent, so a merge commit counts as the change it brought to the mainline), with rename
detection off: a rename is a deletion plus an addition, which is what a cherry-pick needs and
what links chains by file (both the old and the new path).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pygit2

from workers.engine.symbols import BUILTIN_STOPLIST, Hunk, file_symbols

# An entry of a tree at one path: (blob or gitlink id, file mode). None means "absent".
Entry = tuple[pygit2.Oid, int]

EMPTY_TREE_SHA = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


@dataclass(frozen=True)
class FileDelta:
    """One path a commit touches, with its entry before (in the parent) and after."""

    path: str
    old: Entry | None
    new: Entry | None


@dataclass(frozen=True)
class CommitChanges:
    """Everything the partition and the in-memory pick need to know about one commit."""

    sha: str
    parent_tree: pygit2.Oid
    tree: pygit2.Oid
    deltas: tuple[FileDelta, ...]
    lines: int
    symbols: frozenset[str]

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(d.path for d in self.deltas)


def empty_tree(repo: pygit2.Repository) -> pygit2.Oid:
    """The id of the empty tree, written to the object database if missing (root commits)."""
    return repo.TreeBuilder().write()


def commit_changes(
    repo: pygit2.Repository, sha: str, stop: frozenset[str] = BUILTIN_STOPLIST
) -> CommitChanges:
    """Diff ``sha`` against its first parent in memory and extract paths, size and symbols."""
    commit = repo.get(sha)
    if not isinstance(commit, pygit2.Commit):
        raise KeyError(sha)
    parent_tree = commit.parents[0].tree if commit.parents else repo.get(empty_tree(repo))
    assert isinstance(parent_tree, pygit2.Tree)
    diff = parent_tree.diff_to_tree(commit.tree, context_lines=0)
    deltas: list[FileDelta] = []
    lines = 0
    symbols: set[str] = set()
    for patch in diff:
        if patch is None:  # pragma: no cover - libgit2 yields None only for unreadable deltas
            continue
        delta = patch.delta
        old = None if delta.old_file.id == _ZERO else (delta.old_file.id, int(delta.old_file.mode))
        new = None if delta.new_file.id == _ZERO else (delta.new_file.id, int(delta.new_file.mode))
        if delta.status == pygit2.enums.DeltaStatus.DELETED:
            new = None
        if delta.status == pygit2.enums.DeltaStatus.ADDED:
            old = None
        deltas.append(FileDelta(delta.new_file.path or delta.old_file.path, old, new))
        _, added, removed = patch.line_stats
        lines += added + removed
        symbols |= file_symbols(delta.new_file.path, _hunks(patch.hunks), stop)
    deltas.sort(key=lambda d: d.path)
    return CommitChanges(
        sha=str(commit.id),
        parent_tree=parent_tree.id,
        tree=commit.tree.id,
        deltas=tuple(deltas),
        lines=lines,
        symbols=frozenset(symbols),
    )


_ZERO = pygit2.Oid(hex="0" * 40)


def _hunks(hunks: Iterable[pygit2.DiffHunk]) -> list[Hunk]:
    out = []
    for hunk in hunks:
        header = hunk.header
        context = header.split("@@", 2)[2].strip("\n").lstrip(" ") if header.count("@@") >= 2 else ""
        added = tuple(line.content.rstrip("\n") for line in hunk.lines if line.origin == "+")
        removed = tuple(line.content.rstrip("\n") for line in hunk.lines if line.origin == "-")
        out.append(Hunk(context, added, removed))
    return out
