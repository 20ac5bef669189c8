"""Deterministic per-hunk strategies, cheapest and surest first; each declines rather than guess.

A strategy looks at one conflict :class:`Hunk` (ours = the fork, base = upstream's parent,
theirs = the upstream commit) and returns a :class:`HunkResolution` with its reason, or None.
Which rules are here, and which were left out, was decided on real backport conflicts
(benchmarks/bench_conflicts.py); docs/conflicts.md gives the figures. The guiding rule: a
wrong resolution that passes the rails is worse than a decline, so every rule has guards.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from workers.engine.resolve import imports, model
from workers.engine.resolve.merge3 import diff3, merged_of, tokens
from workers.engine.resolve.model import Hunk, HunkResolution


@dataclass(frozen=True)
class HunkContext:
    """What a strategy may know besides the hunk: the file's path and the fork's whole file."""

    path: str
    fork_text: str = ""  # the fork's version of the whole file (where a region the fork lacks may have moved)
    upstream_text: str = ""  # upstream's version of the whole file
    base_text: str = ""  # upstream's parent's version (with upstream_text: the lines upstream's commit adds)


Strategy = Callable[[Hunk, HunkContext], HunkResolution | None]


def _resolution(hunk: Hunk, strategy: str, lines: Sequence[str], reason: str) -> HunkResolution:
    return HunkResolution(hunk.index, strategy, tuple(lines), reason, hunk.digest())


def _bare(lines: Sequence[str]) -> list[str]:
    return [line.rstrip("\r\n") for line in lines]


def identical_sides(hunk: Hunk, ctx: HunkContext) -> HunkResolution | None:
    """Both sides made the same change: take it."""
    if hunk.ours == hunk.theirs:
        return _resolution(hunk, model.IDENTICAL, hunk.ours, "the fork and upstream made the same change")
    return None


def _squash(lines: Sequence[str]) -> list[str]:
    return [" ".join(line.split()) for line in lines if line.strip()]


def whitespace_only(hunk: Hunk, ctx: HunkContext) -> HunkResolution | None:
    """The sides differ only in whitespace (indentation, blank lines, trailing space): keep the fork's.

    In indentation-sensitive files (Python, YAML, reST, Markdown, Makefiles) a different
    indentation is a different meaning, so there the sides must match with indentation kept.
    """
    keep = ctx.path.endswith(_INDENT_SENSITIVE)
    if _content(hunk.ours, keep_indent=keep) == _content(hunk.theirs, keep_indent=keep):
        return _resolution(
            hunk,
            model.WHITESPACE,
            hunk.ours,
            "the two sides differ only in whitespace; the fork's formatting is kept",
        )
    return None


def _in_order(needle: Sequence[str], hay: Sequence[str]) -> bool:
    it = iter(hay)
    return all(any(x == y for y in it) for x in needle)


def already_applied(hunk: Hunk, ctx: HunkContext) -> HunkResolution | None:
    """Upstream's change is already in the fork (an earlier or out-of-order pick): keep the fork's side.

    Every non-blank line upstream adds is in the fork's side, in order, and no line upstream
    removes is there more often than upstream itself keeps it.
    """
    ours, base, theirs = (_strip(hunk.ours), _strip(hunk.base), _strip(hunk.theirs))
    cb, ct, co = collections.Counter(base), collections.Counter(theirs), collections.Counter(ours)
    added = [line for line in theirs if line.strip() and ct[line] > cb[line]]
    removed = [line for line in (cb - ct) if line.strip()]
    if not added or not _in_order(added, ours):
        return None
    if any(co[line] > ct[line] for line in removed):
        return None
    return _resolution(
        hunk,
        model.ALREADY_APPLIED,
        hunk.ours,
        f"upstream's change ({len(added)} added line(s)) is already in the fork, so the fork's side is kept",
    )


def _strip(lines: Sequence[str]) -> list[str]:
    return [line.rstrip() for line in lines]


# Files where leading whitespace carries meaning: there a side "equal to base" must keep its indentation.
_INDENT_SENSITIVE = (
    ".py",
    ".pyi",
    ".pyx",
    ".yml",
    ".yaml",
    ".rst",
    ".md",
    ".mk",
    "Makefile",
    ".cfg",
    ".toml.j2",
)


def _content(lines: Sequence[str], *, keep_indent: bool) -> list[str]:
    if keep_indent:
        return [line.rstrip() for line in lines if line.strip()]
    return _squash(lines)


def fork_unchanged(hunk: Hunk, ctx: HunkContext) -> HunkResolution | None:
    """The fork's side is upstream's parent up to whitespace: take upstream's change.

    git conflicts when the fork only reformatted the region (a dropped blank line, trailing
    spaces, re-wrapped spacing) and upstream changed it. The fork made no change of substance
    there, so upstream's side is the three-way answer. Guards: upstream's parent has lines
    there; in indentation-sensitive files (Python, YAML, reST, Markdown, Makefiles) the fork's
    indentation must equal the parent's, since a re-indent there can be a change of meaning;
    the fork has not deleted blank lines that upstream's side keeps (then it did make a change).
    """
    if not hunk.base:
        return None
    keep = ctx.path.endswith(_INDENT_SENSITIVE)
    if _content(hunk.ours, keep_indent=keep) != _content(hunk.base, keep_indent=keep):
        return None
    if _BLANK_LINE_GUARD and _reverts_fork_blank_lines(hunk, keep):
        return None
    return _resolution(
        hunk,
        model.FORK_UNCHANGED,
        hunk.theirs,
        "the fork's side equals upstream's parent up to whitespace, so upstream's change is taken",
    )


# Guards added on held-out projects' backports (docs/conflicts.md, "Guards from other projects"); a flag
# each so that a test can show the guard is what declines.
_BLANK_LINE_GUARD = True


def _reverts_fork_blank_lines(hunk: Hunk, keep: bool) -> bool:
    """The fork deleted blank lines of upstream's parent that upstream's side still has.

    Then the fork's side is not "unchanged": taking upstream's side puts back the blank lines the
    fork removed, and keeping them out applies a layout edit to text upstream wrote; maintainers
    do either (pytest kept upstream's, cinder kept the fork's), so the rule declines.
    """

    def norm(line: str) -> str:
        return line.rstrip() if keep else " ".join(line.split())

    base, ours, theirs = ([norm(x) for x in side] for side in (hunk.base, hunk.ours, hunk.theirs))
    dropped = {
        i
        for op, i1, i2, _, _ in SequenceMatcher(None, base, ours, autojunk=False).get_opcodes()
        if op == "delete" and not any(base[i1:i2])
        for i in range(i1, i2)
    }
    if not dropped:
        return False
    kept = {
        i
        for op, i1, i2, _, _ in SequenceMatcher(None, base, theirs, autojunk=False).get_opcodes()
        if op == "equal"
        for i in range(i1, i2)
    }
    return bool(dropped & kept)


def _find_block(side: Sequence[str], block: Sequence[str]) -> int:
    """Where ``block`` (non-empty) occurs contiguously in ``side``, or -1."""
    n = len(block)
    return next((i for i in range(len(side) - n + 1) if tuple(side[i : i + n]) == tuple(block)), -1)


def _edited_spans(base: str, side: str) -> list[str]:
    """The base text each token-level edit of ``side`` replaces, with its neighbouring words."""
    b, s = tokens(base), tokens(side)
    spans = []
    for op, i1, i2, _j1, _j2 in SequenceMatcher(None, b, s, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        lo = i1 - 1
        while lo > 0 and not b[lo].strip():
            lo -= 1
        hi = i2
        while hi < len(b) - 1 and not b[hi].strip():
            hi += 1
        spans.append("".join(b[max(lo, 0) : hi + 1]))
    return spans


def upstream_inserts_around_fork_edit(hunk: Hunk, ctx: HunkContext) -> HunkResolution | None:
    """Upstream only inserts new lines next to a region the fork edited in place: both kept.

    Typical of a backport: upstream adds a new test or method right above a signature the
    maintenance branch spells differently (older annotations, a renamed type). Upstream's side
    is its parent with whole lines inserted around it, unchanged; the answer is upstream's
    inserted lines around the fork's version of the region. Guards, from the cases where the
    maintainer did otherwise: the fork's edit is in place (as many lines as the parent: a
    reflowed or rewritten region is ambiguous), and the inserted lines do not contain what the
    fork edited away (then the new code is written in the style the fork changed, and a human
    adapts it, e.g. annotations the branch does not use).
    """
    base, ours, theirs = hunk.base, hunk.ours, hunk.theirs
    if not base or not ours or len(ours) != len(base) or len(theirs) <= len(base):
        return None
    at = _find_block(theirs, base)
    if at < 0:
        return None
    before, after = theirs[:at], theirs[at + len(base) :]
    inserted = "".join(before) + "".join(after)
    if not inserted.strip():
        return None
    if any(span.strip() and span in inserted for span in _edited_spans("".join(base), "".join(ours))):
        return None
    return _resolution(
        hunk,
        model.UPSTREAM_INSERTS,
        [*before, *ours, *after],
        f"upstream only inserts {len(before) + len(after)} line(s) next to a region the fork edited in place; "
        "upstream's new lines and the fork's version of the region are both kept",
    )


# A region the fork lacks must be at least this long: a few lines absent from the fork are more often
# lines it rewrote beyond recognition (or a small guard a backport needs) than code it does not have.
_MIN_LACKED_LINES = 10
_IMPORT_LINE = re.compile(r"^\s*(import\s|from\s+\S+\s+import\s|#\s*include\s|using\s|require\b|use\s)")


def _significant(lines: Sequence[str]) -> list[str]:
    """The lines that identify code wherever it sits (stripped, longer than a brace or a keyword)."""
    return [line.strip() for line in lines if len(line.strip()) > 8]


_GROWTH_GUARD = True


def fork_lacks_region(hunk: Hunk, ctx: HunkContext) -> HunkResolution | None:
    """The fork does not have the region upstream edits: upstream's edit does not apply, the fork's side is kept.

    The fork's side of the block is empty: a test, a function, a config section that came to
    upstream after the fork branched (or that the fork removed), which upstream now edits.
    Guards, from the cases where the maintainer did otherwise: the region is at least 10
    non-blank lines of upstream's parent; upstream only replaces or removes lines in it, its
    replacements are no longer than what they replace (a region upstream grows is new code, such as
    the test of the fix being picked), and it adds no import (a new line, or a new import, may be needed by the rest of the pick); and
    the region has not moved in the fork: fewer than half of its lines, and none of the lines
    upstream changes, are anywhere in the fork's file (else upstream's edit should follow it).
    """
    if hunk.ours or len([line for line in hunk.base if line.strip()]) < _MIN_LACKED_LINES:
        return None
    ops = [
        op
        for op in SequenceMatcher(None, list(hunk.base), list(hunk.theirs), autojunk=False).get_opcodes()
        if op[0] != "equal"
    ]
    if not ops or any(tag == "insert" for tag, *_ in ops):
        return None
    if _GROWTH_GUARD and sum(j2 - j1 for *_, j1, j2 in ops) > sum(i2 - i1 for _, i1, i2, *_ in ops):
        return None  # upstream's replacements bring more lines than they take: new code the pick may need
    new_lines = [line for _, _, _, j1, j2 in ops for line in hunk.theirs[j1:j2]]
    if any(_IMPORT_LINE.match(line) for line in new_lines):
        return None
    fork = {line.strip() for line in ctx.fork_text.splitlines()}
    region = _significant(hunk.base)
    if region and sum(1 for line in region if line in fork) * 2 >= len(region):
        return None
    changed = _significant([line for _, i1, i2, _, _ in ops for line in hunk.base[i1:i2]])
    if any(line in fork for line in changed):
        return None
    return _resolution(
        hunk,
        model.FORK_LACKS_REGION,
        hunk.ours,
        f"the fork does not have this region ({len(hunk.base)} lines of upstream's parent) and upstream only "
        f"edits or removes lines in it ({len(changed) or 'a few'} changed), so its change does not apply here",
    )


_IMPORT_MODULE_GUARD = True


def _renames_a_module(ours: Sequence[str], base: Sequence[str]) -> bool:
    """The fork imports a name of upstream's parent from another module (``oslo.config`` for ``oslo_config``).

    The branch's modules are laid out differently there (a namespace package renamed, a module
    vendored or moved), so the imports upstream adds may need the branch's spelling too
    (cinder's ``processutils`` came from ``cinder.openstack.common`` on the branch, not
    ``oslo_concurrency``): no merge by name can tell.
    """
    o, b = imports.parse_block(ours), imports.parse_block(base)
    if o is None or b is None:
        return False
    where_o = {imports.bound_name(item): item[1] for line in o for item in line.items()}
    where_b = {imports.bound_name(item): item[1] for line in b for item in line.items()}
    return any(name in where_b and where_b[name] != module for name, module in where_o.items())


def import_merge(hunk: Hunk, ctx: HunkContext) -> HunkResolution | None:
    """Both sides only edit Python imports in the block: merge them by imported name.

    git conflicts when the fork and upstream both touch one import line (``from x import a``
    becomes ``a, b`` upstream and ``a, c`` in the fork). Every line of the three sides must be
    a one-line import at one indentation, and every side must have some. A name one side
    drops stays dropped only if the other side's code does not use it (the fork's file, less
    the lines upstream removes; or the lines upstream's commit adds); the result is written in
    the order convention (isort's, or by module; ASCII or case-folded) all three sides follow,
    and when they follow several that disagree here, it declines. It declines too when the fork
    imports one of the parent's names from another module (the branch's modules differ there).
    """
    if not ctx.path.endswith((".py", ".pyi")):
        return None
    if _IMPORT_MODULE_GUARD and _renames_a_module(hunk.ours, hunk.base):
        return None
    got = imports.merge(
        hunk.ours,
        hunk.base,
        hunk.theirs,
        fork_text=ctx.fork_text,
        upstream_text=ctx.upstream_text,
        base_text=ctx.base_text,
    )
    if got is None:
        return None
    added = ", ".join(got.added) or "none"
    removed = ", ".join(got.removed) or "none"
    return _resolution(
        hunk,
        model.IMPORT_MERGE,
        got.lines,
        f"both sides only edit the imports here; merged by name (added: {added}; removed: {removed}; "
        f"no removed name is still used), ordered {got.convention} as both sides are",
    )


# A line that is one entry of a list-like region, per kind. An additive union is only made when
# every line both sides add is an entry of the same kind.
_LIST_ENTRY: dict[str, re.Pattern[str]] = {
    "include": re.compile(r"^\s*#\s*include\s+[<\"][^>\"]+[>\"]\s*(//.*)?$"),
    "import": re.compile(
        r"^\s*(import\s+[\w.]+(\s+as\s+\w+)?|from\s+[\w.]+\s+import\s+[\w., ()]+)\s*(#.*)?$"
    ),
    "pybind": re.compile(r"^\s*\.def(_readonly|_readwrite|_static|_property)?\(\s*\"\w+\".*$"),
    "cmake": re.compile(r"^\s*[\w./${}-]+\.(c|cc|cpp|cxx|cu|h|hpp|td|py|mlir|txt)\s*\)?\s*$"),
    "bullet": re.compile(r"^\s*([-*+]|\d+\.)\s+\S.*$"),
    "enum": re.compile(r"^\s*[A-Za-z_]\w*(\s*=\s*[^,;{}()]+)?\s*,\s*(//.*|#.*)?$"),
    "registration": re.compile(r"^\s*\w[\w:<>]*\s*(\(|<)[\w:<>, \"]*(\)|>)\s*[;,]?\s*$"),
}


def _entry_kind(line: str) -> str | None:
    for kind, pattern in _LIST_ENTRY.items():
        if pattern.match(line):
            return kind
    return None


def _entry_key(line: str) -> tuple[int, str]:
    return (0, line.strip())


def _import_key(line: str) -> tuple[int, str]:
    """isort's default order in a section: ``import x`` lines before ``from x import y`` lines."""
    bare = line.strip()
    return (1 if bare.startswith("from ") else 0, bare)


