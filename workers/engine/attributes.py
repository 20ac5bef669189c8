"""The ``.gitattributes`` rules of a tree, as one root-relative attributes file for ``git merge-tree``.

What a trial merge needs to agree with ``git cherry-pick``: a cherry-pick runs in a work tree that
holds the target (ours), and git merges each file with the merge driver (``merge=union``,
``-merge``, ``binary``, ``conflict-marker-size``...) that the work tree's ``.gitattributes``
files give it. ``git merge-tree`` run from a git directory reads no in-tree file, only
``core.attributesFile`` and ``$GIT_DIR/info/attributes``. So :class:`TreeAttributes` collects
the ``.gitattributes`` blobs of ours (at any depth), rewrites each one's patterns relative to the
root, and writes them as one file, shallow first and deep last (git: a deeper file overrides a
shallower one, a later line an earlier one), that the merge gets as ``core.attributesFile``.

The rewriting follows gitattributes(5) and git's ``attr.c`` (git 2.39):

* a pattern without a ``/`` (a trailing one aside) in directory ``D`` matches the basename at
  any depth under ``D``: ``D/**/pattern`` (wildmatch's ``/**/`` matches zero or more
  directories); in the root file it stays as it is;
* a pattern with a ``/`` (not only trailing) is relative to ``D``: ``D/pattern``, a leading
  ``/`` dropped (in the root file it stays: there ``/`` keeps ``/name`` from matching deeper);
* a trailing ``/`` matches only directories, which a file merge never asks about: kept as it is;
* ``!pattern`` is ignored by git (negation is not allowed in attributes): dropped;
* ``[attr]`` macro definitions are honoured in the root file only: kept from the root, dropped
  (as git drops them, with a warning) from the others;
* ``D`` is escaped for wildmatch (``*?[\\``), and a pattern with a blank, a quote or a control
  byte is written C-quoted, as git reads quoted patterns.

Git reads the configured global attributes file (``core.attributesFile``, by default
``$XDG_CONFIG_HOME/git/attributes``) beneath the in-tree files; since the merge's
``core.attributesFile`` replaces it, its lines come first in the written file, so it keeps its
place. Git ignores a line longer than 2048 bytes: a rewritten line that the prefix pushes over is
split into lines of the same pattern, each with some of the attributes, in order (the same
rules). The limit: a pattern that is itself over 2048 bytes once prefixed (a directory path that
long) stays too long, and git ignores the rule where the cherry-pick applies it
(tests/test_pick_attributes.py shows it). A ``.gitattributes`` that is
a symlink is not followed (git 2.32+ does not either).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pygit2

ATTRIBUTES_FILE = ".gitattributes"
# git ignores attribute lines longer than this (attr.c ATTR_MAX_LINE_LENGTH).
MAX_LINE = 2048
_BLANK = b" \t\r\n"
_GLOB = b"*?[\\"


def _unquote(data: bytes) -> bytes | None:
    """A C-quoted pattern's bytes (``data`` starts with ``"``), None when it is not closed."""
    out = bytearray()
    i = 1
    simple = {ord("n"): 10, ord("t"): 9, ord("a"): 7, ord("b"): 8, ord("f"): 12, ord("r"): 13, ord("v"): 11}
    while i < len(data):
        c = data[i]
        if c == ord('"'):
            return bytes(out)
        if c == ord("\\") and i + 1 < len(data):
            n = data[i + 1]
            if n in simple:
                out.append(simple[n])
                i += 2
                continue
            if ord("0") <= n <= ord("3") and i + 3 < len(data):
                out.append(int(data[i + 1 : i + 4], 8))
                i += 4
                continue
            out.append(n)
            i += 2
            continue
        out.append(c)
        i += 1
    return None


def _quote(pattern: bytes) -> bytes:
    """``pattern`` as git reads it back: C-quoted when it holds a blank, a quote or a control byte."""
    if not pattern.startswith(b'"') and not any(c < 0x20 or c in b' "\x7f' for c in pattern):
        return pattern
    out = bytearray(b'"')
    for c in pattern:
        if c in b'"\\':
            out += b"\\" + bytes([c])
        elif c < 0x20 or c == 0x7F:
            out += b"\\%03o" % c
        else:
            out.append(c)
    return bytes(out + b'"')


def _escape(folder: str) -> bytes:
    return b"".join(b"\\" + bytes([c]) if c in _GLOB else bytes([c]) for c in folder.encode("utf-8"))


