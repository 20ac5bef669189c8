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

    def __init__(self) -> None:
        self._chunks: list[bytes] = []
        self._mark = 0

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
        self._chunks.extend(out)
        return mark

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
        self._chunks.extend(out)
        return mark

    def reset(self, ref: str, to: str) -> None:
        self._chunks.append(f"reset {ref}\nfrom {to}\n\n".encode())

    def data(self) -> bytes:
        return b"".join(self._chunks) + b"done\n"

    def run(self, path: Path, *, bare: bool = False) -> dict[str, str]:
        """Create (if needed) the repository at ``path``, import, and return mark → sha."""
        path.mkdir(parents=True, exist_ok=True)
        if not (path / ("HEAD" if bare else ".git")).exists():
            run_git(path, ["init", "--quiet", *(["--bare"] if bare else []), "-b", "main"])
        repo = Repository(path)
        marks_file = path / ("fast-import.marks" if bare else ".git/fast-import.marks")
        repo.git("fast-import", "--quiet", "--done", f"--export-marks={marks_file}", input=self.data())
        marks: dict[str, str] = {}
        for line in marks_file.read_text().splitlines():
            mark, _, sha = line.partition(" ")
            marks[mark] = sha
        marks_file.unlink()
        if not bare:
            repo.git("reset", "--quiet", "--hard")
        return marks