def list_union(hunk: Hunk, ctx: HunkContext) -> HunkResolution | None:
    """Both sides only add independent entries at the same place of a list: keep both.

    Guards: upstream's parent had nothing there (a pure addition on both sides), every added
    line is an entry of one kind (includes, imports, pybind ``.def``, CMake sources, enum
    members, registrations, doc bullets), no entry is added twice. Order is deterministic:
    sorted when both sides' entries are each sorted (Python imports in isort's default order:
    ``import x`` before ``from x import y``), else the fork's entries first.
    """
    if any(line.strip() for line in hunk.base):
        return None
    ours = [line for line in hunk.ours if line.strip()]
    theirs = [line for line in hunk.theirs if line.strip()]
    if not ours or not theirs or len(ours) != len(hunk.ours) or len(theirs) != len(hunk.theirs):
        return None
    kinds = {_entry_kind(line.rstrip("\r\n")) for line in ours + theirs}
    if len(kinds) != 1 or None in kinds:
        return None
    if set(_strip(ours)) & set(_strip(theirs)):
        return None
    kind = next(iter(kinds))
    key = _import_key if kind == "import" else _entry_key

    if ours == sorted(ours, key=key) and theirs == sorted(theirs, key=key):
        lines = sorted(ours + theirs, key=key)
        order = "in sorted order"
    else:
        lines = ours + theirs
        order = "the fork's first"
    lines = [line if line.endswith("\n") else line + "\n" for line in lines[:-1]] + lines[-1:]
    return _resolution(
        hunk,
        model.LIST_UNION,
        lines,
        f"both sides only add independent {kind} entries ({len(ours)} in the fork, {len(theirs)} upstream); "
        f"both kept, {order}",
    )


