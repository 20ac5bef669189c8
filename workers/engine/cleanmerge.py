"""Clean file merges proved without git: git's exact merged text, or no answer (then git decides).

A trial pick that changes a file the target also changed is a three-way file merge. git
(merge-ort, ``ll_merge`` → ``xdl_merge``, level ZEALOUS, histogram diff, no whitespace flags)
would merge it; :func:`merge_clean` says, without running git, when that merge is certainly
clean and what bytes git writes (windows of lines outside which nothing changes, items 3 and 6,
at least one line apart between the sides, item 5). It never claims a conflict: whatever it cannot prove is left
to git, and the caller asks git as before. Read from git's source (``xdiff/xhistogram.c``,
``xdiffi.c``, ``xmerge.c``, ``ll-merge.c``, ``merge-ort.c``; v2.39.5 and master, 2.55):

1. **Records.** Files are split after each ``\\n``; a last line without one is its own record,
   so ``"x"`` and ``"x\\n"`` differ. Records compare by exact bytes (the classifier's index).
   A file with a NUL in its first 8,000 bytes is merged as binary (a conflict): not ours.
2. **Histogram does not trim.** Unlike myers, the histogram diff runs on whole files (no
   common prefix/suffix trimming, ``xdl_prepare_env``), choosing anchors by rarity, so an
   anchor may pair a line of the common prefix with a later copy of it. Trimming alone does not
   bound where the changes fall.
3. **Fences bound them.** Let ``p``/``s`` be the lengths of the common prefix/suffix of base and
   side. Walk outwards from ``[p, n-s)`` to the nearest line ``F`` before it and ``G`` after it
   that each occur exactly once in base and once in side (or to the file's ends). Then every
   line histogram marks changed lies in ``[lo, hi)`` (side: ``[lo, hi')``). Proof, over the
   recursion: every sub-problem holding ``F`` at index ``lo-1`` on both sides starts at the
   same index ``l`` on both; the run through ``F`` on the diagonal extends back to ``l`` (the
   prefix is equal) and has count 1, so it is considered (``F``'s own ``b_ptr``, or skipped only
   inside a run through ``F``, which is that run), and the anchor finally chosen is at least as
   long (nothing beats count 1 but a longer run). Any run holding ``F`` on one side holds it on
   the other (unique), and a run lying wholly before ``F`` on either side is shorter than
   ``lo-l``, so the anchor holds the ``F`` pair (left part empty) or lies after it on both
   sides (the left sub-problem keeps the invariant). ``G`` is symmetric (runs extend forward to
   the aligned ends). Histogram falls back to myers only when no line has count ≤ 64, never in
   a sub-problem holding a fence, so the fallback stays inside the window. Histogram fails
   (``scanA``: 65 distinct lines in one hash bucket) only if base has more than 8,192 distinct
   lines: ``XDL_HASHLONG`` of consecutive class indexes fills each bucket once per ``2**b``
   indexes, a region of ``count`` lines uses ``b`` bits with ``2**b ≥ count``, and a chain needs
   more distinct lines than ``count`` allows below ``b = 7``; so such files are left to git.
4. **Compaction cannot cross a fence.** ``xdl_change_compact`` slides a group up only over a line
   equal to the group's last line (down: equal to its first), in the same file; crossing ``F``
   (``G``) would need a second copy of it in that file.
5. **The merge.** ``xdl_do_merge`` takes ours' hunk alone iff it ends strictly before theirs
   starts (``i1 + chg1 < i1'``, at least one base line between) and vice versa; taken alone,
   hunks are never joined (``xdl_append_merge`` joins only touching ones, and one untouched line
   separates them on both sides) and the output copies ours' records with theirs' hunks replaced
   by theirs' records (``xdl_fill_merge_buffer``, no newline added). So when every window of one
   side is at least one base line away from every window of the other, the merge is clean and is
   base with each window's base lines replaced by its side's lines.
6. **Many windows: histogram replayed.** One window a side (3) fails as soon as the two sides'
   edits interleave (a busy file). Then the diff itself is computed as git computes it:
   ``histogram_diff``/``find_lcs``/``try_lcs``/``scanA`` replayed step for step on git's class
   indexes (numbered by first appearance, base first), giving the lines git marks changed before
   compaction (where git falls back to the classic diff, its whole sub-problem is marked: the
   classic diff changes nothing outside it; where ``scanA`` would fail, no answer). Each hunk is
   then widened while the line just outside it equals a line inside it (either file), and
   touching windows are joined: a group of changes slides only over a line equal to one of its
   own (4), so no group leaves its window, and lines outside every window stay matched in order.
   Item 5 then decides. The replay is checked against git on every file merge of the real
   replay's plan and the synthetic pair (``benchmarks/proof_check.py``) and by seeded tests. It
   runs only below :data:`HISTOGRAM_MAX_LINES` base lines, where it is cheaper than git's merge.

What else git does per file is the caller's to rule out (:mod:`workers.engine.pick`): modes,
``.gitattributes`` (merge drivers, ``-merge``), ``merge.default``, ``merge.renormalize``,
``diff.algorithm``; the version of git (:func:`proof_holds_for`).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from itertools import accumulate, repeat
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

# ``buffer_is_binary``: a NUL in the first FIRST_FEW_BYTES bytes makes a file binary to git.
FIRST_FEW_BYTES = 8000
# Above this many distinct base lines, histogram's index could overflow a hash chain (item 3).
MAX_DISTINCT_LINES = 64 * 2**7
# The git versions whose merge code the proof was read from (both ends read): 2.38 is the first
# ``git merge-tree --write-tree`` (what forksync's trial merges run); 2.55 is git's master.
VERIFIED_GIT = ((2, 38), (2, 55))

# Above this many base lines the histogram replay (item 6) is not tried: in Python it costs more
# than ``git merge-tree`` (~5-7 ms CPU a merge) from ~2,000 lines on (measured on the replay).
HISTOGRAM_MAX_LINES = 2000

# A window of changes: base lines [lo, hi) stand for the side's lines [side_lo, side_hi).
Window = tuple[int, int, int, int]


class MergeMemo:
    """What :func:`merge_clean` may keep between merges: each side's windows (they depend on base
    and that side alone), the last few base files as histogram reads them, and the last few files'
    records with their line offsets, by caller's keys (blob ids, say). A trial pick's file merges
    repeat: the same commit onto several targets, the same running target under many commits."""

    ANCESTORS_KEPT = 16
    FILES_KEPT = 64

    def __init__(self) -> None:
        self.windows: dict[tuple[Hashable, Hashable], list[Window] | None] = {}
        self.ancestors: dict[Hashable, _Ancestor] = {}
        self.files: dict[Hashable, _File] = {}

    def file(self, key: Hashable, data: bytes) -> _File:
        """``data`` (named ``key``) split into records, kept for the next merges that meet it."""
        return keep_recent(self.files, key, lambda: _File(data), self.FILES_KEPT)

    def ancestor(self, key: Hashable, records: Sequence[bytes]) -> _Ancestor:
        return keep_recent(self.ancestors, key, lambda: _Ancestor(records), self.ANCESTORS_KEPT)


def keep_recent(kept: dict[K, V], key: K, make: Callable[[], V], limit: int) -> V:
    """``kept[key]`` (made by ``make`` when absent), kept as the most recent of at most ``limit``
    entries: ``kept`` is in order of use, the least recently used dropped first."""
    found = kept.pop(key, None)
    if found is None:
        found = make()
        while len(kept) >= limit:
            del kept[next(iter(kept))]
    kept[key] = found  # most recent last
    return found


def merge_clean(
    base: bytes,
    ours: bytes,
    theirs: bytes,
    memo: MergeMemo | None = None,
    keys: tuple[Hashable, Hashable, Hashable] = ("base", "ours", "theirs"),
) -> bytes | None:
    """git's merged text of a clean three-way text merge, or None when not proved clean.

    ``ours`` and ``theirs`` must both differ from ``base`` (a side equal to base is no merge).
    First the fence bound (one window a side, linear), then git's histogram replayed (item 6);
    with a ``memo``, what it learns is kept under ``keys`` (naming base, ours and theirs).
    """
    if any(b"\0" in data[:FIRST_FEW_BYTES] for data in (base, ours, theirs)):
        return None
    memo = memo or MergeMemo()
    files = [memo.file(key, data) for key, data in zip(keys, (base, ours, theirs), strict=True)]
    old, one, two = (file.records for file in files)
    first, second = _fenced(files[0], files[1]), _fenced(files[0], files[2])
    if first is not None and second is not None and _apart([first], [second]):
        return _splice(files[0], (files[1], [first]), (files[2], [second]))
    if len(old) > HISTOGRAM_MAX_LINES:
        return None  # replaying histogram on it costs more than git's whole merge
    sides: list[list[Window]] = []
    for key, new in zip(keys[1:], (one, two), strict=True):
        if (keys[0], key) not in memo.windows:
            memo.windows[(keys[0], key)] = _histogram_windows(memo.ancestor(keys[0], old), new)
        windows = memo.windows[(keys[0], key)]
        if windows is None:
            return None
        sides.append(windows)
    if not _apart(sides[0], sides[1]):
        return None
    return _splice(files[0], (files[1], sides[0]), (files[2], sides[1]))


def proof_holds_for(version: str) -> bool:
    """Whether ``git version`` output names a git whose merge code the proof was read from."""
    found = re.search(r"(\d+)\.(\d+)", version)
    if found is None:
        return False
    seen = (int(found.group(1)), int(found.group(2)))
    return VERIFIED_GIT[0] <= seen <= VERIFIED_GIT[1]


def _records(data: bytes) -> list[bytes]:
    """xdiff's records: each line with its ``\n``; a last line without one stays as it is."""
    if b"\r" not in data:  # then splitlines (which also splits at a lone \r) splits at \n alone
        return data.splitlines(keepends=True)
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


