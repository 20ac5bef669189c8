"""Where a cold ``forksync status`` spends its CPU, stage by stage, beside ``git cherry`` and the
``git log`` metadata floor (issue 18: make the floor argument checkable).

    python -m benchmarks.profile_status [--upstream-commits 20000] [--fork-commits 2000]
        [--files 2000] [--runs 3] [--dir DIR]

On the synthetic pair of ``benchmarks/bench_status.py`` (``--dir`` reuses one generated earlier)
it runs, once per round and alternated: ``git cherry`` in a maintainer's clone, the two
``git log`` range reads (the floor), and a cold ``forksync status --json`` (empty cache) in a
child process that measures itself:

* the CPU of every git process it starts, by command (``os.wait4``'s resource usage of that
  child, so processes running side by side are told apart);
* the CPU of its own Python stages (``time.thread_time`` of the thread that ran them, nested
  stages subtracted): imports, opening the pair, parsing each log, the tree and file listings
  read back, recognition and the ledger, the cache write, the rest (metrics, the JSON answer).

Medians over ``--runs`` rounds, the load average of each round printed. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.bench_status import (
    _pair,
    cli_env,
    git_log_floor,
    make_baseline,
    status_argv,
    timed_rss,
)
from benchmarks.gen_pair import PairSpec

# Python stages: (module, function, label). Wrapped where the ledger looks them up.
_STAGES = (
    ("workers.cli.status", "open_from_args", "open the pair (config, refs, merge-base)"),
    ("workers.engine.ledger.build", "read_range", "parse the range logs"),
    ("workers.engine.ledger.build", "tree_paths", "read the upstream tree listing"),
    ("workers.engine.ledger.build", "file_records", "parse the upstream file listing"),
    ("workers.engine.ledger.build", "read_decisions", "read the decisions notes"),
    ("workers.engine.ledger.build", "merged_side_commits", "merged side commits"),
    ("workers.engine.ledger.build", "patch_ids", "patch-id stage (Python side)"),
    ("workers.engine.ledger.build", "compute_ledger", "recognition + ledger + metrics"),
    ("workers.engine.ledger.cache", "_store", "write the ledger cache"),
    ("workers.engine.ledger.build", "_store_file_sets", "write the file-set cache"),
)


class _Recorder:
    """Thread CPU per stage (exclusive of nested stages) and CPU per git child process."""

    def __init__(self) -> None:
        self.stages: dict[str, float] = defaultdict(float)
        self.git: dict[str, float] = defaultdict(float)
        self.git_count: dict[str, int] = defaultdict(int)
        self._local = threading.local()
        self._lock = threading.Lock()

    def wrap(self, label: str, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def timed(*args: Any, **kwargs: Any) -> Any:
            stack: list[float] = self._local.__dict__.setdefault("stack", [])
            stack.append(0.0)  # CPU of stages nested in this one
            start = time.thread_time()
            try:
                return func(*args, **kwargs)
            finally:
                spent = time.thread_time() - start
                nested = stack.pop()
                with self._lock:
                    self.stages[label] += spent - nested
                if stack:
                    stack[-1] += spent

        return timed

    def child(self, argv: Any, cpu: float) -> None:
        words = [str(a) for a in (argv if isinstance(argv, list | tuple) else [argv])]
        label = _git_label(words)
        with self._lock:
            self.git[label] += cpu
            self.git_count[label] += 1


def _git_label(words: list[str]) -> str:
    """``git log --raw`` style: the subcommand and the options that change what it costs."""
    if not words or Path(words[0]).name != "git":
        return " ".join(Path(w).name for w in words[:1]) or "?"
    rest = words[1:]
    while rest and rest[0] in ("-C", "-c", "--git-dir", "--work-tree"):
        rest = rest[2:]
    while rest and rest[0].startswith("-"):
        rest = rest[1:]
    if not rest:
        return "git"
    costly = [w for w in rest[1:] if w in ("--raw", "-p", "--stdin", "--first-parent", "-r", "--no-walk")]
    return " ".join(["git", rest[0], *costly])


def _install(recorder: _Recorder) -> None:
    """Reap every child with ``os.wait4`` to read its CPU (Popen's private wait hook)."""
    original = subprocess.Popen._try_wait  # type: ignore[attr-defined]

    def try_wait(self: subprocess.Popen[Any], wait_flags: int) -> tuple[int, int]:
        try:
            pid, status, usage = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            return original(self, wait_flags)  # type: ignore[no-any-return]
        if pid == self.pid:
            recorder.child(self.args, usage.ru_utime + usage.ru_stime)
        return pid, status

    subprocess.Popen._try_wait = try_wait  # type: ignore[attr-defined]


def child(argv: list[str], report: Path) -> int:
    """Run ``forksync status`` here with the stages timed; write the report as JSON."""
    import importlib
    import io
    import resource

    recorder = _Recorder()
    _install(recorder)
    start = time.process_time()
    from workers import cli

    modules = {module: importlib.import_module(module) for module, _, _ in _STAGES}
    imports = time.process_time() - start
    for module, name, label in _STAGES:
        setattr(modules[module], name, recorder.wrap(label, getattr(modules[module], name)))
    out = io.StringIO()
    real_stdout, sys.stdout = sys.stdout, out
    try:
        code = cli.main(argv)
    finally:
        sys.stdout = real_stdout
    own = time.process_time() - start
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    report.write_text(
        json.dumps(
            {
                "code": code,
                "imports": imports,
                "own": own,
                "stages": recorder.stages,
                "git": recorder.git,
                "git_count": recorder.git_count,
                "children": children.ru_utime + children.ru_stime,
            }
        )
    )
    return int(code or 0)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:  # the profiled status run: --child REPORT status ...
        return child(argv[2:], Path(argv[1]))
    parser = argparse.ArgumentParser(prog="profile_status", description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream-commits", type=int, default=20_000)
    parser.add_argument("--fork-commits", type=int, default=2_000)
    parser.add_argument("--files", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="keep (and reuse) the generated pair here")
    args = parser.parse_args(argv)

    root = args.dir or Path(tempfile.mkdtemp(prefix="forksync-profile-"))
    spec = PairSpec(args.upstream_commits, args.fork_commits, args.files)
    print(f"pair of {spec.upstream_commits} upstream / {spec.fork_commits} fork commits, {spec.files} files")
    pair = _pair(root / "n", spec)
    baseline = make_baseline(pair, root / "n")
    rounds: list[dict[str, Any]] = []
    for i in range(args.runs):
        load = os.getloadavg()[0]
        cherry = timed_rss(["git", "-C", str(baseline), "cherry", "main", "refs/remotes/upstream/main"])
        floor = timed_rss(git_log_floor(pair, baseline))
        cache = root / f"profile-cache-{i}"
        if cache.exists():
            import shutil

            shutil.rmtree(cache)
        report = root / f"profile-{i}.json"
        argv = status_argv(pair)
        profiled = [sys.executable, "-m", "benchmarks.profile_status", "--child", str(report), *argv[3:]]
        env = cli_env(cache)
        env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
        whole = timed_rss(profiled, env)
        data = json.loads(report.read_text())
        rounds.append({"load": load, "cherry": cherry, "floor": floor, "status": whole, **data})
        print(
            f"  round {i + 1} (load {load:.1f}): git cherry {cherry.seconds:.2f} s ({cherry.cpu:.2f} CPU), "
            f"git log floor {floor.seconds:.2f} s ({floor.cpu:.2f} CPU), cold status {whole.seconds:.2f} s "
            f"({whole.cpu:.2f} CPU, profiled)"
        )

    def med(values: list[float]) -> float:
        return statistics.median(values) if values else 0.0

    print(f"\nmedians of {args.runs} alternated rounds, CPU seconds")
    print(f"  {'git cherry':<52} {med([r['cherry'].cpu for r in rounds]):6.3f}")
    print(
        f"  {'git log of both ranges (the metadata floor)':<52} {med([r['floor'].cpu for r in rounds]):6.3f}"
    )
    print(f"  {'cold status, whole process tree':<52} {med([r['status'].cpu for r in rounds]):6.3f}")
    print("  of which, Python:")
    print(
        f"    {'interpreter start-up (outside the profile)':<50} "
        f"{med([max(0.0, r['status'].cpu - r['own'] - r['children']) for r in rounds]):6.3f}"
    )
    print(
        f"    {'imports (workers.cli and what it pulls in)':<50} {med([r['imports'] for r in rounds]):6.3f}"
    )
    labels = [label for _, _, label in _STAGES]
    for label in labels:
        print(f"    {label:<50} {med([r['stages'].get(label, 0.0) for r in rounds]):6.3f}")
    rest = [r["own"] - r["imports"] - sum(r["stages"].values()) for r in rounds]
    print(f"    {'the rest (CLI, metrics, the JSON answer)':<50} {med(rest):6.3f}")
    print("  of which, git processes (by command, calls per run):")
    commands = sorted(
        {k for r in rounds for k in r["git"]}, key=lambda k: -med([r["git"].get(k, 0.0) for r in rounds])
    )
    for k in commands:
        calls = rounds[-1]["git_count"].get(k, 0)
        print(f"    {k + f' (x{calls})':<50} {med([r['git'].get(k, 0.0) for r in rounds]):6.3f}")
    unseen = [r["children"] - sum(r["git"].values()) for r in rounds]
    print(f"    {'children not reaped through the hook':<50} {med(unseen):6.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
