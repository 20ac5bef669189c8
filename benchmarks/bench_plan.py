"""Benchmarks: ``forksync plan`` and ``forksync bundle`` against a ``git cherry-pick`` loop, side by side.

The baseline is what a maintainer would otherwise run: a worktree of the fork at its tip and
``git cherry-pick -x`` of each pending upstream commit in order (``--abort`` on a conflict, then
on to the next). forksync runs as the real CLI in a subprocess with a cold cache (ledger built
from scratch), so its figures include interpreter start, the ledger and the writes.

    python -m benchmarks.bench_plan                 # 1,000 plan, 200 bundle, scaling 250/1000/4000
    python -m benchmarks.bench_plan --quick         # smaller, for a smoke run
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.gen_bundling import make_bundling_pair

ROOT = Path(__file__).resolve().parent.parent


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "FORKSYNC_CACHE_DIR": str(home / "cache"),
        "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
    })
    return env


def forksync(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "workers.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"forksync {args[0]} failed: {proc.stderr.strip()}")
    return elapsed, proc.stdout


def in_process(kind: str, pair_root: Path, cache: Path) -> float:
    """The engine alone (no interpreter start, no CLI imports): open, ledger, plan [, build and write]."""
    os.environ["FORKSYNC_CACHE_DIR"] = str(cache)
    from workers.engine.pair import open_configured
    from workers.engine.planning import build_and_record, make_plan

    start = time.perf_counter()
    pair, config = open_configured(str(pair_root / "upstream"), str(pair_root / "fork"))
    planned = make_plan(pair, config)
    if kind == "bundle":
        build_and_record(pair, config, planned)
    return time.perf_counter() - start


def cherry_pick_loop(fork: Path, commits: tuple[str, ...], env: dict[str, str], work: Path) -> tuple[float, int]:
    """The baseline: cherry-pick -x each commit in a worktree; abort and go on at a conflict."""
    wt = work / "wt"
    subprocess.run(["git", "-C", str(fork), "worktree", "add", "-q", "--detach", str(wt), "main"],
                   env=env, check=True, capture_output=True)
    failed = 0
    start = time.perf_counter()
    for sha in commits:
        proc = subprocess.run(["git", "-C", str(wt), "cherry-pick", "-x", "--allow-empty", sha],
                              env=env, capture_output=True, check=False)
        if proc.returncode != 0:
            failed += 1
            subprocess.run(["git", "-C", str(wt), "cherry-pick", "--abort"], env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    subprocess.run(["git", "-C", str(fork), "worktree", "remove", "--force", str(wt)], env=env, capture_output=True,
                   check=False)
    return elapsed, failed


def pair_args(pair_root: Path) -> list[str]:
    return ["--upstream", str(pair_root / "upstream"), "--fork", str(pair_root / "fork")]


def bench_plan(pending: int, files: int, loop: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="forksync-bench-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        pair = make_bundling_pair(root / "pair", pending=pending, files=files)
        gen = time.perf_counter() - t0
        env = _env(root / "home")
        (root / "home").mkdir()
        cold, out = forksync(["plan", *pair_args(root / "pair"), "--json"], env)
        warm, out2 = forksync(["plan", *pair_args(root / "pair"), "--json"], env)
        assert out == out2, "plan JSON differs between two runs"
        plan = json.loads(out)
        placed = sum(len(b["commits"]) for b in plan["bundles"]) + sum(len(c["commits"]) for c in plan["chains"])
        assert placed == pending, (placed, pending)
        engine = in_process("plan", root / "pair", root / "cache-inproc")
        result = {"pending": pending, "files": files, "generate_s": gen, "plan_cold_s": cold, "plan_warm_s": warm, "engine_s": engine,
                  "bundles": len(plan["bundles"]), "chains": len(plan["chains"]),
                  "chain_commits": sum(len(c["commits"]) for c in plan["chains"]),
                  "conflict_seeds": sum(1 for c in plan["chains"] for r in c["reasons"] if r["kind"] == "conflict"),
                  "zone_seeds": sum(1 for c in plan["chains"] for r in c["reasons"] if r["kind"] == "diverged_zone")}
        if loop:
            seconds, failed = cherry_pick_loop(root / "pair" / "fork", pair.pending, env, root)
            result.update({"loop_s": seconds, "loop_conflicts": failed, "ratio": seconds / cold,
                           "engine_ratio": seconds / engine})
        return result


def bench_bundle(pending: int, files: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="forksync-bench-") as tmp:
        root = Path(tmp)
        pair = make_bundling_pair(root / "pair", pending=pending, files=files, seed=11)
        env = _env(root / "home")
        (root / "home").mkdir()
        seconds, out = forksync(["bundle", *pair_args(root / "pair"), "--json"], env)
        built = json.loads(out)
        carried = sum(len(b["commits"]) for b in built["bundles"]) + sum(len(c["commits"]) for c in built["chains"])
        rerun, out2 = forksync(["bundle", *pair_args(root / "pair"), "--json"], env)
        assert out == out2, "bundle output differs between two runs"
        loop, failed = cherry_pick_loop(root / "pair" / "fork", pair.pending, env, root)
        # Start the in-process run from the same state: no forksync refs in the fork.
        refs = subprocess.run(["git", "-C", str(root / "pair" / "fork"), "for-each-ref", "--format=delete %(refname)",
                               "refs/heads/forksync/", "refs/forksync/"], check=True, capture_output=True).stdout
        subprocess.run(["git", "-C", str(root / "pair" / "fork"), "update-ref", "--stdin"], input=refs, check=True)
        engine = in_process("bundle", root / "pair", root / "cache-inproc")
        return {"pending": pending, "bundle_cold_s": seconds, "engine_s": engine, "engine_ratio": loop / engine, "bundle_rerun_s": rerun, "branches":
                len(built["bundles"]) + len(built["chains"]), "commits_built": carried, "loop_s": loop,
                "loop_conflicts": failed, "ratio": loop / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--files", type=int, default=3000)
    args = parser.parse_args()
    plan_n, bundle_n, scale = (200, 100, (100, 200, 400)) if args.quick else (1000, 200, (250, 1000, 4000))

    r = bench_plan(plan_n, args.files, loop=True)
    print(f"plan {r['pending']} pending over {r['files']} files: forksync {r['plan_cold_s']:.2f}s cold "
          f"({r['plan_warm_s']:.2f}s warm ledger) vs cherry-pick loop {r['loop_s']:.2f}s "
          f"({r['loop_conflicts']} conflicts) -> {r['ratio']:.1f}x; engine alone {r['engine_s']:.2f}s -> "
          f"{r['engine_ratio']:.1f}x  [{r['bundles']} bundles, {r['chains']} chains "
          f"holding {r['chain_commits']} commits; {r['conflict_seeds']} conflict seeds, {r['zone_seeds']} zone seeds]")
    b = bench_bundle(bundle_n, args.files)
    print(f"bundle {b['pending']} pending: forksync {b['bundle_cold_s']:.2f}s ({b['branches']} branches, "
          f"{b['commits_built']} commits built; rerun {b['bundle_rerun_s']:.2f}s) vs cherry-pick loop "
          f"{b['loop_s']:.2f}s -> {b['ratio']:.1f}x; engine alone {b['engine_s']:.2f}s -> {b['engine_ratio']:.1f}x")
    times = []
    for n in scale:
        s = bench_plan(n, args.files, loop=False)
        times.append((n, s["plan_cold_s"], s["plan_warm_s"]))
    n0, t0, _ = times[0]
    for n, cold, warm in times:
        nlogn = (n * math.log2(n)) / (n0 * math.log2(n0))
        print(f"scaling: {n:>5} pending -> plan {cold:.2f}s cold, {warm:.2f}s warm; x{cold / t0:.2f} of the "
              f"{n0} run (linear x{n / n0:.1f}, n log n x{nlogn:.1f})")


if __name__ == "__main__":
    main()
