"""The ledger on other projects' real backport histories: a main branch as upstream, a release
branch of the same repository as the fork.

    python -m benchmarks.bench_backport_forms --pair MIRROR UPSTREAM_BRANCH FORK_BRANCH URL
        [--pair ...] [--json] [--misses N]

MIRROR is a bare clone (the ``fetch`` tool brings one); URL is the repository's GitHub address
(both sides are that one repository, so its PR numbers are one space). For each pair the base is
``git merge-base``; upstream is the first-parent line base..UPSTREAM_BRANCH (with the commits its
merges brought in mapped to those merges, as the ledger does), the fork every commit in
base..FORK_BRANCH. Three answers to "which upstream commits does the release branch carry":

- ``messages``: forksync's pure core (``compute_ledger``, messages only: no patch-id);
- ``patch-id``: what ``git cherry`` sees: a fork commit whose ``git patch-id --stable`` equals
  that of a non-merge upstream commit in range (a side commit counts for its merge); paths
  whose blobs the mirror lacks are left out of both sides' diffs (``absent_paths`` counts them);
- ``markers``: what a human reads in the messages, by independent regexes (not forksync's):
  ``Backport PR #N``, ``Backport of #N[, #K and #L]``, ``[Automated] cherry pick of #N`` (and
  the ``#K:`` picks joined onto it), ``[DOC: ]backport gh-N``, the branch names of backport
  tooling in merge subjects (``auto-backport-of-pr-N``, ``backport-N-K``,
  ``automated-cherry-pick-of-#N-#K``, ``...-cherry-pick-N``),
  ``(cherry picked from commit X)``, ``commit X upstream``, ``[ Upstream commit X ]``, and a
  subject that is an upstream subject with its ``(#N)`` (either side's leading ``[tags]`` may be
  missing; the fork's own ``(#M)`` may follow); since the second study half also patchback's
  ``[PR #N/<sha> backport]`` tag, ``This is a backport of PR #N`` and its
  ``patchback/backports/B/<sha>/pr-N`` branch, ``manual backport of #N``, ``backported from
  <sha>``, a branch-like tag (``[2.16]``, ``[Backport 2.x]``) before upstream's subject without
  its ``(#N)``, and a Gerrit ``Change-Id`` equal to an upstream commit's (read by its own ``git
  log`` of upstream's messages).

It prints each count, the overlaps, and the upstream commits one answer has and the other not,
with the fork commit that names them (``--misses N`` per list), to be read by hand.
``--separate`` reads the fork as another repository's (``fork_url`` differs), where a fork's
``#N`` may be its own PR: how much the PR forms still read when their subject must read as
upstream's. ``FORKSYNC_ROOT=<checkout>`` runs another checkout's engine (for before/after).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.environ.get("FORKSYNC_ROOT") or str(Path(__file__).resolve().parent.parent))

from workers.engine import history
from workers.engine.decisions import Decisions
from workers.engine.git import Repository
from workers.engine.history import Commit, merged_side_commits, read_range
from workers.engine.ledger.compute import compute_ledger
from workers.engine.recognise.index import UpstreamIndex
from workers.engine.recognise.rules import Rules

_SHA = r"[0-9a-f]{7,40}"
# What a human reads as "this carries upstream PR N" (independent of forksync's recognisers).
_MARKER_PRS = (
    re.compile(
        r"(?im)^\s*(?:\[[^\]\n]*\]\s*)*(?:[A-Z]+:\s*)?backport(?:ed)?\s+(?:of\s+)?(?:PR\s+)?"
        r"((?:(?:#|gh-)\d+[\s,&]*(?:and\s+)?)+)"
    ),
    re.compile(r"(?im)^\s*(?:automated\s+)?cherry[\s-]?pick\s+(?:of\s+)?((?:#\d+[\s,&]*(?:and\s+)?)+)"),
    re.compile(r"(?im)^\s*(#\d+):\s"),  # cherry_pick_pull.sh's further picks, one a line (below)
    re.compile(r"(?i)/(?:auto-)?backport-(?:of-)?(?:pr-)?((?:\d+-?)+)(?:-on-\S+)?$", re.M),
    re.compile(r"(?i)automated-cherry-pick-of-((?:#\d+-?)+)"),
    re.compile(r"(?i)-cherry-pick-((?:\d+-?)+)$", re.M),
    # widened on the second study half (aiohttp, pytest, job-scheduler): patchback's title tag
    # and body, a manual backport
    re.compile(r"(?i)^\[PR #(\d+)/[0-9a-f]{7,40} backport\]"),
    re.compile(r"(?im)^\W*this is a backport of PR (#\d+)"),
    re.compile(r"(?im)^\s*(?:\[[^\]\n]*\]\s*)*manual(?:ly)?\s+backport(?:ed)?\s+(?:of\s+)?(#\d+)"),
)
_K8S_JOINED = re.compile(r"(?im)^automated cherry pick of #\d+:.*$")
_MARKER_SHAS = (
    re.compile(rf"(?i)\(cherry picked from commit ({_SHA})\)"),
    re.compile(rf"(?im)^commit ({_SHA}) upstream\b"),
    re.compile(rf"(?im)^\[\s*upstream commit ({_SHA})\s*\]"),
    re.compile(rf"(?i)^\[PR #\d+/({_SHA}) backport\]"),
    re.compile(r"(?i)/patchback/backports/[^/\s]+/([0-9a-f]{40})/pr-\d+"),
    re.compile(rf"(?i)\bbackported from (?:commit )?({_SHA})\b"),
)
# A leading tag naming a release branch or saying "backport" ("[stable-2.16]", "[2.19]", "[8.3.x]",
# "[Backport 2.x]", "[backport/2.16]"): the subject after it, without the fork's (#M), may be an
# upstream subject without upstream's (#N).
_BRANCHY_TAG = re.compile(r"(?i)^\[(?:[^\]\n]*\d\.(?:\d|x)[^\]\n]*|[^\]\n]*back-?port[^\]\n]*)\]\s*")
_CHANGE_ID = re.compile(r"(?m)^Change-Id:\s*(I[0-9a-f]{40})\s*$")
_TAGS = re.compile(r"^(?:\s*\[[^\]\n]*\]\s*)+")
_TRAILING = re.compile(r"\s*\(#(\d+)\)\s*$")


def git(mirror: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", "-C", str(mirror), *args], input=data, capture_output=True, check=True
    ).stdout


def absent_paths(mirror: Path, *rev_args: list[str]) -> list[str]:
    """Paths whose blobs the mirror lacks (``fetch`` leaves a snapshot's largest files out):
    ``git log -p`` cannot diff them, so both sides' patch-ids are taken without them."""
    paths: dict[str, str] = {}
    for args in rev_args:
        raw = git(mirror, "log", "--raw", "--no-abbrev", "--no-merges", "--no-renames", "--format=", *args)
        for line in raw.decode("utf-8", "replace").splitlines():
            meta, _, path = line.partition("\t")
            fields = meta.split()
            if len(fields) >= 4:
                for blob in fields[2:4]:
                    if blob.strip("0"):
                        paths.setdefault(blob, path)
    if not paths:
        return []
    out = git(mirror, "cat-file", "--batch-check", data="".join(f"{b}\n" for b in paths).encode()).decode()
    return sorted({paths[line.split()[0]] for line in out.splitlines() if line.endswith(" missing")})


def patch_ids(mirror: Path, rev_args: list[str], absent: list[str]) -> dict[str, str]:
    """commit → ``git patch-id --stable`` for the non-merge commits ``rev_args`` selects."""
    log = git(
        mirror,
        "log",
        "-p",
        "--no-merges",
        "--no-color",
        "--no-renames",
        "--format=commit %H",
        *rev_args,
        "--",
        ".",
        *(f":(exclude,literal){p}" for p in absent),
    )
    out = git(mirror, "patch-id", "--stable", data=log).decode()
    return {commit: pid for pid, commit in (line.split() for line in out.splitlines())}


def files_of(mirror: Path, sha: str) -> set[str]:
    """The paths a commit changes against its first parent (a merge: what it brought in)."""
    out = git(mirror, "diff-tree", "-r", "--no-commit-id", "--name-only", "--no-renames", f"{sha}^1", sha)
    return set(out.decode("utf-8", "replace").splitlines())


def _names(paths: set[str]) -> set[str]:
    return {path.rsplit("/", 1)[-1] for path in paths}


def markers(
    commit: Commit,
    index: UpstreamIndex,
    numberless: dict[str, list[str]] | None = None,
    upstream_change_ids: dict[str, str] | None = None,
) -> set[str]:
    """The upstream commits a human reads in ``commit``'s message (see the module docstring).
    ``numberless``: upstream subjects without their tags and ``(#N)`` → commits;
    ``upstream_change_ids``: Gerrit ``Change-Id`` → the upstream commit (on the line) with it."""
    message = commit.message or commit.subject
    found: set[str | None] = set()
    for cid in _CHANGE_ID.findall(message):
        found.add((upstream_change_ids or {}).get(cid))
    if numberless and _BRANCHY_TAG.match(commit.subject):
        words = _TRAILING.sub("", _TAGS.sub("", commit.subject.strip())).strip().casefold()
        if not _TRAILING.search(words) and len(numberless.get(words, [])) == 1:
            found.add(numberless[words][0])
    for i, pattern in enumerate(_MARKER_PRS):
        if i == 2 and not _K8S_JOINED.search(message):
            continue
        for m in pattern.finditer(message):
            found.update(index.pr(int(n)) for n in re.findall(r"\d+", m.group(1)))
    for m in _K8S_JOINED.finditer(message):
        found.update(index.pr(int(n)) for n in re.findall(r"#(\d+):", m.group(0)))
    for pattern in _MARKER_SHAS:
        found.update(index.sha(s) for s in pattern.findall(message))
    subject = commit.subject.strip()
    for text in (subject, _TRAILING.sub("", subject)):
        m = _TRAILING.search(text)
        if m is not None:
            sha = index.pr(int(m.group(1)))
            if sha is None:
                continue
            theirs = index.subjects.get(sha, "").strip()
            if {text.strip(), _TAGS.sub("", text).strip()} & {theirs, _TAGS.sub("", theirs)}:
                found.add(sha)
    return {s for s in found if s}


def measure(
    mirror: Path, upstream_branch: str, fork_branch: str, url: str, misses: int = 0, separate: bool = False
) -> dict[str, Any]:
    repo = Repository(mirror)
    up_tip = git(mirror, "rev-parse", f"refs/heads/{upstream_branch}").decode().strip()
    fork_tip = git(mirror, "rev-parse", f"refs/heads/{fork_branch}").decode().strip()
    base = git(mirror, "merge-base", up_tip, fork_tip).decode().strip()
    upstream = read_range(repo, up_tip, [base], first_parent=True, messages=False, files=False)
    fork = read_range(repo, fork_tip, [base], first_parent=False, messages=True, files=False)
    side = merged_side_commits(repo, up_tip, [base], upstream)
    # ``separate``: read the fork as another repository's (its #N might be its own PRs).
    rules = Rules.build(upstream_url=url, fork_url=f"{url}-fork" if separate else url)
    # Gerrit Change-Ids, as build_ledger reads them (an engine from before them has no reader).
    extra: dict[str, Any] = {}
    if hasattr(history, "change_ids") and any("Change-Id:" in c.message for c in fork):
        extra["change_ids"] = history.change_ids(repo, up_tip, [base])
    started = time.perf_counter()
    ledger = compute_ledger(
        upstream,
        fork,
        Decisions({}),
        rules,
        base=base,
        base_time=0,
        upstream_tip=up_tip,
        fork_tip=fork_tip,
        patch_id=lambda shas: {},
        side=side,
        **extra,
    )
    seconds = time.perf_counter() - started
    index = UpstreamIndex(upstream, side)
    by_messages: dict[str, str] = {}  # upstream sha → the fork commit that names it
    how: dict[str, str] = {}
    for p in ledger.picks:
        for u, found_by in zip(p.upstream, p.found_by or (p.recogniser,) * len(p.upstream), strict=False):
            by_messages.setdefault(u, p.sha)
            how.setdefault(u, found_by)
    absent = absent_paths(mirror, [up_tip, f"^{base}"], [fork_tip, f"^{base}"])
    up_ids = patch_ids(mirror, [up_tip, f"^{base}"], absent)
    fork_ids = patch_ids(mirror, [fork_tip, f"^{base}"], absent)
    on_line = {c.sha for c in upstream}
    owner = {pid: side.get(sha, sha) for sha, pid in up_ids.items() if side.get(sha, sha) in on_line}
    by_patch: dict[str, str] = {}
    for sha, pid in fork_ids.items():
        if pid in owner:
            by_patch.setdefault(owner[pid], sha)
    up_change_ids: dict[str, str] = {}  # the markers' own reading: every upstream commit's trailer block
    log = git(mirror, "log", "--format=%H%x00%B%x00", up_tip, f"^{base}").decode("utf-8", "replace")
    fields = log.split("\x00")
    for sha, body in zip(fields[0::2], fields[1::2], strict=False):
        for cid in _CHANGE_ID.findall(body.strip().rsplit("\n\n", 1)[-1]):
            owner = side.get(sha.strip(), sha.strip())
            if owner in index.position:
                up_change_ids.setdefault(cid, owner)
    numberless: dict[str, list[str]] = {}
    for c in upstream:
        words = _TRAILING.sub("", _TAGS.sub("", c.subject.strip())).strip().casefold()
        numberless.setdefault(words, []).append(c.sha)
    by_markers: dict[str, str] = {}
    for c in fork:
        for u in markers(c, index, numberless, up_change_ids):
            by_markers.setdefault(u, c.sha)
    subjects = {c.sha: c.subject for c in (*upstream, *fork)}

    def listing(shas: set[str], named_by: dict[str, str]) -> list[dict[str, str]]:
        rows = sorted(shas, key=lambda s: index.position.get(s, 0))[:misses]
        return [
            {
                "upstream": s[:10],
                "upstream_subject": subjects.get(s, "")[:100],
                "fork": named_by[s][:10],
                "fork_subject": subjects.get(named_by[s], "")[:100],
            }
            for s in rows
        ]

    m, p, k = set(by_messages), set(by_patch), set(by_markers)
    # A message's pick that patch-id does not confirm (a conflicted backport, a partial one, or a
    # wrong reading): corroborated when the fork commit changes a file of the same name as one the
    # upstream commit changes (by name: NumPy's main moved numpy/core to numpy/_core).
    apart = {u for u in m - p if not _names(files_of(mirror, u)) & _names(files_of(mirror, by_messages[u]))}
    return {
        "pair": f"{mirror.parent.name}: {upstream_branch} -> {fork_branch}",
        "base": base[:12],
        "upstream_commits": len(upstream),
        "fork_commits": len(fork),
        "fork_merges": sum(1 for c in fork if c.is_merge),
        "absent_paths": len(absent),
        "messages": len(m),
        "patch_id": len(p),
        "markers": len(k),
        "messages_and_patch_id": len(m & p),
        "union": len(m | p),
        "patch_id_only": len(p - m),
        "markers_not_in_messages": len(k - m),
        "messages_not_in_markers": len(m - k),
        "messages_not_in_patch_id": len(m - p),
        "messages_not_in_patch_id_no_shared_file": len(apart),
        "recognisers": dict(
            sorted({h: sum(1 for v in how.values() if v == h) for h in set(how.values())}.items())
        ),
        "seconds": round(seconds, 3),
        "lists": {
            "markers_not_in_messages": listing(k - m, by_markers),
            "messages_not_in_markers": listing(m - k, by_messages),
            "patch_id_only": listing(p - m, by_patch),
            "messages_not_in_patch_id_no_shared_file": listing(apart, by_messages),
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--pair",
        nargs=4,
        action="append",
        required=True,
        metavar=("MIRROR", "UPSTREAM_BRANCH", "FORK_BRANCH", "URL"),
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--misses", type=int, default=0, help="list N upstream commits per difference")
    parser.add_argument(
        "--separate", action="store_true", help="read the fork as another repository (PR numbers not shared)"
    )
    args = parser.parse_args(argv)
    results = [measure(Path(m), u, f, url, args.misses, args.separate) for m, u, f, url in args.pair]
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
        return 0
    for r in results:
        print(
            f"{r['pair']} (base {r['base']}): {r['upstream_commits']} upstream, {r['fork_commits']} fork "
            f"commits ({r['fork_merges']} merges); carried by messages {r['messages']}, patch-id "
            f"{r['patch_id']}, markers {r['markers']}; both {r['messages_and_patch_id']}, union "
            f"{r['union']}; patch-id only {r['patch_id_only']}; markers not in messages "
            f"{r['markers_not_in_messages']}; messages not in markers {r['messages_not_in_markers']}; "
            f"messages not in patch-id {r['messages_not_in_patch_id']} (sharing no file name with upstream's "
            f"{r['messages_not_in_patch_id_no_shared_file']}) "
            f"({r['seconds']} s) {r['recognisers']}"
        )
        for name, rows in r["lists"].items():
            for row in rows:
                print(
                    f"  {name}: {row['upstream']} {row['upstream_subject']!r} <- {row['fork']} "
                    f"{row['fork_subject']!r}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