def _drops_lines(base: Sequence[str], side: Sequence[str]) -> bool:
    """``side`` deletes whole lines of ``base`` (a deletion, or a replacement by fewer lines)."""
    ops = SequenceMatcher(None, list(base), list(side), autojunk=False).get_opcodes()
    return any(op != "equal" and (j2 - j1) < (i2 - i1) for op, i1, i2, j1, j2 in ops)


def _wraps_base(side: Sequence[str], base: Sequence[str]) -> bool:
    """``side`` is ``base`` with whole lines inserted around or inside it (base kept contiguous)."""
    n = len(base)
    if not n or len(side) <= n:
        return False
    return any(tuple(side[i : i + n]) == tuple(base) for i in range(len(side) - n + 1))


def _layout_only(side: Sequence[str], base: Sequence[str]) -> bool:
    """``side`` changes only layout in the block (re-indented, re-wrapped, spacing, a backslash continuation).

    Merging the other side's words into a new layout guesses where they land, and a reformat is
    usually re-run on the result by the human (or the fork keeps its own layout); declined.
    """
    return _without_layout(side) == _without_layout(base)


def _without_layout(lines: Sequence[str]) -> str:
    """The block's text without whitespace and without backslash line continuations (a re-wrap's tools)."""
    return "".join("".join(line.rstrip().removesuffix("\\").split()) for line in lines)


