"""``/retest SUITE`` against ``/retest``: what a maintainer saves by rerunning one flaky suite.

Baseline: the whole L1 rerun a maintainer had before (every suite runs again on the PR head).
forksync: ``/retest SUITE`` reruns that suite only and keeps the others' results on the commit.
Both go through ``workers.jobs.l1_job.run_l1_job`` against the loopback GitHub (real git fetch, real
pytest suites, real check-run updates). Also times the outside-PR gate: a job refused for want of
``/approve`` (PR read, approval lookup, one check run), which runs no suite at all.
Run: ``python -m benchmarks.bench_retest [--suites 4] [--tests 200] [--repeat 3]``.
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

from tests.fixtures.l1 import config_yaml, flow_suite, passing_tests
from tests.loopback_github import LoopbackGitHub
from workers.adapters.gitcache import GitCache
from workers.jobs.l1_job import L1Job, run_l1_job

REPO = "acme/fork"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", type=int, default=4)
    parser.add_argument("--tests", type=int, default=200, help="tests per suite")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("GIT_CONFIG_NOSYSTEM", "1")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        gh = LoopbackGitHub(root / "gh").start()
        try:
            gh.add_repo(REPO, files={"README.md": "fork\n"})
            gh.installation = gh.add_installation([REPO])
            names = [f"s{i}" for i in range(args.suites)]
            files = {".github/forksync.yml": config_yaml(*(flow_suite(n, n) for n in names))}
            files.update({f"{n}/test_{n}.py": passing_tests(args.tests, n) for n in names})
            sha = gh.commit(REPO, files)

            def job(**kw: object) -> float:
                started = time.perf_counter()
                run_l1_job(
                    gh.adapter(gh.installation),
                    GitCache(root / "git"),
                    root / "data",
                    L1Job(REPO, sha, **kw),  # type: ignore[arg-type]
                    clone_url=gh.git_url(REPO),
                    token=gh.token_for(gh.installation),
                    clone_url_for=gh.git_url,
                )
                return time.perf_counter() - started

            job()  # warm: cache clone, first check run
            full = [job() for _ in range(args.repeat)]
            one = [job(suite_names=(names[0],)) for _ in range(args.repeat)]

            gh.add_repo("stranger/fork")
            subprocess.run(
                [
                    "git",
                    "--git-dir",
                    str(gh.bare("stranger/fork")),
                    "fetch",
                    "-q",
                    str(gh.bare(REPO)),
                    "+refs/heads/main:refs/heads/main",
                ],
                check=True,
            )
            outside = gh.commit("stranger/fork", {"x.txt": "x\n"}, branch="main")
            number = gh.add_pull(REPO, "main", head_repo="stranger/fork", author="stranger")
            gate = []
            for _ in range(args.repeat):
                started = time.perf_counter()
                result = run_l1_job(
                    gh.adapter(gh.installation),
                    GitCache(root / "git"),
                    root / "data",
                    L1Job(REPO, outside, pr_number=number),
                    clone_url=gh.git_url(REPO),
                    token=gh.token_for(gh.installation),
                    clone_url_for=gh.git_url,
                )
                gate.append(time.perf_counter() - started)
                assert result.status == "needs_approval"
        finally:
            gh.close()
    f, o, g = statistics.median(full), statistics.median(one), statistics.median(gate)
    print(
        f"{args.suites} suites x {args.tests} tests, median of {args.repeat} (python {sys.version.split()[0]})"
    )
    print(f"/retest (all suites)     {f:7.2f} s")
    print(f"/retest {names[0]:<16} {o:7.2f} s   ratio all/one {f / o:5.2f}x")
    print(f"outside PR refused (gate) {g:6.2f} s   (no suite runs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
