"""Line-level dependencies: the incremental line owners agree with a per-line blame, and windows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from workers.engine.lines import FileRanges, Hunk, LineOwners, line_dependencies


def _brute_apply(owners: list[str | None], hunks: list[Hunk], sha: str) -> list[str | None]:
    out: list[str | None] = []
    pos = 1
    for h in sorted(hunks, key=lambda h: h.old_start):
        keep_to = h.old_start if h.old_count else h.old_start + 1
        out.extend(owners[pos - 1 : keep_to - 1])
        out.extend([sha] * h.new_count)
        pos = h.old_start + h.old_count if h.old_count else h.old_start + 1
    out.extend(owners[pos - 1 :])
    return out


@st.composite
def _edits(draw: st.DrawFn, length: int) -> list[Hunk]:
    """Non-overlapping zero-context hunks on a file of ``length`` lines, with their new numbering."""
    hunks = []
    line, shift = 1, 0
    while line <= length and len(hunks) < 4:
        line += draw(st.integers(0, 6))
        if line > length + 1:
            break
        old_count = draw(st.integers(0, min(3, length - line + 1)))
        new_count = draw(st.integers(0 if old_count else 1, 3))
        old_start = line if old_count else line - 1  # an insertion is "after line - 1"
        new_start = line + shift
        hunks.append(Hunk(old_start, old_count, new_start, new_count))
        shift += new_count - old_count
        line += old_count + 1
    return hunks


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_owners_agree_with_per_line_blame(data: st.DataObject) -> None:
    """After any sequence of edits, each line's owner is the commit that wrote it last."""
    owners_brute: list[str | None] = [None] * 20
    tracker = LineOwners(context=0)
    for n in range(5):
        hunks = data.draw(_edits(len(owners_brute)))
        if not hunks:
            continue
        sha = f"c{n}"
        owners_brute = _brute_apply(owners_brute, hunks, sha)
        tracker.apply(sha, [FileRanges("f", tuple(hunks))])
    expanded: list[str | None] = [None] * len(owners_brute)
    for seg in tracker._files.get("f", []):
        for line in range(seg.start, seg.end):
            assert line <= len(expanded), (seg, len(expanded))
            expanded[line - 1] = seg.owner
    assert expanded == owners_brute


def test_dependency_needs_overlap_within_context_not_the_same_file() -> None:
    """B depends on A when its hunk touches A's lines (or is within `context` of them); a hunk
    elsewhere in the same file is no dependency."""
    a = ("a", [FileRanges("lib/x.cpp", (Hunk(10, 2, 10, 3),))])  # A rewrites lines 10-11 as 10-12
    near = ("b", [FileRanges("lib/x.cpp", (Hunk(13, 1, 13, 1),))])  # right after A's lines
    far = ("c", [FileRanges("lib/x.cpp", (Hunk(40, 1, 40, 1),))])
    deps = line_dependencies([a, near, far], context=1)
    assert [(d.commit, d.path, d.start, d.end) for d in deps["b"]] == [("a", "lib/x.cpp", 12, 12)]
    assert deps["b"][0].describe() == "line 12 of lib/x.cpp"
    assert deps["c"] == ()
    assert line_dependencies([a, near], context=0)["b"] == ()


def test_lines_shift_through_unrelated_commits() -> None:
    """A commit that inserts lines above A's moves A's lines down: B, numbered after both, still finds A."""
    history = [
        ("a", [FileRanges("f", (Hunk(50, 1, 50, 1),))]),
        ("pad", [FileRanges("f", (Hunk(5, 0, 6, 10),))]),  # ten lines inserted after line 5
        ("b", [FileRanges("f", (Hunk(60, 1, 60, 1),))]),
    ]
    deps = line_dependencies(history, context=0)
    assert [d.commit for d in deps["b"]] == ["a"]


def test_binary_changes_link_by_whole_file() -> None:
    """A change without hunks (binary) makes any later change to that file depend on it."""
    history = [("a", [FileRanges("img.png", whole=True)]), ("b", [FileRanges("img.png", whole=True)])]
    deps = line_dependencies(history)
    assert [(d.commit, d.describe()) for d in deps["b"]] == [("a", "the whole file of img.png")]


_SAME_START = """
from workers.engine.lines import FileRanges, Hunk, line_dependencies
history = [
    ("a" * 40, [FileRanges("f.cpp", (Hunk(0, 0, 1, 100),))]),
    # an insertion after line 45 and a change of line 46: two windows from line 45, one narrower
    ("b" * 40, [FileRanges("f.cpp", (Hunk(45, 0, 46, 1), Hunk(46, 1, 47, 1)))]),
]
print([(d.start, d.end) for d in line_dependencies(history, 1)["b" * 40]])
"""


def test_dependency_order_does_not_depend_on_hash_seeds() -> None:
    """Two ranges of one earlier commit that start on the same line come out in one order in
    every process (the first is the one a reason names), whatever Python's hash seed."""
    outputs = {
        subprocess.run(
            [sys.executable, "-c", _SAME_START],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            cwd=Path(__file__).resolve().parent.parent,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in range(8)
    }
    assert outputs == {"[(45, 46), (45, 47)]\n"}


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_owners_agree_with_blame_over_long_histories_of_a_busy_file(data: st.DataObject) -> None:
    """Many commits on a longer file (ranges before the first hunk kept, after the last moved,
    between them swept): each line's owner is still the commit that wrote it last."""
    owners_brute: list[str | None] = [None] * 60
    tracker = LineOwners(context=0)
    for n in range(25):
        hunks = data.draw(_edits(len(owners_brute)))
        if not hunks:
            continue
        owners_brute = _brute_apply(owners_brute, hunks, f"c{n}")
        tracker.apply(f"c{n}", [FileRanges("f", tuple(hunks))])
    expanded: list[str | None] = [None] * len(owners_brute)
    for seg in tracker._files.get("f", []):
        for line in range(seg.start, seg.end):
            expanded[line - 1] = seg.owner
    assert expanded == owners_brute