def _edited_base_lines(base: Sequence[str], side: Sequence[str]) -> set[int]:
    ops = SequenceMatcher(None, list(base), list(side), autojunk=False).get_opcodes()
    return {i for op, i1, i2, _, _ in ops if op in ("replace", "delete") for i in range(i1, i2)}


def _inserts_inside_edit(side: Sequence[str], base: Sequence[str], other: Sequence[str]) -> bool:
    """``side`` inserts whole lines between two base lines that ``other`` both edits.

    The new lines sit inside the other side's rewrite (annotations added to every parameter,
    a renamed call on every line): they are likely to need that rewrite too, which no merge of
    tokens can supply.
    """
    edited = _edited_base_lines(base, other)
    ops = SequenceMatcher(None, list(base), list(side), autojunk=False).get_opcodes()
    return any(op == "insert" and (i1 - 1) in edited and i1 in edited for op, i1, _, _, _ in ops)


def _edit_ops(base_toks: Sequence[str], side_toks: Sequence[str]) -> list[tuple[int, int, str]]:
    """A side's token edits: the base range ``[i1, i2)`` each replaces (empty for an insertion) and the new text."""
    ops = SequenceMatcher(None, list(base_toks), list(side_toks), autojunk=False).get_opcodes()
    return [(i1, i2, "".join(side_toks[j1:j2])) for op, i1, i2, j1, j2 in ops if op != "equal"]