class _File:
    """One file's bytes, its records (item 1), how many times each record occurs and the byte
    offset where each starts (the length last): what a merge reads of a side, kept by
    :class:`MergeMemo` for the next merges that meet the same blob."""

    __slots__ = ("_counts", "_starts", "data", "records")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.records = _records(data)
        self._starts: list[int] | None = None
        self._counts: Counter[bytes] | None = None

    @property
    def counts(self) -> Counter[bytes]:
        if self._counts is None:
            self._counts = Counter(self.records)
        return self._counts

    @property
    def starts(self) -> list[int]:
        if self._starts is None:
            self._starts = _line_starts(self.records)
        return self._starts


def _fenced(base: _File, side: _File) -> Window | None:
    """The one window outside which the diff base → ``side`` changes nothing (item 3), fenced by
    lines unique in both files or by the file's ends; None when ``side`` is ``base``."""
    old, new = base.records, side.records
    n, m = len(old), len(new)
    limit = min(n, m)
    p = _equal_run(old, 0, new, 0, limit)
    s = _equal_back(old, n, new, m, limit - p)
    if p == n == m:
        return None
    counts = base.counts
    if len(counts) > MAX_DISTINCT_LINES:
        return None
    theirs = side.counts

    def fence(line: bytes) -> bool:
        return counts[line] == 1 and theirs[line] == 1

    lo = p
    while lo > 0 and not fence(old[lo - 1]):
        lo -= 1
    hi = n - s
    while hi < n and not fence(old[hi]):
        hi += 1
    return lo, hi, lo, m - (n - hi)


