"""Resolution memory: a conflict's fingerprint -> the resolution a maintainer accepted, kept in the fork.

Like ``git rerere``, but durable and shared: the records live in the fork at
``refs/forksync/resolutions`` (config ``resolve.memory_ref``), a commit whose tree holds one
JSON file per fingerprint (``ab/cdef….json``). Every write is a new commit on top of the
previous one, so the ref is also the audit log (``git log -p refs/forksync/resolutions``), and
a new worker or a flushed Redis loses nothing.

The fingerprint is the sha256 of the hunk's three sides, normalised (whitespace runs collapsed,
blank lines dropped), so a re-indented copy of the same conflict still matches. Records are
learned from resolutions humans accepted: a merged ``[RESOLVED]`` pick (its committed files
against the conflict recomputed from its upstream commit) and approved forksync proposals.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pygit2

from workers.engine.git import run_git
from workers.engine.pair import Pair
from workers.engine.resolve import model, rails
from workers.engine.resolve.merge3 import Merged, git_merge
from workers.engine.resolve.model import Hunk, HunkResolution

DEFAULT_REF = "refs/forksync/resolutions"
FORMAT_VERSION = 1
BOT_NAME = "forksync"
BOT_EMAIL = "forksync@users.noreply.github.com"


def _normalise(lines: Sequence[str]) -> list[str]:
    return [" ".join(line.split()) for line in lines if line.strip()]


def fingerprint(ours: Sequence[str], base: Sequence[str], theirs: Sequence[str]) -> str:
    h = hashlib.sha256()
    for side in (ours, base, theirs):
        h.update(b"\x00side\x00")
        h.update("\n".join(_normalise(side)).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def hunk_fingerprint(hunk: Hunk) -> str:
    return fingerprint(hunk.ours, hunk.base, hunk.theirs)


@dataclass(frozen=True)
class MemoryRecord:
    """One remembered resolution: the sides it was made for, the lines, and where it was learned."""

    fingerprint: str
    path: str
    ours: tuple[str, ...]
    base: tuple[str, ...]
    theirs: tuple[str, ...]
    resolution: tuple[str, ...]
    source: str  # "merged <fork sha>" or "approved <PR url or number>"

    def as_json(self) -> dict[str, Any]:
        return {
            "version": FORMAT_VERSION,
            "fingerprint": self.fingerprint,
            "path": self.path,
            "ours": "".join(self.ours),
            "base": "".join(self.base),
            "theirs": "".join(self.theirs),
            "resolution": "".join(self.resolution),
            "source": self.source,
        }

    @staticmethod
    def from_json(doc: Any) -> MemoryRecord | None:
        if not isinstance(doc, dict) or doc.get("version") != FORMAT_VERSION:
            return None
        try:
            return MemoryRecord(
                str(doc["fingerprint"]),
                str(doc["path"]),
                tuple(str(doc["ours"]).splitlines(keepends=True)),
                tuple(str(doc["base"]).splitlines(keepends=True)),
                tuple(str(doc["theirs"]).splitlines(keepends=True)),
                tuple(str(doc["resolution"]).splitlines(keepends=True)),
                str(doc["source"]),
            )
        except KeyError:
            return None


class ResolutionMemory:
    """The records of one repository's memory ref, read lazily; ``lookup`` answers the pipeline."""

    def __init__(
        self, repo: pygit2.Repository, ref: str = DEFAULT_REF, extra: Iterable[MemoryRecord] = ()
    ) -> None:
        self.repo = repo
        self.ref = ref
        self._tree: pygit2.Tree | None = None
        self.tip: str | None = None
        try:
            commit = repo.revparse_single(ref).peel(pygit2.Commit)
        except (KeyError, ValueError):
            commit = None
        if isinstance(commit, pygit2.Commit):
            self._tree = commit.tree
            self.tip = str(commit.id)
        self._extra = {r.fingerprint: r for r in extra}

    def get(self, fp: str) -> MemoryRecord | None:
        if fp in self._extra:
            return self._extra[fp]
        if self._tree is None:
            return None
        try:
            obj = self._tree[f"{fp[:2]}/{fp[2:]}.json"]
        except KeyError:
            return None
        blob = self.repo.get(obj.id)
        if not isinstance(blob, pygit2.Blob):
            return None
        try:
            return MemoryRecord.from_json(json.loads(blob.data.decode("utf-8")))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return None

    def lookup(self, hunk: Hunk) -> HunkResolution | None:
        record = self.get(hunk_fingerprint(hunk))
        if record is None:
            return None
        return HunkResolution(
            hunk.index,
            model.MEMORY,
            record.resolution,
            f"a maintainer resolved the same conflict this way before ({record.source})",
            hunk.digest(),
        )

    def records(self) -> list[MemoryRecord]:
        out: list[MemoryRecord] = []
        if self._tree is not None:
            for shard in self._tree:
                sub = self.repo.get(shard.id)
                if not isinstance(sub, pygit2.Tree):
                    continue
                for item in sub:
                    rec = (
                        self.get(shard.name + (item.name or "").removesuffix(".json")) if shard.name else None
                    )
                    if rec is not None:
                        out.append(rec)
        out.extend(self._extra.values())
        return sorted(out, key=lambda r: r.fingerprint)


def learn(path: str, merged: Merged, resolved: str, source: str) -> list[MemoryRecord]:
    """Records from a human's resolution of one file: one per hunk, when the human kept every clean line.

    A file whose resolution also changed lines outside the conflict blocks teaches nothing
    per hunk (which part answered which block is unknowable) and gives no record.
    """
    split = rails.split_by_merge(resolved, merged)
    if split is None:
        return []
    out = []
    for hunk, lines in zip(merged.hunks, split, strict=True):
        if any(rails.marker_lines("".join(lines))):
            continue
        out.append(
            MemoryRecord(
                hunk_fingerprint(hunk), path, hunk.ours, hunk.base, hunk.theirs, tuple(lines), source
            )
        )
    return out


