"""What one upstream commit changes: paths with their before/after entries, lines, symbols.

Computed once per commit from its diff against its first parent (upstream history is read
first-parent, so a merge commit counts as the change it brought to the mainline), with rename
detection off: a rename is a deletion plus an addition, which is what a cherry-pick needs and
what links chains by file (both the old and the new path).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from workers.engine import lines as lines_module
from workers.engine import symbols as symbols_module
from workers.engine.git import Repository
from workers.engine.lines import FileRanges
from workers.engine.lines import Hunk as LineHunk
from workers.engine.symbols import BUILTIN_STOPLIST, FileSymbols, Hunk, file_definitions, file_symbols

# An entry of a tree at one path: (blob or gitlink id, file mode). None means "absent".
Entry = tuple[pygit2.Oid, int]

EMPTY_TREE_SHA = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


@dataclass(frozen=True)
class FileDelta:
    """One path a commit touches, with its entry before (in the parent) and after."""

    path: str
    old: Entry | None
    new: Entry | None


@dataclass(frozen=True)
class CommitChanges:
    """Everything the partition and the in-memory pick need to know about one commit."""

    sha: str
    parent_tree: pygit2.Oid
    tree: pygit2.Oid
    deltas: tuple[FileDelta, ...]
    lines: int
    symbols: frozenset[str]
    # Line mode (lines.py, partition.py): hunk ranges per file, and definitions and uses.
    ranges: tuple[FileRanges, ...] = ()
    introduced: frozenset[str] = frozenset()
    defined: frozenset[str] = frozenset()
    used: frozenset[str] = frozenset()

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(d.path for d in self.deltas)


def empty_tree(repo: pygit2.Repository) -> pygit2.Oid:
    """The id of the empty tree, written to the object database if missing (root commits)."""
    return repo.TreeBuilder().write()


def commit_changes(
    repo: pygit2.Repository, sha: str, stop: frozenset[str] = BUILTIN_STOPLIST
) -> CommitChanges:
    """Diff ``sha`` against its first parent in memory and extract paths, size and symbols."""
    commit = repo.get(sha)
    if not isinstance(commit, pygit2.Commit):
        raise KeyError(sha)
    parent_tree = commit.parents[0].tree if commit.parents else repo.get(empty_tree(repo))
    assert isinstance(parent_tree, pygit2.Tree)
    diff = parent_tree.diff_to_tree(commit.tree, context_lines=0)
    deltas: list[FileDelta] = []
    lines = 0
    symbols: set[str] = set()
    ranges: list[FileRanges] = []
    defs: list[FileSymbols] = []
    for patch in diff:
        if patch is None:  # pragma: no cover - libgit2 yields None only for unreadable deltas
            continue
        delta = patch.delta
        old = None if delta.old_file.id == _ZERO else (delta.old_file.id, int(delta.old_file.mode))
        new = None if delta.new_file.id == _ZERO else (delta.new_file.id, int(delta.new_file.mode))
        if delta.status == pygit2.enums.DeltaStatus.DELETED:
            new = None
        if delta.status == pygit2.enums.DeltaStatus.ADDED:
            old = None
        deltas.append(FileDelta(delta.new_file.path or delta.old_file.path, old, new))
        _, added, removed = patch.line_stats
        lines += added + removed
        path = delta.new_file.path or delta.old_file.path
        hunks = _hunks(patch.hunks)
        symbols |= file_symbols(delta.new_file.path, hunks, stop)
        defs.append(file_definitions(path, hunks, stop))
        spans = tuple(LineHunk(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks)
        ranges.append(FileRanges(path, spans, whole=not spans))
    deltas.sort(key=lambda d: d.path)
    return CommitChanges(
        sha=str(commit.id),
        parent_tree=parent_tree.id,
        tree=commit.tree.id,
        deltas=tuple(deltas),
        lines=lines,
        symbols=frozenset(symbols),
        ranges=tuple(sorted(ranges, key=lambda r: r.path)),
        **_union(defs),
    )


def _union(defs: Sequence[FileSymbols]) -> dict[str, frozenset[str]]:
    """The line-mode symbol fields of a commit: each file's sets, united."""
    return {
        "introduced": frozenset().union(*(d.introduced for d in defs)),
        "defined": frozenset().union(*(d.defined for d in defs)),
        "used": frozenset().union(*(d.used for d in defs)),
    }


