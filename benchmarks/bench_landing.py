"""Independent bundles on real Triton history: what building every bundle on the trunk alone costs,
and what landing the SECOND bundle first does to the next plan.

On the snapshot replay of ``benchmarks/replay_triton.py`` (the fork cut 1,000 commits before the
pre-fork tip, 600 ingested by a ``git cherry-pick -x`` loop with holes and conflicts left behind),
with ``risk.link: line``:

1. ``make_plan``, then ``bundle.build`` (chains without a resolver): how many bundles, their sizes,
   how many members joined an earlier bundle by depending on it (``Bundle.joined``), and how many
   bundle commits were **ejected** because they do not pick onto the trunk with their own bundle
   alone (the dependency only the stacked trial pick saw). Side by side: the same bundles picked
   STACKED (bundle k onto bundle k-1, what the trial picks assume), where a failure would show the
   plan disagreeing with its own trial.
   Bundles that dependencies carry past the bound are split into stacked bundles (``stacked``,
   ``stack_depth``; ``over_bound`` counts bundles still past ``bundle.max_commits``).
2. Land the first bundle others are stacked on (else bundle 2, out of order): the fork's trunk
   moves to its built head; the plan is made again from the new trunk and every bundle rebuilt:
   are the other bundles' ids (so their branches and PRs) kept, are the ones stacked on it now on
   the trunk (the ingest re-targets their PRs), how many commits eject now, and where did the
   landed commits go (picked, none placed).

    python -m benchmarks.bench_landing --mirror /work/.mirror/facebookexperimental+triton/repo --work /tmp/landing-replay
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pygit2

from benchmarks.replay_history import TRITON, build_replay
from workers.engine.bundle import build
from workers.engine.merges import GitMerger
from workers.engine.pair import open_configured
from workers.engine.pick import PickTarget
from workers.engine.planning import Planned, make_plan


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _plan(work: Path) -> tuple[Any, Any, Planned, float]:
    cfg = work / "forksync-line.yml"
    cfg.write_text(TRITON.config_text("line"))
    pair, config = open_configured(str(work / "upstream.git"), str(work / "fork"), config_file=str(cfg))
    started = time.monotonic()
    planned = make_plan(pair, config)
    return pair, config, planned, time.monotonic() - started


def _stacked_failures(pg: pygit2.Repository, tip: str, planned: Planned) -> int:
    """Bundles picked stacked (each onto the previous), as the trial picks assume: failures."""
    commit = pg.get(tip)
    assert isinstance(commit, pygit2.Commit)
    target = PickTarget(pg, commit.tree.id, GitMerger(pg))
    return sum(not target.pick(planned.changes[sha]).clean for b in planned.plan.bundles for sha in b.commits)


BOUND = 30  # bundle.max_commits of the replay's config


def planned_bound(_planned: Planned) -> int:
    return BOUND


def _depth(plan: Any, bundle_id: str) -> int:
    """How many bundles are under ``bundle_id`` in its stack (0: on the trunk)."""
    by_id = {b.id: b for b in plan.bundles}
    depth, at = 0, by_id[bundle_id].stacked_on
    while at is not None:
        depth, at = depth + 1, by_id[at].stacked_on
    return depth


def _figures(pair: Any, planned: Planned, seconds: float) -> tuple[dict[str, Any], Any]:
    pg = pygit2.Repository(str(pair.repo.path))
    started = time.monotonic()
    result = build(pg, planned.plan, pair.fork_tip, pair.fork_branch, planned.changes, planned.order)
    build_s = time.monotonic() - started
    plan = planned.plan
    figures = {
        "placed": len(planned.order),
        "bundled": sum(len(b.commits) for b in plan.bundles),
        "bundles": [len(b.commits) for b in plan.bundles],
        "over_bound": sum(len(b.commits) > planned_bound(planned) for b in plan.bundles),
        "stacked": sum(b.stacked_on is not None for b in plan.bundles),
        "stack_depth": max((_depth(plan, b.id) for b in plan.bundles), default=0),
        "joined_by_dependency": sum(len(b.joined) for b in plan.bundles),
        "joined_kinds": {
            k: sum(r.kind == k for b in plan.bundles for r in b.joined) for k in ("line", "symbol")
        },
        "ejected_on_trunk": sum(len(b.ejected) for b in result.bundles),
        "stacked_pick_failures": _stacked_failures(pg, pair.fork_tip, planned),
        "chains": len(plan.chains),
        "plan_seconds": round(seconds, 1),
        "build_seconds": round(build_s, 1),
    }
    return figures, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--mirror", type=Path, required=True, help="bare mirror of facebookexperimental/triton"
    )
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "forksync-landing")
    args = parser.parse_args()
    os.environ.setdefault("FORKSYNC_CACHE_DIR", str(args.work / "cache"))
    info = build_replay(TRITON, args.mirror, args.work)
    fork = args.work / "fork"
    out_info = {"holes": len(info["holes"]), "left_behind": len(info["left_behind"])}
    out: dict[str, Any] = {"load_before": _load(), "replay": out_info}
    pair, _config, planned, seconds = _plan(args.work)
    before, result = _figures(pair, planned, seconds)
    out["before"] = before
    if len(result.bundles) < 2:
        out["note"] = "fewer than two bundles: nothing to land out of order"
        print(json.dumps(out, indent=1))
        return
    # Land the first bundle that others are stacked on (else the second bundle, out of order): the
    # trunk moves to its built head, as a merge of its PR does.
    bases = {b.stacked_on for b in planned.plan.bundles if b.stacked_on is not None}
    landing = next((b for b in result.bundles if b.id in bases), result.bundles[1])
    ids_before = [b.id for b in planned.plan.bundles]
    on_it = [b.id for b in planned.plan.bundles if b.stacked_on == landing.id]
    pair.repo.git("update-ref", "refs/forksync/landed", landing.head)
    subprocess.run(
        ["git", "-C", str(fork), "fetch", "-q", str(pair.repo.path), "refs/forksync/landed"], check=True
    )
    trunk_before = subprocess.run(
        ["git", "-C", str(fork), "rev-parse", "main"], capture_output=True, text=True, check=True
    ).stdout.strip()
    subprocess.run(["git", "-C", str(fork), "update-ref", "refs/heads/main", landing.head], check=True)
    try:
        pair2, _config2, planned2, seconds2 = _plan(args.work)
        after, _ = _figures(pair2, planned2, seconds2)
        by_id = {b.id: b for b in planned2.plan.bundles}
        landed = set(landing.commits)
        after["landed_bundle"] = {
            "id": landing.id,
            "commits": len(landing.commits),
            "was_a_base": landing.id in bases,
            "placed_again": len(landed & set(planned2.order)),
        }
        after["other_bundle_ids_kept"] = sum(i in by_id for i in ids_before if i != landing.id)
        after["other_bundles_before"] = len(ids_before) - 1
        after["stacked_on_it_kept"] = sum(i in by_id for i in on_it)
        after["stacked_on_it_now_on_trunk"] = sum(i in by_id and by_id[i].stacked_on is None for i in on_it)
        after["stacked_on_it_before"] = len(on_it)
        after["picked"] = planned2.ledger.metrics.picked
        after["backlog"] = planned2.ledger.metrics.backlog
        out["after_landing"] = after
    finally:
        subprocess.run(["git", "-C", str(fork), "update-ref", "refs/heads/main", trunk_before], check=True)
    out["load_after"] = _load()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
