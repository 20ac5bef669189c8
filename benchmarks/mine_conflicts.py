"""Mine real backport conflicts from a repository's history into a conflict set (bench_conflicts' layout).

    python -m benchmarks.mine_conflicts REPO --out SETDIR --name OWNER/REPO --license SPDX
        [--branches REGEX] [--refs PREFIX ...] [--max-files N] [--time-limit S] [--first-case N]

What it is for: a figure on conflicts the resolution rules were never shaped on. The
developers' set (../shared/conflict-bench: pytest, aiohttp, redis) is where rules are studied;
this builds the same kind of set from any other project, so the pipeline can be measured on
projects nobody looked at (``python -m benchmarks.bench_conflicts SETDIR``).

Method (the developers' set's, so the figures compare):

1. List every non-merge commit B on the maintenance branches (``--branches``, a regex over
   ``refs/heads`` names; ``--refs`` adds other refs by prefix, e.g. ``refs/pull``) whose message
   names its original O: ``(cherry picked from commit O)`` (``git cherry-pick -x``) or
   ``Backport of O``. A pick of a pick names a chain (each ``-x`` appends a trailer): the last
   one is the direct original when its own message names the others. O may be a merge (a PR merge picked with ``-m 1``): its base is its first
   parent.
2. Re-do the pick in memory, as forksync does (libgit2, rename detection on):
   ``merge_trees(O^, B^, O)``. Keep it when it conflicts; the truth for each conflicted file is
   B's version, what the maintainers committed.
3. Drop a pick (and count why) when: B names several originals that are not one chain of picks; O is not in the repository;
   a conflict is not a content conflict on one path (add/add, modify/delete, rename); B no
   longer has the file; a version is binary or over 200 KB; B committed conflict markers; B
   changed files outside the conflicted set that O did not change (extra edits: no file-level
   truth); or every file's (base, ours, theirs) repeats an earlier case (one fix on several
   branches).
4. Candidates are visited in a fixed pseudo-random order (sha1 of B's id) until ``--max-files``
   conflicted files are written or ``--time-limit`` seconds pass, so a cap samples the whole
   history rather than its newest end, and a rerun writes the same set.

Writes only SETDIR (never the repository): ``case-NNN/`` with ``<flat path>.{base,ours,theirs,
expected,conflict.diff3}`` and ``meta.json``, plus ``mined.json`` (what was visited, and the drop
counts). Nothing here shapes a rule: a mined set is for measuring only.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import re
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pygit2

from workers.engine.resolve.merge3 import git_merge

TRAILERS = (
    re.compile(r"\(cherry picked from commit ([0-9a-f]{7,40})\)"),
    re.compile(r"\b[Bb]ackport of (?:commit )?([0-9a-f]{7,40})\b"),
)
MAX_BYTES = 200 * 1024


@dataclass(frozen=True)
class Backport:
    """A commit B on a maintenance branch and the originals its message names."""

    sha: str
    branch: str
    originals: tuple[str, ...]


@dataclass
class MinedFile:
    """One conflicted file of a re-done pick: blob ids of the three sides and of B's version."""

    path: str
    base: pygit2.Oid
    ours: pygit2.Oid
    theirs: pygit2.Oid
    expected: pygit2.Oid


def flat(path: str) -> str:
    """'a/b/c.py' -> 'a__b__c.py'; a leading dot gets a '_' so that no stored file is hidden."""
    f = path.replace("/", "__")
    return "_" + f if f.startswith(".") else f


def originals_of(message: str) -> tuple[str, ...]:
    """The original commits a backport's message names (both trailer forms), deduplicated, in message order."""
    found = sorted((m.start(), m.group(1)) for rx in TRAILERS for m in rx.finditer(message))
    return tuple(dict.fromkeys(sha for _, sha in found))


