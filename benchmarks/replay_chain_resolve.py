"""Chain conflicts on Triton's real history: how many the resolution pipeline (and memory) resolves, how many wait.

    python -m benchmarks.replay_chain_resolve --mirror <bare mirror of facebookexperimental/triton> [--work DIR]
        [--only snapshot|weekly]

What it is for: issue 13's replay figure. ``benchmarks.replay_triton`` (the partition benchmark)
builds the replay fork and plans it; it counts the conflicts each chain meets when built through
on the fork trunk (where bundle.py builds every branch), resolving each by taking upstream's side of the files (a proxy). This runs the
same plans and builds every chain through with forksync's real resolver instead:
``resolve_pick`` (libgit2 merge, per-file pipeline, rails) with a resolution memory that learns,
in chain order, nothing but what forksync itself proposed earlier in the run (there is no human
resolution in a synthetic replay, so the memory can only replay its own answers to repeated
conflicts; the figure says how often that happens).

Per conflicting pick: **resolved** (every file through the rails; the chain moves on from the
resolved tree) or **waits** (a file needs a human or the agent; the chain would stop there).
After a waiting pick the build goes on from the upstream-side proxy, so later conflicts are
still counted; ``first wait`` is where each chain would stop today. A plausibility check, not a
truth: how many resolved files equal upstream's own version of the file at that commit.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pygit2

from benchmarks.replay_history import TRITON, build_replay, upstream_weeks
from core.config import load_repo_config
from workers.engine.bundle import bundle_branch, waits_on_bundles
from workers.engine.changes import CommitChanges, commit_changes_many
from workers.engine.git import Repository
from workers.engine.lines import line_dependencies
from workers.engine.merges import GitMerger
from workers.engine.pair import open_configured
from workers.engine.partition.records import Change, Plan
from workers.engine.partition.walk import partition
from workers.engine.pick import PickTarget
from workers.engine.planning import TipTrial, fork_history, make_plan
from workers.engine.resolve.history import FileHistory, GitFileHistory, plan_locator
from workers.engine.resolve.memory import MemoryIndex, learn
from workers.engine.resolve.merge3 import git_merge
from workers.engine.resolve.pick import resolve_pick
from workers.engine.symbols import stoplist


def _file(pg: pygit2.Repository, tree: pygit2.Tree, path: str) -> bytes | None:
    try:
        blob = pg.get(tree[path].id)
    except KeyError:
        return None
    return blob.data if isinstance(blob, pygit2.Blob) else None


def build_chains(
    pg: pygit2.Repository,
    tree: pygit2.Oid,
    plan: Plan,
    changes: dict[str, CommitChanges],
    memory: MemoryIndex,
    history: FileHistory | None = None,
) -> dict[str, Any]:
    """Build each chain of ``plan`` through on the fork trunk ``tree`` (as bundle.py builds every
    branch, and as replay_history.chain_conflicts counts), resolving each conflicting pick with
    forksync, except a pick that conflicts only on lines of a bundle not landed: it waits for that
    bundle, as bundle.py's build does (``waits_on_bundles``)."""
    merger = GitMerger(pg)
    totals: Counter[str] = Counter()
    strategies: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    per_chain = []
    for chain in plan.chains:
        members = chain.commits
        target = PickTarget(pg, tree, merger)
        conflicts = resolved = 0
        first_wait: int | None = None
        for i, sha in enumerate(members):
            onto = target.tree()
            picked = target.pick(changes[sha])
            if picked.clean:
                continue
            conflicts += 1
            after = waits_on_bundles(chain, plan, changes, sha, picked.conflicts)
            if after:
                first_wait = i if first_wait is None else first_wait
                totals["picks waiting for a bundle not landed (its lines)"] += 1
                totals["files waiting"] += len(after)
                reasons["a bundle not landed"] += len(after)
                target.replace({d.path: d.new for d in changes[sha].deltas})  # the proxy, as below
                continue
            outcome = resolve_pick(pg, sha, str(onto), memory=memory, history=history)
            commit = pg.get(sha)
            assert isinstance(commit, pygit2.Commit)
            if outcome.resolved and outcome.tree is not None:
                resolved += 1
                if outcome.clean:
                    totals["picks git conflicts on and libgit2 merges cleanly"] += 1
                target.move_to(pygit2.Oid(hex=outcome.tree))
                for entry in outcome.entries:
                    for s in entry.strategy.split("+"):
                        strategies[s] += 1
                    totals["files resolved"] += 1
                    if entry.content is not None and entry.content == _file(pg, commit.tree, entry.path):
                        totals["resolved files equal to upstream's file"] += 1
                    onto_tree = pg.get(onto)
                    assert isinstance(onto_tree, pygit2.Tree)
                    ours, base_t = (
                        _file(pg, onto_tree, entry.path),
                        _file(pg, commit.parents[0].tree, entry.path),
                    )
                    theirs = _file(pg, commit.tree, entry.path)
                    if entry.content is not None and None not in (ours, base_t, theirs):
                        merged = git_merge(
                            *(b.decode("utf-8", "surrogateescape") for b in (ours, base_t, theirs))
                        )  # type: ignore[union-attr]
                        memory.add(
                            learn(
                                entry.path,
                                merged,
                                entry.content.decode("utf-8", "surrogateescape"),
                                f"forksync's own resolution of {sha[:10]} in this run",
                            )
                        )
                continue
            if first_wait is None:
                first_wait = i
            if outcome.waiting and all(w.needs is not None for w in outcome.waiting):
                totals["picks waiting only for unlanded upstream commits"] += 1
            for w in outcome.waiting:
                totals["files waiting"] += 1
                reasons[_reason_kind(w.reason)] += 1
            target.replace({d.path: d.new for d in changes[sha].deltas})  # the proxy, to count what follows
        per_chain.append(
            {
                "members": len(members),
                "conflicts": conflicts,
                "resolved": resolved,
                "waiting": conflicts - resolved,
                "first_wait": first_wait,
            }
        )
    return {
        "chains": per_chain,
        "conflicts": sum(c["conflicts"] for c in per_chain),
        "resolved": sum(c["resolved"] for c in per_chain),
        "waiting": sum(c["waiting"] for c in per_chain),
        "files": dict(totals),
        "strategies": dict(strategies.most_common()),
        "waiting_reasons": dict(reasons.most_common()),
    }


