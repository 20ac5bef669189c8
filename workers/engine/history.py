"""Read a range of history in one ``git log`` pass into typed records (no per-commit processes)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

from workers.engine.git import Repository

# Upstream squash-merge subjects end in "(#N)"; merge commits say "Merge pull request #N".
_SQUASH_PR = re.compile(r"\(#(\d+)\)\s*$")
_MERGE_PR = re.compile(r"^Merge pull request #(\d+)\b")

# One changed file as ``git log --raw`` names it: path, old "mode:blob", new "mode:blob". Two
# commits whose changes are equal have the same diff, hence the same patch-id.
Change = tuple[str, str, str]

_FIELDS = ("%H", "%P", "%an", "%ae", "%at", "%ct", "%s")
_FORMAT_UPSTREAM = "%x1e" + "%x1f".join(_FIELDS) + "%x1f"
_FORMAT_FORK = "%x1e" + "%x1f".join((*_FIELDS, "%B")) + "%x1f"


@dataclass(frozen=True)
class Commit:
    """One commit as the ledger needs it. ``message`` is empty for upstream commits."""

    sha: str
    parents: tuple[str, ...]
    author_name: str
    author_email: str
    author_time: int
    committer_time: int
    subject: str
    files: tuple[str, ...]
    message: str = ""
    changes: frozenset[Change] = frozenset()  # from read_range(..., files=True); empty otherwise

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1

    @property
    def author(self) -> str:
        return f"{self.author_name} <{self.author_email}>"

    @cached_property
    def pr_number(self) -> int | None:
        """The upstream PR number a squash-merge or merge subject names, if any."""
        m = _SQUASH_PR.search(self.subject) or _MERGE_PR.match(self.subject)
        return int(m.group(1)) if m else None


def read_range(
    repo: Repository,
    include: str,
    exclude: Sequence[str],
    *,
    first_parent: bool,
    messages: bool,
    files: bool = True,
) -> list[Commit]:
    """Commits reachable from ``include`` and not from ``exclude``, oldest first.

    One ``git log`` process. With ``files``, ``--raw`` lists changed paths and their blobs
    (against the first parent for merges when ``first_parent``); without it no commit is
    diffed at all, which on a long upstream range is most of the cost (see :func:`changed_files`).
    """
    args = [
        "-c",
        "core.quotePath=false",
        "log",
        "--no-color",
        "--no-renames",
        "--topo-order",
        "-z",
        *(["--raw", "--no-abbrev"] if files else []),
        f"--format={_FORMAT_FORK if messages else _FORMAT_UPSTREAM}",
    ]
    if first_parent:
        args.append("--first-parent")
    args.append(include)
    args.extend(f"^{sha}" for sha in exclude)
    args.append("--")
    raw = repo.git(*args).decode("utf-8", "replace")
    parse = _parse if files else _parse_bare
    commits = [parse(record, messages) for record in raw.split("\x1e") if record.strip("\x00\n")]
    commits.reverse()
    return commits


def _parse(record: str, messages: bool) -> Commit:
    parts = record.split("\x1f")
    n = len(_FIELDS) + (1 if messages else 0)
    sha, parents, an, ae, at, ct, subject = parts[:7]
    message = parts[7] if messages else ""
    changes = _raw_changes("\x1f".join(parts[n:]))
    files = tuple(dict.fromkeys(c[0] for c in changes))
    return Commit(
        sha=sha,
        parents=tuple(parents.split()),
        author_name=an,
        author_email=ae,
        author_time=int(at or 0),
        committer_time=int(ct or 0),
        subject=subject,
        files=files,
        message=message.rstrip("\n"),
        changes=frozenset(changes),
    )


def _parse_bare(record: str, messages: bool) -> Commit:
    """:func:`_parse` for a log without ``--raw`` (no changes to read: ~40 % cheaper at 20,000 commits)."""
    parts = record.split("\x1f", 8)
    sha, parents, an, ae, at, ct, subject = parts[:7]
    message = parts[7] if messages else ""
    return Commit(
        sha, tuple(parents.split()), an, ae, int(at or 0), int(ct or 0), subject, (), message.rstrip("\n")
    )


def _raw_changes(tail: str) -> list[Change]:
    """``:old_mode new_mode old_blob new_blob status NUL path NUL`` records (``-z --raw``), in order.

    Combined-diff records of merges (``::...``) name one path too and are read the same way.
    """
    items = tail.lstrip("\x00").lstrip("\n").split("\x00")
    out: list[Change] = []
    i = 0
    while i + 1 < len(items):
        meta = items[i]
        if not meta.startswith(":"):
            i += 1
            continue
        fields = meta.lstrip(":").split(" ")
        half = (len(fields) - 1) // 2  # modes then blobs, one per side (more for combined diffs)
        modes, blobs = fields[:half], fields[half : 2 * half]
        out.append((items[i + 1], f"{modes[0]}:{blobs[0]}", f"{modes[-1]}:{blobs[-1]}"))
        i += 2
    return out


def merged_side_commits(
    repo: Repository, include: str, exclude: Sequence[str], first_parent: Sequence[Commit]
) -> dict[str, str]:
    """Commits off the first-parent line → the first-parent merge that brought them in.

    For upstreams that merge pull requests instead of squashing them; one more ``git log``
    (metadata only), run only when the first-parent range has merges.
    """
    merges = [c for c in first_parent if c.is_merge]
    if not merges:
        return {}
    args = ["log", "--format=%H %P", include, *(f"^{sha}" for sha in exclude), "--"]
    parents: dict[str, list[str]] = {}
    for line in repo.git(*args).decode().splitlines():
        sha, *rest = line.split()
        parents[sha] = rest
    on_line = {c.sha for c in first_parent}
    side: dict[str, str] = {}
    for merge in merges:  # oldest first: a commit belongs to the first merge that landed it
        stack = list(merge.parents[1:])
        while stack:
            sha = stack.pop()
            if sha in on_line or sha in side or sha not in parents:
                continue
            side[sha] = merge.sha
            stack.extend(parents[sha])
    return side


def change_ids(repo: Repository, include: str, exclude: Sequence[str]) -> dict[str, str]:
    """Gerrit ``Change-Id`` trailer → the commit that has it, for every commit in the range
    (side commits too: Gerrit's ``Merge "X" into main`` lands X off the first-parent line).

    A cherry-pick made in Gerrit keeps the change's id, so this names upstream's commit even when
    the picked sha never landed (a change rebased before it merged). One ``git log`` that reads
    only the trailers, run only when some fork message has one. With one id on several commits
    the newest wins, as a PR number's does."""
    args = ["log", "--format=%H%x1f%(trailers:key=Change-Id,valueonly,separator=%x1f)", include]
    raw = repo.git(*args, *(f"^{sha}" for sha in exclude), "--").decode("utf-8", "replace")
    found: dict[str, str] = {}
    for line in raw.splitlines():
        sha, *ids = line.split("\x1f")
        for cid in ids:
            if _CHANGE_ID.fullmatch(cid.strip()):
                found.setdefault(cid.strip(), sha)
    return found


_CHANGE_ID = re.compile(r"I[0-9a-f]{40}")


def changed_files(
    repo: Repository, include: str, exclude: Sequence[str], *, first_parent: bool = True
) -> dict[str, frozenset[Change]]:
    """Every commit of the range → the files it changes, with blobs (one ``git log --raw``)."""
    return file_records(changed_files_raw(repo, include, exclude, first_parent=first_parent))


def changed_files_raw(
    repo: Repository, include: str, exclude: Sequence[str], *, first_parent: bool = True
) -> bytes:
    """:func:`changed_files` as git printed it (what :func:`file_records` reads; cheap to keep)."""
    args = [
        "-c",
        "core.quotePath=false",
        "log",
        "--no-color",
        "--no-renames",
        "-z",
        "--raw",
        "--no-abbrev",
        "--format=%x1e%H%x1f",
    ]
    if first_parent:
        args.append("--first-parent")
    args.append(include)
    args.extend(f"^{sha}" for sha in exclude)
    args.append("--")
    return repo.git(*args)


def touching_files_raw(repo: Repository, include: str, exclude: Sequence[str], paths: Iterable[str]) -> bytes:
    """The first-parent commits of the range that change any of ``paths``, each with every file
    it changes (``--full-diff``): :func:`changed_files_raw`'s records for just those commits.

    A path-limited walk reads only the trees on the way to ``paths``; with a few paths that is
    a fraction of the full listing's tree diffs (git matches each tree entry against every
    path, so with many paths the full listing is cheaper: see ``ledger.build.PATH_LIMITED_MAX``).
    """
    args = [
        "-c",
        "core.quotePath=false",
        "log",
        "--no-color",
        "--no-renames",
        "-z",
        "--raw",
        "--no-abbrev",
        "--full-diff",
        "--first-parent",
        "--format=%x1e%H%x1f",
        include,
    ]
    args.extend(f"^{sha}" for sha in exclude)
    args.append("--")
    args.extend(f":(literal){p}" for p in sorted(set(paths)))
    return repo.git(*args)


def commit_files(repo: Repository, shas: Iterable[str]) -> dict[str, frozenset[Change]]:
    """The files (with blobs) each given commit changes against its first parent (one process)."""
    return file_records(commit_files_raw(repo, shas))


def commit_files_raw(repo: Repository, shas: Iterable[str]) -> bytes:
    """:func:`commit_files` as git printed it."""
    wanted = list(dict.fromkeys(shas))
    if not wanted:
        return b""
    return repo.git(
        "-c",
        "core.quotePath=false",
        "log",
        "--no-walk=unsorted",
        "--stdin",
        "--no-color",
        "--no-renames",
        "-z",
        "--raw",
        "--no-abbrev",
        "--diff-merges=first-parent",
        "--format=%x1e%H%x1f",
        input="".join(f"{s}\n" for s in wanted).encode(),
    )


def file_records(data: bytes) -> dict[str, frozenset[Change]]:
    """Parse ``--format=%x1e%H%x1f -z --raw`` output (several outputs concatenated read the same)."""
    out: dict[str, frozenset[Change]] = {}
    for record in data.decode("utf-8", "replace").split("\x1e"):
        if not record.strip("\x00\n"):
            continue
        sha, _, tail = record.partition("\x1f")
        out[sha] = frozenset(_raw_changes(tail))
    return out


def paths_of(changes: Iterable[Change]) -> frozenset[str]:
    return frozenset(c[0] for c in changes)


def tree_paths(repo: Repository, commits: Iterable[str]) -> set[str]:
    """Every file path in the trees of ``commits`` (one ``ls-tree`` per commit)."""
    paths: set[str] = set()
    for commit in commits:
        raw = repo.git("-c", "core.quotePath=false", "ls-tree", "-r", "-z", "--name-only", commit)
        paths.update(p for p in raw.decode("utf-8", "replace").split("\x00") if p)
    return paths


def patch_ids(repo: Repository, shas: Iterable[str]) -> dict[str, str]:
    """``git patch-id --stable`` of each commit (merges and root commits get none).

    Two processes for the whole batch: ``diff-tree -p --stdin`` piped into ``patch-id``.
    """
    wanted = sorted(set(shas))
    if not wanted:
        return {}
    patches = repo.git(
        "diff-tree",
        "-p",
        "--no-color",
        "--no-renames",
        "--no-ext-diff",
        "--stdin",
        input="".join(f"{s}\n" for s in wanted).encode(),
    )
    if not patches.strip():
        return {}
    out = repo.git("patch-id", "--stable", input=patches).decode()
    result: dict[str, str] = {}
    for line in out.splitlines():
        pid, _, sha = line.partition(" ")
        if sha:
            result[sha.strip()] = pid
    return result
