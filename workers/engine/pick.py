"""In-memory cherry-picks onto a moving target tree (pygit2/libgit2): no work tree, index file or HEAD.

A :class:`PickTarget` starts at a tree (the fork tip, or a bundle's base) and takes picks one
after another, like a ``git cherry-pick`` loop would, but entirely in the object database:

* **fast path** — when every path the commit touches holds, in the target, exactly what it
  held in the commit's parent, the pick is clean by construction and its result is the target
  with those paths replaced. Most picks of a fork that tracks its upstream closely take it;
* otherwise a real three-way merge, ``merge_trees(ancestor=parent tree, ours=target,
  theirs=commit tree)`` with rename detection **off** (design.md: rename detection made trial
  picks ~4× slower, and a cherry-pick of one commit rarely needs it).

A conflicting pick leaves the target unchanged and reports the conflicting paths.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

from workers.engine.changes import CommitChanges, Entry


@dataclass(frozen=True)
class PickResult:
    """The outcome of one pick: clean (the target advanced) or the sorted conflicting paths."""

    sha: str
    conflicts: tuple[str, ...] = ()
    fast: bool = False
    error: str = ""

    @property
    def clean(self) -> bool:
        return not self.conflicts and not self.error


class PickTarget:
    """A tree that cherry-picks are applied to in memory, in order."""

    def __init__(self, repo: pygit2.Repository, tree: pygit2.Oid) -> None:
        self.repo = repo
        base = repo.get(tree)
        if not isinstance(base, pygit2.Tree):
            raise KeyError(f"{tree} is not a tree")
        self._base = base
        # The index is a purely in-memory pygit2.Index (no file behind it); read_tree fills its
        # tree cache, so write_tree after a few updates only rewrites the touched directories.
        self._index = pygit2.Index()
        self._index.read_tree(base)
        self._overlay: dict[str, Entry | None] = {}
        self._tree: pygit2.Oid | None = base.id

    def entry(self, path: str) -> Entry | None:
        """What the target holds at ``path`` now: (id, mode), or None when absent."""
        if path in self._overlay:
            return self._overlay[path]
        try:
            obj = self._base[path]
        except KeyError:
            return None
        return (obj.id, int(obj.filemode))

    def tree(self) -> pygit2.Oid:
        """The target's current tree, written to the object database."""
        if self._tree is None:
            self._tree = self._index.write_tree(self.repo)
        return self._tree

    def pick(self, change: CommitChanges) -> PickResult:
        """Cherry-pick ``change`` onto the target; advance it when clean."""
        if all(self.entry(d.path) == d.old for d in change.deltas):
            try:
                self._apply({d.path: d.new for d in change.deltas})
            except (pygit2.GitError, ValueError, OSError):
                # A directory/file clash the index refuses: let the real merge decide.
                pass
            else:
                return PickResult(change.sha, fast=True)
        try:
            merged = self.repo.merge_trees(
                change.parent_tree, self.tree(), change.tree, flags=pygit2.enums.MergeFlag(0)
            )
        except pygit2.GitError as exc:
            return PickResult(change.sha, error=f"libgit2 could not merge: {exc}")
        if merged.conflicts is not None:
            paths: set[str] = set()
            for ancestor, ours, theirs in merged.conflicts:
                for side in (ancestor, ours, theirs):
                    if side is not None:
                        paths.add(side.path)
            return PickResult(change.sha, conflicts=tuple(sorted(paths)))
        updates: dict[str, Entry | None] = {}
        for delta in change.deltas:
            try:
                item = merged[delta.path]
            except KeyError:
                updates[delta.path] = None
            else:
                updates[delta.path] = (item.id, int(item.mode))
        self._apply(updates)
        return PickResult(change.sha)

    def _apply(self, updates: dict[str, Entry | None]) -> None:
        """Replace paths in the target; all or nothing (a refused entry restores the others)."""
        done: list[tuple[str, Entry | None]] = []
        try:
            for path, entry in sorted(updates.items()):
                before = self.entry(path)
                if entry is None:
                    if before is not None:
                        self._index.remove(path)
                else:
                    self._index.add(pygit2.IndexEntry(path, entry[0], pygit2.enums.FileMode(entry[1])))
                done.append((path, before))
        except (pygit2.GitError, ValueError, OSError):
            for path, before in reversed(done):
                if before is None:
                    self._index.remove(path)
                else:
                    self._index.add(pygit2.IndexEntry(path, before[0], pygit2.enums.FileMode(before[1])))
            raise
        self._overlay.update(updates)
        if updates:
            self._tree = None