def _reason_kind(reason: str) -> str:
    if "this pick waits for it" in reason:
        for where in ("in bundle", "in chain", "deferred", "urgent", "in no bundle or chain"):
            if where in reason:
                return f"file an unlanded upstream commit brings ({where})"
        return "file an unlanded upstream commit brings"
    if "conflict block" in reason:
        return "hunks no rule is safe on"
    if "upstream deletes" in reason:
        return "upstream deletes a file the fork changed"
    if "binary" in reason:
        return "binary"
    if "renamed" in reason:
        return "renamed differently"
    return reason.split(":")[0][:60]


def snapshot(work: Path) -> dict[str, Any]:
    """The snapshot replay's line-mode plan (replay_triton's), its chains built with the resolver."""
    cfg_file = work / "forksync-line.yml"
    cfg_file.write_text(TRITON.config_text("line"))
    pair, config = open_configured(str(work / "upstream.git"), str(work / "fork"), config_file=str(cfg_file))
    planned = make_plan(pair, config)
    pg = pygit2.Repository(str(pair.repo.path))
    tip = pg.get(pair.fork_tip)
    assert isinstance(tip, pygit2.Commit)
    started = time.monotonic()
    out = build_chains(
        pg,
        tip.tree.id,
        planned.plan,
        planned.changes,
        MemoryIndex(),
        fork_history(pair, planned),
    )
    out["seconds"] = round(time.monotonic() - started, 1)
    return out


def weekly(work: Path, info: dict[str, Any]) -> dict[str, Any]:
    """replay_triton's weekly windows (pure partition per week), each week's chains built with the resolver."""
    up = work / "upstream.git"
    pg = pygit2.Repository(str(up))
    config = load_repo_config(TRITON.config_text("line"))
    commits: list[str] = info["upstream"]
    changes = commit_changes_many(pg, Repository(up), commits, stoplist(config.risk.symbol_stoplist))
    weeks = upstream_weeks(pg, commits)
    memory = MemoryIndex()
    total: Counter[str] = Counter()
    started = time.monotonic()
    for _week, shas in sorted(weeks.items()):
        first = pg.get(shas[0])
        assert isinstance(first, pygit2.Commit)
        tree = first.parents[0].tree.id
        deps = line_dependencies([(s, changes[s].ranges) for s in shas], config.risk.context_lines)
        walk = [
            Change(
                s,
                changes[s].paths,
                changes[s].symbols,
                changes[s].lines,
                depends=deps[s],
                defined=changes[s].defined,
                introduced=changes[s].introduced,
                used=changes[s].used,
            )
            for s in shas
        ]
        plan = partition(walk, config, TipTrial(PickTarget(pg, tree, GitMerger(pg)), changes))
        # The week's fork is upstream where the week starts: a file the week's earlier commits bring waits for them.
        placed = {sha: (b.id, bundle_branch(b)) for b in plan.bundles for sha in b.commits}
        where = plan_locator(placed, {sha: c.id for c in plan.chains for sha in c.commits})
        start = str(first.parents[0].id)
        history = GitFileHistory(Repository(up), start, start, where=where)
        got = build_chains(pg, tree, plan, changes, memory, history)
        for key in ("conflicts", "resolved", "waiting"):
            total[key] += got[key]
        total["waiting for a bundle not landed"] += got["files"].get(
            "picks waiting for a bundle not landed (its lines)", 0
        )
        for key, n in got["strategies"].items():
            total["strategy " + key] += n
    return {"weeks": len(weeks), **dict(total), "seconds": round(time.monotonic() - started, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mirror", type=Path, required=True, help="bare mirror of facebookexperimental/triton"
    )
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "forksync-replay")
    parser.add_argument("--only", choices=("snapshot", "weekly"), default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("FORKSYNC_CACHE_DIR", str(args.work / "cache"))
    info = build_replay(TRITON, args.mirror, args.work)
    result: dict[str, Any] = {"load_before": [round(x, 2) for x in os.getloadavg()]}
    if args.only in (None, "snapshot"):
        result["snapshot"] = snapshot(args.work)
    if args.only in (None, "weekly"):
        result["weekly"] = weekly(args.work, info)
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
