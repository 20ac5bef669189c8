"""Three-way merges: git's own line merge (zdiff3 conflicts, parsed) and a token-level diff3.

``git_merge`` runs ``git merge-file --zdiff3`` through the git funnel on three temporary files
(no work tree, no index) and parses its output into clean text and conflict :class:`Hunk`s.
``diff3`` is the classic diff3 over any sequences, used on tokens inside one conflict block:
it merges changes that git refused only because they touch (neighbouring words or lines).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import TypeVar

from workers.engine.git import run_git
from workers.engine.resolve.model import Hunk

OURS_LABEL = "ours"
BASE_LABEL = "base"
THEIRS_LABEL = "theirs"
MARKER_SIZE = 7

_OPEN = "<" * MARKER_SIZE + " " + OURS_LABEL
_BASE = "|" * MARKER_SIZE + " " + BASE_LABEL
_SEP = "=" * MARKER_SIZE
_CLOSE = ">" * MARKER_SIZE + " " + THEIRS_LABEL


@dataclass(frozen=True)
class Merged:
    """git's merge of one file: ``parts`` alternate clean text (a tuple of lines) and hunks."""

    parts: tuple[tuple[str, ...] | Hunk, ...]
    raw: str  # git's output, markers included (what a human would see in a work tree)

    @property
    def hunks(self) -> tuple[Hunk, ...]:
        return tuple(p for p in self.parts if isinstance(p, Hunk))

    @property
    def texts(self) -> tuple[tuple[str, ...], ...]:
        """The clean segments around the hunks: always one more than there are hunks."""
        out: list[tuple[str, ...]] = []
        current: tuple[str, ...] = ()
        for part in self.parts:
            if isinstance(part, Hunk):
                out.append(current)
                current = ()
            else:
                current = current + part
        out.append(current)
        return tuple(out)

    def assemble(self, replacements: Sequence[Sequence[str]]) -> str:
        """The file with hunk ``i`` replaced by ``replacements[i]``."""
        out: list[str] = []
        for part in self.parts:
            if isinstance(part, Hunk):
                out.extend(replacements[part.index])
            else:
                out.extend(part)
        return "".join(out)


def git_merge(ours: str, base: str, theirs: str) -> Merged:
    """Merge with ``git merge-file -p --zdiff3`` and parse the conflict blocks."""
    with tempfile.TemporaryDirectory(prefix="forksync-merge-") as tmp:
        names = []
        for role, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            p = Path(tmp) / role
            p.write_bytes(text.encode("utf-8", "surrogateescape"))
            names.append(str(p))
        out = run_git(
            tmp,
            ["merge-file", "-p", "--zdiff3", "-L", OURS_LABEL, "-L", BASE_LABEL, "-L", THEIRS_LABEL, *names],
            check=False,
        )
    raw = out.decode("utf-8", "surrogateescape")
    return parse_conflicts(raw)


def parse_conflicts(raw: str) -> Merged:
    """Parse git's merge output (labels ours/base/theirs, zdiff3 or diff3 style)."""
    parts: list[tuple[str, ...] | Hunk] = []
    text: list[str] = []
    sides: dict[str, list[str]] = {}
    state = "text"
    line_no = 1
    hunk_line = 0
    for line in raw.splitlines(keepends=True):
        bare = line.rstrip("\r\n")
        if state == "text" and bare == _OPEN:
            parts.append(tuple(text))
            text = []
            sides = {"ours": [], "base": [], "theirs": []}
            state = "ours"
            hunk_line = line_no
        elif state == "ours" and bare == _BASE:
            state = "base"
        elif state in ("ours", "base") and bare == _SEP:
            state = "theirs"
        elif state == "theirs" and bare == _CLOSE:
            index = sum(1 for p in parts if isinstance(p, Hunk))
            parts.append(
                Hunk(index, tuple(sides["ours"]), tuple(sides["base"]), tuple(sides["theirs"]), hunk_line)
            )
            state = "text"
        elif state == "text":
            text.append(line)
            line_no += 1
        else:
            sides[state].append(line)
    if state != "text":  # an unterminated block: not git's output; keep it as text
        text = [*(text or []), *sides.get("ours", ()), *sides.get("base", ()), *sides.get("theirs", ())]
    parts.append(tuple(text))
    return Merged(tuple(p for p in parts if isinstance(p, Hunk) or p), raw)


# --------------------------------------------------------------------------- diff3 on sequences

T = TypeVar("T")


@dataclass(frozen=True)
class Chunk:
    """One stretch of a diff3: stable (all three agree) or changed by ``side`` ("ours", "theirs", "both")."""

    side: str  # "stable", "ours", "theirs", "both" or "conflict"
    base: tuple[str, ...]
    ours: tuple[str, ...]
    theirs: tuple[str, ...]


def _matches(base: Sequence[str], side: Sequence[str]) -> dict[int, int]:
    matcher = SequenceMatcher(None, base, side, autojunk=False)
    found: dict[int, int] = {}
    for a, b, n in matcher.get_matching_blocks():
        for k in range(n):
            found[a + k] = b + k
    return found


def diff3(base: Sequence[str], ours: Sequence[str], theirs: Sequence[str]) -> list[Chunk]:
    """The classic diff3 (Khanna, Kunal and Pierce's formulation): stable and unstable chunks."""
    mo, mt = _matches(base, ours), _matches(base, theirs)
    chunks: list[Chunk] = []
    i = j = k = 0
    while i < len(base) or j < len(ours) or k < len(theirs):
        n = 0
        while i + n < len(base) and mo.get(i + n) == j + n and mt.get(i + n) == k + n:
            n += 1
        if n:
            same = tuple(base[i : i + n])
            chunks.append(Chunk("stable", same, same, same))
            i, j, k = i + n, j + n, k + n
            continue
        b = i
        while b < len(base) and not (b in mo and b in mt and mo[b] >= j and mt[b] >= k):
            b += 1
        oj, tk = (mo[b], mt[b]) if b < len(base) else (len(ours), len(theirs))
        o, bb, t = tuple(ours[j:oj]), tuple(base[i:b]), tuple(theirs[k:tk])
        if o == bb:
            side = "theirs"
        elif t == bb:
            side = "ours"
        elif o == t:
            side = "both"
        else:
            side = "conflict"
        chunks.append(Chunk(side, bb, o, t))
        i, j, k = b, oj, tk
    return chunks


def merged_of(chunks: Sequence[Chunk]) -> list[str] | None:
    """The merged sequence, or None when a chunk conflicts."""
    out: list[str] = []
    for c in chunks:
        if c.side == "conflict":
            return None
        out.extend(c.theirs if c.side == "theirs" else c.ours)
    return out


# Words, runs of spaces/tabs, newlines, and single punctuation: fine enough to merge a renamed
# argument with a reformatted call, coarse enough that unrelated edits rarely interleave.
_TOKEN = re.compile(r"\r?\n|[ \t]+|\w+|[^\w\s]|\s", re.UNICODE)


def tokens(text: str) -> list[str]:
    found = _TOKEN.findall(text)
    assert "".join(found) == text, "tokeniser must be lossless"
    return found