def translate(folder: str, text: bytes) -> list[bytes]:
    """The lines of the attributes file ``text`` found in directory ``folder`` ("" for the root),
    rewritten relative to the root."""
    lines: list[bytes] = []
    for raw in text.split(b"\n"):
        if len(raw) > MAX_LINE:
            continue  # git ignores it too
        line = raw.lstrip(_BLANK)
        if not line or line.startswith(b"#"):
            continue
        if line.startswith(b'"'):
            pattern = _unquote(line)
            if pattern is None:
                continue  # git: a broken quoted pattern, the line is ignored
            rest = _after_quote(line)
        else:
            end = next((i for i, c in enumerate(line) if c in _BLANK), len(line))
            pattern, rest = line[:end], line[end:]
        attrs = rest.strip(_BLANK)
        if pattern.startswith(b"[attr]"):
            if not folder:
                lines.append(line.rstrip(_BLANK))
            continue
        if pattern.startswith(b"!") or not pattern:
            continue
        if folder:
            body = pattern[:-1] if pattern.endswith(b"/") else pattern
            if b"/" in body:
                pattern = _escape(folder) + b"/" + pattern.lstrip(b"/")
            else:
                pattern = _escape(folder) + b"/**/" + pattern
        lines.extend(_split(_quote(pattern), attrs.split()))
    return lines


def _split(pattern: bytes, attrs: list[bytes]) -> list[bytes]:
    """``pattern attrs...`` as lines git reads whole (at most :data:`MAX_LINE` bytes each, where
    the pattern leaves room): the same rules, since git takes an attribute from the last line and
    the last place on a line that sets it, and the lines keep the attributes' order."""
    lines: list[bytes] = []
    line = pattern
    for attr in attrs:
        if len(line) + 1 + len(attr) > MAX_LINE and line != pattern:
            lines.append(line)
            line = pattern
        line += b" " + attr
    lines.append(line)
    return lines


def _after_quote(line: bytes) -> bytes:
    """What follows the closing quote of a C-quoted pattern at the start of ``line``."""
    i = 1
    while i < len(line):
        if line[i] == ord("\\"):
            i += 2
            continue
        if line[i] == ord('"'):
            return line[i + 1 :]
        i += 1
    return b""


class TreeAttributes:
    """The attributes files of trees in ``repo``, written into ``folder`` for ``git merge-tree``.

    ``file(tree)`` is the path of the file that gives git ``tree``'s in-tree rules (None when
    ``tree`` has no ``.gitattributes``). Files are named by their content's digest and written
    once; the ``.gitattributes`` found under each subtree are remembered by its id, so a tree that
    differs from the last one in a few paths costs only the walk down those paths.
    """

    def __init__(self, repo: pygit2.Repository, folder: Path, base: bytes = b"") -> None:
        self.repo = repo
        self.folder = folder
        self.base = base  # the global attributes file's content: the lowest rules
        self._under: dict[pygit2.Oid, tuple[tuple[str, pygit2.Oid], ...]] = {}
        self._lines: dict[tuple[str, pygit2.Oid], list[bytes]] = {}
        self._files: dict[pygit2.Oid, Path | None] = {}

    def file(self, tree: pygit2.Oid) -> Path | None:
        """The attributes file for ``tree``, None when it has no ``.gitattributes``."""
        if tree not in self._files:
            found = self._found(tree)
            self._files[tree] = self._write(found) if found else None
        return self._files[tree]

    def _found(self, tree: pygit2.Oid) -> tuple[tuple[str, pygit2.Oid], ...]:
        """(directory, blob) of every regular ``.gitattributes`` under ``tree`` (directories relative)."""
        known = self._under.get(tree)
        if known is not None:
            return known
        got = self.repo.get(tree)
        assert isinstance(got, pygit2.Tree)
        found: list[tuple[str, pygit2.Oid]] = []
        for item in got:
            name = item.name
            assert name is not None
            if item.filemode == pygit2.enums.FileMode.TREE:
                found.extend((f"{name}/{d}" if d else name, blob) for d, blob in self._found(item.id))
            elif name == ATTRIBUTES_FILE and item.filemode in (
                pygit2.enums.FileMode.BLOB,
                pygit2.enums.FileMode.BLOB_EXECUTABLE,
            ):
                found.append(("", item.id))
        result = self._under[tree] = tuple(found)
        return result

    def _write(self, found: tuple[tuple[str, pygit2.Oid], ...]) -> Path:
        body = [self.base.rstrip(b"\n")] if self.base.strip() else []
        for folder, blob in sorted(found, key=lambda f: (f[0].count("/") + bool(f[0]), f[0])):
            key = (folder, blob)
            lines = self._lines.get(key)
            if lines is None:
                data = self.repo.get(blob)
                assert isinstance(data, pygit2.Blob)
                lines = self._lines[key] = translate(folder, data.data)
            body.extend(lines)
        content = b"\n".join(body) + b"\n"
        path = self.folder / f"{hashlib.sha256(content).hexdigest()[:32]}.attributes"
        if not path.exists():
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(content)
            tmp.replace(path)
        return path
