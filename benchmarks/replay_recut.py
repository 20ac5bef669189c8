"""Bundle PRs across re-cuts on real Triton history: kept, closed as superseded, new, before/after.

What it is for: the figure of "stable bundle parts" (docs/bundling.md, "Stacked bundles"). On the
weekly windows of ``benchmarks.replay_triton`` (the 1,000 upstream commits after the replay's
base, cut into calendar weeks; the fork is upstream as of the week's start), upstream arrives
**day by day** (committer date) and the plan is made again after each day, as the ingestion loop
does on every push; each plan's bundles are the PRs open after that ingest. Between two
consecutive plans of a week each bundle of the earlier one is **kept** (its id, so its branch and
PR, is in the later plan: the PR is updated in place), **landed** (merged meanwhile), or **closed
as superseded** (its id is gone though its commits are not landed); a bundle id of the later plan
that the earlier did not have is a **new** PR.

- ``before``: ids name each bundle's first commit (no record, the partition as it was);
- ``after``: each plan gets the previous plan's bundles as the record (``partition(parts=...)``,
  what ``forksync bundle`` writes and the next run reads), so a re-cut bundle keeps its id.

Two landing models per week: ``none`` (nothing lands within the week: every PR stays open, the
re-cuts come from new commits tying groups together) and ``daily`` (each day, before the plan, the
oldest bundle of the previous plan that is on the trunk lands: its commits are picked onto the fork
tree by git's merge and leave the walk, so groups shrink in the middle). The walk (so every bundle
and chain) is the same before and after; only the ids differ (asserted); git's merge outcomes are
kept in memory between plans (``MergeCache``), so planning twice costs little more than once.

``snapshot`` model: the snapshot replay (the fork 600 commits in with holes and left-behind picks,
624 to place, where the dense 255-commit group is cut into 13 stacked parts) as the last 400
upstream commits arrive ``--step`` at a time; landing ``none``, or ``each`` (before each plan the
oldest bundle on the trunk of the previous plan lands). Weekly windows are small (about 48
commits, bundles rarely reach the bound), the snapshot is where groups are cut into many parts.

    python -m benchmarks.replay_recut --mirror /work/.mirror/facebookexperimental+triton/repo --work /tmp/replay \
        [--model weekly|snapshot] [--step 20]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pygit2

from benchmarks.replay_history import TRITON, build_replay, upstream_weeks
from core.config import RepoConfig, load_repo_config
from workers.engine.changes import commit_changes_many
from workers.engine.git import Repository
from workers.engine.lines import line_dependencies
from workers.engine.merges import GitMerger, MergeCache, merge_cache_key
from workers.engine.partition.records import Plan
from workers.engine.partition.walk import partition
from workers.engine.parts import PartRecord
from workers.engine.pick import PickTarget
from workers.engine.planning import TipTrial, as_change
from workers.engine.symbols import last_name, stoplist
from workers.engine.treenames import names_in_tree


def _transition(earlier: Plan, later: Plan, landed: set[str], tally: dict[str, int]) -> None:
    """Count what happened to ``earlier``'s bundles (as PRs) in ``later``."""
    now = {b.id for b in later.bundles}
    for b in earlier.bundles:
        if b.id in landed:
            tally["landed"] += 1
        elif b.id in now:
            tally["kept"] += 1
            after = next(x for x in later.bundles if x.id == b.id)
            if after.commits != b.commits or after.stacked_on != b.stacked_on:
                tally["kept_changed"] += 1
        else:
            tally["superseded"] += 1
    before = {b.id for b in earlier.bundles}
    tally["new"] += sum(b.id not in before for b in later.bundles)