class _Ancestor:
    """The base file as histogram sees it: its records, git's class index of each (numbered in
    order of first appearance, as ``xdl_classify_record`` numbers them) and where each occurs."""

    def __init__(self, records: Sequence[bytes]) -> None:
        self.records = records
        self.ids: dict[bytes, int] = {line: n for n, line in enumerate(dict.fromkeys(records))}
        self.a = list(map(self.ids.__getitem__, records))
        self.distinct = len(self.ids)
        self._by_line = sorted(range(1, len(records) + 1), key=[-1, *self.a].__getitem__)  # stable
        self._lines = sorted(self.a)
        self._where: dict[int, list[int]] = {}

    def where(self, line: int) -> list[int]:
        """The 1-based places of the line with class index ``line``, ascending."""
        found = self._where.get(line)
        if found is None:
            found = self._where[line] = self._by_line[
                bisect_left(self._lines, line) : bisect_right(self._lines, line)
            ]
        return found


def _histogram_windows(ancestor: _Ancestor, new: Sequence[bytes]) -> list[Window] | None:
    """The windows holding every change git's diff base → ``new`` makes after compaction (item 6),
    in order and at least one unchanged line apart; None when histogram would fail."""
    old, ids = ancestor.records, ancestor.ids
    b = list(map(ids.get, new, repeat(-1)))  # a line base lacks matches nothing (its index unused)
    marks = _histogram(ancestor, b)
    if marks is None:
        return None
    changed_a, changed_b = marks
    n, m = len(old), len(b)
    hunks: list[Window] = []
    i = j = 0
    while i < n or j < m:
        next_a, next_b = changed_a.find(1, i), changed_b.find(1, j)  # unchanged lines pair up
        skip = min(n - i if next_a < 0 else next_a - i, m - j if next_b < 0 else next_b - j)
        i, j = i + skip, j + skip
        if i >= n and j >= m:
            break
        lo, side_lo = i, j
        while i < n and changed_a[i]:
            i += 1
        while j < m and changed_b[j]:
            j += 1
        hunks.append((lo, i, side_lo, j))
    windows: list[Window] = []
    for hunk in hunks:
        window = _grown(old, new, hunk)
        while windows and windows[-1][1] >= window[0]:  # touching: one group for compaction
            before = windows.pop()
            window = _grown(old, new, (before[0], window[1], before[2], window[3]))
        windows.append(window)
    return windows


