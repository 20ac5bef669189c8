"""In-memory cherry-picks onto a moving target tree (pygit2/libgit2): no work tree, index file or HEAD.

A :class:`PickTarget` starts at a tree (the fork tip, or a bundle's base) and takes picks one
after another, like a ``git cherry-pick`` loop would, but entirely in the object database:

* **fast path** — when every path the commit touches holds, in the target, exactly what it
  held in the commit's parent, the pick is clean by construction and its result is the target
  with those paths replaced (not where the commit empties a directory the target holds other
  things in: git may move them by a directory rename). Most picks of a fork that tracks its
  upstream closely take it;
* otherwise a three-way merge of only the paths that differ, file by file
  (``merge_file_from_index``: the same xdiff merge ``merge_trees`` runs per file), with no
  rename detection (design.md: rename detection made trial picks ~4× slower, and a
  cherry-pick of one commit rarely needs it). Nothing is written but merged blobs;
* binary or non-UTF-8 files, and anything the per-file rules do not cover, fall back to a
  whole-tree ``merge_trees(ancestor=parent tree, ours=target, theirs=commit tree)``.

**Agreeing with git.** ``git cherry-pick`` (merge-ort) merges file contents with the histogram
diff and detects renames; libgit2 offers neither histogram (only myers and patience) nor the
same rename rules, and on real history the two verdicts differ (docs/bundling.md). So a target
given a :class:`~workers.engine.merges.GitMerger` (what planning and builds use) hands every pick that needs a real
merge — a file changed on both sides, a path missing in the target (a fork-side rename), a file
added into a directory the target no longer has — to ``git merge-tree`` on the same three trees,
which is git's own merge: the same verdict and tree as ``git cherry-pick`` on the same inputs.
The fast path is unchanged: there git's result is the same by construction. Rename detection is
bounded by :data:`RENAME_LIMIT` (git's ``merge.renameLimit``). A small file changed on both sides
no longer needs git when :class:`ProvedMerges` proves its merge clean
(:mod:`workers.engine.cleanmerge`: git's merged bytes, never a claimed conflict); the pick then
settles without writing a tree or starting git, like the fast path. Larger files go to git
(:meth:`~workers.engine.merges.GitMerger.proving_pays`): there the proof's Python costs the
plan's thread more than git's merge on another core.

A conflicting pick leaves the target unchanged and reports the conflicting paths.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygit2
from pygit2.index import MergeFileResult

from workers.engine.changes import CommitChanges, Entry, FileDelta
from workers.engine.merges import (
    REGULAR_MODES,
    TreeMerger,
    empty_tree,
)


class _Marker:
    """A per-file merge outcome that is not an entry."""


_CONFLICT = _Marker()
_FALLBACK = _Marker()


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

    def __init__(self, repo: pygit2.Repository, tree: pygit2.Oid, merger: TreeMerger | None = None) -> None:
        self.repo = repo
        self.merger = merger
        base = repo.get(tree)
        if not isinstance(base, pygit2.Tree):
            raise KeyError(f"{tree} is not a tree")
        self._tree: pygit2.Tree = base
        # Paths replaced since the tree was last written. Writing is deferred until a tree is
        # needed (a commit, a real merge), and then only the directories on those paths are
        # rewritten: a pick costs O(depth), not O(files in the repository).
        self._pending: dict[str, Entry | None] = {}
        self._since: dict[str, Entry | None] = {}  # paths replaced since take_updates() was last called
        self._looked_up: dict[str, Entry | None] = {}  # entries of self._tree already read
        # Directories of self._tree already opened: a lookup by full path re-reads every tree on
        # the way down, and neighbouring paths (one commit's files) share most of that way.
        self._dirs: dict[str, pygit2.Tree | None] = {"": base}

    def _dir(self, path: str) -> pygit2.Tree | None:
        if path in self._dirs:
            return self._dirs[path]
        parent_path, _, name = path.rpartition("/")
        parent = self._dir(parent_path)
        found: pygit2.Tree | None = None
        if parent is not None:
            try:
                obj = parent[name]
            except KeyError:
                pass
            else:
                found = obj if isinstance(obj, pygit2.Tree) else None
        self._dirs[path] = found
        return found

    def entry(self, path: str) -> Entry | None:
        """What the target holds at ``path`` now: (id, mode), or None when absent."""
        if path in self._pending:
            return self._pending[path]
        if path in self._looked_up:
            return self._looked_up[path]
        dir_path, _, name = path.rpartition("/")
        parent = self._dir(dir_path)
        found: Entry | None = None
        if parent is not None:
            try:
                obj = parent[name]
            except KeyError:
                pass
            else:
                found = (obj.id, int(obj.filemode))
        self._looked_up[path] = found
        return found

    def tree(self) -> pygit2.Oid:
        """The target's current tree, written to the object database."""
        if self._pending:
            oid = _rewrite(self.repo, self._tree, self._pending) or empty_tree(self.repo)
            tree = self.repo.get(oid)
            assert isinstance(tree, pygit2.Tree)
            self._tree = tree
            self._pending = {}
            self._looked_up = {}
            self._dirs = {"": tree}
        return self._tree.id

    def scratch(self) -> PickTarget:
        """A copy to try picks on without moving this target (no tree is written for it: a pick
        that needs no whole-tree merge never needs one)."""
        copy = PickTarget(self.repo, self._tree.id, self.merger)
        copy._tree = self._tree
        copy._pending = dict(self._pending)
        copy._looked_up = dict(self._looked_up)
        copy._dirs = dict(self._dirs)
        return copy

    def needs_git(self, change: CommitChanges) -> bool:
        """Whether picking ``change`` onto the target as it stands is git's merge to make (not
        settled in process); its proofs are kept, so the pick that follows does not redo them."""
        return self.merger is not None and self._without_git(change) is None

    def prefetch(self, change: CommitChanges) -> None:
        """Tell the merger that ``change`` will probably be picked onto this target next, so that
        git's merge, when the pick needs one, runs while the caller does other work. Nothing moves."""
        if self.merger is None or self._without_git(change) is not None:
            return
        self.merger.prefetch(change.parent_tree, self.tree(), change.tree)

    def pick(self, change: CommitChanges) -> PickResult:
        """Cherry-pick ``change`` onto the target; advance it when clean."""
        if self.merger is not None:
            decided = self._without_git(change)
            if decided is None:
                return self._merge_with(self.merger, change)
            known, proved = decided
            self._pending.update(known)
            self._since.update(known)
            if proved and self.merger.proofs is not None:
                self.merger.proofs.picks += 1
            return PickResult(change.sha, fast=not proved)
        if not self._fits(change):
            return self._merge_trees(change)
        updates: dict[str, Entry | None] = {}
        conflicts: list[str] = []
        merged_any = False
        for delta in change.deltas:
            ours = self.entry(delta.path)
            if ours == delta.old:
                updates[delta.path] = delta.new
                continue
            if ours == delta.new:
                continue  # the target already has this change
            merged_any = True
            result = self._merge_path(delta, ours)
            if result is _FALLBACK:
                return self._merge_trees(change)
            if result is _CONFLICT:
                conflicts.append(delta.path)
            else:
                assert not isinstance(result, _Marker)
                updates[delta.path] = result
        if conflicts:
            return PickResult(change.sha, conflicts=tuple(sorted(conflicts)))
        self._pending.update(updates)
        self._since.update(updates)
        return PickResult(change.sha, fast=not merged_any)

    def _merge_path(self, delta: FileDelta, ours: Entry | None) -> Entry | _Marker:
        """Three-way merge of one path changed on both sides (rename detection off)."""
        base, theirs = delta.old, delta.new
        if base is None or ours is None or theirs is None:
            return _CONFLICT  # added on both sides differently, or modified on one and deleted on the other
        if pygit2.enums.FileMode.TREE in (ours[1], base[1], theirs[1]):
            return _CONFLICT  # a directory on one side, a file on the other
        if pygit2.enums.FileMode.COMMIT in (ours[1], base[1], theirs[1]):
            return _CONFLICT  # a submodule moved on both sides
        if ours[1] == base[1] or ours[1] == theirs[1]:
            mode = theirs[1]
        elif theirs[1] == base[1]:
            mode = ours[1]
        else:
            return _CONFLICT
        if ours[0] == base[0]:
            return (theirs[0], mode)
        if theirs[0] == base[0] or theirs[0] == ours[0]:
            return (ours[0], mode)
        blobs = [self.repo.get(oid) for oid in (base[0], ours[0], theirs[0])]
        if not all(isinstance(b, pygit2.Blob) and not b.is_binary for b in blobs):
            return _FALLBACK
        entries = [
            pygit2.IndexEntry(delta.path, e[0], pygit2.enums.FileMode(e[1])) for e in (base, ours, theirs)
        ]
        try:
            result = self.repo.merge_file_from_index(entries[0], entries[1], entries[2])
        except (UnicodeDecodeError, pygit2.GitError):
            return _FALLBACK
        assert isinstance(result, MergeFileResult)
        if not result.automergeable:
            return _CONFLICT
        return (self.repo.create_blob(result.contents.encode("utf-8")), mode)

    def _merge_trees(self, change: CommitChanges) -> PickResult:
        """The whole-tree merge, for what the per-file rules leave to libgit2."""
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
        self._pending.update(updates)
        self._since.update(updates)
        return PickResult(change.sha)

    def _without_git(self, change: CommitChanges) -> tuple[dict[str, Entry | None], bool] | None:
        """The pick's updates (path → entry) when git's outcome is known without running it, and
        whether a proved file merge was needed; None when git must merge.

        Every path is decided the way git decides it: unchanged in the target (take theirs),
        already as the commit leaves it, or changed on both sides and merged cleanly by proof
        (:meth:`_proved`). No file/directory clash; no file added into a directory the target
        lost, and no directory the commit empties while the target changed what is in it (git's
        directory-rename rules apply there: a file the target added into a directory the commit
        renames is a conflict in ``git cherry-pick``).

        Why a proved path does not disturb the other rules: it exists in the ancestor, the target
        and the commit, so it is neither a rename source (deleted on a side) nor a rename target
        (added on a side), and its directory exists on both sides, so no directory rename moves
        it. A file could land on it only through a rename or a directory rename onto an existing
        path, and the rules above leave every pick in which git would apply a directory rename
        to git; plain renames among the commit's other paths pair a deletion and an addition of
        the same side, which the per-path rules already require the target to leave untouched. So
        git merges the path's three blobs by content alone (merge-ort ``handle_content_merge``),
        and every other path as before.
        """
        if not self._fits(change):
            return None
        parent: pygit2.Tree | None = None
        vanished: set[str] = set()
        updates: dict[str, Entry | None] = {}
        both: list[tuple[FileDelta, Entry | None]] = []  # changed on both sides: proved last
        for delta in change.deltas:
            ours = self.entry(delta.path)
            if ours == delta.old:
                updates[delta.path] = delta.new
            elif ours != delta.new:
                if delta.old is None or delta.new is None or ours is None:
                    return None  # added on both sides, or deleted on one: git's (renames)
                both.append((delta, ours))
            if delta.old is not None and delta.new is None and "/" in delta.path:
                vanished.add(delta.path.rpartition("/")[0])
            if delta.old is None and delta.new is not None and "/" in delta.path:
                folder = delta.path.rpartition("/")[0]
                if self._dir(folder) is None:
                    if parent is None:
                        got = self.repo.get(change.parent_tree)
                        assert isinstance(got, pygit2.Tree)
                        parent = got
                    try:
                        parent[folder]
                    except KeyError:
                        continue  # a new directory on both sides: no rename to follow
                    return None
        if vanished and self._emptied_dirs_changed(change, vanished):
            return None
        if both and not self._worth_proving(both):
            return None
        for delta, ours in both:
            merged = self._proved(change, delta, ours)
            if merged is None:
                return None
            updates[delta.path] = merged
        return updates, bool(both)

    def _worth_proving(self, both: list[tuple[FileDelta, Entry | None]]) -> bool:
        """Whether the merger wants these file merges proved now (:meth:`GitMerger.proving_pays`,
        by the largest version of any of them): a pick settles without git only if all are."""
        if self.merger is None or self.merger.proofs is None:
            return False  # nothing to prove with: the sizes need not be read
        header = self.repo.odb.read_header
        size = 0
        for delta, ours in both:
            for side in (delta.old, ours, delta.new):
                if side is not None and side[1] in REGULAR_MODES:
                    try:
                        size = max(size, header(side[0])[1])
                    except KeyError:  # a blob the object database lacks (a partial clone): git's to merge
                        return False
        return self.merger.proving_pays(size)

    def _proved(self, change: CommitChanges, delta: FileDelta, ours: Entry | None) -> Entry | None:
        """git's entry for a path changed on both sides, when it is a clean content merge that
        :class:`ProvedMerges` proves; None when git must decide (also for every conflict).

        Modes merge as merge-ort merges them: one side's change is taken; both changed
        differently is a conflict (left to git). Only regular files on all three sides, and no
        ``.gitattributes`` on the way."""
        proofs = self.merger.proofs if self.merger is not None else None
        base, theirs = delta.old, delta.new
        if proofs is None or base is None or ours is None or theirs is None:
            return None
        if not (base[1] in REGULAR_MODES and ours[1] in REGULAR_MODES and theirs[1] in REGULAR_MODES):
            return None
        if ours[1] == base[1] or ours[1] == theirs[1]:
            mode = theirs[1]
        elif theirs[1] == base[1]:
            mode = ours[1]
        else:
            return None
        if ours[0] == base[0] or ours[0] == theirs[0]:
            return (theirs[0], mode)
        if theirs[0] == base[0]:
            return (ours[0], mode)
        if not proofs.usable:
            return None
        trees = [self.repo.get(change.parent_tree), self.repo.get(change.tree)]
        if proofs.attributes_apply(delta.path, tuple(t for t in trees if isinstance(t, pygit2.Tree)), self):
            return None
        merged = proofs.merge(base[0], ours[0], theirs[0])
        return None if merged is None else (merged, mode)

    def _emptied_dirs_changed(self, change: CommitChanges, folders: set[str]) -> bool:
        """Whether a directory (or a directory above it) that the commit deletes files from, and
        that the commit's tree no longer has, holds something else in the target than in the
        commit's parent: then git may move the target's files with a directory rename."""
        above = set(folders)
        for folder in folders:
            parts = folder.split("/")
            above.update("/".join(parts[:i]) for i in range(1, len(parts)))
        theirs, parent = self.repo.get(change.tree), self.repo.get(change.parent_tree)
        assert isinstance(theirs, pygit2.Tree) and isinstance(parent, pygit2.Tree)
        for folder in sorted(above):
            if _subtree(theirs, folder) is not None:
                continue  # still there in the commit: not a renamed directory
            ours = self._dir(folder)
            if ours is None:
                continue  # the target has nothing there that could move
            before = _subtree(parent, folder)
            if before is None or ours.id != before.id:
                return True
            if any(path.startswith(f"{folder}/") for path in self._pending):
                return True
        return False

    def _merge_with(self, merger: TreeMerger, change: CommitChanges) -> PickResult:
        """The pick by ``merger`` (git's merge); on success the target becomes the merged tree."""
        before = self.tree()
        try:
            outcome = merger.merge(change.parent_tree, before, change.tree)
        except (pygit2.GitError, ValueError) as exc:
            return PickResult(change.sha, error=f"git could not merge: {exc}")
        if outcome.tree is None:
            return PickResult(change.sha, conflicts=outcome.conflicts or ("(unnamed conflict)",))
        old, new = self.repo.get(before), self.repo.get(outcome.tree)
        assert isinstance(old, pygit2.Tree) and isinstance(new, pygit2.Tree)
        self._adopt(old, new)
        return PickResult(change.sha)

    def replace(self, updates: dict[str, Entry | None]) -> None:
        """Set paths by hand (path → entry, None removes): a resolution's files, say."""
        self._pending.update(updates)
        self._since.update(updates)

    def move_to(self, tree: pygit2.Oid) -> None:
        """Make ``tree`` (a resolved pick's) the target; the paths that differ count as updates."""
        before = self.tree()
        old, new = self.repo.get(before), self.repo.get(tree)
        assert isinstance(old, pygit2.Tree) and isinstance(new, pygit2.Tree)
        self._adopt(old, new)

    def _adopt(self, old: pygit2.Tree, new: pygit2.Tree) -> None:
        updates: dict[str, Entry | None] = {}
        for delta in old.diff_to_tree(new).deltas:
            if delta.status == pygit2.enums.DeltaStatus.DELETED:
                updates[delta.old_file.path] = None
            else:
                if delta.old_file.path != delta.new_file.path:
                    updates[delta.old_file.path] = None
                updates[delta.new_file.path] = (delta.new_file.id, int(delta.new_file.mode))
        self._tree = new
        self._looked_up = {}
        self._dirs = {"": new}
        self._since.update(updates)

    def take_updates(self) -> dict[str, Entry | None]:
        """The paths replaced since the last call (path → entry, None: removed), sorted by path.

        What a commit on top of the previous one must change: the bundle build streams these to
        ``git fast-import`` instead of writing every tree itself.
        """
        taken = dict(sorted(self._since.items()))
        self._since = {}
        return taken

    def _fits(self, change: CommitChanges) -> bool:
        """No file/directory clash: a path added where the target has a file as a parent dir."""
        for delta in change.deltas:
            if delta.new is None or delta.old is not None:
                continue
            parts = delta.path.split("/")
            for i in range(1, len(parts)):
                parent = self.entry("/".join(parts[:i]))
                if parent is not None and parent[1] != pygit2.enums.FileMode.TREE:
                    return False
        return True


