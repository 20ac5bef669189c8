"""The clean-merge proof beside git: every merge a plan asks git for, decided again by the proof.

A plan is made with every trial pick that needs a merge sent to ``git merge-tree`` (the proof
off), recording each merge (ancestor, target and commit trees) with git's outcome. Then each is
decided again without git, two ways:

* **picks**: a fresh target at the same tree, proof on, picks the same commit; when it settles
  without git, its tree must be git's merged tree (and git must have found no conflict);
* **files**: every path changed differently on both sides, all three regular files, goes
  through :func:`workers.engine.cleanmerge.merge_clean` alone (no pick-level rules); when it
  answers, the bytes must be git's blob at that path in git's clean result, and the path must
  not be among git's conflicts.

A disagreement is a bug, never a figure. Finally the plan is made again with the proof on
(cold caches): its JSON must be byte-identical, and the git merge runs of both are reported.

    python -m benchmarks.proof_check --replay /tmp/replay    # a replay_triton work directory
    python -m benchmarks.proof_check --synthetic             # bench_plan's pair, 1,000 pending
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pygit2

import workers.engine.planning as planning
from benchmarks.gen_bundling import make_bundling_pair
from benchmarks.replay_history import TRITON, drop_caches
from workers.engine.changes import CommitChanges
from workers.engine.cleanmerge import merge_clean
from workers.engine.merges import REGULAR_MODES, GitMerger, MergeCache, MergeOutcome
from workers.engine.pair import open_configured
from workers.engine.pick import PickTarget


@dataclass
class Recorded:
    """The merges git made during one plan, with their outcomes (ancestor, ours, theirs → outcome)."""

    merges: dict[tuple[pygit2.Oid, pygit2.Oid, pygit2.Oid], MergeOutcome] = field(default_factory=dict)
    runs: int = 0
    proved_files: int = 0
    proved_picks: int = 0


def _merger_class(record: Recorded, prove: bool) -> type[GitMerger]:
    class Recording(GitMerger):
        """planning's GitMerger, with the proof on or off, keeping every outcome git gives."""

        def __init__(self, repo: pygit2.Repository, cache: MergeCache | None = None, **_: Any) -> None:
            super().__init__(repo, cache, prove=prove)

        def merge(self, base: pygit2.Oid, ours: pygit2.Oid, theirs: pygit2.Oid) -> MergeOutcome:
            outcome = super().merge(base, ours, theirs)
            record.merges[(base, ours, theirs)] = outcome
            return outcome

        def close(self) -> None:
            super().close()
            record.runs += self.calls + self.unclaimed
            if self.proofs is not None:
                record.proved_files += self.proofs.proved
                record.proved_picks += self.proofs.picks

    return Recording


def plan_once(
    upstream: str, fork: str, config_file: str | None, prove: bool
) -> tuple[str, Recorded, float, Any]:
    """One cold plan (no merge, ledger or analysis cache), its JSON and what git merged for it."""
    record = Recorded()
    pair, config = open_configured(upstream, fork, config_file=config_file)
    drop_caches(pair.cache_dir)
    original = planning.GitMerger
    planning.GitMerger = _merger_class(record, prove)  # type: ignore[misc]
    try:
        started = time.monotonic()
        planned = planning.make_plan(pair, config)
        seconds = time.monotonic() - started
    finally:
        planning.GitMerger = original  # type: ignore[misc]
    return planned.plan.to_json(), record, seconds, planned


def _entry(tree: pygit2.Tree, path: str) -> tuple[pygit2.Oid, int] | None:
    try:
        obj = tree[path]
    except KeyError:
        return None
    return obj.id, int(obj.filemode)


def _tree_with_conflicts(
    git: GitMerger, base: pygit2.Oid, ours: pygit2.Oid, theirs: pygit2.Oid
) -> pygit2.Oid:
    """The tree ``git merge-tree`` writes for a conflicting merge: the files it merged cleanly as
    merged, the conflicting ones with markers (GitMerger keeps only the conflicting paths)."""
    return pygit2.Oid(hex=git._start(base, ours, theirs).wait()[0])


def _why_git(target: PickTarget, change: CommitChanges) -> str:
    """The first reason a pick git merged cleanly was still left to git (for the figures)."""
    if not target._fits(change):
        return "file/directory clash"
    for delta in change.deltas:
        ours = target.entry(delta.path)
        if ours in (delta.old, delta.new):
            continue
        if delta.old is None or delta.new is None or ours is None:
            return "path added, deleted or missing on a side"
        if target._proved(change, delta, ours) is None:
            return "a both-sides file not proved"
    return "directory rules"


