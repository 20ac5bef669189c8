"""Write synthetic history fast: a small ``git fast-import`` stream builder with a file model.

Used by the sample pair (demo, tests) and the benchmark generator: tens of thousands of commits
in seconds, byte-for-byte reproducible (fixed identities and dates, no randomness here).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from workers.engine.git import Repository, run_git


@dataclass(frozen=True)
class Person:
    name: str
    email: str

    def ident(self, when: int) -> str:
        return f"{self.name} <{self.email}> {when} +0000"


class Stream:
    """Commands for ``git fast-import``; commits are named by marks (``:n``) until imported."""

    # Import in pieces of about this many bytes, so a long history never sits in memory whole.
    FLUSH_BYTES = 32 * 1024 * 1024

    def __init__(self, target: Path | None = None, *, bare: bool = False) -> None:
        """With ``target``, the stream is imported there piece by piece as it grows."""
        self._chunks: list[bytes] = []
        self._size = 0
        self._mark = 0
        self._target = target
        self._bare = bare
        self._flushed = False

    def commit(
        self,
        ref: str,
        message: str,
        changes: Mapping[str, str | None],
        *,
        author: Person,
        author_time: int,
        committer: Person | None = None,
        committer_time: int | None = None,
        parents: Sequence[str] = (),
    ) -> str:
        """Append a commit to ``ref``; ``changes`` maps path → full content (None deletes).

        ``parents`` are marks (``:n``) or shas; the first is the first parent. Returns the mark.
        """
        self._mark += 1
        mark = f":{self._mark}"
        msg = message.encode()
        out = [
            f"commit {ref}\nmark {mark}\n".encode(),
            f"author {author.ident(author_time)}\n".encode(),
            f"committer {(committer or author).ident(committer_time or author_time)}\n".encode(),
            f"data {len(msg)}\n".encode(),
            msg,
            b"\n",
        ]
        if parents:
            out.append(f"from {parents[0]}\n".encode())
            out.extend(f"merge {p}\n".encode() for p in parents[1:])
        for path in sorted(changes):
            content = changes[path]
            if content is None:
                out.append(f"D {path}\n".encode())
            else:
                data = content.encode()
                out.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode())
                out.append(data)
                out.append(b"\n")
        out.append(b"\n")
        self._append(out)
        return mark

    def _append(self, out: list[bytes]) -> None:
        self._chunks.extend(out)
        self._size += sum(len(b) for b in out)
        if self._target is not None and self._size >= self.FLUSH_BYTES:
            self._import(self._target, self._bare)

    def note(self, ref: str, target: str, text: str, *, who: Person, when: int, parent: str | None) -> str:
        """Append a notes commit on ``ref`` annotating ``target`` (a mark or sha) with ``text``."""
        self._mark += 1
        mark = f":{self._mark}"
        msg = b"forksync: decision\n"
        data = text.encode()
        out = [
            f"commit {ref}\nmark {mark}\ncommitter {who.ident(when)}\ndata {len(msg)}\n".encode(),
            msg,
            b"\n",
        ]
        if parent:
            out.append(f"from {parent}\n".encode())
        out.append(f"N inline {target}\ndata {len(data)}\n".encode())
        out.append(data)
        out.append(b"\n\n")
        self._append(out)
        return mark

    def reset(self, ref: str, to: str) -> None:
        self._append([f"reset {ref}\nfrom {to}\n\n".encode()])

    def data(self) -> bytes:
        return b"".join(self._chunks) + b"done\n"

    def _marks_file(self, path: Path, bare: bool) -> Path:
        return path / ("fast-import.marks" if bare else ".git/fast-import.marks")

    def _import(self, path: Path, bare: bool) -> None:
        path.mkdir(parents=True, exist_ok=True)
        if not (path / ("HEAD" if bare else ".git")).exists():
            run_git(path, ["init", "--quiet", *(["--bare"] if bare else []), "-b", "main"])
        marks_file = self._marks_file(path, bare)
        Repository(path).git(
            "fast-import",
            "--quiet",
            "--done",
            f"--import-marks-if-exists={marks_file}",
            f"--export-marks={marks_file}",
            input=self.data(),
        )
        self._chunks, self._size, self._flushed = [], 0, True

    def run(self, path: Path, *, bare: bool = False) -> dict[str, str]:
        """Import what is left into the repository at ``path`` (created if needed); mark → sha."""
        if self._target is not None and self._target != path:
            raise ValueError(f"stream was started for {self._target}, not {path}")
        if self._chunks or not self._flushed:
            self._import(path, bare)
        marks_file = self._marks_file(path, bare)
        marks: dict[str, str] = {}
        for line in marks_file.read_text().splitlines():
            mark, _, sha = line.partition(" ")
            marks[mark] = sha
        marks_file.unlink()
        if not bare:
            Repository(path).git("reset", "--quiet", "--hard")
        return marks
