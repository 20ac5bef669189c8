"""Benchmark: replay a fork's own resolved picks and score forksync's pipeline against what was committed.

    python -m benchmarks.bench_replay_resolved REPO [--branch main] [--subject REGEX] [--limit N] [--json OUT]

For every first-parent commit P of BRANCH whose subject matches REGEX (default: fbtriton's
``[RESOLVED]`` tag) and whose message names its upstream commit U with a trailer (the default
recognisers plus ``Reactor Cherry-pick Revision:``), the conflict is recomputed in memory —
``merge_trees(U^, P^, U)`` with rename detection — and each conflicted file is run through the
deterministic pipeline (no memory, no agent). Ground truth is P's version of the file.
Reported per conflicted file: exact (trailing whitespace and final blank lines ignored),
declined, wrong and proposed; and the trivial baselines (``git merge-file --ours/--theirs/--union``)
with their per-file oracle. Picks whose U is missing from REPO are skipped and counted.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pygit2

from benchmarks.bench_conflicts import norm_exact
from core.config import DEFAULT_TRAILER_PATTERNS
from workers.engine.resolve.pipeline import Conflict, resolve_text

PATTERNS = (*DEFAULT_TRAILER_PATTERNS, r"(?im)^Reactor Cherry-pick Revision:\s*(?P<sha>[0-9a-f]{7,40})\b")


def _text(repo: pygit2.Repository, tree: pygit2.Tree, path: str | None) -> str | None:
    if path is None:
        return None
    try:
        obj = tree[path]
    except KeyError:
        return None
    blob = repo.get(obj.id)
    if not isinstance(blob, pygit2.Blob) or blob.is_binary:
        return None
    try:
        return blob.data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _trivial(ours: str, base: str, theirs: str, how: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        names = []
        for role, text in (("o", ours), ("b", base), ("t", theirs)):
            p = Path(tmp) / role
            p.write_text(text)
            names.append(str(p))
        proc = subprocess.run(
            ["git", "merge-file", "-p", f"--{how}", *names], capture_output=True, check=False
        )
    return proc.stdout.decode("utf-8", "replace")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--branch", default="main")
    parser.add_argument("--subject", default=r"\[RESOLVED\]")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    repo = pygit2.Repository(args.repo)
    subject = re.compile(args.subject)
    patterns = [re.compile(p) for p in PATTERNS]
    tip = repo.revparse_single(args.branch).peel(pygit2.Commit)
    picks: list[tuple[pygit2.Commit, str]] = []
    commit = tip
    while isinstance(commit, pygit2.Commit):
        if subject.search(commit.message.split("\n", 1)[0]):
            for p in patterns:
                m = p.search(commit.message)
                if m:
                    picks.append((commit, m.group("sha")))
                    break
        commit = commit.parents[0] if commit.parents else None
    picks.reverse()
    if args.limit:
        picks = picks[: args.limit]
    start = time.perf_counter()
    rows = []
    missing = clean = 0
    for pick, sha in picks:
        try:
            up = repo.revparse_single(sha).peel(pygit2.Commit)
        except (KeyError, ValueError):
            missing += 1
            continue
        assert isinstance(up, pygit2.Commit)
        if not up.parents or not pick.parents:
            continue
        try:
            index = repo.merge_trees(up.parents[0].tree, pick.parents[0].tree, up.tree)
        except pygit2.GitError:
            missing += 1  # objects absent from the mirror
            continue
        if index.conflicts is None:
            clean += 1
            continue
        for a, o, t in index.conflicts:
            path = (o or t or a).path  # type: ignore[union-attr]
            base = _text(repo, up.parents[0].tree, a.path if a else None)
            ours = _text(repo, pick.parents[0].tree, o.path if o else None)
            theirs = _text(repo, up.tree, t.path if t else None)
            want = _text(repo, pick.tree, path)
            outcome, _ = resolve_text(Conflict(path, base, ours, theirs))
            proposed = outcome.entry is not None
            got = (
                outcome.entry.content.decode("utf-8", "replace")
                if outcome.entry and outcome.entry.content is not None
                else None
            )
            if want is None:
                exact = proposed and got is None
            else:
                exact = proposed and got is not None and norm_exact(got) == norm_exact(want)
            base_rows = {}
            if ours is not None and theirs is not None and want is not None:
                for how in ("ours", "theirs", "union"):
                    base_rows[how] = norm_exact(_trivial(ours, base or "", theirs, how)) == norm_exact(want)
                base_rows["oracle"] = (
                    any(base_rows.values())
                    or norm_exact(ours) == norm_exact(want)
                    or norm_exact(theirs) == norm_exact(want)
                )
            else:
                base_rows = {"ours": want is None and ours is None, "theirs": False, "union": False}
                base_rows["oracle"] = base_rows["ours"]
            rows.append(
                {
                    "pick": str(pick.id),
                    "upstream": str(up.id),
                    "path": path,
                    "proposed": proposed,
                    "exact": exact,
                    "strategy": outcome.entry.strategy if outcome.entry else "",
                    **{f"baseline_{k}": v for k, v in base_rows.items()},
                }
            )
    n = len(rows)

    def pct(k: int) -> str:
        return f"{k} ({100 * k / max(n, 1):.1f}%)"

    print(f"| {n} conflicted files in {len(picks) - missing - clean} conflicting picks | files |")
    print("|---|---|")
    print(f"| forksync: exact | {pct(sum(r['exact'] for r in rows))} |")
    print(f"| forksync: declined | {pct(sum(not r['proposed'] for r in rows))} |")
    print(
        f"| forksync: **wrong and proposed** | {pct(sum(r['proposed'] and not r['exact'] for r in rows))} |"
    )
    for how in ("ours", "theirs", "union", "oracle"):
        print(f"| baseline {how}: exact | {pct(sum(r['baseline_' + how] for r in rows))} |")
    print(
        f"\n{len(picks)} picks matched; {missing} upstream commits missing; {clean} replay cleanly now; "
        f"{time.perf_counter() - start:.1f}s"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