_ZERO = pygit2.Oid(hex="0" * 40)


def _hunks(hunks: Iterable[pygit2.DiffHunk]) -> list[Hunk]:
    out = []
    for hunk in hunks:
        header = hunk.header
        context = header.split("@@", 2)[2].strip("\n").lstrip(" ") if header.count("@@") >= 2 else ""
        added = tuple(line.content.rstrip("\n") for line in hunk.lines if line.origin == "+")
        removed = tuple(line.content.rstrip("\n") for line in hunk.lines if line.origin == "-")
        out.append(Hunk(context, added, removed))
    return out


# --------------------------------------------------------------------------- many commits at once


_HEADER = re.compile(r"^([0-9a-f]{40})$")
_SPAN = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_RAW = re.compile(r"^:(\d{6}) (\d{6}) ([0-9a-f]{40}) ([0-9a-f]{40}) ([A-Z])\d*\t(.*)$")


def commit_changes_many(
    repo: pygit2.Repository,
    git: Repository,
    shas: Sequence[str],
    stop: frozenset[str] = BUILTIN_STOPLIST,
    *,
    analyse: Collection[str] | None = None,
) -> dict[str, CommitChanges]:
    """:func:`commit_changes` for many commits in one ``git diff-tree --stdin`` process.

    libgit2 diffs cost a few milliseconds per commit on a large tree; one git process streams the
    raw entries and the zero-context patches of a thousand commits in a fraction of that.
    Merge commits are diffed against their first parent (by libgit2), like the rest of the engine.
    ``analyse``: the commits whose symbols are read (None: all). The others get paths, entries,
    size and hunk ranges only, and empty symbol sets: the line-dependency walk over already
    picked history needs no more, and reading symbols is most of the parsing.
    """
    commits: dict[str, pygit2.Commit] = {}
    merges: dict[str, CommitChanges] = {}
    for sha in dict.fromkeys(shas):
        commit = repo.get(sha)
        if not isinstance(commit, pygit2.Commit):
            raise KeyError(sha)
        if len(commit.parents) > 1:
            # diff-tree does not say which parent a merge's section is against: let libgit2
            # diff merges (rare on a squash-merge mainline) against their first parent.
            merges[str(commit.id)] = commit_changes(repo, str(commit.id), stop)
        else:
            commits[str(commit.id)] = commit
    if not commits:
        return merges
    lines = git.stream(
        "-c",
        "core.quotePath=false",
        "diff-tree",
        "--stdin",
        "-r",
        "--root",
        "--no-renames",
        "--patch-with-raw",
        "-U0",
        "--full-index",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        input="".join(f"{sha}\n" for sha in commits).encode(),
    )
    result: dict[str, CommitChanges] = dict(merges)
    # Each commit is analysed as soon as its section ends, while git is still diffing the next
    # ones: git's diffs and the Python parsing and symbol reading overlap.
    section: _Section | None = None
    seen: set[str] = set()
    for raw_line in lines:
        line = raw_line.decode("utf-8", "surrogateescape").removesuffix("\n")
        header = _HEADER.match(line) if len(line) == 40 else None
        if header:
            if section is not None:
                result[section.sha] = section.finish(repo, commits[section.sha], stop)
            sha = header.group(1)
            section = None
            if sha in commits and sha not in seen:
                section = _Section(
                    sha, analyse is None or sha in analyse
                )  # lines kept only where symbols are read
            seen.add(sha)
            continue
        if section is not None:
            section.read(line)
    if section is not None:
        result[section.sha] = section.finish(repo, commits[section.sha], stop)
    for sha, c in commits.items():
        if sha not in result:  # git printed no section: a commit that changes nothing
            result[sha] = _Section(sha, False).finish(repo, c, stop)
    return {sha: result[sha] for sha in (*merges, *commits)}