def _line_of(base_toks: Sequence[str]) -> list[int]:
    out, line = [], 0
    for tok in base_toks:
        out.append(line)
        line += tok.count("\n")
    return out


def _op_lines(base_toks: Sequence[str], line_of: Sequence[int], i1: int, i2: int) -> set[int]:
    """The base lines an edit touches; an insertion belongs to the line of the token before it."""
    if not base_toks:
        return {0}
    if i1 == i2:
        at = i1 - 1 if i1 > 0 and "\n" not in base_toks[i1 - 1] else min(i1, len(base_toks) - 1)
        return {line_of[at]}
    return {line_of[i] for i in range(i1, i2) if i == i1 or "\n" not in base_toks[i]}


def _words_between(base_toks: Sequence[str], a: tuple[int, int], b: tuple[int, int]) -> int:
    """How many non-blank base tokens separate two edit ranges (0: they touch)."""
    lo, hi = (a[1], b[0]) if a[0] <= b[0] else (b[1], a[0])
    return sum(1 for tok in base_toks[lo:hi] if tok.strip())


def _edits_clash_on_a_line(base: str, ours: str, theirs: str) -> bool:
    """Both sides edit one line of upstream's parent, and not as two separate words of it.

    Two edits on one line are one statement changed twice. They are merged only when, on
    every line both touch, neither edit breaks or joins lines and at least two unchanged
    words separate them (a renamed argument and a new one at the end of the call); a
    re-wrapped line, or edits that touch (a type both sides nest differently), is a judgment.
    """
    b = tokens(base)
    line_of = _line_of(b)
    o = [(op, _op_lines(b, line_of, op[0], op[1])) for op in _edit_ops(b, tokens(ours))]
    t = [(op, _op_lines(b, line_of, op[0], op[1])) for op in _edit_ops(b, tokens(theirs))]
    shared = (
        set().union(*(lines for _, lines in o)) & set().union(*(lines for _, lines in t))
        if o and t
        else set()
    )
    if not shared:
        return False
    near = [op for op, lines in o + t if lines & shared]
    if any("\n" in new or any("\n" in tok for tok in b[i1:i2]) for i1, i2, new in near):
        return True
    return any(
        _words_between(b, (oi1, oi2), (ti1, ti2)) < _MIN_GAP
        for (oi1, oi2, _), ol in o
        for (ti1, ti2, _), tl in t
        if ol & tl
    )


