"""Benchmark ``forksync status`` against what a user would otherwise run, side by side.

    python -m benchmarks.bench_status [--upstream-commits 20000] [--fork-commits 2000]
        [--files 2000] [--runs 3] [--no-doubling] [--dir DIR]

On a synthetic pair from ``benchmarks/gen_pair.py`` it times, as separate processes (median of
``--runs``; peak RSS from ``/usr/bin/time`` or ``getrusage`` of the child):

* ``git cherry <fork> <upstream>`` -- the baseline: which upstream commits the fork lacks;
* ``git log`` of the same two ranges (upstream first-parent and fork, metadata and messages)
  -- the floor: history has to be read once;
* the same, plus the upstream commits' changed paths (``git log --raw``, as the ledger lists them)
  -- the floor of an exact answer: a fork commit without a marker is carried only by an upstream
  commit with its patch-id, so with its paths, and finding those needs every upstream commit's paths
  (or a path-limited walk, which git makes slower than the full listing past ~16 paths);
* ``forksync status --json`` cold (empty cache dir) and warm (cache filled);
* the same cold status on a pair twice as long (the doubling test).

The tools alternate within each round (not one tool's runs back to back), and every round's
load average is printed. It prints the figures and the ratios against the issue's targets;
nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.gen_pair import GeneratedPair, PairSpec, generate_pair, load_pair

FORMAT_UP = "%x1e%H%x1f%P%x1f%an%x1f%ae%x1f%at%x1f%ct%x1f%s%x1f"
FORMAT_FORK = "%x1e%H%x1f%P%x1f%an%x1f%ae%x1f%at%x1f%ct%x1f%s%x1f%B%x1f"


@dataclass
class Timing:
    seconds: float
    peak_mb: float
    cpu: float = 0.0  # user + system seconds, children included (the steadier figure on a loaded box)


def timed_rss(argv: Sequence[str], env: dict[str, str] | None = None) -> Timing:
    """Run a process to completion: wall time and peak RSS (GNU time, else getrusage of children)."""
    gnu_time = "/usr/bin/time" if Path("/usr/bin/time").exists() else None
    if gnu_time is None:
        start = time.perf_counter()
        subprocess.run(list(argv), env=env, capture_output=True, check=True)
        return Timing(
            time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
        )
    start = time.perf_counter()
    proc = subprocess.run([gnu_time, "-f", "%M %U %S", *argv], env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"bench: {' '.join(argv[:4])} failed: {proc.stderr.decode()[-400:]}")
    kb, user, system = proc.stderr.decode().strip().splitlines()[-1].split()
    return Timing(elapsed, int(kb) / 1024.0, float(user) + float(system))


def median(runs: list[Timing]) -> Timing:
    return Timing(
        statistics.median(r.seconds for r in runs),
        max(r.peak_mb for r in runs),
        statistics.median(r.cpu for r in runs),
    )


def git_log_floor(pair: GeneratedPair, baseline: Path) -> list[str]:
    return [
        "sh",
        "-c",
        f"git -C {baseline} log --first-parent -z --format='{FORMAT_UP}' {pair.base}..refs/remotes/upstream/main"
        f" >/dev/null && git -C {baseline} log -z --format='{FORMAT_FORK}' {pair.base}..main >/dev/null",
    ]


def exact_floor(pair: GeneratedPair, baseline: Path) -> list[str]:
    """The floor plus what an answer equal to ``git cherry``'s needs beyond it: each upstream commit's
    changed paths (a fork commit without a marker is carried only by an upstream commit with the
    same patch-id, hence the same paths), listed as the ledger lists them
    (``history.changed_files_raw``: ``git log --raw``, first parent, no renames)."""
    sh, flag, floor = git_log_floor(pair, baseline)
    listing = (
        f"git -C {baseline} -c core.quotePath=false log --no-color --no-renames -z --raw --no-abbrev"
        f" --format=%x1e%H%x1f --first-parent {pair.base}..refs/remotes/upstream/main -- >/dev/null"
    )
    return [sh, flag, f"{floor} && {listing}"]


def make_baseline(pair: GeneratedPair, where: Path) -> Path:
    """A maintainer's clone: the fork, with upstream fetched (what `git cherry` needs)."""
    repo = where / "baseline"
    if repo.exists():
        return repo
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    fetched = (
        subprocess.run(
            ["git", "-C", str(repo), "fetch", "-q", str(pair.fork), "main:refs/heads/main"],
            capture_output=True,
            check=False,
        ).returncode
        == 0
    )
    if not fetched:
        # A replay borrowing a partial mirror's objects cannot be packed for a fetch: borrow the
        # same objects (alternates) and point the two branches at the tips instead.
        def objects(path: Path) -> str:
            out = subprocess.run(
                ["git", "-C", str(path), "rev-parse", "--path-format=absolute", "--git-common-dir"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            return str(Path(out) / "objects")

        (repo / ".git" / "objects" / "info" / "alternates").write_text(
            f"{objects(pair.fork)}\n{objects(pair.upstream)}\n"
        )
        subprocess.run(["git", "-C", str(repo), "update-ref", "refs/heads/main", pair.fork_tip], check=True)
        subprocess.run(
            ["git", "-C", str(repo), "update-ref", "refs/remotes/upstream/main", pair.upstream_tip],
            check=True,
        )
        return repo
    subprocess.run(
        ["git", "-C", str(repo), "fetch", "-q", str(pair.upstream), "main:refs/remotes/upstream/main"],
        check=True,
    )
    return repo


def cli_env(cache: Path) -> dict[str, str]:
    """forksync as installed runs from compiled bytecode: a shell's PYTHONDONTWRITEBYTECODE (this
    dev box sets it) would make every run compile its modules from source (~0.05-0.1 s); the
    bytecode goes to one prefix in the temp dir, written by the untimed ledger check run."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(
        {
            "FORKSYNC_CACHE_DIR": str(cache),
            "PYTHONPYCACHEPREFIX": str(Path(tempfile.gettempdir()) / "forksync-bench-pycache"),
        }
    )
    return env


def status_argv(pair: GeneratedPair) -> list[str]:
    return [
        sys.executable,
        "-m",
        "workers.cli",
        "status",
        "--upstream",
        str(pair.upstream),
        "--fork",
        str(pair.fork),
        "--json",
    ]


def measure(pair: GeneratedPair, work: Path, runs: int) -> dict[str, Timing]:
    """Each tool once per round, alternated (cherry, floor, cold, warm, cherry, ...): on a shared,
    loaded box the load then falls on all of them alike. Medians; the load average per round."""
    baseline = make_baseline(pair, work)
    samples: dict[str, list[Timing]] = {
        "git cherry": [],
        "git log (floor)": [],
        "+ file listing": [],
        "status cold": [],
        "status warm": [],
    }
    loads = []
    for i in range(runs):
        loads.append(os.getloadavg()[0])
        samples["git cherry"].append(
            timed_rss(["git", "-C", str(baseline), "cherry", "main", "refs/remotes/upstream/main"])
        )
        samples["git log (floor)"].append(timed_rss(git_log_floor(pair, baseline)))
        samples["+ file listing"].append(timed_rss(exact_floor(pair, baseline)))
        cache = work / f"cache-{i}"
        if cache.exists():
            shutil.rmtree(cache)
        env = cli_env(cache)
        samples["status cold"].append(timed_rss(status_argv(pair), env))
        samples["status warm"].append(timed_rss(status_argv(pair), env))
    print(f"  load average per round: {', '.join(f'{x:.1f}' for x in loads)}")
    for name, ts in samples.items():
        print(f"  {name:<16} " + "  ".join(f"{t.seconds:.3f}s ({t.cpu:.2f} CPU)" for t in ts))
    return {name: median(ts) for name, ts in samples.items()}


def check_counts(pair: GeneratedPair, env_cache: Path) -> tuple[int, int]:
    """(picked+urgent that status reports, picks the generator made): they must agree."""
    if env_cache.exists():
        shutil.rmtree(env_cache)  # computed now, not remembered from an earlier version's run
    env = cli_env(env_cache)
    proc = subprocess.run(status_argv(pair), env=env, capture_output=True, text=True, check=True)
    data = json.loads(proc.stdout)
    return int(data["picked"]) + len(data["urgent"]), sum(pair.expected_picked.values())


def _pair(where: Path, spec: PairSpec) -> GeneratedPair:
    """Reuse a pair generated earlier from the same spec under ``where`` (--dir), else generate."""
    pair = load_pair(where, spec)
    if pair is not None:
        print(f"  reusing {where}")
        return pair
    if where.exists():
        shutil.rmtree(where)
    pair = generate_pair(where, spec)
    print(f"  generated in {pair.seconds:.1f}s")
    return pair


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_status", description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream-commits", type=int, default=20_000)
    parser.add_argument("--fork-commits", type=int, default=2_000)
    parser.add_argument("--files", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-doubling", action="store_true")
    parser.add_argument("--dir", type=Path, default=None, help="keep the generated pairs here")
    parser.add_argument(
        "--upstream",
        type=Path,
        default=None,
        help="with --fork: measure this existing pair (its main branches; e.g. a replay written by "
        "bench_replay_fbtriton --keep) instead of a generated one; no doubling",
    )
    parser.add_argument("--fork", type=Path, default=None)
    args = parser.parse_args(argv)

    root = args.dir or Path(tempfile.mkdtemp(prefix="forksync-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    if args.upstream is not None and args.fork is not None:

        def tip(repo: Path) -> str:
            return subprocess.run(
                ["git", "-C", str(repo), "rev-parse", "main"], capture_output=True, text=True, check=True
            ).stdout.strip()

        up_tip, fork_tip = tip(args.upstream), tip(args.fork)
        base = subprocess.run(
            ["git", "-C", str(args.fork), "merge-base", "main", up_tip],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        pair = GeneratedPair(args.upstream, args.fork, base, up_tip, fork_tip, {}, 0, 0.0)
        found, _ = check_counts(pair, root / "check-cache")
        print(f"existing pair {args.upstream} / {args.fork}: ledger carried commits {found}")
        args.no_doubling = True
    else:
        spec = PairSpec(args.upstream_commits, args.fork_commits, args.files)
        print(
            f"pair of {spec.upstream_commits} upstream / {spec.fork_commits} fork commits, {spec.files} files ..."
        )
        pair = _pair(root / "n", spec)
        found, made = check_counts(pair, root / "check-cache")
        print(
            f"  ledger carried commits: {found} (generator made {made}){'' if found == made else '  MISMATCH'}"
        )
    figures = measure(pair, root / "n", args.runs)

    doubled: dict[str, Timing] = {}
    if not args.no_doubling:
        spec = PairSpec(args.upstream_commits, args.fork_commits, args.files)
        spec2 = PairSpec(2 * spec.upstream_commits, 2 * spec.fork_commits, spec.files)
        print(f"doubled pair ({spec2.upstream_commits} / {spec2.fork_commits}) ...")
        pair2 = _pair(root / "2n", spec2)
        doubled = measure(pair2, root / "2n", args.runs)

    print()
    print(f"{'':<18}{'N':>10}{'CPU':>8}{'peak MB':>10}" + (f"{'2N':>10}{'2N/N':>8}" if doubled else ""))
    for name, t in figures.items():
        line = f"{name:<18}{t.seconds:>9.3f}s{t.cpu:>7.2f}s{t.peak_mb:>10.0f}"
        if doubled:
            d = doubled[name]
            line += f"{d.seconds:>9.3f}s{d.seconds / t.seconds:>8.2f}"
        print(line)
    cherry, floor = figures["git cherry"].seconds, figures["git log (floor)"].seconds
    cold, warm = figures["status cold"], figures["status warm"]
    print()
    print(
        f"cold status vs git cherry : {cherry / cold.seconds:6.1f}x faster   (target >= 10x; CPU "
        f"{figures['git cherry'].cpu / max(1e-9, cold.cpu):.1f}x)"
    )
    print(
        f"cold status vs git log    : {cold.seconds / floor:6.2f}x the floor (target <= 2x; CPU "
        f"{cold.cpu / max(1e-9, figures['git log (floor)'].cpu):.1f}x)"
    )
    exact = figures["+ file listing"]
    print(
        f"exact floor (log + listing): {cherry / exact.seconds:5.1f}x faster than git cherry, "
        f"{exact.seconds / floor:.2f}x the floor (CPU {figures['git cherry'].cpu / max(1e-9, exact.cpu):.1f}x / "
        f"{exact.cpu / max(1e-9, figures['git log (floor)'].cpu):.1f}x): the bound for a status that reads each "
        f"upstream commit's paths; cold status is {cold.seconds / exact.seconds:.2f}x it"
    )
    print(f"warm status vs git cherry : {cherry / warm.seconds:6.1f}x faster   (target >= 50x)")
    print(f"warm status vs git log    : {warm.seconds / floor:6.2f}x the floor (target <= 3x)")
    print(f"peak memory (cold status) : {cold.peak_mb:6.0f} MB          (target < 500 MB)")
    if doubled:
        print(
            f"doubling, cold status     : {doubled['status cold'].seconds / cold.seconds:6.2f}x time   (target <= 2.2x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