def replay(work: Path, info: dict[str, Any], landing: str, zones: bool, merges: MergeCache) -> dict[str, Any]:
    """Every week, day by day, planned before (no record) and after (the last plan's bundles recorded)."""
    up = work / "upstream.git"
    pg = pygit2.Repository(str(up))
    text = TRITON.config_text("line")
    if not zones:
        text = re.sub(r"  diverged_zones:\n(    - .*\n)+", "  diverged_zones: []\n", text)
    config: RepoConfig = load_repo_config(text)
    stop = stoplist(config.risk.symbol_stoplist)
    commits: list[str] = info["upstream"]
    changes = commit_changes_many(pg, Repository(up), commits, stop)
    weeks = upstream_weeks(pg, commits)
    tallies = {
        side: {"kept": 0, "kept_changed": 0, "superseded": 0, "new": 0, "landed": 0}
        for side in ("before", "after")
    }
    plans = transitions = over_bound = 0
    started = time.monotonic()
    for _week, shas in sorted(weeks.items()):
        first = pg.get(shas[0])
        assert isinstance(first, pygit2.Commit)
        tree = first.parents[0].tree.id
        deps = line_dependencies([(s, changes[s].ranges) for s in shas], config.risk.context_lines)
        known = names_in_tree(
            Repository(up), str(tree), (last_name(n) for s in shas for n in changes[s].introduced)
        )
        days: dict[str, list[str]] = {}
        for sha in shas:
            c = pg.get(sha)
            assert isinstance(c, pygit2.Commit)
            days.setdefault(datetime.fromtimestamp(c.commit_time, UTC).strftime("%Y-%m-%d"), []).append(sha)
        arrived: list[str] = []
        landed_shas: set[str] = set()
        fork = PickTarget(pg, tree, GitMerger(pg, merges))
        previous: dict[str, Plan] = {}
        for _day, new in sorted(days.items()):
            arrived += new
            landed_ids: dict[str, set[str]] = {"before": set(), "after": set()}
            if landing == "daily" and previous:
                # The oldest bundle on the trunk lands (the same commits on both sides: ids differ only).
                side = previous["after"]
                bundle = next((b for b in side.bundles if b.stacked_on is None), None)
                if bundle is not None:
                    for sha in bundle.commits:
                        if fork.pick(changes[sha]).clean:  # built on the trunk alone: it applies
                            landed_shas.add(sha)
                    ours = set(bundle.commits)
                    for name, plan in previous.items():
                        landed_ids[name] = {b.id for b in plan.bundles if set(b.commits) <= ours}
            walk = [as_change(changes[s], deps, known) for s in arrived if s not in landed_shas]
            current: dict[str, Plan] = {}
            for name in ("before", "after"):
                trial = TipTrial(PickTarget(pg, fork.tree(), GitMerger(pg, merges)), changes)
                record = (
                    [PartRecord(b.id, b.commits) for b in previous["after"].bundles]
                    if name == "after" and previous
                    else []
                )
                current[name] = partition(walk, config, trial, parts=record)
                plans += 1
            assert [b.commits for b in current["before"].bundles] == [
                b.commits for b in current["after"].bundles
            ]
            over_bound += sum(len(b.commits) > config.bundle.max_commits for b in current["after"].bundles)
            if previous:
                transitions += 1
                for name in ("before", "after"):
                    _transition(previous[name], current[name], landed_ids[name], tallies[name])
            previous = current
    return {
        "landing": landing,
        "zones": zones,
        "weeks": len(weeks),
        "plans": plans,
        "transitions": transitions,
        "bundles_over_bound_after": over_bound,
        "before": tallies["before"],
        "after": tallies["after"],
        "seconds": round(time.monotonic() - started, 1),
    }


