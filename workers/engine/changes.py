"""What one upstream commit changes: paths with their before/after entries, lines, symbols.

Computed once per commit from its diff against its first parent (upstream history is read
first-parent, so a merge commit counts as the change it brought to the mainline), with rename
detection off: a rename is a deletion plus an addition, which is what a cherry-pick needs and
what links chains by file (both the old and the new path). Only the line ranges see renames
(:func:`moved_ranges`): a moved file's lines keep their owners, as ``git blame`` and a
cherry-pick's merge follow the move.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Collection, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from workers.engine import lines as lines_module
from workers.engine import symbols as symbols_module
from workers.engine.cycles import no_cycle_collection
from workers.engine.git import Repository
from workers.engine.lines import FileRanges
from workers.engine.lines import Hunk as LineHunk
from workers.engine.symbols import (
    BUILTIN_STOPLIST,
    FileSymbols,
    Hunk,
    file_definitions,
    file_symbols,
    read_file,
)

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
    # Line mode (lines.py, partition/): hunk ranges per file, and definitions and uses.
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
        ranges=moved_ranges(
            repo, parent_tree.id, commit.tree.id, deltas, sorted(ranges, key=lambda r: r.path)
        ),
        **_union(defs),
    )


def moved_ranges(
    repo: pygit2.Repository,
    parent_tree: pygit2.Oid,
    tree: pygit2.Oid,
    deltas: Sequence[FileDelta],
    ranges: Sequence[FileRanges],
) -> tuple[FileRanges, ...]:
    """``ranges`` (one per path, rename detection off) with each rename found as git finds one
    (libgit2's similarity, git's default 50% threshold, no copies) made one entry: the new path,
    ``renamed_from`` the old, and the hunks between the two blobs (none when moved as it was,
    ``whole`` for a changed binary); the old path's deletion and the new path's addition go.
    Only a commit that both adds and deletes files is diffed again."""
    if not any(d.old is None for d in deltas) or not any(d.new is None for d in deltas):
        return tuple(ranges)
    old_tree, new_tree = repo.get(parent_tree), repo.get(tree)
    assert isinstance(old_tree, pygit2.Tree) and isinstance(new_tree, pygit2.Tree)
    diff = old_tree.diff_to_tree(new_tree)
    try:
        diff.find_similar(flags=pygit2.enums.DiffFind.FIND_RENAMES)
    except (pygit2.GitError, KeyError):  # a blob the object database lacks (a partial clone)
        return tuple(ranges)
    moves: dict[str, FileRanges] = {}
    for delta in diff.deltas:
        if delta.status != pygit2.enums.DeltaStatus.RENAMED:
            continue
        old, new = delta.old_file, delta.new_file
        if old.id == new.id:
            moves[new.path] = FileRanges(new.path, renamed_from=old.path)
            continue
        a, b = repo.get(old.id), repo.get(new.id)
        if not (isinstance(a, pygit2.Blob) and isinstance(b, pygit2.Blob)):  # a submodule's commit
            moves[new.path] = FileRanges(new.path, whole=True, renamed_from=old.path)
            continue
        patch = repo.diff(a, b, context_lines=0)
        spans = tuple(LineHunk(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks)
        binary = patch.delta.is_binary or not spans
        moves[new.path] = FileRanges(new.path, () if binary else spans, whole=binary, renamed_from=old.path)
    if not moves:
        return tuple(ranges)
    gone = {m.renamed_from for m in moves.values()}
    return tuple(moves.get(r.path, r) for r in ranges if r.path not in gone)


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


# A hunk's numbers, and a raw entry (``--patch-with-raw``).
_SPAN = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_RAW = re.compile(r"^:(\d{6}) (\d{6}) ([0-9a-f]{40}) ([0-9a-f]{40}) ([A-Z])\d*\t(.*)$", re.M)


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
    return dict(iter_commit_changes(repo, git, shas, stop, analyse=analyse))


def iter_commit_changes(
    repo: pygit2.Repository,
    git: Repository,
    shas: Sequence[str],
    stop: frozenset[str] = BUILTIN_STOPLIST,
    *,
    analyse: Collection[str] | None = None,
) -> Generator[tuple[str, CommitChanges], None, None]:
    """:func:`commit_changes_many`'s analyses one by one, in the order of ``shas`` (each once), each
    as soon as git's diff of it has been read: a caller can work on the first commits while git
    diffs the rest (:mod:`workers.engine.analyses` reads them as a plan needs them)."""
    order = list(dict.fromkeys(shas))
    commits: dict[str, pygit2.Commit] = {}
    for sha in order:
        found = repo.get(sha)
        if not isinstance(found, pygit2.Commit):
            raise KeyError(sha)
        commits[sha] = found
    # diff-tree does not say which parent a merge's section is against: libgit2 diffs merges
    # (rare on a squash-merge mainline) against their first parent, at their turn.
    diffed = [sha for sha in order if len(commits[sha].parents) <= 1]
    sections: Iterator[tuple[str, str]] = iter(())
    if diffed:
        blocks = git.stream(
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
            "--always",  # a section for every commit, empty ones too: sections follow the input one for one
            input="".join(f"{sha}\n" for sha in diffed).encode(),
            blocks=True,
        )
        sections = _sections(blocks, diffed)
    pending: dict[str, str] = {}  # sections read ahead of their turn (a section git repeats)
    # Each commit is analysed as soon as its section ends, while git is still diffing the next
    # ones: git's diffs and the Python parsing and symbol reading overlap.
    with no_cycle_collection():
        for sha in order:
            commit: pygit2.Commit = commits[sha]
            if len(commit.parents) > 1:
                yield sha, commit_changes(repo, sha, stop)
                continue
            text = pending.pop(sha, None)
            while text is None:
                got = next(sections, None)
                if got is None:
                    text = ""  # git printed no section: a commit that changes nothing
                    break
                if got[0] == sha:
                    text = got[1]
                elif got[0] not in pending:
                    pending[got[0]] = got[1]
            symbols = analyse is None or sha in analyse  # lines kept only where symbols are read
            yield sha, _section_changes(sha, text, symbols, repo, commit, stop)
        for _ in sections:  # the stream's end: git's exit status is checked there
            pass


def _sections(blocks: Iterable[bytes], shas: Sequence[str]) -> Iterator[tuple[str, str]]:
    """``diff-tree --stdin --always`` output, read in blocks, cut into (sha, the text after its
    header line) as each section ends, each decoded once (UTF-8, undecodable bytes kept as
    surrogates). git writes one section per input commit, in input order, each opened by a line
    holding only its sha (every other line starts with ':', a patch keyword, '@@', '+', '-' or
    '\\'): the next section is found with one ``find`` of that line, no Python step per line."""
    tail = bytearray()  # the current section's bytes so far, from its header line on
    searched = 0  # tail[:searched] holds no start of the next section's header
    i = 0
    for block in blocks:
        tail += block
        while i + 1 < len(shas):
            pos = tail.find(b"\n" + shas[i + 1].encode() + b"\n", searched)
            if pos < 0:
                searched = max(0, len(tail) - 41)
                break
            yield from _section_of(shas[i], tail[: pos + 1])
            del tail[: pos + 1]
            searched, i = 0, i + 1
    if i < len(shas):
        yield from _section_of(shas[i], tail)


def _section_of(sha: str, data: bytearray) -> Iterator[tuple[str, str]]:
    """(sha, the section's text after its header line); nothing if it does not start with it."""
    header = sha.encode() + b"\n"
    if data.startswith(header):
        yield sha, data[len(header) :].decode("utf-8", "surrogateescape")


def _section_changes(
    sha: str, text: str, symbols: bool, repo: pygit2.Repository, c: pygit2.Commit, stop: frozenset[str]
) -> CommitChanges:
    """One commit's section of ``git diff-tree --patch-with-raw -U0`` (the text after its header
    line), read: the raw entries, each file's hunks, and with ``symbols`` their changed lines' symbols.

    The patch is cut at its file and hunk headers (``diff --git``, ``@@``: no changed line starts
    with either) found by ``str.find``; a hunk's lines are what lies between its header and the
    next one, counted (``+``/``-`` lines) without splitting them unless symbols are read."""
    end = len(text)
    next_file = _find(text, "\ndiff --git ", 0)
    deltas: dict[str, FileDelta] = {}  # one entry per path, whatever git lists (the last)
    for m in _RAW.finditer(text, 0, next_file):
        old_mode, new_mode, old_id, new_id, status, name = m.groups()
        name = _unquote(name)
        old = None if status == "A" else (pygit2.Oid(hex=old_id), int(old_mode, 8))
        new = None if status == "D" else (pygit2.Oid(hex=new_id), int(new_mode, 8))
        deltas[name] = FileDelta(name, old, new)
    hunks: dict[str, list[Hunk]] = {}
    spans: dict[str, list[LineHunk]] = {}
    count = 0
    path: str | None = None
    next_hunk = _find(text, "\n@@", next_file)
    while next_file < end or next_hunk < end:
        at = min(next_file, next_hunk)  # the newline before the next header
        line_end = _find(text, "\n", at + 1)
        line = text[at + 1 : line_end]
        if at == next_file:
            path = _diff_path(line[len("diff --git ") :])
            next_file = _find(text, "\ndiff --git ", line_end)
            next_hunk = _find(text, "\n@@", line_end)
            continue
        next_hunk = _find(text, "\n@@", line_end)
        stop_at = min(next_file, next_hunk)  # the hunk's lines: text[line_end:stop_at]
        count += text.count("\n+", line_end, stop_at) + text.count("\n-", line_end, stop_at)
        if path is None:
            continue
        span = _SPAN.match(line)
        if span:
            a, b, c_, d = span.groups()
            spans.setdefault(path, []).append(
                LineHunk(int(a), 1 if b is None else int(b), int(c_), 1 if d is None else int(d))
            )
        if symbols:
            context = line.split("@@", 2)[2].lstrip(" ") if line.count("@@") >= 2 else ""
            removed, added = _hunk_lines(text[line_end:stop_at])
            hunks.setdefault(path, []).append(Hunk(context, added, removed))
    parent_tree = c.parents[0].tree.id if c.parents else empty_tree(repo)
    found: set[str] = set()
    defs = []
    for name, file_hunks in hunks.items():
        symbols_of, definitions = read_file(name, file_hunks, stop)
        found |= symbols_of
        defs.append(definitions)
    ranges = [FileRanges(p, tuple(spans.get(p, ())), whole=not spans.get(p)) for p in sorted(deltas)]
    ordered = tuple(deltas[k] for k in sorted(deltas))
    return CommitChanges(
        sha=sha,
        parent_tree=parent_tree,
        tree=c.tree.id,
        deltas=ordered,
        lines=count,
        symbols=frozenset(found),
        ranges=moved_ranges(repo, parent_tree, c.tree.id, ordered, ranges),
        **_union(defs),
    )


def _hunk_lines(body: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(removed, added) lines of a zero-context hunk, from its text after the header line (each
    line preceded by its newline). git writes such a hunk's ``-`` lines, then its ``+`` lines:
    then two ``split`` calls cut them; anything else (a ``\\ No newline`` marker) is read line by line."""
    body = body.removesuffix("\n")  # the last hunk of a section ends with its newline
    cut = body.find("\n+")
    minus, plus = (body, "") if cut < 0 else (body[:cut], body[cut:])
    removed, added = minus.split("\n-")[1:], plus.split("\n+")[1:]
    if len(removed) + len(added) == body.count("\n") and "\n-" not in plus and "\n\\" not in body:
        return tuple(removed), tuple(added)
    lines = body.split("\n")
    return tuple(x[1:] for x in lines if x.startswith("-")), tuple(x[1:] for x in lines if x.startswith("+"))


def _find(text: str, what: str, start: int) -> int:
    """``text.find(what, start)``, or the end of ``text`` when it is not there."""
    pos = text.find(what, start)
    return len(text) if pos < 0 else pos


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
    """:func:`commit_changes_many`, reading back what earlier runs analysed (:class:`AnalysisCache`)."""
    if folder is None:
        return commit_changes_many(repo, git, shas, stop, analyse=analyse)
    cache = AnalysisCache(folder, stop)
    wanted = list(dict.fromkeys(shas))
    full = set(wanted) if analyse is None else set(analyse)
    missing = cache.missing(wanted, full)
    if missing:
        for sha, changes in iter_commit_changes(
            repo, git, missing, stop, analyse=[s for s in missing if s in full]
        ):
            cache.add(sha in full, changes)
        cache.save()
    return {s: cache.get(s) for s in wanted}


class AnalysisCache:
    """A pair's analyses of upstream commits, kept between runs (:data:`CHANGES_CACHE_FILE`).

    An upstream commit never changes, so neither does its analysis (for one stop-list and one
    version of the code: :func:`analysis_key`): the bot, planning again on every poll, diffs only
    the commits it has not seen. A commit analysed without symbols is analysed again when they
    are asked for. The file is rewritten atomically with the newest :data:`ANALYSES_KEPT`: the
    lines read back as they were, the new ones encoded once (:meth:`encode_one` does it ahead,
    one at a time, for a caller with time to spare); one that cannot be read or written only
    costs speed.
    """

    def __init__(self, folder: Path, stop: frozenset[str]) -> None:
        self.path = folder / CHANGES_CACHE_FILE
        self.key = analysis_key(stop)
        self._known, self._rows = _read_analyses(self.path, self.key)
        self._unwritten: list[str] = []  # added since the file was read: rows still to encode

    @property
    def empty(self) -> bool:
        """Nothing is cached for this stop-list and this version of the code."""
        return not self._known

    def missing(self, wanted: Sequence[str], full: Collection[str]) -> list[str]:
        """Which of ``wanted`` must be analysed (again): unknown, or known without the symbols that
        ``full`` asks for; in the order of ``wanted``."""
        known = self._known
        return [s for s in wanted if s not in known or (s in full and not known[s][0])]

    def get(self, sha: str) -> CommitChanges:
        return self._known[sha][1]

    def add(self, read: bool, changes: CommitChanges) -> None:
        """A fresh analysis (``read``: its symbols were read), newest last."""
        self._known.pop(changes.sha, None)
        self._rows.pop(changes.sha, None)
        self._known[changes.sha] = (read, changes)
        self._unwritten.append(changes.sha)

    def encode_one(self) -> bool:
        """Encode the row of one analysis added since the file was read; False when none is left."""
        while self._unwritten:
            sha = self._unwritten.pop()
            if sha not in self._rows and sha in self._known:
                self._rows[sha] = analysis_row(*self._known[sha])
                return True
        return False

    def save(self) -> None:
        rows = self._rows
        kept = list(self._known.items())[-ANALYSES_KEPT:]
        lines = [rows.get(sha) or analysis_row(read, c) for sha, (read, c) in kept]
        _write_lines(self.path, self.key, lines)


def _entry_json(entry: Entry | None) -> list[Any] | None:
    return None if entry is None else [str(entry[0]), entry[1]]


def _entry_of(data: list[Any] | None) -> Entry | None:
    return None if data is None else (pygit2.Oid(hex=data[0]), int(data[1]))


def _read_analyses(path: Path, key: str) -> tuple[dict[str, tuple[bool, CommitChanges]], dict[str, str]]:
    """The analyses of a cache file written with ``key`` (sha → (symbols read, analysis)), and each
    one's line as it was read."""
    try:
        lines = path.read_text("utf-8").split("\n")
    except (OSError, UnicodeDecodeError):
        return {}, {}
    if not lines or lines[0] != key:
        return {}, {}
    out: dict[str, tuple[bool, CommitChanges]] = {}
    rows: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        try:
            sha, read, changes = analysis_of_row(line)
        except (ValueError, TypeError):
            continue
        out[sha] = (read, changes)
        rows[sha] = line
    return out, rows


def analysis_row(read: bool, c: CommitChanges) -> str:
    """One commit's analysis as one line of JSON (no newline in it): the cache's row, and what
    :mod:`workers.engine.analyst` sends; ``read``: whether its symbols were read."""
    return json.dumps(
        [
            c.sha,
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
                    *([r.renamed_from] if r.renamed_from else []),
                ]
                for r in c.ranges
            ],
            sorted(c.introduced),
            sorted(c.defined),
            sorted(c.used),
        ],
        ensure_ascii=False,
    )


def analysis_of_row(line: str) -> tuple[str, bool, CommitChanges]:
    """(sha, whether its symbols were read, the analysis) of an :func:`analysis_row` line;
    ``ValueError`` or ``TypeError`` for a line that is not one."""
    sha, read, parent, tree, deltas, size, symbols, ranges, introduced, defined, used = json.loads(line)
    return (
        sha,
        bool(read),
        CommitChanges(
            sha=sha,
            parent_tree=pygit2.Oid(hex=parent),
            tree=pygit2.Oid(hex=tree),
            deltas=tuple(FileDelta(p, _entry_of(o), _entry_of(n)) for p, o, n in deltas),
            lines=int(size),
            symbols=frozenset(symbols),
            ranges=tuple(
                FileRanges(p, tuple(LineHunk(*h) for h in hunks), bool(whole), *moved)
                for p, whole, hunks, *moved in ranges
            ),
            introduced=frozenset(introduced),
            defined=frozenset(defined),
            used=frozenset(used),
        ),
    )


def _write_lines(path: Path, key: str, rows: Sequence[str]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(key + "\n" + "\n".join(rows) + "\n", "utf-8")
        tmp.replace(path)
    except OSError:
        pass