_MIN_GAP = 2


_SAME_LINE_GUARD = True


def _lowers_a_pin(side: Sequence[str], base: Sequence[str]) -> bool:
    """``side`` moves a dependency pin of ``base`` to an older version (a branch pinning lower).

    Whether the branch keeps its older pin beside the other side's edit, or takes the newer one
    as ``dependency-pins`` would, is the maintainer's call; a token merge would silently keep it.
    """
    ops = SequenceMatcher(None, list(base), list(side), autojunk=False).get_opcodes()
    for op, i1, i2, j1, j2 in ops:
        if op != "replace" or i2 - i1 != j2 - j1:
            continue
        for b, s in zip(base[i1:i2], side[j1:j2], strict=True):
            if (
                _PIN.match(b)
                and _PIN.match(s)
                and _VERSION.sub("#", b) == _VERSION.sub("#", s)
                and _version_key(s) < _version_key(b)
            ):
                return True
    return False


def token_merge(hunk: Hunk, ctx: HunkContext) -> HunkResolution | None:
    """The sides change different words or lines of the block: merge them token by token.

    git conflicts when changes touch; a diff3 over tokens (words, punctuation, whitespace,
    newlines) merges a renamed argument with a reformatted call, or a changed decorator with a
    changed signature below it. Guards, from the cases where humans did otherwise: a side that
    inserts whole lines around the other's edit, or deletes whole lines, is ambiguous (does the
    neighbouring edit belong to it?) and declines; so does a side that inserts lines inside the
    other's rewrite, whose change is layout only (re-indented, re-wrapped), or that moves a
    dependency pin to an older version.
    """
    ours, base, theirs = _bare(hunk.ours), _bare(hunk.base), _bare(hunk.theirs)
    if not base:
        return None
    if _wraps_base(ours, base) or _wraps_base(theirs, base):
        return None
    if _drops_lines(base, ours) or _drops_lines(base, theirs):
        return None
    if _inserts_inside_edit(ours, base, theirs) or _inserts_inside_edit(theirs, base, ours):
        return None
    if _layout_only(ours, base) or _layout_only(theirs, base):
        return None
    if _lowers_a_pin(ours, base) or _lowers_a_pin(theirs, base):
        return None
    text = ["".join(side) for side in (hunk.ours, hunk.base, hunk.theirs)]
    if _SAME_LINE_GUARD and _edits_clash_on_a_line(text[1], text[0], text[2]):
        return None
    chunks = diff3(tokens(text[1]), tokens(text[0]), tokens(text[2]))
    merged = merged_of(chunks)
    if merged is None:
        return None
    sides = {c.side for c in chunks} - {"stable"}
    if not {"ours", "theirs"} <= sides:
        return None  # one side only: git would not have conflicted; something is off, decline
    lines = "".join(merged).splitlines(keepends=True)
    changed_o = sum(1 for c in chunks if c.side == "ours")
    changed_t = sum(1 for c in chunks if c.side == "theirs")
    return _resolution(
        hunk,
        model.TOKEN_MERGE,
        lines,
        f"the sides change different words of the block ({changed_o} fork edit(s), {changed_t} upstream "
        "edit(s), none overlapping); both applied",
    )


