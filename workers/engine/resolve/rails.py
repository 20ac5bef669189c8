"""The rails: deterministic checks every proposed resolution must pass, whoever produced it.

A resolution that fails any rail is not proposed; the outcome names the rail and why, and the
commit waits for a human. The rails (docs/conflicts.md):

* ``markers``: no conflict marker line the fork's and upstream's versions did not already have;
* ``outside-hunks``: the result is git's clean merge with only the conflict blocks rewritten;
* ``fuzzy``: no fuzzy application (a resolution made for other sides, or that fits the merge
  only once whitespace is ignored);
* ``fork-symbols``: every symbol the fork defines in the file is still defined, unless
  upstream removed it or the Action names it;
* ``parse``: Python still parses (``ast``), and a configured check command per extension
  (e.g. ``cc -fsyntax-only``) passes whenever it passed on the fork's version.
"""

from __future__ import annotations

import ast
import collections
import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from workers.engine.resolve.merge3 import Merged
from workers.engine.resolve.model import HunkResolution, RailFailure
from workers.engine.symbols import Hunk as DiffHunk
from workers.engine.symbols import file_symbols

MARKERS = "markers"
OUTSIDE_HUNKS = "outside-hunks"
FUZZY = "fuzzy"
FORK_SYMBOLS = "fork-symbols"
PARSE = "parse"
RAILS = (MARKERS, OUTSIDE_HUNKS, FUZZY, FORK_SYMBOLS, PARSE)

_MARKER = re.compile(r"^(<{7}|>{7}|\|{7})( |$)|^={7}$")
CHECK_TIMEOUT_S = 60


@dataclass(frozen=True)
class Check:
    """A syntax check for files ending in ``suffix``: argv with ``{file}`` for the file to check."""

    suffix: str
    argv: tuple[str, ...]


def marker_lines(text: str) -> collections.Counter[str]:
    return collections.Counter(line for line in text.splitlines() if _MARKER.match(line))


def check_markers(result: str, ours: str, theirs: str) -> RailFailure | None:
    """No conflict marker beyond those the fork's or upstream's file already has (test fixtures)."""
    have = marker_lines(result)
    allowed = marker_lines(ours) | marker_lines(theirs)
    extra = have - allowed
    if extra:
        first = next(iter(extra))
        return RailFailure(
            MARKERS, f"conflict marker {first!r} left in the result ({sum(extra.values())} line(s))"
        )
    return None


def split_by_merge(result: str, merged: Merged, *, loose: bool = False) -> list[list[str]] | None:
    """The replacement of each hunk when ``result`` keeps every clean segment of the merge, in order.

    None when some clean line was changed. ``loose`` compares lines ignoring whitespace (used
    only to tell a fuzzy fit from an edit outside the hunks).
    """
    lines = result.splitlines(keepends=True)
    norm = (lambda s: " ".join(s.split())) if loose else (lambda s: s)
    got = [norm(x) for x in lines]
    segs = [[norm(x) for x in seg] for seg in merged.texts]
    if len(segs) == 1:
        return [] if got == segs[0] else None
    first, last = segs[0], segs[-1]
    if got[: len(first)] != first:
        return None
    end = len(got) - len(last)
    if end < len(first) or got[end:] != last:
        return None
    pos = len(first)
    out: list[list[str]] = []
    for seg in segs[1:-1]:
        found = None
        for start in range(pos, end - len(seg) + 1):
            if got[start : start + len(seg)] == seg:
                found = start
                break
        if found is None:
            return None
        out.append(lines[pos:found])
        pos = found + len(seg)
    out.append(lines[pos:end])
    return out


def check_outside_hunks(result: str, merged: Merged) -> RailFailure | None:
    """Only the conflict blocks change relative to git's clean merge."""
    if split_by_merge(result, merged) is not None:
        return None
    if split_by_merge(result, merged, loose=True) is not None:
        return RailFailure(
            FUZZY, "the result fits the merge only when whitespace is ignored (no fuzzy application)"
        )
    return RailFailure(
        OUTSIDE_HUNKS, f"lines outside the conflict blocks changed ({_first_outside(result, merged)})"
    )