def _subtree(tree: pygit2.Tree, folder: str) -> pygit2.Tree | None:
    """The directory ``folder`` of ``tree``, None when it is absent or not a directory."""
    try:
        item = tree[folder]
    except KeyError:
        return None
    return item if isinstance(item, pygit2.Tree) else None


def _rewrite(
    repo: pygit2.Repository, tree: pygit2.Tree | None, updates: dict[str, Entry | None]
) -> pygit2.Oid | None:
    """``tree`` with ``updates`` (path → entry, None removes) applied; None when it ends up empty."""
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    nested: dict[str, dict[str, Entry | None]] = {}
    for path, entry in updates.items():
        head, sep, rest = path.partition("/")
        if sep:
            nested.setdefault(head, {})[rest] = entry
        elif entry is None:
            if builder.get(head) is not None:
                builder.remove(head)
        else:
            builder.insert(head, entry[0], entry[1])
    for name, sub in nested.items():
        current = builder.get(name)
        subtree = repo.get(current.id) if current is not None else None
        oid = _rewrite(repo, subtree if isinstance(subtree, pygit2.Tree) else None, sub)
        if oid is None:
            if current is not None:
                builder.remove(name)
        else:
            builder.insert(name, oid, pygit2.enums.FileMode.TREE)
    if len(builder) == 0:
        return None
    return builder.write()