def direct_original(repo: pygit2.Repository, originals: tuple[str, ...]) -> str | None:
    """The commit a backport was picked from: its only original, or the last of a chain of picks.

    ``git cherry-pick -x`` of a commit that was itself picked keeps the old trailer and appends a
    new one, so a pick of a pick names several commits; the last is the direct source when its
    own message names all the others (systemd-stable picks from newer stable branches this way).
    Anything else naming several commits (a squash of several fixes) has no single original.
    """
    if len(originals) == 1:
        return originals[0]
    try:
        last = repo.revparse_single(originals[-1]).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return None
    named = set(originals_of(last.message))
    return originals[-1] if all(o in named for o in originals[:-1]) else None


def list_backports(gitdir: str, branches: str, refs: list[str]) -> list[Backport]:
    """Every non-merge commit with a backport trailer on the chosen refs (first ref that reaches it)."""
    names = subprocess.run(
        ["git", "-C", gitdir, "for-each-ref", "--format=%(refname)", "refs/heads", *refs],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    chosen = [
        n
        for n in names
        if (n.startswith("refs/heads/") and re.fullmatch(branches, n[len("refs/heads/") :]))
        or (not n.startswith("refs/heads/") and refs)
    ]
    seen: dict[str, Backport] = {}
    if not chosen:
        return []
    out = subprocess.run(
        [
            "git",
            "-C",
            gitdir,
            "log",
            "--no-merges",
            "--source",
            "-E",
            "--grep=cherry picked from commit|[Bb]ackport of",
            "--format=%H%x00%S%x00%B%x01",
            *chosen,
        ],
        check=True,
        capture_output=True,
    ).stdout.decode("utf-8", "replace")
    for rec in out.split("\x01"):
        sha, _, rest = rec.strip("\n").partition("\x00")
        ref, _, body = rest.partition("\x00")
        found = originals_of(body)
        if sha and found and sha not in seen:
            seen[sha] = Backport(sha, ref.removeprefix("refs/heads/"), found)
    return sorted(seen.values(), key=lambda b: hashlib.sha1(b.sha.encode()).hexdigest())


def _entry(tree: pygit2.Tree, path: str) -> pygit2.Oid | None:
    try:
        return tree[path].id
    except KeyError:
        return None


def _changed(repo: pygit2.Repository, a: pygit2.Commit, b: pygit2.Commit) -> set[str]:
    out = set()
    for d in repo.diff(a, b).deltas:
        out.add(d.old_file.path)
        out.add(d.new_file.path)
    return out


def _has_markers(data: bytes) -> bool:
    return re.search(rb"^<{7} ", data, re.M) is not None and re.search(rb"^>{7} ", data, re.M) is not None


def replay(repo: pygit2.Repository, bp: Backport) -> tuple[str, list[MinedFile]]:
    """Re-do one backport's pick in memory: ('conflict', files) or (why it is dropped, [])."""
    source = direct_original(repo, bp.originals)
    if source is None:
        return "several originals", []
    try:
        b = repo.revparse_single(bp.sha).peel(pygit2.Commit)
        o = repo.revparse_single(source).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return "original missing", []
    if len(b.parents) != 1 or not o.parents or o.id == b.id:
        return "original missing", []
    bp_parent, o_parent = b.parents[0], o.parents[0]
    try:
        index = repo.merge_trees(o_parent.tree, bp_parent.tree, o.tree)
    except pygit2.GitError:
        return "original missing", []
    if not index.conflicts:
        return "clean", []
    files = []
    for anc, ours, theirs in index.conflicts:
        if anc is None or ours is None or theirs is None or not (anc.path == ours.path == theirs.path):
            return "non-content conflict", []
        expected = _entry(b.tree, ours.path)
        if expected is None or not isinstance(repo[expected], pygit2.Blob):
            return "file gone in the backport", []
        blobs = [repo[i].data for i in (anc.id, ours.id, theirs.id, expected)]
        if any(b"\0" in d[:8000] for d in blobs):
            return "binary", []
        if any(len(d) > MAX_BYTES for d in blobs):
            return "over 200 KB", []
        if _has_markers(blobs[3]) and not _has_markers(blobs[1]):
            return "markers committed", []
        files.append(MinedFile(ours.path, anc.id, ours.id, theirs.id, expected))
    conflicted = {f.path for f in files}
    if _changed(repo, bp_parent, b) - conflicted - _changed(repo, o_parent, o):
        return "extra edits", []
    return "conflict", files


def _diff3(paths: list[Path]) -> tuple[bytes, int]:
    proc = subprocess.run(
        ["git", "merge-file", "-p", "--diff3", "-L", "ours", "-L", "base", "-L", "theirs", *map(str, paths)],
        capture_output=True,
        check=False,
    )
    return proc.stdout, proc.returncode


def keeps_clean_lines(ours: str, base: str, theirs: str, expected: str) -> bool:
    """The maintainers only rewrote the conflict blocks: their file is git's clean merge (zdiff3, as the
    pipeline sees it) with each block replaced by something, every clean line kept in order.

    Where this is false the human also edited outside the blocks (adapting the fix to the branch),
    and no per-hunk answer can equal their file.
    """
    segments = [[line.rstrip() for line in seg] for seg in git_merge(ours, base, theirs).texts]
    want = [line.rstrip() for line in expected.splitlines()]
    while want and not want[-1]:
        want.pop()
    for seg in segments:
        while seg and not seg[-1] and seg is segments[-1]:
            seg.pop()
    first, last = segments[0], segments[-1]
    if want[: len(first)] != first:
        return False
    end = len(want) - len(last)
    if len(segments) > 1 and (end < len(first) or want[end:] != last):
        return False
    pos = len(first)
    for seg in segments[1:-1]:
        if not seg:
            continue
        found = next((i for i in range(pos, end - len(seg) + 1) if want[i : i + len(seg)] == seg), -1)
        if found < 0:
            return False
        pos = found + len(seg)
    return True


def write_case(
    repo: pygit2.Repository,
    setdir: Path,
    number: int,
    bp: Backport,
    files: list[MinedFile],
    name: str,
    licence: str,
) -> None:
    """One case directory in the conflict-bench layout."""
    b = repo.revparse_single(bp.sha).peel(pygit2.Commit)
    o = repo.revparse_single(direct_original(repo, bp.originals) or "").peel(pygit2.Commit)
    case = f"case-{number:03d}"
    cdir = setdir / case
    cdir.mkdir(parents=True, exist_ok=True)
    fmeta = []
    for f in files:
        names = {role: f"{flat(f.path)}.{role}" for role in ("base", "ours", "theirs", "expected")}
        for role, oid in (("base", f.base), ("ours", f.ours), ("theirs", f.theirs), ("expected", f.expected)):
            (cdir / names[role]).write_bytes(repo[oid].data)
        raw, nconf = _diff3([cdir / names[k] for k in ("ours", "base", "theirs")])
        names["conflict_diff3"] = f"{flat(f.path)}.conflict.diff3"
        (cdir / names["conflict_diff3"]).write_bytes(raw)
        text = [
            repo[oid].data.decode("utf-8", "surrogateescape")
            for oid in (f.ours, f.base, f.theirs, f.expected)
        ]
        fmeta.append(
            {
                "path": f.path,
                "files": names,
                "git_merge_file_conflicts": nconf,
                "expected_keeps_all_non_conflicting_lines": keeps_clean_lines(*text),
                "blob_ids": {
                    "base": str(f.base),
                    "ours": str(f.ours),
                    "theirs": str(f.theirs),
                    "expected": str(f.expected),
                },
            }
        )

    def day(c: pygit2.Commit) -> str:
        return dt.datetime.fromtimestamp(c.commit_time, dt.UTC).strftime("%Y-%m-%d")

    meta = {
        "case": case,
        "repo": name,
        "repo_url": f"https://github.com/{name}",
        "license": licence,
        "branch": bp.branch,
        "original_sha": str(o.id),
        "originals_named": list(bp.originals),
        "original_parent_sha": str(o.parents[0].id),
        "original_subject": o.message.split("\n", 1)[0],
        "original_date": day(o),
        "original_is_merge_commit_picked_with_m1": len(o.parents) > 1,
        "backport_sha": str(b.id),
        "backport_parent_sha": str(b.parents[0].id),
        "backport_subject": b.message.split("\n", 1)[0],
        "backport_date": day(b),
        "conflicted_paths": [f.path for f in files],
        "roles": {
            "base": "O^ (parent of original)",
            "ours": "B^ (maintenance branch before backport)",
            "theirs": "O (original commit)",
            "expected": "B (human-resolved backport)",
        },
        "files": fmeta,
    }
    (cdir / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def triple_key(files: list[MinedFile]) -> str:
    """Identity of a conflict: the same fix backported to two branches with identical inputs repeats it."""
    h = hashlib.sha1()
    for f in sorted(files, key=lambda f: f.path):
        h.update(f"{f.path}{f.base}{f.ours}{f.theirs}".encode())
    return h.hexdigest()


def mine(
    gitdir: str,
    setdir: Path,
    *,
    name: str,
    licence: str,
    branches: str,
    refs: list[str],
    max_files: int,
    time_limit: float,
    first_case: int = 1,
) -> dict[str, object]:
    """Visit backports in the fixed order until a cap; write each conflicting one as a case. Returns the summary."""
    start = time.monotonic()
    repo = pygit2.Repository(gitdir)
    backports = list_backports(gitdir, branches, refs)
    listed = time.monotonic() - start
    stats: Counter[str] = Counter()
    seen: set[str] = set()
    number, written_files, visited = first_case, 0, 0
    for bp in backports:
        if written_files >= max_files or time.monotonic() - start > time_limit:
            break
        visited += 1
        status, files = replay(repo, bp)
        if status == "conflict":
            key = triple_key(files)
            if key in seen:
                status = "duplicate triple"
            else:
                seen.add(key)
                write_case(repo, setdir, number, bp, files, name, licence)
                number += 1
                written_files += len(files)
        stats[status] += 1
    summary: dict[str, object] = {
        "repo": name,
        "license": licence,
        "branches": branches,
        "refs": refs,
        "backports_listed": len(backports),
        "visited": visited,
        "cases": number - first_case,
        "conflicted_files": written_files,
        "by_status": dict(sorted(stats.items())),
        "list_seconds": round(listed, 1),
        "seconds": round(time.monotonic() - start, 1),
        "order": "sha1 of the backport's id",
    }
    setdir.mkdir(parents=True, exist_ok=True)
    (setdir / "mined.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", help="a git directory (a bare mirror is fine; nothing is written into it)")
    parser.add_argument("--out", required=True, help="the set's directory (created)")
    parser.add_argument("--name", required=True, help="OWNER/REPO, recorded in each case")
    parser.add_argument("--license", default="see the project", help="the project's licence (SPDX), recorded")
    parser.add_argument(
        "--branches",
        default=r"(?!main$|master$).*",
        help="regex over refs/heads names (default: every branch but main/master)",
    )
    parser.add_argument(
        "--refs",
        action="append",
        default=[],
        help="extra refs by prefix (for-each-ref patterns), e.g. refs/pull",
    )
    parser.add_argument("--max-files", type=int, default=100, help="stop after this many conflicted files")
    parser.add_argument("--time-limit", type=float, default=600.0, help="stop after this many seconds")
    parser.add_argument("--first-case", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        pygit2.Repository(args.repo)
    except pygit2.GitError as exc:
        print(f"mine_conflicts: error: {args.repo} is not a git repository ({exc})", file=sys.stderr)
        return 2
    summary = mine(
        args.repo,
        Path(args.out),
        name=args.name,
        licence=args.license,
        branches=args.branches,
        refs=args.refs,
        max_files=args.max_files,
        time_limit=args.time_limit,
        first_case=args.first_case,
    )
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
