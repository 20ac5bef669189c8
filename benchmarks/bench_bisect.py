"""Bisection of a planted metric regression among 200 trunk commits: ``forksync bisect`` vs ``git bisect run``.

The trunk (real repository, built with fast-import) has per-commit noise (+-3%), run-to-run
noise (+-2%), a 25% tflops drop at the culprit, infrastructure failures ("No space left on
device", exit 1) on 4 commits and 3 untestable commits (exit 125). Each tool runs the same
tiny benchmark script in the checkout.

Baselines a user would otherwise run, side by side:
* ``git bisect run`` with a careful wrapper: it maps exit 125 and the disk-full message to 125
  (skip) and judges tflops against a reference the user measured beforehand (one run at GOOD,
  counted here);
* ``git bisect run`` with a naive wrapper (any non-zero exit is bad): the common first attempt,
  which blames infrastructure failures on commits.
Reported per culprit position: runs, wall time, and whether the culprit is right.
Run: ``python -m benchmarks.bench_bisect [--positions N]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.fixtures.trunk import build_trunk, planted_trunk
from workers.cli import main as forksync

INFRA = (17, 64, 100, 180)
UNTESTABLE = (45, 160, 199)

CAREFUL = """\
import json, subprocess, sys, pathlib
counter = pathlib.Path(sys.argv[1]); counter.write_text(str(int(counter.read_text() or 0) + 1))
p = subprocess.run([sys.executable, "bench.py"], capture_output=True, text=True)
if p.returncode == 125 or "No space left on device" in p.stderr:
    sys.exit(125)
if p.returncode != 0:
    sys.exit(1)
value = json.loads(p.stdout.strip().splitlines()[-1])["metrics"]["tflops"]
sys.exit(1 if value < float(sys.argv[2]) * 0.9 else 0)
"""

NAIVE = """\
import json, subprocess, sys, pathlib
counter = pathlib.Path(sys.argv[1]); counter.write_text(str(int(counter.read_text() or 0) + 1))
p = subprocess.run([sys.executable, "bench.py"], capture_output=True, text=True)
if p.returncode != 0:
    sys.exit(1)
value = json.loads(p.stdout.strip().splitlines()[-1])["metrics"]["tflops"]
sys.exit(1 if value < float(sys.argv[2]) * 0.9 else 0)
"""


@contextlib.contextmanager
def hermetic(root: Path) -> Iterator[None]:
    saved = dict(os.environ)
    home = root / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = bench\n\temail = b@example.com\n[advice]\n\tdetachedHead = false\n"
    )
    os.environ.update({"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def run_forksync(repo: Path, good: str, bad: str) -> tuple[str | None, int, float]:
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        forksync(
            [
                "bisect",
                "--repo",
                str(repo),
                "--good",
                good,
                "--bad",
                bad,
                "--metric",
                "tflops",
                "--threshold",
                "10",
                "--json",
                "--",
                sys.executable,
                "bench.py",
            ]
        )
    elapsed = time.perf_counter() - start
    data = json.loads(out.getvalue())
    return data["culprit"], int(data["runs"]), elapsed


def run_git_bisect(
    repo: Path, good: str, bad: str, wrapper: str, scratch: Path
) -> tuple[str | None, int, float]:
    script = scratch / "wrapper.py"
    script.write_text(wrapper)
    counter = scratch / "runs"
    counter.write_text("0")
    start = time.perf_counter()
    # The user measures the reference at GOOD first (one run), then bisects.
    git(repo, "checkout", "-q", good)
    ref = subprocess.run([sys.executable, "bench.py"], cwd=repo, capture_output=True, text=True, check=True)
    reference = json.loads(ref.stdout.strip().splitlines()[-1])["metrics"]["tflops"]
    git(repo, "bisect", "start", bad, good)
    out = subprocess.run(
        ["git", "-C", str(repo), "bisect", "run", sys.executable, str(script), str(counter), str(reference)],
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - start
    culprit = None
    for line in out.stdout.splitlines():
        if line.endswith("is the first bad commit"):
            culprit = line.split()[0]
    git(repo, "bisect", "reset")
    return culprit, int(counter.read_text()) + 1, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=5, help="culprit positions to try (default 5)")
    args = parser.parse_args()
    positions = [23 + i * (170 // max(1, args.positions - 1)) for i in range(args.positions)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="forksync-bench-bisect-") as tmp, hermetic(Path(tmp)):
        for pos in positions:
            # Right after a skipped commit the culprit is undecidable (either could be it): both
            # tools then say "one of these"; keep the positions decidable.
            culprit_at = pos
            while culprit_at in INFRA + UNTESTABLE or culprit_at - 1 in INFRA + UNTESTABLE:
                culprit_at += 1
            repo = Path(tmp) / f"trunk-{culprit_at}"
            shas = build_trunk(
                repo, planted_trunk(201, culprit=culprit_at, infra=INFRA, untestable=UNTESTABLE)
            )
            want = shas[culprit_at]
            scratch = Path(tmp) / f"scratch-{culprit_at}"
            scratch.mkdir()
            results = {
                "forksync": run_forksync(repo, shas[0], shas[-1]),
                "git careful": run_git_bisect(repo, shas[0], shas[-1], CAREFUL, scratch),
                "git naive": run_git_bisect(repo, shas[0], shas[-1], NAIVE, scratch),
            }
            rows.append(
                (
                    culprit_at,
                    {
                        k: ("ok" if c == want else "WRONG" if c else "none", runs, t)
                        for k, (c, runs, t) in results.items()
                    },
                )
            )
    print(f"{'culprit':>7}  " + "  ".join(f"{k:>24}" for k in ("forksync", "git careful", "git naive")))
    for pos, res in rows:
        cells = [f"{ok:>5} {runs:>2} runs {t:6.2f}s" for ok, runs, t in res.values()]
        print(f"{pos:>7}  " + "  ".join(f"{c:>24}" for c in cells))
    for tool in ("forksync", "git careful", "git naive"):
        oks = [r[tool][0] == "ok" for _, r in rows]
        runs = [r[tool][1] for _, r in rows]
        times = [r[tool][2] for _, r in rows]
        print(
            f"{tool:>12}: right {sum(oks)}/{len(oks)}, runs median {statistics.median(runs)} max {max(runs)}, "
            f"time median {statistics.median(times):.2f}s"
        )
    fk = statistics.median(r["forksync"][2] for _, r in rows)
    gc = statistics.median(r["git careful"][2] for _, r in rows)
    print(f"time ratio forksync / git careful: {fk / gc:.2f}")


if __name__ == "__main__":
    main()