def _first_outside(result: str, merged: Merged) -> str:
    want = [line for seg in merged.texts for line in seg]
    have = set(result.splitlines(keepends=True))
    for line in want:
        if line not in have:
            return f"clean line {line.rstrip()[:60]!r} is gone or changed"
    return "clean lines moved or new lines added between them"


def check_digests(resolutions: Sequence[HunkResolution], digests: Sequence[str]) -> RailFailure | None:
    """Each hunk resolution was computed for exactly the hunk it replaces (no fuzzy hunks)."""
    for res in resolutions:
        if res.hunk >= len(digests) or digests[res.hunk] != res.digest:
            return RailFailure(
                FUZZY, f"the resolution of hunk {res.hunk + 1} ({res.strategy}) was made for other sides"
            )
    return None


def defined_symbols(path: str, text: str) -> frozenset[str]:
    lines = tuple(line.rstrip("\r\n") for line in text.splitlines())
    return file_symbols(path, [DiffHunk("", added=lines)], stop=frozenset())


def check_fork_symbols(
    path: str, result: str, ours: str, base: str, theirs: str, action: str
) -> RailFailure | None:
    """Symbols the fork defines stay defined, unless upstream removed them or the Action names them."""
    fork = defined_symbols(path, ours)
    if not fork:
        return None
    upstream_removed = defined_symbols(path, base) - defined_symbols(path, theirs)
    named = {word.rstrip(":.") for word in re.findall(r"[A-Za-z_~][\w:.~]*", action)}
    gone = sorted(s for s in fork - defined_symbols(path, result) - upstream_removed if s not in named)
    if gone:
        return RailFailure(
            FORK_SYMBOLS,
            f"the fork's {', '.join(gone[:5])} no longer defined and the Action does not say why",
        )
    return None


def _python_error(text: str) -> str | None:
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except ValueError as exc:  # null bytes
        return str(exc)
    return None


def _run_check(check: Check, path: str, text: str) -> str | None:
    """The check's first line of complaint, or None when it passes."""
    with tempfile.TemporaryDirectory(prefix="forksync-check-") as tmp:
        target = Path(tmp) / os.path.basename(path)
        target.write_text(text, encoding="utf-8", errors="surrogateescape")
        argv = [arg.replace("{file}", str(target)) for arg in check.argv]
        try:
            proc = subprocess.run(argv, capture_output=True, timeout=CHECK_TIMEOUT_S, cwd=tmp, check=False)
        except FileNotFoundError:
            return f"check command {check.argv[0]!r} not found"
        except subprocess.TimeoutExpired:
            return f"check command timed out after {CHECK_TIMEOUT_S}s"
    if proc.returncode == 0:
        return None
    out = (proc.stderr or proc.stdout).decode("utf-8", "replace")
    first = next((line for line in out.splitlines() if line.strip()), f"exit {proc.returncode}")
    return first.replace(str(target), os.path.basename(path))[:200]


def check_parse(path: str, result: str, ours: str, checks: Sequence[Check] = ()) -> RailFailure | None:
    """The file still parses wherever the fork's version did."""
    if path.endswith((".py", ".pyi")) and _python_error(ours) is None:
        err = _python_error(result)
        if err is not None:
            return RailFailure(PARSE, f"Python no longer parses: {err}")
    for check in checks:
        if not path.endswith(check.suffix):
            continue
        err = _run_check(check, path, result)
        if err is not None and _run_check(check, path, ours) is None:
            return RailFailure(PARSE, f"{' '.join(check.argv[:2])} fails: {err}")
    return None


def check_file(
    path: str,
    result: str,
    *,
    merged: Merged,
    ours: str,
    base: str,
    theirs: str,
    action: str,
    resolutions: Sequence[HunkResolution] = (),
    checks: Sequence[Check] = (),
) -> tuple[RailFailure, ...]:
    """Every rail on one resolved file; empty when it may be proposed."""
    failures: list[RailFailure] = []
    for failure in (
        check_markers(result, ours, theirs),
        check_outside_hunks(result, merged),
        check_digests(resolutions, [h.digest() for h in merged.hunks]),
        check_fork_symbols(path, result, ours, base, theirs, action),
        check_parse(path, result, ours, checks),
    ):
        if failure is not None:
            failures.append(failure)
    return tuple(failures)
