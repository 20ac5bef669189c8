"""Benchmarks: ``forksync plan`` and ``forksync bundle`` against a ``git cherry-pick`` loop, side by side.

The baseline is what a maintainer would otherwise run: a worktree of the fork at its tip and
``git cherry-pick -x`` of each pending upstream commit in order (``--abort`` on a conflict, then
on to the next). forksync runs as the real CLI in a subprocess with a cold cache (ledger built
from scratch; for bundle, no forksync refs in the fork yet), so its figures include interpreter
start, imports, the ledger and the writes. Every cold run and every loop run starts from a copy of
the fork as generated: objects an earlier run wrote into it (pushed bundle trees, the loop's picks)
would otherwise be found there through the cache's alternates and not written again, a warm start
a first run on a real fork does not get; "engine" is the same work in process, as the bot's
warm worker runs it. forksync figures are the median of ``--repeat`` cold runs, each followed by a loop run (the two
alternate, so load falls on both alike); medians and the load average are printed.
The CLI runs with compiled bytecode, as an installed forksync does (written once by an untimed
``--help`` run, even where the shell sets ``PYTHONDONTWRITEBYTECODE``).

    python -m benchmarks.bench_plan                 # 1,000 plan, 200 bundle, scaling 250/1000/4000
    python -m benchmarks.bench_plan --quick         # smaller, for a smoke run

The bundle figure also measures its floor in the same alternated rounds (``FLOOR``): a fresh
interpreter that asks git for the same merges the bundle asked for and writes and pushes the same
commits, deciding nothing; the ratio of the loop to it bounds what any such tool can reach.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.gen_bundling import make_bundling_pair

ROOT = Path(__file__).resolve().parent.parent


def _env(home: Path, cache: Path) -> dict[str, str]:
    # forksync as installed: with compiled bytecode. A shell that sets PYTHONDONTWRITEBYTECODE
    # (this dev box does) would otherwise make every run compile ~30 modules from source, ~0.05-0.1 s
    # that no pip-installed forksync pays; the bytecode goes to a prefix under the bench's HOME.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(
        {
            "HOME": str(home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "FORKSYNC_CACHE_DIR": str(cache),
            "PYTHONPYCACHEPREFIX": str(home / "pycache"),
            "GIT_AUTHOR_NAME": "Bench",
            "GIT_AUTHOR_EMAIL": "bench@example.com",
            "GIT_COMMITTER_NAME": "Bench",
            "GIT_COMMITTER_EMAIL": "bench@example.com",
        }
    )
    return env


def forksync(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "workers.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
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


def merges_asked(pair_root: Path, cache: Path) -> tuple[Path, list[str]]:
    """The engine's bundle in process, recording every merge it asks git for: the cache repository
    and each merge's ``merge-tree --stdin`` line (its two throwaway commits, which stay there)."""
    from workers.engine import merges

    lines: list[str] = []
    where: list[Path] = []
    start = merges.GitMerger._start

    def recording(self: Any, base: Any, ours: Any, theirs: Any) -> Any:
        started = start(self, base, ours, theirs)
        lines.append(f"{started.one} {started.two}")
        where[:] = [self.path]
        return started

    merges.GitMerger._start = recording  # type: ignore[method-assign]
    try:
        in_process("bundle", pair_root, cache)
    finally:
        merges.GitMerger._start = start  # type: ignore[method-assign]
    return where[0], lines


# The floor of a bundle, as one fresh interpreter (a Python tool's start-up, pygit2 imported): the
# merges the bundle asked git for, in one long-running ``git merge-tree --stdin`` (git's own
# verdicts, the least a tool agreeing with cherry-pick must ask), then the built commits written
# as one pack (``git fast-import`` of their ``fast-export`` stream into an empty repository that
# borrows the fork's objects) and pushed to the fork in one atomic push. No ledger, analysis,
# partition, tree writes or conflict resolution: a bound no planner goes under. (The merges run in
# the in-process run's cache, where their results exist already: git writes none of them again, so
# the floor is if anything low.)
FLOOR = """
import subprocess, sys
import pygit2  # noqa: F401  (a Python tool's import)
merge_repo, merges, stream, cache, fork, *refs = sys.argv[1:]
subprocess.run(["git", "-C", merge_repo, "merge-tree", "--stdin", "--write-tree", "--name-only",
                "--no-messages", "-z"], input=open(merges, "rb").read(), capture_output=True)
subprocess.run(["git", "init", "-q", "--bare", cache], check=True)
open(cache + "/objects/info/alternates", "w").write(fork + "/.git/objects\\n")
subprocess.run(["git", "-C", cache, "-c", "core.fsync=none", "fast-import", "--quiet"],
               stdin=open(stream, "rb"), check=True)
subprocess.run(["git", "-C", cache, "push", "-q", "--atomic", "--no-verify", fork,
                *[f"{r}:{r}" for r in refs]], check=True)
"""