def _grown(old: Sequence[bytes], new: Sequence[bytes], window: Window) -> Window:
    """``window`` widened over every line outside it that equals a line inside it (either file):
    no group of changes can slide past a line that is not among its window's lines."""
    lo, hi, side_lo, side_hi = window
    inside = set(old[lo:hi]) | set(new[side_lo:side_hi])
    while lo > 0 and old[lo - 1] in inside:
        lo -= 1
        side_lo -= 1
    while hi < len(old) and old[hi] in inside:
        hi += 1
        side_hi += 1
    return lo, hi, side_lo, side_hi


def _histogram(ancestor: _Ancestor, b: Sequence[int]) -> tuple[bytearray, bytearray] | None:
    """The lines git's histogram diff marks changed in base and ``b`` (class indexes), before
    compaction: ``xhistogram.c``'s ``histogram_diff`` replayed step for step (1-based lines, as
    there). Where git falls back to the classic diff the whole sub-problem is marked (the classic
    diff changes only lines inside it); None where git's diff fails (``scanA``)."""
    a = ancestor.a
    changed_a, changed_b = bytearray(len(a)), bytearray(len(b))
    todo = [(1, len(a), 1, len(b))]
    while todo:
        line1, count1, line2, count2 = todo.pop()
        while True:
            if count1 <= 0 and count2 <= 0:
                break
            if count1 == 0 or count2 == 0:
                changed_a[line1 - 1 : line1 - 1 + count1] = b"\1" * count1
                changed_b[line2 - 1 : line2 - 1 + count2] = b"\1" * count2
                break
            found = _find_lcs(ancestor, b, line1, count1, line2, count2)
            if found is None:
                return None
            if found == _FALL_BACK or (found[0] == 0 and found[1] == 0):
                changed_a[line1 - 1 : line1 - 1 + count1] = b"\1" * count1
                changed_b[line2 - 1 : line2 - 1 + count2] = b"\1" * count2
                break
            begin1, begin2, end1, end2 = found
            todo.append((line1, begin1 - line1, line2, begin2 - line2))
            last1, last2 = line1 + count1 - 1, line2 + count2 - 1
            line1, count1 = end1 + 1, last1 - end1
            line2, count2 = end2 + 1, last2 - end2
    return changed_a, changed_b


# find_lcs's answer when no common line occurs few enough times: git runs the classic diff there.
_FALL_BACK = (-1, -1, -1, -1)
# xhistogram.c's index.max_chain_length: the most distinct lines a hash bucket holds, and the most
# occurrences a line may have to anchor a region.
_MAX_CHAIN = 64
_NOWHERE: list[int] = []


