"""`forksync demo` shows the ingestion loop offline: embedded Celery, real git and engine, GitHub simulated."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.fixtures.demo import DemoRuns


@pytest.mark.slow
def test_demo_runs_the_loop_offline_and_says_what_is_simulated(demo_runs: DemoRuns) -> None:
    """The demo (a real process, no REDIS_URL, no GitHub settings) exits 0 and tells the whole loop:
    the bundle and chain PRs, L1 on the bundle PR (a real CPU suite, the check concluded), the
    nightly L2 on the trunk after the landing, one conflict resolved behind the rails and approved
    (``/approve`` through the command path) before it lands, and the backlog going to 0 once the
    maintainer decides the deferred commit (``/skip``); what is simulated is said."""
    proc = demo_runs.first  # a real process in a fresh --dir (tests/fixtures/demo.py)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "simulated: GitHub" in out and "real: git, the engine" in out
    assert "202 accepted: forksync.on_push" in out
    status, loop = out.split("== the ingestion loop")
    # The worker sees the decisions recorded in the fork (notes): the won't-port (#7009) and the
    # deferred (#7005) commits are in no bundle and no chain, and its figures match `status`.
    title = next(line for line in loop.splitlines() if "[Cherry-pick][BUNDLE]" in line)
    assert "Cherry-pick 7 upstream(" in title and "#7009" not in title and "#7005" not in title
    # Three chains, each a PR on the trunk: the two warp-specialization commits each seed one
    # (diverged zone; they do not join on sharing Partition.cpp alone, line-level links) and the
    # LLVM bump is a risky path. #7014 conflicts with the fork's own include at the same line:
    # the deterministic pipeline resolves it (list-union) and its PR carries the entry.
    assert "chain PRs (3), each on the trunk" in loop and "risky-chain tracking issues (0):" in loop
    assert "Bump LLVM" in loop and "(#7005)" not in loop.split("merging bundle PR")[0]
    assert "[Cherry-pick][CHAIN] Cherry-pick 1 upstream(#7016)" in loop
    entry = loop.split("a conflict, resolved behind the rails (its PR's Conflict Resolution entry):")[1]
    entry_lines = [line.split(":", 1)[0].strip() for line in entry.splitlines()[1:5]]
    assert entry_lines == ["File", "Action", "Reason", "Resolved by"], entry[:600]
    assert "File:        lib/Dialect/TritonGPU/Transforms/WarpSpecialization/Partition.cpp" in entry
    assert "Resolved by: forksync list-union (deterministic)" in entry
    assert "backlog         2 commits" in status and "days behind     3.94" in status
    assert "ledger moved: check was '3.9 days behind upstream, backlog 2, pending 9'" in loop
    assert (
        "check run 'forksync / ingestion'" in loop
        and ": success: 0.0 days behind upstream, backlog 4," in loop
    )
    assert "why the backlog is 4:" in loop
    # L1 on the bundle PR: the opened webhook, the fork's real CPU suite on its head, the check
    # concluded and said in words; then the nightly L2 on the new trunk, recorded and judged.
    l1 = loop.split(
        "L1 on bundle PR #1: webhook pull_request opened -> 202 accepted: forksync.on_pull_request"
    )[1]
    assert "check run 'forksync / L1' on" in l1 and ": success: All 1 suite(s) passed (2 tests)" in l1
    assert "in words: every test passed and none is missing: the bundle may land" in l1
    l2 = loop.split("L2 on the trunk after the landing")[1].split("landing the chain PRs")[0]
    assert "benchmark compile-python (python3 ci/bench_compile.py) on" in l2 and ": pass, files=8" in l2
    assert "recorded in the store, verdict: ok" in l2
    assert "ledger moved:" in out and "pending 0" in out.split("ledger moved:")[1]
    # Then the chain PRs land out of order, newest first: the others are rebuilt onto the new trunk
    # in their same PRs. The resolved chain waits for the maintainer's /approve (through the real
    # command path: webhook, worker, handler), recorded at its current head, then lands.
    landing = out.split("landing the chain PRs out of order")[1].split("what is left:")[0]
    assert "merged chain PR #4" in landing and "#3 forksync/chain/" in landing
    assert "rebuilt onto the new trunk in the same PR" in landing and "base main" in landing
    assert "backlog 3, pending 0" in landing and "backlog 2, pending 0" in landing
    waits, approved = landing.split(
        "@maintainer comments '/approve' on #2 -> webhook 202 accepted: forksync.on_comment"
    )
    assert "chain PR #2 carries a resolved conflict" in waits and "no, so it waits for a maintainer" in waits
    head = re.search(r"approved at its head ([0-9a-f]{10})\?", waits)
    assert head, waits[-500:]
    assert f"forksync: 👍 /approve — approved the resolution at head {head[1]}" in approved
    assert f"approval recorded at head {head[1]}" in approved
    assert "merged chain PR #2" in approved and approved.rstrip().endswith("backlog 1, pending 0")
    # What is left is the deferred commit: the maintainer won't-ports it through /skip, and the
    # next ingestion's check says backlog 0.
    left = out.split("what is left:")[1]
    assert (
        "1 commit(s) in the backlog, held back on purpose" in left
        and "[LAYOUTS] Generalize LinearLayout" in left
    )
    assert "deferred: marked deferred in the decisions notes" in left
    assert "forksync: 👍 /skip #7005" in left and "marked" in left
    assert "check: 0.0 days behind upstream, backlog 0, pending 0" in left and "backlog 0:" in left
    assert "Traceback" not in proc.stderr
    assert (demo_runs.first_dir / "data" / "celery-broker.sqlite").exists()  # the embedded broker was used
    # The effects are real, on the fork's bare copy: the approval taught the resolution memory,
    # and the decision is in the notes.
    bare = demo_runs.first_dir / "github" / "example-org" / "triton.git"
    memory = subprocess.run(
        ["git", "-C", str(bare), "log", "--format=%s", "refs/forksync/resolutions"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "approved in #2" in memory
    notes = subprocess.run(
        ["git", "-C", str(bare), "log", "-p", "--format=%s", "refs/notes/forksync"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "via /skip" in notes and "wont_port" in notes
    # Nothing printed is a raw Markdown fragment (tables, code marks, emphasis, links, hidden markers).
    for line in out.splitlines():
        assert not line.lstrip().startswith("|") and "**" not in line and "<!--" not in line, line
        assert "`" not in line, line
        assert not re.search(r"\]\(", line), line
