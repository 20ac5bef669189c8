"""Line-level dependencies between upstream commits (git-deps style), computed in one pass.

Commit B depends on an earlier commit A when B's hunks, widened by ``context`` lines (the
neighbourhood a three-way merge or ``git apply`` needs to place them), overlap lines that A
was the last to change. This is what ``git blame`` on B's parent would say about those lines,
computed without blame: one walk over the upstream history in order keeps, per file, which
commit last wrote each line range (only ranges written after the base are kept), shifting the
ranges through every commit's hunks. Every commit of the history is walked, picked ones too,
because they shift lines; the partition decides which owners matter (open chain members).

Pure: it reads only the hunk ranges of each commit (``FileRanges``), never a blob.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter

# Lines a dependency looks beyond each side of a hunk. One line is where a three-way merge of
# two changes starts to conflict (xdiff treats touching regions as one); a larger value links more.
DEFAULT_CONTEXT = 1


@dataclass(frozen=True)
class Hunk:
    """One zero-context hunk, ``@@ -old_start,old_count +new_start,new_count @@``."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int


@dataclass(frozen=True)
class FileRanges:
    """The hunks of one file in one commit; ``whole`` for a change without hunks (binary, mode).

    ``renamed_from``: the file's path in the parent when the commit moved it (git's rename
    detection). Its hunks then number that path's lines, and the lines the move leaves as they
    were keep their owners at the new path, as ``git blame`` follows a rename (and a cherry-pick's
    merge follows it too): a move without hunks changes no line, so depends on none."""

    path: str
    hunks: tuple[Hunk, ...] = ()
    whole: bool = False
    renamed_from: str = ""


@dataclass(frozen=True)
class LineDep:
    """B depends on ``commit``: lines ``start``-``end`` (B's parent's numbering) of ``path``."""

    commit: str
    path: str
    start: int
    end: int

    def describe(self) -> str:
        where = f"line {self.start}" if self.start == self.end else f"lines {self.start}-{self.end}"
        if self.start == 0:
            where = "the whole file"
        return f"{where} of {self.path}"


@dataclass(slots=True)
class _Segment:
    """Lines ``start`` to ``end - 1`` (1-based, current numbering) of a file, last written by
    ``owner``. A file's segments are kept sorted and disjoint; a busy file holds thousands."""

    start: int
    end: int
    owner: str


_START = attrgetter("start")
_END = attrgetter("end")


class LineOwners:
    """Who last changed each line range of each file, as commits are applied in order."""

    def __init__(self, context: int = DEFAULT_CONTEXT) -> None:
        self.context = context
        self._files: dict[str, list[_Segment]] = {}
        self._whole: dict[str, str] = {}  # path → commit that last changed it without hunks

    def dependencies(self, files: Iterable[FileRanges]) -> list[LineDep]:
        """The earlier commits the given changes depend on (before applying them)."""
        found: list[LineDep] = []
        for f in files:
            if f.renamed_from and not (f.whole or f.hunks):
                continue  # moved as it was
            path = f.renamed_from or f.path  # where the lines are in the parent
            whole = self._whole.get(path)
            if whole is not None:
                found.append(LineDep(whole, path, 0, 0))
            segments = self._files.get(path)
            if not segments:
                continue
            if f.whole or not f.hunks:
                found.extend(LineDep(s.owner, path, s.start, s.end - 1) for s in segments)
                continue
            for lo, hi in self._windows(f.hunks):
                for s in _overlapping(segments, lo, hi):
                    found.append(LineDep(s.owner, path, max(lo, s.start), min(hi, s.end) - 1))
        return found

    def _windows(self, hunks: Sequence[Hunk]) -> list[tuple[int, int]]:
        k = self.context
        out = []
        for h in hunks:
            if h.old_count:
                out.append((max(1, h.old_start - k), h.old_start + h.old_count + k))
            else:  # an insertion after line old_start
                out.append((max(1, h.old_start - k + 1), h.old_start + k + 1))
        return out

    def apply(self, sha: str, files: Iterable[FileRanges]) -> None:
        """Record that ``sha`` changed these ranges: shift the others, own the new lines."""
        for f in files:
            if f.renamed_from:
                self._move(sha, f)
                continue
            if f.whole or not f.hunks:
                self._whole[f.path] = sha
                self._files.pop(f.path, None)
                continue
            self._whole.pop(f.path, None)
            self._files[f.path] = _shift(self._files.get(f.path, []), f.hunks, sha)

    def _move(self, sha: str, f: FileRanges) -> None:
        """A renamed file's owners go with it to its new path, shifted through its hunks."""
        segments = self._files.pop(f.renamed_from, [])
        whole = self._whole.pop(f.renamed_from, None)
        self._files.pop(f.path, None)
        self._whole.pop(f.path, None)
        if f.whole:
            self._whole[f.path] = sha
            return
        if whole is not None:
            self._whole[f.path] = whole
        if f.hunks:
            segments = _shift(segments, f.hunks, sha)
        if segments:
            self._files[f.path] = segments