def check(repo: pygit2.Repository, record: Recorded, changes: dict[str, CommitChanges]) -> dict[str, Any]:
    """Each recorded merge decided again by the proof (picks and files), against git's outcome."""
    by_trees = {(c.parent_tree, c.tree): c for c in changes.values()}
    git = GitMerger(repo, prove=False)
    out = {
        "merges": len(record.merges),
        "git_clean": 0,
        "picks_decided": 0,
        "picks_agree": 0,
        "picks_disagree": [],
        "files_both_sides": 0,
        "files_proved": 0,
        "files_agree": 0,
        "files_disagree": [],
        "unmatched": 0,
        "clean_left_to_git": {},
    }
    for (base, ours, theirs), outcome in record.merges.items():
        out["git_clean"] += outcome.tree is not None
        change = by_trees.get((base, theirs))
        if change is None:
            out["unmatched"] += 1
        else:
            target = PickTarget(repo, ours, GitMerger(repo))
            decided = target._without_git(change)
            if decided is None and outcome.tree is not None:
                why = _why_git(target, change)
                out["clean_left_to_git"][why] = out["clean_left_to_git"].get(why, 0) + 1
            if decided is not None:
                out["picks_decided"] += 1
                target.replace(decided[0])
                if outcome.tree is not None and target.tree() == outcome.tree:
                    out["picks_agree"] += 1
                else:
                    out["picks_disagree"].append([change.sha, str(base), str(ours), str(theirs)])
        trees = [repo.get(oid) for oid in (base, ours, theirs)]
        assert all(isinstance(t, pygit2.Tree) for t in trees)
        old, one, two = (t for t in trees if isinstance(t, pygit2.Tree))
        merged = repo.get(
            outcome.tree if outcome.tree is not None else _tree_with_conflicts(git, base, ours, theirs)
        )
        for delta in old.diff_to_tree(two).deltas:
            path = delta.new_file.path
            entries = [_entry(t, path) for t in (old, one, two)]
            if any(e is None or e[1] not in REGULAR_MODES for e in entries):
                continue
            a, b, c = (e[0] for e in entries if e is not None)
            if len({a, b, c}) != 3:
                continue
            out["files_both_sides"] += 1
            blobs = [repo.get(oid) for oid in (a, b, c)]
            text = merge_clean(*(x.data for x in blobs if isinstance(x, pygit2.Blob)))
            if text is None:
                continue
            out["files_proved"] += 1
            got = _entry(merged, path) if isinstance(merged, pygit2.Tree) else None
            if got is not None and path not in outcome.conflicts and got[0] == pygit2.hash(text):
                out["files_agree"] += 1
            else:
                out["files_disagree"].append([path, str(a), str(b), str(c)])
    return out


def run(upstream: str, fork: str, config_file: str | None) -> dict[str, Any]:
    before_json, before, before_s, planned = plan_once(upstream, fork, config_file, prove=False)
    pair, _ = open_configured(upstream, fork, config_file=config_file)
    repo = pygit2.Repository(str(pair.repo.path))
    started = time.monotonic()
    result = check(repo, before, planned.changes)
    result["check_s"] = round(time.monotonic() - started, 1)
    after_json, after, after_s, _ = plan_once(upstream, fork, config_file, prove=True)
    result.update(
        plan_identical=before_json == after_json,
        git_merges_without_proof=before.runs,
        git_merges_with_proof=after.runs,
        proved_files_in_plan=after.proved_files,
        proved_picks_in_plan=after.proved_picks,
        plan_s_without=round(before_s, 2),
        plan_s_with=round(after_s, 2),
        load=round(os.getloadavg()[0], 2),
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--replay", type=Path, help="a benchmarks.replay_triton --work directory (built)")
    parser.add_argument(
        "--synthetic", action="store_true", help="bench_plan's synthetic pair (1,000 pending)"
    )
    args = parser.parse_args()
    if args.replay:
        cfg = args.replay / "forksync-line.yml"
        cfg.write_text(TRITON.config_text("line"))
        doc = run(str(args.replay / "upstream.git"), str(args.replay / "fork"), str(cfg))
        print(json.dumps({"replay": doc}, indent=1), flush=True)
    if args.synthetic:
        with tempfile.TemporaryDirectory(prefix="forksync-proof-") as tmp:
            root = Path(tmp)
            os.environ["FORKSYNC_CACHE_DIR"] = str(root / "cache")
            make_bundling_pair(root / "pair", pending=1000, files=3000, seed=7)
            doc = run(str(root / "pair" / "upstream"), str(root / "pair" / "fork"), None)
            print(json.dumps({"synthetic": doc}, indent=1), flush=True)


if __name__ == "__main__":
    main()
