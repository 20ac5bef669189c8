"""`forksync demo` shows the ingestion loop offline: embedded Celery, real git and engine, GitHub simulated."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_demo_runs_the_loop_offline_and_says_what_is_simulated(tmp_path: Path) -> None:
    """The demo (a real process, no REDIS_URL, no GitHub settings) exits 0 and prints the bundle PR,
    the chain issues, the ingestion check, the ledger moving after the merge, and what is simulated."""
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "GITHUB_APP_ID", "GITHUB_PRIVATE_KEY")}
    proc = subprocess.run(
        [sys.executable, "-m", "workers.cli", "demo", "--dir", str(tmp_path / "demo")],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "simulated: GitHub" in out and "real: git, the engine" in out
    assert "202 accepted: forksync.on_push" in out
    status, loop = out.split("== the ingestion loop")
    # The worker sees the decisions recorded in the fork (notes): the won't-port (#7009) and the
    # deferred (#7005) commits are in no bundle and no chain, and its figures match `status`.
    title = next(line for line in loop.splitlines() if "[Cherry-pick][BUNDLE]" in line)
    assert "Cherry-pick 7 upstream(" in title and "#7009" not in title and "#7005" not in title
    # Three chains: the two warp-specialization commits each seed one (diverged zone) and no longer
    # join on sharing Partition.cpp alone (line-level links); the LLVM bump is a risky path. Those
    # that build on the trunk are PRs; the one that builds nothing is a tracking issue.
    assert "chain PRs (2), each on the trunk" in loop and "risky-chain tracking issues (1):" in loop
    assert "Bump LLVM" in loop and "(#7005)" not in loop
    assert "[Cherry-pick][CHAIN] Cherry-pick 1 upstream(#7016)" in loop
    assert "backlog         2 commits" in status and "days behind     3.94" in status
    assert "ledger moved: check was '3.9 days behind upstream, backlog 2, pending 9'" in loop
    assert "check run 'forksync / ingestion'" in loop and ": success: 0.0 days behind upstream, backlog 4," in loop
    assert "why the backlog is 4:" in loop
    assert "ledger moved:" in out and "pending 0" in out.split("ledger moved:")[1]
    # Then the chain PRs land out of order, newest first: the other is rebuilt onto the new trunk in
    # its same PR, and the backlog falls to what still waits (the deferred hole, the conflicting chain).
    landing = out.split("landing the chain PRs out of order")[1]
    assert "merged chain PR #4" in landing and "#3 forksync/chain/" in landing
    assert "rebuilt onto the new trunk in the same PR" in landing and "base main" in landing
    assert "backlog 3, pending 0" in landing and landing.rstrip().count("backlog 2, pending 0") == 1
    assert "Traceback" not in proc.stderr
    assert (tmp_path / "demo" / "data" / "celery-broker.sqlite").exists()  # the embedded broker was used