class _Section:
    """One commit's section of ``git diff-tree --patch-with-raw -U0``, read line by line."""

    def __init__(self, sha: str, text: bool) -> None:
        self.sha = sha
        self.text = text  # keep the changed lines (symbols are read from them)
        self.raw: list[tuple[str, FileDelta]] = []
        self.hunks: dict[str, list[Hunk]] = {}
        self.spans: dict[str, list[LineHunk]] = {}
        self.count = 0
        self.path: str | None = None
        self.hunk: tuple[str, list[str], list[str]] | None = None

    def _flush(self) -> None:
        if self.path is not None and self.hunk is not None:
            hunk = self.hunk
            self.hunks.setdefault(self.path, []).append(Hunk(hunk[0], tuple(hunk[1]), tuple(hunk[2])))
        self.hunk = None

    def read(self, line: str) -> None:
        if line.startswith(":"):
            m = _RAW.match(line)
            if m:
                old_mode, new_mode, old_id, new_id, status, name = m.groups()
                name = _unquote(name)
                old = None if status == "A" else (pygit2.Oid(hex=old_id), int(old_mode, 8))
                new = None if status == "D" else (pygit2.Oid(hex=new_id), int(new_mode, 8))
                self.raw.append((name, FileDelta(name, old, new)))
            return
        if line.startswith("diff --git "):
            self._flush()
            self.path = _diff_path(line[len("diff --git ") :])
        elif line.startswith("@@"):
            self._flush()
            span = _SPAN.match(line)
            if span and self.path is not None:
                a, b, c, d = span.groups()
                self.spans.setdefault(self.path, []).append(
                    LineHunk(int(a), 1 if b is None else int(b), int(c), 1 if d is None else int(d))
                )
            context = line.split("@@", 2)[2].lstrip(" ") if line.count("@@") >= 2 else ""
            self.hunk = (context, [], [])
        elif self.hunk is not None and line.startswith("+"):
            if self.text:
                self.hunk[1].append(line[1:])
            self.count += 1
        elif self.hunk is not None and line.startswith("-"):
            if self.text:
                self.hunk[2].append(line[1:])
            self.count += 1

    def finish(self, repo: pygit2.Repository, c: pygit2.Commit, stop: frozenset[str]) -> CommitChanges:
        self._flush()
        parent_tree = c.parents[0].tree.id if c.parents else empty_tree(repo)
        symbols: set[str] = set()
        defs = []
        if self.text:
            for name, file_hunks in self.hunks.items():
                symbols |= file_symbols(name, file_hunks, stop)
                defs.append(file_definitions(name, file_hunks, stop))
        deltas = dict(self.raw)  # one entry per path, whatever git lists
        ranges = [
            FileRanges(p, tuple(self.spans.get(p, ())), whole=not self.spans.get(p)) for p in sorted(deltas)
        ]
        return CommitChanges(
            sha=self.sha,
            parent_tree=parent_tree,
            tree=c.tree.id,
            deltas=tuple(deltas[k] for k in sorted(deltas)),
            lines=self.count,
            symbols=frozenset(symbols),
            ranges=tuple(ranges),
            **_union(defs),
        )


def _unquote(name: str) -> str:
    """git's C-style quoting of unusual paths (``"a\\tb"``, octal escapes for bytes)."""
    if not (len(name) >= 2 and name.startswith('"') and name.endswith('"')):
        return name
    body = name[1:-1]
    out = bytearray()
    i = 0
    simple = {"n": 10, "t": 9, "r": 13, "a": 7, "b": 8, "f": 12, "v": 11, "\\": 92, '"': 34}
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in simple:
                out.append(simple[nxt])
                i += 2
                continue
            if nxt.isdigit():
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
        out.extend(ch.encode("utf-8", "surrogateescape"))
        i += 1
    return out.decode("utf-8", "replace")


def _diff_path(rest: str) -> str:
    """The path of ``diff --git a/P b/P`` (no renames, so both sides name the same path)."""
    if rest.startswith('"'):
        first = rest[: rest.index('" ', 1) + 1] if '" ' in rest else rest
        return _unquote(first)[2:]
    half = (len(rest) - 1) // 2
    return rest[2:half]


# --------------------------------------------------------------------------- kept between runs

# The analyses cache's file in a pair's cache directory, and how many commits it keeps.
CHANGES_CACHE_FILE = "commit-changes.v1.jsonl"
ANALYSES_KEPT = 50_000


def analysis_key(stop: frozenset[str]) -> str:
    """What an analysis depends on besides its commit: the stop-list and the code that reads
    diffs (this module, symbols.py, lines.py, hashed), so a changed rule never reads back old results."""
    digest = hashlib.sha256(json.dumps(sorted(stop)).encode())
    for module in (__file__, symbols_module.__file__, lines_module.__file__):
        digest.update(Path(module).read_bytes())
    return f"forksync-commit-changes {digest.hexdigest()[:32]}"


