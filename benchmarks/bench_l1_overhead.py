"""L1 worker overhead per suite: forksync's ``run_l1_for_ref`` against running the suite by hand.

Baseline: what a user would run in their own checkout (the suite command, JUnit XML out).
forksync: the same suite as a worker runs it (a fresh detached worktree of the commit, own
process group, log kept, results parsed, trunk store consulted, worktree removed). The figure
is the time beyond the suite's own runtime, per suite run. Also times parsing a 20,000-test
JUnit file (a Triton-sized unit suite). Run: ``python -m benchmarks.bench_l1_overhead``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from core.config import L1Config, RepoConfig, Suite
from workers.testing.junit import parse_junit
from workers.testing.l1 import run_l1_for_ref
from workers.testing.suites import checkout

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "b@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "b@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=ENV
    ).stdout


def make_repo(root: Path, files: int, tests: int) -> Path:
    """A repository of ``files`` source files (Triton's tree has ~1,300) and a pytest suite."""
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for i in range(files):
        d = repo / "lib" / f"d{i % 40}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.cpp").write_text(f"// file {i}\n" + "int x;\n" * 40)
    (repo / "tests").mkdir()
    per_file = max(1, tests // 10)
    for f in range(10):
        (repo / "tests" / f"test_{f}.py").write_text(
            "".join(f"def test_{f}_{i}():\n    assert {i} + 1 > {i}\n\n" for i in range(per_file))
        )
    (repo / "tiny.py").write_text(
        "import sys\nopen(sys.argv[1], 'w').write('<testsuite>' + "
        "''.join(f'<testcase classname=\"c\" name=\"t{i}\"/>' for i in range(50)) + '</testsuite>')\n"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "bench")
    return repo


def baseline(repo: Path, argv: list[str], xml: Path) -> float:
    """The suite run by hand in the user's own checkout, results file written: wall seconds."""
    started = time.monotonic()
    subprocess.run(
        [a.replace("{junit}", str(xml)) for a in argv], cwd=repo, env=ENV, capture_output=True, check=False
    )
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1500)
    parser.add_argument("--tests", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-l1-") as tmp:
        root = Path(tmp)
        repo = make_repo(root, args.files, args.tests)
        suites = {
            "tiny (50 tests, no pytest)": Suite("tiny", (sys.executable, "tiny.py", "{junit}"), timeout=120),
            f"pytest ({args.tests} tests)": Suite(
                "pytest",
                (
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "tests",
                    "--junitxml={junit}",
                ),
                timeout=300,
            ),
        }
        print(f"repository: {args.files} files + tests; {args.repeat} runs each; medians")
        print(
            f"{'suite':<28} {'by hand':>9} {'forksync':>9} {'suite own':>10} {'overhead':>9} {'of which parse':>15} {'ratio':>6}"
        )
        for label, suite in suites.items():
            hand, wall, own, over, parse = [], [], [], [], []
            for i in range(args.repeat):
                hand.append(baseline(repo, list(suite.run), root / f"hand-{i}.xml"))
                run = run_l1_for_ref(
                    repo, "HEAD", RepoConfig(l1=L1Config(suites=(suite,))), data_dir=root / "data", trunk=True
                )
                assert run.suites[0].status == "passed", run.suites[0].reason
                wall.append(run.wall_s)
                own.append(run.suite_s)
                over.append(run.overhead_s / max(1, run.suite_runs))
                parse.append(run.suites[0].parse_s)
            h, w = statistics.median(hand), statistics.median(wall)
            print(
                f"{label:<28} {h:>8.3f}s {w:>8.3f}s {statistics.median(own):>9.3f}s "
                f"{statistics.median(over):>8.3f}s {statistics.median(parse):>14.3f}s {w / h:>5.2f}x"
            )
        worktree = []
        for _ in range(args.repeat):
            started = time.monotonic()
            with checkout(repo, "HEAD", root / "wt"):
                pass
            worktree.append(time.monotonic() - started)
        print(
            f"of the overhead: worktree add + remove ({args.files} files): {statistics.median(worktree):.3f}s"
        )
        cases = "".join(
            f'<testcase classname="python.test.unit.language.test_core" name="test_op[{i}-float16]" time="0.01"/>'
            for i in range(20_000)
        )
        xml = f'<testsuites><testsuite name="pytest" tests="20000">{cases}</testsuite></testsuites>'.encode()
        started = time.monotonic()
        report = parse_junit(xml)
        print(
            f"parse 20,000-test JUnit XML ({len(xml) / 1e6:.1f} MB): {time.monotonic() - started:.3f}s "
            f"({report.total} cases)"
        )


if __name__ == "__main__":
    main()