# A dependency pin on one line: requirements (``pkg==1.2``), GitHub Actions (``uses: o/r@v1.2.3``),
# package.json (``"pkg": "^1.2.3"``), pre-commit (``rev: v1.2.3``). Product versions (``#define
# VERSION "6.0.8"``) are not pins: a maintenance branch keeps its own.
_PIN = re.compile(
    r"^\s*(-\s*)?("
    r"[A-Za-z0-9][\w.\-\[\],]*\s*(==|>=|~=|<=)\s*v?\d[\w.]*(\s*;.*)?"
    r"|(-\s*)?uses:\s*[\w.\-]+/[\w.\-/]+@v?\d[\w.]*"
    r"|\"[@\w.\-/]+\":\s*\"[~^]?\d[\w.\-]*\",?"
    r"|rev:\s*v?\d[\w.]*"
    r")\s*(#.*)?$"
)
_VERSION = re.compile(r"\d+(?:\.\d+)*")


# Narrowings from held-out projects (docs/conflicts.md, "Guards from other projects"); a flag each so that a
# test can show the narrowing is what declines. A JSON ``"version"`` key is the file's own version
# (package.json) or a tool's release line (a devcontainer's Go), not a dependency's; a bound (``>=``,
# ``~=``, ``<=``) is the range the branch supports, not the version it tests.
_OWN_VERSION_GUARD = True
_OWN_VERSION = re.compile(r'^\s*"version"\s*:', re.IGNORECASE)
_BOUNDS_GUARD = True
_BOUND = re.compile(r"^\s*(-\s*)?[A-Za-z0-9][\w.\-\[\],]*\s*(>=|~=|<=)")