def growth(work: Path, landing: str, step: int, merges: MergeCache) -> dict[str, Any]:
    """The snapshot replay (600 ingested with holes, 624 to place) as upstream arrives: the last 400
    upstream commits come ``step`` at a time and the plan is made again after each arrival; with
    ``landing == "each"`` the oldest bundle on the trunk lands before each plan (picked onto the
    fork tree, out of the walk). Same counts as the weekly model, before and after."""
    from workers.engine.pair import open_configured
    from workers.engine.planning import history_dependencies, make_plan

    cfg = work / "forksync-line.yml"
    cfg.write_text(TRITON.config_text("line"))
    pair, config = open_configured(str(work / "upstream.git"), str(work / "fork"), config_file=str(cfg))
    planned = make_plan(pair, config)
    pg = pygit2.Repository(str(pair.repo.path))
    changes = planned.changes
    deps = history_dependencies(planned.ledger, changes, config.risk.context_lines)
    tip = pg.get(pair.fork_tip)
    assert isinstance(tip, pygit2.Commit)
    known = names_in_tree(
        pair.repo, pair.fork_tip, (last_name(n) for s in planned.order for n in changes[s].introduced)
    )
    pending = [e.sha for e in planned.ledger.pending_commits]
    later = set(pending)
    holes = [s for s in planned.order if s not in later]  # backlog holes: placed first, there from the start
    tallies = {
        side: {"kept": 0, "kept_changed": 0, "superseded": 0, "new": 0, "landed": 0}
        for side in ("before", "after")
    }
    fork = PickTarget(pg, tip.tree.id, GitMerger(pg, merges))
    landed_shas: set[str] = set()
    previous: dict[str, Plan] = {}
    plans = transitions = over_bound = 0
    sizes: list[int] = []
    started = time.monotonic()
    for end in range(step, len(pending) + step, step):
        landed_ids: dict[str, set[str]] = {"before": set(), "after": set()}
        if landing == "each" and previous:
            bundle = next((b for b in previous["after"].bundles if b.stacked_on is None), None)
            if bundle is not None:
                for sha in bundle.commits:
                    if fork.pick(changes[sha]).clean:
                        landed_shas.add(sha)
                ours = set(bundle.commits)
                for name, plan in previous.items():
                    landed_ids[name] = {b.id for b in plan.bundles if set(b.commits) <= ours}
        arrived = [s for s in (*holes, *pending[:end]) if s not in landed_shas]
        walk = [as_change(changes[s], deps, known) for s in arrived]
        current: dict[str, Plan] = {}
        for name in ("before", "after"):
            trial = TipTrial(PickTarget(pg, fork.tree(), GitMerger(pg, merges)), changes)
            record = (
                [PartRecord(b.id, b.commits) for b in previous["after"].bundles]
                if name == "after" and previous
                else []
            )
            current[name] = partition(walk, config, trial, parts=record)
            plans += 1
        assert [b.commits for b in current["before"].bundles] == [b.commits for b in current["after"].bundles]
        over_bound += sum(len(b.commits) > config.bundle.max_commits for b in current["after"].bundles)
        sizes.append(len(current["after"].bundles))
        if previous:
            transitions += 1
            for name in ("before", "after"):
                _transition(previous[name], current[name], landed_ids[name], tallies[name])
        previous = current
    return {
        "model": "snapshot",
        "landing": landing,
        "step": step,
        "plans": plans,
        "transitions": transitions,
        "bundles_per_plan": [min(sizes), max(sizes)] if sizes else [],
        "bundles_over_bound_after": over_bound,
        "before": tallies["before"],
        "after": tallies["after"],
        "seconds": round(time.monotonic() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--mirror", type=Path, required=True, help="bare mirror of facebookexperimental/triton"
    )
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--model", choices=("weekly", "snapshot"), action="append")
    parser.add_argument("--landing", choices=("none", "daily"), action="append", help="weekly model")
    parser.add_argument("--zones", choices=("yes", "no"), action="append", help="weekly model")
    parser.add_argument("--step", type=int, default=20, help="snapshot model: upstream commits per arrival")
    args = parser.parse_args()
    os.environ.setdefault("FORKSYNC_CACHE_DIR", str(args.work / "cache"))
    info = build_replay(TRITON, args.mirror, args.work)
    merges = MergeCache(None, merge_cache_key(args.work / "upstream.git"))
    out: dict[str, Any] = {"load_before": [round(x, 2) for x in os.getloadavg()], "runs": []}
    models = args.model or ["weekly", "snapshot"]
    if "weekly" in models:
        for zones in args.zones or ["no", "yes"]:
            for landing in args.landing or ["none", "daily"]:
                out["runs"].append(replay(args.work, info, landing, zones == "yes", merges))
                print(json.dumps(out["runs"][-1]), flush=True)
    if "snapshot" in models:
        for landing in ("none", "each"):
            out["runs"].append(growth(args.work, landing, args.step, merges))
            print(json.dumps(out["runs"][-1]), flush=True)
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