def floor_inputs(fork: Path, work: Path) -> list[str]:
    """What the floor needs of a built fork: its forksync refs, and their commits as one
    ``fast-export`` stream (blobs, trees as paths, commits; the fork's own history excluded)."""
    refs = subprocess.run(
        [
            "git",
            "-C",
            str(fork),
            "for-each-ref",
            "--format=%(refname)",
            "refs/heads/forksync",
            "refs/forksync",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    with (work / "floor.stream").open("wb") as out:
        subprocess.run(
            ["git", "-C", str(fork), "fast-export", "--reference-excluded-parents", *refs, "^main"],
            check=True,
            stdout=out,
        )
    return refs


def floor_run(
    merge_repo: Path, merges: Path, work: Path, fork: Path, refs: list[str], env: dict[str, str]
) -> float:
    cache = work / "floor-cache"
    shutil.rmtree(cache, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-c",
            FLOOR,
            str(merge_repo),
            str(merges),
            str(work / "floor.stream"),
            str(cache),
            str(fork),
            *refs,
        ],
        env=env,
        check=True,
    )
    return time.perf_counter() - start


def fresh_fork(fork: Path, pristine: Path) -> None:
    """``fork`` back to ``pristine``, the fork as generated: no forksync refs, and none of the
    objects earlier runs wrote into it. git and libgit2 write no object that exists already (in the
    cache repository or the fork it borrows from), and on this box each new loose object costs
    ~0.3-1 ms of file creation: a run after another would skip ~1,400 of those writes."""
    shutil.rmtree(fork)
    shutil.copytree(pristine, fork, symlinks=True)


def cherry_pick_loop(
    fork: Path, commits: tuple[str, ...], env: dict[str, str], work: Path
) -> tuple[float, int]:
    """The baseline: cherry-pick -x each commit in a worktree; abort and go on at a conflict."""
    wt = work / "wt"
    subprocess.run(
        ["git", "-C", str(fork), "worktree", "add", "-q", "--detach", str(wt), "main"],
        env=env,
        check=True,
        capture_output=True,
    )
    failed = 0
    start = time.perf_counter()
    for sha in commits:
        proc = subprocess.run(
            ["git", "-C", str(wt), "cherry-pick", "-x", "--allow-empty", sha],
            env=env,
            capture_output=True,
            check=False,
        )
        if proc.returncode != 0:
            failed += 1
            subprocess.run(
                ["git", "-C", str(wt), "cherry-pick", "--abort"], env=env, capture_output=True, check=False
            )
    elapsed = time.perf_counter() - start
    subprocess.run(
        ["git", "-C", str(fork), "worktree", "remove", "--force", str(wt)],
        env=env,
        capture_output=True,
        check=False,
    )
    return elapsed, failed


def pair_args(pair_root: Path) -> list[str]:
    return ["--upstream", str(pair_root / "upstream"), "--fork", str(pair_root / "fork")]


def bench(kind: str, pending: int, files: int, repeat: int, loop: bool, seed: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="forksync-bench-") as tmp:
        root = Path(tmp)
        pair = make_bundling_pair(root / "pair", pending=pending, files=files, seed=seed)
        (root / "home").mkdir()
        fork = root / "pair" / "fork"
        pristine = root / "fork-as-generated"
        shutil.copytree(fork, pristine, symlinks=True)
        args = [kind, *pair_args(root / "pair"), "--json"]
        forksync([kind, "--help"], _env(root / "home", root / "cache-help"))  # untimed: writes the bytecode
        floor = kind == "bundle" and loop
        if floor:  # untimed: the merges a bundle asks git for, and the commits it writes
            fresh_fork(fork, pristine)
            merge_repo, asked = merges_asked(root / "pair", root / "merges-cache")
            (root / "floor.merges").write_text("".join(f"{line}\n" for line in asked))
            fresh_fork(fork, pristine)
            forksync(args, _env(root / "home", root / "cache-export"))
            refs = floor_inputs(fork, root)
        cold, outputs, loops, loads, floors = [], [], [], [], []
        failed = 0
        for i in range(
            repeat
        ):  # alternated: forksync cold, then the loop [, then the floor], then forksync, ...
            loads.append(os.getloadavg()[0])
            fresh_fork(fork, pristine)
            seconds, out = forksync(args, _env(root / "home", root / f"cache-{i}"))
            cold.append(seconds)
            outputs.append(out)
            if floor:
                fresh_fork(fork, pristine)
                floors.append(
                    floor_run(merge_repo, root / "floor.merges", root, fork, refs, _env(root / "home", root))
                )
            if loop:
                fresh_fork(fork, pristine)
                loop_s, failed = cherry_pick_loop(
                    fork, pair.pending, _env(root / "home", root / "cache-0"), root
                )
                loops.append(loop_s)
        assert len(set(outputs)) == 1, f"{kind} output differs between cold runs"
        warm, again = forksync(args, _env(root / "home", root / "cache-0"))
        assert again == outputs[0], f"{kind} output differs on a warm rerun"
        engine = []
        for i in range(repeat):
            fresh_fork(fork, pristine)
            engine.append(in_process(kind, root / "pair", root / f"inproc-{i}"))
        doc = json.loads(outputs[0])
        result: dict[str, Any] = {
            "pending": pending,
            "cold_s": statistics.median(cold),
            "warm_s": warm,
            "engine_s": statistics.median(engine),
            "bundles": len(doc["bundles"]),
            "chains": len(doc["chains"]),
            "chain_commits": sum(len(c["commits"]) for c in doc["chains"]),
        }
        if kind == "plan":
            placed = sum(len(b["commits"]) for b in doc["bundles"]) + result["chain_commits"]
            assert placed == pending, (placed, pending)
            kinds = [r["kind"] for c in doc["chains"] for r in c["reasons"]]
            result.update(conflict_seeds=kinds.count("conflict"), zone_seeds=kinds.count("diverged_zone"))
        else:
            result["built"] = sum(len(b["commits"]) for b in doc["bundles"]) + result["chain_commits"]
        result.update(load=statistics.median(loads), cold_runs=cold)
        if floor:
            result.update(floor_s=statistics.median(floors), floor_runs=floors, floor_merges=len(asked))
        if loop:
            seconds = statistics.median(loops)
            result.update(
                loop_s=seconds,
                loop_runs=loops,
                loop_conflicts=failed,
                ratio=seconds / result["cold_s"],
                engine_ratio=seconds / result["engine_s"],
            )
        return result


def _runs(seconds: list[float]) -> str:
    return "/".join(f"{x:.2f}" for x in seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=("plan", "bundle", "scaling"), help="just this figure")
    args = parser.parse_args()
    plan_n, bundle_n, scale = (200, 100, (100, 200, 400)) if args.quick else (1000, 200, (250, 1000, 4000))

    if args.only == "bundle":
        _print_bundle(bench("bundle", bundle_n, args.files, args.repeat, loop=True, seed=11))
        return
    if args.only == "scaling":
        scaling(scale, args.files, args.repeat)
        return
    r = bench("plan", plan_n, args.files, args.repeat, loop=True, seed=7)
    _print_plan(r, args.files)
    if args.only == "plan":
        return
    _print_bundle(bench("bundle", bundle_n, args.files, args.repeat, loop=True, seed=11))
    scaling(scale, args.files, args.repeat)


def _print_plan(r: dict[str, Any], files: int) -> None:
    print(
        f"plan {r['pending']} pending, {files} files: forksync {r['cold_s']:.2f}s cold CLI "
        f"({r['warm_s']:.2f}s warm), engine {r['engine_s']:.2f}s vs cherry-pick loop {r['loop_s']:.2f}s "
        f"({r['loop_conflicts']} conflicts) -> {r['ratio']:.1f}x CLI, {r['engine_ratio']:.1f}x engine "
        f"[{r['bundles']} bundles, {r['chains']} chains holding {r['chain_commits']} commits; "
        f"{r['conflict_seeds']} conflict seeds, {r['zone_seeds']} zone seeds]; load {r['load']:.1f}; "
        f"runs CLI {_runs(r['cold_runs'])}, loop {_runs(r['loop_runs'])}",
        flush=True,
    )


def _print_bundle(b: dict[str, Any]) -> None:
    print(
        f"bundle {b['pending']} pending ({b['built']} commits built on {b['bundles'] + b['chains']} branches): "
        f"forksync {b['cold_s']:.2f}s cold CLI ({b['warm_s']:.2f}s rerun), engine {b['engine_s']:.2f}s vs "
        f"cherry-pick loop {b['loop_s']:.2f}s -> {b['ratio']:.1f}x CLI, {b['engine_ratio']:.1f}x engine; load "
        f"{b['load']:.1f}; runs CLI {_runs(b['cold_runs'])}, loop {_runs(b['loop_runs'])}",
        flush=True,
    )
    print(_floor_line(b), flush=True)


def _floor_line(b: dict[str, Any]) -> str:
    return (
        f"bundle floor (a fresh interpreter with pygit2, git's {b['floor_merges']} merges the bundle asked for "
        f"in one merge-tree --stdin, fast-import of the built commits, the atomic push): {b['floor_s']:.2f}s "
        f"(runs {_runs(b['floor_runs'])}) -> the loop is {b['loop_s'] / b['floor_s']:.1f}x the floor "
        f"(10x the loop needs {b['loop_s'] / 10:.2f}s); forksync is {b['cold_s'] / b['floor_s']:.1f}x the floor"
    )


def scaling(scale: tuple[int, ...], files: int, repeat: int) -> None:
    """Plan time as the pending count grows, against linear and n log n, with the load of each size."""
    times = [bench("plan", n, files, repeat, loop=False, seed=7) for n in scale]
    n0, c0, e0 = times[0]["pending"], times[0]["cold_s"], times[0]["engine_s"]
    for t in times:
        n = t["pending"]
        nlogn = (n * math.log2(n)) / (n0 * math.log2(n0))
        print(
            f"scaling: {n:>5} pending -> plan {t['cold_s']:.2f}s CLI (x{t['cold_s'] / c0:.2f}), engine "
            f"{t['engine_s']:.2f}s (x{t['engine_s'] / e0:.2f}); linear x{n / n0:.1f}, n log n x{nlogn:.1f}; "
            f"load {t['load']:.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