def _find_lcs(
    ancestor: _Ancestor, b: Sequence[int], line1: int, count1: int, line2: int, count2: int
) -> tuple[int, int, int, int] | None:
    """``find_lcs`` (with ``scanA`` and ``try_lcs``): the anchor region (begin1, begin2, end1,
    end2; all 0 when none), :data:`_FALL_BACK`, or None where git fails.

    The same candidates in the same order as git; a run's extension is found by comparing slices
    (``_equal_run``), a line's count in the region (``rec->cnt``) from its occurrences, and a
    run's count (``rc``: the fewest occurrences of any of its lines) is the minimum git's
    step-by-step extension reaches."""
    a, where = ancestor.a, ancestor.where
    end_a, end_b = line1 + count1 - 1, line2 + count2 - 1
    bits = max(1, (count1 - 1).bit_length())  # xdl_hashbits(count1)
    # scanA fails on a 65th distinct line in one bucket. XDL_HASHLONG maps each block of 2**bits
    # consecutive class indexes onto the buckets one to one, so below 64 blocks it cannot.
    if ancestor.distinct > _MAX_CHAIN << bits:
        mask = (1 << bits) - 1
        if max(Counter((v + (v >> bits)) & mask for v in set(a[line1 - 1 : end_a])).values()) > _MAX_CHAIN:
            return None

    def count(line: int) -> int:
        places = where(line)
        return bisect_right(places, end_a) - bisect_left(places, line1)

    best_cnt = _MAX_CHAIN + 1
    has_common = False
    begin1 = begin2 = end1 = end2 = 0
    b_ptr = line2
    while b_ptr <= end_b:
        b_next = b_ptr + 1
        line = b[b_ptr - 1]
        occurrences = where(line) if line >= 0 else _NOWHERE
        k = bisect_left(occurrences, line1)
        stop = bisect_right(occurrences, end_a, k)  # the region's occurrences: [k, stop)
        cnt = stop - k
        if cnt:
            has_common = True
            if cnt <= best_cnt:
                while True:
                    at = occurrences[k]
                    back = _equal_back(a, at - 1, b, b_ptr - 1, min(at - line1, b_ptr - line2))
                    ahead = _equal_run(a, at, b, b_ptr, min(end_a - at, end_b - b_ptr))
                    as_, bs, ae, be = at - back, b_ptr - back, at + ahead, b_ptr + ahead
                    rc = cnt
                    if rc > 1:
                        for other in a[as_ - 1 : ae]:
                            seen = count(other)
                            if seen < rc:
                                rc = seen
                                if rc == 1:
                                    break
                    if b_next <= be:
                        b_next = be + 1
                    if end1 - begin1 < ae - as_ or rc < best_cnt:
                        begin1, begin2, end1, end2 = as_, bs, ae, be
                        best_cnt = rc
                    k += 1
                    while k < stop and occurrences[k] <= ae:
                        k += 1
                    if k >= stop:
                        break
        b_ptr = b_next
    if has_common and best_cnt > _MAX_CHAIN:
        return _FALL_BACK
    return begin1, begin2, end1, end2


def _equal_run(a: Sequence[Hashable], i: int, b: Sequence[Hashable], j: int, limit: int) -> int:
    """The largest ``u ≤ limit`` with ``a[i:i+u] == b[j:j+u]`` (0-based), by doubling slices."""
    if limit <= 0 or a[i] != b[j]:
        return 0
    good, step = 1, 8
    while good < limit:
        upto = min(limit, good + step)
        if a[i + good : i + upto] == b[j + good : j + upto]:
            good, step = upto, step * 2
            continue
        if upto - good == 1:
            break
        step = max(1, (upto - good) // 2)
    return good


def _equal_back(a: Sequence[Hashable], i: int, b: Sequence[Hashable], j: int, limit: int) -> int:
    """The largest ``t ≤ limit`` with ``a[i-t:i] == b[j-t:j]`` (0-based ends), by doubling slices."""
    if limit <= 0 or a[i - 1] != b[j - 1]:
        return 0
    good, step = 1, 8
    while good < limit:
        upto = min(limit, good + step)
        if a[i - upto : i - good] == b[j - upto : j - good]:
            good, step = upto, step * 2
            continue
        if upto - good == 1:
            break
        step = max(1, (upto - good) // 2)
    return good


def _apart(ours: Sequence[Window], theirs: Sequence[Window]) -> bool:
    """Whether every window of one side is at least one base line away from every window of the
    other (item 5: ``xdl_do_merge`` takes each hunk alone, never as a conflict)."""
    i = j = 0
    while i < len(ours) and j < len(theirs):
        if ours[i][1] < theirs[j][0]:
            i += 1
        elif theirs[j][1] < ours[i][0]:
            j += 1
        else:
            return False
    return True


def _splice(
    old: _File,
    early: tuple[_File, Sequence[Window]],
    late: tuple[_File, Sequence[Window]],
) -> bytes:
    """Base with each window replaced by its side's lines (item 5), cut from the files' bytes."""
    spans: list[tuple[Window, bytes, list[int]]] = []
    for file, windows in (early, late):
        side = file.starts
        spans.extend((w, file.data, side) for w in windows)
    spans.sort(key=lambda x: x[0][0])
    starts, base = old.starts, old.data
    out: list[bytes] = []
    at = 0
    for (lo, hi, side_lo, side_hi), data, side in spans:
        out.append(base[starts[at] : starts[lo]])
        out.append(data[side[side_lo] : side[side_hi]])
        at = hi
    out.append(base[starts[at] :])
    return b"".join(out)


def _line_starts(lines: Sequence[bytes]) -> list[int]:
    """The byte offset where each line starts, and the length of the file last."""
    return [0, *accumulate(map(len, lines))]