def _blob_text(repo: pygit2.Repository, tree: pygit2.Tree, path: str) -> str | None:
    try:
        obj = tree[path]
    except KeyError:
        return None
    blob = repo.get(obj.id)
    return (
        blob.data.decode("utf-8", "surrogateescape")
        if isinstance(blob, pygit2.Blob) and not blob.is_binary
        else None
    )


def learn_from_commit(
    repo: pygit2.Repository,
    fork_commit: str,
    upstream_commit: str,
    source: str | None = None,
    onto: str | None = None,
) -> list[MemoryRecord]:
    """Records from a merged pick: the conflict of ``upstream_commit`` onto ``onto`` (default: the
    pick's parent), answered by the pick's tree."""
    pick = repo.revparse_single(fork_commit).peel(pygit2.Commit)
    up = repo.revparse_single(upstream_commit).peel(pygit2.Commit)
    assert isinstance(pick, pygit2.Commit) and isinstance(up, pygit2.Commit)
    if not up.parents or (onto is None and not pick.parents):
        return []
    target = repo.revparse_single(onto).peel(pygit2.Commit) if onto is not None else pick.parents[0]
    assert isinstance(target, pygit2.Commit)
    index = repo.merge_trees(up.parents[0].tree, target.tree, up.tree)
    if index.conflicts is None:
        return []
    out: list[MemoryRecord] = []
    for ancestor, ours, theirs in index.conflicts:
        if ours is None or theirs is None:
            continue
        path = ours.path
        texts = [
            _blob_text(repo, t, p)
            for t, p in (
                (up.parents[0].tree, ancestor.path if ancestor else path),
                (target.tree, path),
                (up.tree, theirs.path),
            )
        ]
        resolved = _blob_text(repo, pick.tree, path)
        if texts[1] is None or texts[2] is None or resolved is None:
            continue
        merged = git_merge(texts[1], texts[0] or "", texts[2])
        out.extend(learn(path, merged, resolved, source or f"merged {str(pick.id)[:12]}"))
    return out


def write_records(
    repo: pygit2.Repository,
    records: Sequence[MemoryRecord],
    message: str,
    ref: str = DEFAULT_REF,
    *,
    update_ref: bool = True,
    when: int | None = None,
) -> str | None:
    """A new memory commit on top of ``ref`` with ``records`` added (same fingerprint: replaced); its sha.

    None when nothing changes. With ``update_ref`` the ref in ``repo`` moves (the caller pushes it
    to the fork, fast-forward only, like the decisions notes).
    """
    parent: pygit2.Commit | None = None
    try:
        found = repo.revparse_single(ref).peel(pygit2.Commit)
        parent = found if isinstance(found, pygit2.Commit) else None
    except (KeyError, ValueError):
        parent = None
    shards: dict[str, dict[str, bytes]] = {}
    for rec in records:
        body = (json.dumps(rec.as_json(), indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()
        shards.setdefault(rec.fingerprint[:2], {})[rec.fingerprint[2:] + ".json"] = body
    root = repo.TreeBuilder(parent.tree) if parent is not None else repo.TreeBuilder()
    changed = False
    for shard, files in sorted(shards.items()):
        existing = root.get(shard)
        sub_tree = repo.get(existing.id) if existing is not None else None
        sub = repo.TreeBuilder(sub_tree) if isinstance(sub_tree, pygit2.Tree) else repo.TreeBuilder()
        for name, body in sorted(files.items()):
            oid = repo.create_blob(body)
            current = sub.get(name)
            if current is None or current.id != oid:
                changed = True
                sub.insert(name, oid, pygit2.enums.FileMode.BLOB)
        root.insert(shard, sub.write(), pygit2.enums.FileMode.TREE)
    if not changed:
        return None
    tree = root.write()
    stamp = int(time.time()) if when is None else when
    sig = pygit2.Signature(BOT_NAME, BOT_EMAIL, stamp, 0)
    oid = repo.create_commit(
        ref if update_ref else None,
        sig,
        sig,
        message,
        tree,
        [parent.id] if parent is not None else [],
    )
    return str(oid)


# Where a pair's cache keeps its copy of the fork's memory ref.
CACHE_MEMORY_REF = "refs/forksync/fork-resolutions"


def fetch_memory(pair: Pair, ref: str = DEFAULT_REF) -> ResolutionMemory:
    """The fork's memory, fetched into the pair's cache (an empty memory when the fork has none yet)."""
    run_git(
        pair.repo.path,
        ["fetch", "--quiet", "--no-tags", "--", pair.fork.remote, f"+{ref}:{CACHE_MEMORY_REF}"],
        check=False,
    )
    return ResolutionMemory(pygit2.Repository(str(pair.repo.path)), CACHE_MEMORY_REF)


class MemoryIndex:
    """Records held in memory only (a benchmark's running memory, or records not yet written)."""

    def __init__(self, records: Iterable[MemoryRecord] = ()) -> None:
        self._by = {r.fingerprint: r for r in records}

    def add(self, records: Iterable[MemoryRecord]) -> None:
        for r in records:
            self._by[r.fingerprint] = r

    def __len__(self) -> int:
        return len(self._by)

    def lookup(self, hunk: Hunk) -> HunkResolution | None:
        record = self._by.get(hunk_fingerprint(hunk))
        if record is None:
            return None
        return HunkResolution(
            hunk.index,
            model.MEMORY,
            record.resolution,
            f"a maintainer resolved the same conflict this way before ({record.source})",
            hunk.digest(),
        )