def cached_commit_changes(
    repo: pygit2.Repository,
    git: Repository,
    shas: Sequence[str],
    stop: frozenset[str] = BUILTIN_STOPLIST,
    *,
    analyse: Collection[str] | None = None,
    folder: Path | None = None,
) -> dict[str, CommitChanges]:
    """:func:`commit_changes_many`, reading back what earlier runs analysed.

    An upstream commit never changes, so neither does its analysis (for one stop-list and one
    version of the code: :func:`analysis_key`): the bot, planning again on every poll, diffs only
    the commits it has not seen. ``folder`` is a pair's cache directory (None: no cache). A
    commit analysed without symbols is analysed again when they are asked for. The file is
    rewritten atomically with the newest :data:`ANALYSES_KEPT`; one that cannot be read or
    written only costs speed.
    """
    if folder is None:
        return commit_changes_many(repo, git, shas, stop, analyse=analyse)
    path = folder / CHANGES_CACHE_FILE
    key = analysis_key(stop)
    known = _read_analyses(path, key)
    wanted = list(dict.fromkeys(shas))
    full = set(wanted) if analyse is None else set(analyse)
    missing = [s for s in wanted if s not in known or (s in full and not known[s][0])]
    if missing:
        fresh = commit_changes_many(repo, git, missing, stop, analyse=[s for s in missing if s in full])
        for sha in missing:
            known.pop(sha, None)
            known[sha] = (sha in full, fresh[sha])
        _write_analyses(path, key, known)
    return {s: known[s][1] for s in wanted}


def _entry_json(entry: Entry | None) -> list[Any] | None:
    return None if entry is None else [str(entry[0]), entry[1]]


def _entry_of(data: list[Any] | None) -> Entry | None:
    return None if data is None else (pygit2.Oid(hex=data[0]), int(data[1]))


def _read_analyses(path: Path, key: str) -> dict[str, tuple[bool, CommitChanges]]:
    try:
        lines = path.read_text("utf-8").split("\n")
    except (OSError, UnicodeDecodeError):
        return {}
    if not lines or lines[0] != key:
        return {}
    out: dict[str, tuple[bool, CommitChanges]] = {}
    for line in lines[1:]:
        if not line:
            continue
        try:
            sha, read, parent, tree, deltas, size, symbols, ranges, introduced, defined, used = json.loads(
                line
            )
            out[sha] = (
                bool(read),
                CommitChanges(
                    sha=sha,
                    parent_tree=pygit2.Oid(hex=parent),
                    tree=pygit2.Oid(hex=tree),
                    deltas=tuple(FileDelta(p, _entry_of(o), _entry_of(n)) for p, o, n in deltas),
                    lines=int(size),
                    symbols=frozenset(symbols),
                    ranges=tuple(
                        FileRanges(p, tuple(LineHunk(*h) for h in hunks), bool(whole))
                        for p, whole, hunks in ranges
                    ),
                    introduced=frozenset(introduced),
                    defined=frozenset(defined),
                    used=frozenset(used),
                ),
            )
        except (ValueError, TypeError):
            continue
    return out


def _write_analyses(path: Path, key: str, known: dict[str, tuple[bool, CommitChanges]]) -> None:
    rows = []
    for sha, (read, c) in list(known.items())[-ANALYSES_KEPT:]:
        rows.append(
            json.dumps(
                [
                    sha,
                    read,
                    str(c.parent_tree),
                    str(c.tree),
                    [[d.path, _entry_json(d.old), _entry_json(d.new)] for d in c.deltas],
                    c.lines,
                    sorted(c.symbols),
                    [
                        [
                            r.path,
                            r.whole,
                            [[h.old_start, h.old_count, h.new_start, h.new_count] for h in r.hunks],
                        ]
                        for r in c.ranges
                    ],
                    sorted(c.introduced),
                    sorted(c.defined),
                    sorted(c.used),
                ],
                ensure_ascii=False,
            )
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(key + "\n" + "\n".join(rows) + "\n", "utf-8")
        tmp.replace(path)
    except OSError:
        pass