def _version_key(line: str) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(p) for p in v.split(".")) for v in _VERSION.findall(line))


def dependency_pins(hunk: Hunk, ctx: HunkContext) -> HunkResolution | None:
    """Both sides moved the same dependency pins: on each line keep the newer version.

    Guards: the three sides have the same lines, every line is a pin, and the sides of a line
    differ only in version numbers (same package, same operator). Only exact pins (``==``, an
    action's ``@v``, ``rev:``, a package.json dependency) name the version a branch tests, where
    the newer one is what maintainers take; it declines on the branch's own versions: a JSON
    ``"version"`` key (the package's own version, a devcontainer's Go release line: the branch
    keeps its line and bumps within it) and a bound (``>=``, ``~=``, ``<=``: the range of versions
    the branch supports, which a maintenance branch keeps; glance kept its lower floors).
    """
    ours, base, theirs = _bare(hunk.ours), _bare(hunk.base), _bare(hunk.theirs)
    if not base or not (len(ours) == len(base) == len(theirs)):
        return None
    out: list[str] = []
    picked = {"fork": 0, "upstream": 0}
    for o, b, t, raw_o, raw_t in zip(ours, base, theirs, hunk.ours, hunk.theirs, strict=True):
        if not all(_PIN.match(x) for x in (o, b, t)):
            return None
        if _OWN_VERSION_GUARD and any(_OWN_VERSION.match(x) for x in (o, b, t)):
            return None
        if _BOUNDS_GUARD and any(_BOUND.match(x) for x in (o, b, t)):
            return None
        if len({_VERSION.sub("#", x) for x in (o, b, t)}) != 1:
            return None
        if _version_key(t) > _version_key(o):
            out.append(raw_t)
            picked["upstream"] += 1
        else:
            out.append(raw_o)
            picked["fork"] += 1
    return _resolution(
        hunk,
        model.DEPENDENCY_PINS,
        out,
        f"both sides only move dependency pins; the newer version is kept on each line "
        f"({picked['fork']} from the fork, {picked['upstream']} from upstream)",
    )


# The deterministic pipeline, in order, by the name each records. Memory (exact fingerprints) runs before these.
NAMED: tuple[tuple[str, Strategy], ...] = (
    (model.IDENTICAL, identical_sides),
    (model.WHITESPACE, whitespace_only),
    (model.ALREADY_APPLIED, already_applied),
    (model.FORK_UNCHANGED, fork_unchanged),
    (model.DEPENDENCY_PINS, dependency_pins),
    (model.LIST_UNION, list_union),
    (model.IMPORT_MERGE, import_merge),
    (model.FORK_LACKS_REGION, fork_lacks_region),
    (model.UPSTREAM_INSERTS, upstream_inserts_around_fork_edit),
    (model.TOKEN_MERGE, token_merge),
)
DETERMINISTIC: tuple[Strategy, ...] = tuple(fn for _, fn in NAMED)


def enabled(off: Collection[str] = ()) -> tuple[Strategy, ...]:
    """The pipeline without the rules a fork switched off (``resolve.rules_off``), order kept."""
    return tuple(fn for name, fn in NAMED if name not in off)
