"""The analyses and line dependencies a plan reads, made when first needed or while git merges.

A cold plan analyses every upstream commit after the base (``git diff-tree`` read into paths,
hunks and symbols: :mod:`workers.engine.changes`; about a second of Python for a thousand
commits) and steps through their line dependencies (:mod:`workers.engine.lines`), then places
the commits one by one, its trial picks waiting on ``git merge-tree`` for about as long again.
Placing commit *k* needs only what the commits up to *k* give, so neither has to be finished
first: :class:`PlanAnalyses` and :class:`Dependencies` make each item when it is first read, and
:meth:`Dependencies.read_ahead` makes the next one while the plan would otherwise wait for git
(the merger's idle hook, :attr:`workers.engine.merges.GitMerger.idle`). Same functions, same
order: the plan is the same as with everything made first (tested).
"""

from __future__ import annotations

from collections.abc import Collection, Generator, Iterator, Mapping, Sequence

import pygit2

from workers.engine.changes import AnalysisCache, CommitChanges, iter_commit_changes
from workers.engine.git import Repository
from workers.engine.lines import DependencyWalk, LineDep


class PlanAnalyses(Mapping[str, CommitChanges]):
    """The analyses a plan reads, by sha: those in the pair's cache at once, the others made in the
    order given (one ``git diff-tree`` streaming them: :func:`~workers.engine.changes.iter_commit_changes`)
    as they are read or read ahead. :meth:`save` writes what was made to the cache."""

    def __init__(
        self,
        repo: pygit2.Repository,
        git: Repository,
        cache: AnalysisCache | None,
        shas: Sequence[str],
        stop: frozenset[str],
        full: Collection[str],
    ) -> None:
        wanted = list(dict.fromkeys(shas))
        full = frozenset(full)
        missing = cache.missing(wanted, full) if cache is not None else wanted
        later = set(missing)
        self._cache = cache
        self._got: dict[str, CommitChanges] = {}
        if cache is not None:
            self._got = {s: cache.get(s) for s in wanted if s not in later}
        self._full = full
        self._made: list[str] = []  # what this plan analysed, in order
        self._waiting = later
        self._fresh: Generator[tuple[str, CommitChanges], None, None] | None = None
        if missing:
            analyse = [s for s in missing if s in full]
            self._fresh = iter_commit_changes(repo, git, missing, stop, analyse=analyse)
            self.read_ahead()  # git starts diffing now, ahead of the first read

    def __getitem__(self, sha: str) -> CommitChanges:
        while sha not in self._got and sha in self._waiting:
            self.read_ahead()
        return self._got[sha]

    def __iter__(self) -> Iterator[str]:
        return iter(self.complete())

    def __len__(self) -> int:
        return len(self._got) + len(self._waiting)

    def __contains__(self, sha: object) -> bool:
        return sha in self._got or sha in self._waiting

    def read_ahead(self) -> bool:
        """Make the next analysis not made yet; False when every one is made."""
        if self._fresh is None:
            return False
        got = next(self._fresh, None)
        if got is None:
            self._fresh = None
            self._waiting.clear()  # every commit asked was made (iter_commit_changes makes each)
            return False
        sha, changes = got
        self._got[sha] = changes
        self._made.append(sha)
        self._waiting.discard(sha)
        if self._cache is not None:
            self._cache.add(sha in self._full, changes)
        return True

    def encode_ahead(self) -> bool:
        """Encode one made analysis's cache row now (:meth:`save` then only writes); False when
        none is left to encode."""
        return self._cache is not None and self._cache.encode_one()

    def complete(self) -> dict[str, CommitChanges]:
        """Every analysis, made now where it is not yet."""
        while self.read_ahead():
            pass
        return self._got

    def save(self) -> None:
        """Write what this plan analysed to the cache (the rest made first)."""
        self.complete()
        if self._cache is not None and self._made:
            self._cache.save()

    def close(self) -> None:
        """Stop the ``git diff-tree`` of a plan that ends before it read everything."""
        fresh, self._fresh = self._fresh, None
        if fresh is not None:
            fresh.close()


class Dependencies(Mapping[str, tuple[LineDep, ...]]):
    """:func:`~workers.engine.planning.history_dependencies` made as they are read: a commit's line
    dependencies once every commit before it in ``history`` (upstream order) has been stepped
    through (:class:`~workers.engine.lines.DependencyWalk`), each once."""

    def __init__(self, history: Sequence[str], changes: Mapping[str, CommitChanges], context: int) -> None:
        self._order = [s for s in dict.fromkeys(history) if s in changes]
        self._index = {s: i for i, s in enumerate(self._order)}
        self._changes = changes
        self._walk = DependencyWalk(context)
        self._made: dict[str, tuple[LineDep, ...]] = {}

    def __getitem__(self, sha: str) -> tuple[LineDep, ...]:
        upto = self._index[sha]
        while len(self._made) <= upto:
            self.read_ahead()
        return self._made[sha]

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def read_ahead(self) -> bool:
        """Step through the next history commit (its analysis made if it is not yet); False at the end."""
        if len(self._made) >= len(self._order):
            return False
        step = self._order[len(self._made)]
        self._made[step] = self._walk.step(step, self._changes[step].ranges)
        return True
