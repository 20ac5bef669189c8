"""Python import blocks as data: parse a conflict block of plain import statements and merge two sides by name.

Used by the ``import-merge`` strategy. A block qualifies only when every line of all three sides
is a one-line ``import m`` / ``from m import a, b`` at one indentation; the merge is a set
operation on (module, name) pairs, written back in the order convention all three sides follow.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

_FROM = re.compile(
    r"^(?P<indent>[ \t]*)from\s+(?P<module>\.*[\w.]*\w|\.+)\s+import\s+"
    r"(?P<names>\w+(?:\s+as\s+\w+)?(?:\s*,\s*\w+(?:\s+as\s+\w+)?)*)\s*$"
)
_IMPORT = re.compile(r"^(?P<indent>[ \t]*)import\s+(?P<module>[\w.]+(?:\s+as\s+\w+)?)\s*$")
_ANY_IMPORT = re.compile(r"^\s*(from\s|import\s)")
# A merged line longer than this (and than every line of the sides) would be wrapped by a formatter: declined.
MAX_LINE = 79


@dataclass(frozen=True)
class ImportLine:
    """One import statement: ``from module import names`` (kind "from") or ``import module`` (no names)."""

    indent: str
    kind: str
    module: str
    names: tuple[str, ...]

    def items(self) -> list[tuple[str, str, str]]:
        return (
            [(self.kind, self.module, n) for n in self.names]
            if self.names
            else [(self.kind, self.module, "")]
        )

    def text(self) -> str:
        if self.kind == "from":
            return f"{self.indent}from {self.module} import {', '.join(self.names)}\n"
        return f"{self.indent}import {self.module}\n"


def parse_block(lines: Sequence[str]) -> list[ImportLine] | None:
    """The block's import statements, or None when any line is something else (blank, comment, wrapped)."""
    out = []
    for raw in lines:
        if raw.endswith("\r\n") or not raw.endswith("\n"):
            return None  # the merge writes "\n" lines; CRLF files and a last line without newline decline
        line = raw[:-1]
        m = _FROM.match(line)
        if m:
            names = tuple(" ".join(n.split()) for n in m["names"].split(","))
            out.append(ImportLine(m["indent"], "from", m["module"], names))
            continue
        m = _IMPORT.match(line)
        if m is None:
            return None
        out.append(ImportLine(m["indent"], "import", " ".join(m["module"].split()), ()))
    return out


def bound_name(item: tuple[str, str, str]) -> str:
    """The name an import binds in the module (``a as b`` binds b; ``import a.b`` binds a)."""
    _, module, name = item
    ref = name or module
    return ref.split(" as ")[-1].strip().split(".")[0]


def used(name: str, text: str, ignore: frozenset[str] = frozenset()) -> bool:
    """``name`` appears as a word in ``text`` outside import lines and the ``ignore`` lines."""
    pattern = re.compile(r"(?<![\w.])" + re.escape(name) + r"\b")
    return any(
        pattern.search(line)
        for line in text.splitlines()
        if line not in ignore and not _ANY_IMPORT.match(line)
    )


# Order conventions a project may follow: isort's default (``import m`` lines before ``from m import``
# lines) or one order by module (``force_sort_within_sections``, zimports); names compared as
# written (ASCII: upper case first) or case-folded.
_CASE: dict[str, Callable[[str], tuple[str, str]]] = {
    "ASCII": lambda s: (s, s),
    "case-folded": lambda s: (s.casefold(), s),
}


def _line_key(
    imports_first: bool, case: Callable[[str], tuple[str, str]]
) -> Callable[[ImportLine], tuple[object, ...]]:
    def key(line: ImportLine) -> tuple[object, ...]:
        return (imports_first and line.kind == "from", case(line.module), [case(n) for n in line.names])

    return key


def _follows(
    block: Sequence[ImportLine], imports_first: bool, case: Callable[[str], tuple[str, str]]
) -> bool:
    key = _line_key(imports_first, case)
    return list(block) == sorted(block, key=key) and all(
        list(line.names) == sorted(line.names, key=case) for line in block
    )


@dataclass(frozen=True)
class ImportMerge:
    lines: tuple[str, ...]
    added: tuple[str, ...]  # names (or modules) in the result that upstream's parent did not import
    removed: tuple[str, ...]
    convention: str


def merge(
    ours: Sequence[str],
    base: Sequence[str],
    theirs: Sequence[str],
    *,
    fork_text: str,
    upstream_text: str,
    base_text: str,
) -> ImportMerge | None:
    """Both sides' import edits merged by name, or None when the block does not qualify or the merge is unsure."""
    sides = [parse_block(s) for s in (ours, base, theirs)]
    o, b, t = sides
    if not o or not b or not t:
        return None  # a side without imports here (the fork lacks them): whether they come back is a judgment
    blocks = (o, b, t)
    indents = {line.indent for block in blocks for line in block}
    if len(indents) != 1:
        return None
    indent = indents.pop()
    combined = any(len(line.names) > 1 for block in blocks for line in block)
    if combined and any(len({(x.kind, x.module) for x in block}) != len(block) for block in blocks):
        return None  # one module on several lines while another line names several: no single style to write
    io, ib, it = ([i for line in block for i in line.items()] for block in blocks)
    if len(set(io)) != len(io) or len(set(it)) != len(it):
        return None
    upstream_lines, base_lines = set(upstream_text.splitlines()), set(base_text.splitlines())
    gone = frozenset(base_lines - upstream_lines)  # lines upstream's commit removes
    new = "\n".join(sorted(upstream_lines - base_lines))  # lines upstream's commit adds
    for item in set(ib) - set(it):  # upstream drops the import: the fork's code must not still need it
        if used(bound_name(item), fork_text, gone):
            return None
    for item in set(ib) - set(io):  # the fork dropped it: upstream's new code must not need it
        if used(bound_name(item), new):
            return None
    removed = (set(ib) - set(io)) | (set(ib) - set(it))
    result = [i for i in ib if i not in removed]
    result += [i for i in dict.fromkeys(io + it) if i not in ib]
    if combined:
        grouped: dict[tuple[str, str], list[str]] = {}
        for kind, module, name in result:
            grouped.setdefault((kind, module), [])
            if name:
                grouped[(kind, module)].append(name)
        merged = [ImportLine(indent, k, m, tuple(names)) for (k, m), names in grouped.items()]
    else:
        merged = [ImportLine(indent, k, m, (n,) if n else ()) for k, m, n in result]
    answers: dict[tuple[str, ...], list[str]] = {}
    for imports_first in (True, False):
        for case_name, case in _CASE.items():
            if not all(_follows(block, imports_first, case) for block in blocks):
                continue
            ordered = sorted(
                (ImportLine(x.indent, x.kind, x.module, tuple(sorted(x.names, key=case))) for x in merged),
                key=_line_key(imports_first, case),
            )
            text = tuple(x.text() for x in ordered)
            answers.setdefault(text, []).append(
                f"{'import lines first' if imports_first else 'by module'}, {case_name}"
            )
    if len(answers) != 1:
        return None  # no order convention all sides follow, or the ones they follow disagree here
    ((lines, conventions),) = answers.items()
    longest = max(len(line.rstrip("\r\n")) for side in (ours, base, theirs) for line in side)
    if any(len(line.rstrip("\n")) > max(MAX_LINE, longest) for line in lines):
        return None
    return ImportMerge(
        lines,
        tuple(bound_name(i) for i in result if i not in ib),
        tuple(sorted(bound_name(i) for i in removed)),
        conventions[0],
    )