def _overlapping(segments: list[_Segment], lo: int, hi: int) -> list[_Segment]:
    i = bisect_right(segments, lo, key=_END)
    out = []
    while i < len(segments) and segments[i].start < hi:
        out.append(segments[i])
        i += 1
    return out


def _shift(segments: list[_Segment], hunks: Sequence[Hunk], sha: str) -> list[_Segment]:
    """``segments`` carried through ``hunks`` (old numbering → new), plus the lines ``sha`` wrote.

    One sweep over the (sorted, disjoint) segments and the hunks: a removal ``[s, s+n)`` drops
    those lines; an insertion after line ``s`` moves the lines from ``s+1`` on; the shift of a
    line is the size change of every hunk ending at or before it. Segments the hunks do not
    reach are found by bisection and kept (the caller drops the old list): those ending before
    the first hunk as they are, those starting after the last moved by the total size change.
    So a busy file with thousands of owned ranges costs per commit little more than its hunks
    and the ranges between them.
    """
    hunks = sorted(hunks, key=lambda h: h.old_start)
    ends = [h.old_start + h.old_count if h.old_count else h.old_start + 1 for h in hunks]
    deltas = []
    total = 0
    for h in hunks:
        total += h.new_count - h.old_count
        deltas.append(total)
    first_at = hunks[0].old_start if hunks[0].old_count else ends[0]  # where hunk 0 starts to matter
    kept = bisect_right(segments, first_at, key=_END)  # segments[:kept] end at or before it
    # segments[after:] start at or past the end of the last hunk: only moved
    after = max(kept, bisect_left(segments, ends[-1], key=_START))
    out: list[_Segment] = []
    n = len(hunks)
    for seg in segments[kept:after]:
        pos, stop = seg.start, seg.end
        k = bisect_right(ends, pos)  # hunks 0..k-1 end at or before pos: their shift applies
        while pos < stop:
            d = deltas[k - 1] if k else 0
            if k == n:
                out.append(_Segment(pos + d, stop + d, seg.owner))
                break
            h, end = hunks[k], ends[k]
            first = h.old_start if h.old_count else end  # where hunk k starts to matter
            if pos < first:
                upto = min(stop, first)
                out.append(_Segment(pos + d, upto + d, seg.owner))
                pos = upto
                continue
            pos = max(pos, end)  # removed lines are gone; an insertion boundary is passed
            k += 1
    out.extend(_Segment(h.new_start, h.new_start + h.new_count, sha) for h in hunks if h.new_count)
    out.sort(key=_START)
    tail = segments[after:]
    if total:
        for seg in tail:
            seg.start += total
            seg.end += total
    return _coalesce(segments[:kept], out, tail)


def _coalesce(head: list[_Segment], segments: list[_Segment], tail: list[_Segment]) -> list[_Segment]:
    """``head`` and ``tail`` (each coalesced already) around ``segments``, neighbours of one owner
    joined."""
    out = head
    for s in (*segments, *tail[:1]):
        if out and out[-1].owner == s.owner and out[-1].end == s.start:
            out[-1].end = s.end
        else:
            out.append(s)
    out += tail[1:]
    return out


def line_dependencies(
    history: Sequence[tuple[str, Sequence[FileRanges]]], context: int = DEFAULT_CONTEXT
) -> dict[str, tuple[LineDep, ...]]:
    """For every commit of ``history`` (upstream order), the earlier commits its hunks depend on.

    One dependency per (commit, file, range), sorted; a commit never depends on itself.
    """
    walk = DependencyWalk(context)
    return {sha: walk.step(sha, files) for sha, files in history}


class DependencyWalk:
    """:func:`line_dependencies` one commit at a time: feed the history in upstream order, each
    step answers that commit's dependencies on the commits fed before it."""

    def __init__(self, context: int = DEFAULT_CONTEXT) -> None:
        self._owners = LineOwners(context)

    def step(self, sha: str, files: Sequence[FileRanges]) -> tuple[LineDep, ...]:
        deps = self._owners.dependencies(files)
        self._owners.apply(sha, files)
        return tuple(
            sorted(set(d for d in deps if d.commit != sha), key=lambda d: (d.path, d.start, d.commit, d.end))
        )
