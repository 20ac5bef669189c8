"""Bisection on real repositories with real command runs: culprit in about log2(N) runs, skips, budget, CLI."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from core.errors import ForksyncError
from tests.fixtures.trunk import TrunkCommit, planted_trunk
from workers.cli import main
from workers.engine.git import Repository
from workers.testing.bisect import (
    BAD,
    GOOD,
    SKIP,
    BisectAborted,
    CommitFiles,
    MetricRule,
    Probe,
    Reference,
    bisect,
    classify,
    rank_suspects,
    search,
)
from workers.testing.checkout import CommandResult

MakeTrunk = Callable[[str, Sequence[TrunkCommit]], tuple[Path, list[str]]]


def test_planted_regression_among_200_commits_found_in_at_most_10_runs(make_trunk: MakeTrunk) -> None:
    """200 trunk commits, noise, infra failures and untestable commits: the culprit in <= 10 real runs.

    The budget is 1 reference run at GOOD + ceil(log2 200) = 8 midpoints + 1 per skipped commit hit;
    the first midpoint is an infra failure, so the skip path is exercised and still fits in 10.
    """
    path, shas = make_trunk(
        "fork", planted_trunk(201, culprit=137, infra=(100, 17, 64, 180), untestable=(45, 160, 199))
    )
    started = time.monotonic()
    report = bisect(
        Repository(path),
        shas[0],
        shas[-1],
        [sys.executable, "bench.py"],
        rule=MetricRule("tflops", threshold=10.0, direction="higher"),
    )
    elapsed = time.monotonic() - started
    assert report.status == "found", report.reason
    assert report.culprit == shas[137]
    assert report.runs <= 10
    assert report.candidates == 200
    assert report.skipped == (shas[100],)
    assert all(p.outcome == SKIP for p in report.probes if p.sha in report.skipped)
    assert "infrastructure: out of disk space" in {p.reason for p in report.probes}
    # The good commit was measured once for the reference; nothing outside the range ran.
    assert report.probes[0].sha == shas[0] and report.reference is not None
    assert {p.sha for p in report.probes} <= set(shas)
    print(f"\n200-commit bisection: {report.runs} runs, {len(report.skipped)} skipped, {elapsed:.2f}s")


def test_bisection_leaves_the_users_work_tree_alone(make_trunk: MakeTrunk) -> None:
    """Runs happen in a separate worktree that is removed afterwards; the repository's HEAD is untouched."""
    path, shas = make_trunk("fork", planted_trunk(9, culprit=5))
    (path / "scratch.txt").write_text("user's own work\n")
    bisect(Repository(path), shas[0], shas[-1], [sys.executable, "bench.py"], rule=MetricRule("tflops", 10.0))
    repo = Repository(path)
    assert repo.rev_parse("HEAD") == shas[-1]
    assert (path / "scratch.txt").read_text() == "user's own work\n"
    assert repo.text("worktree", "list").count("\n") == 0  # only the main work tree is left


def test_exit_status_mode_mirrors_git_bisect_run(make_trunk: MakeTrunk) -> None:
    """Without a metric: 0 good, 125 skip, 1-127 bad; the first commit that fails is the culprit."""
    script = (
        "import pathlib, sys\nroot = pathlib.Path(__file__).parent\n"
        "sys.exit(125 if (root / 'untestable').exists() else 3 if (root / 'broken').exists() else 0)\n"
    )
    commits = [TrunkCommit("base", {"check.py": script})]
    for i in range(1, 40):
        files: dict[str, str | None] = {f"f{i}.txt": "x\n"}
        if i == 23:
            files["broken"] = "1\n"
        if i == 19:
            files["untestable"] = "1\n"
        if i == 20:
            files["untestable"] = None
        commits.append(TrunkCommit(f"c{i}", files))
    path, shas = make_trunk("fork", commits)
    report = bisect(Repository(path), shas[0], shas[-1], [sys.executable, "check.py"])
    assert report.culprit == shas[23]
    assert report.runs <= 7
    assert all(p.reason == "exit 3" for p in report.probes if p.outcome == BAD)
    assert report.probes[0].sha != shas[0]  # exit-status mode trusts GOOD, as git does


def test_signal_or_high_exit_status_aborts_like_git(make_trunk: MakeTrunk) -> None:
    """Exit 128 or more aborts the bisection with a message saying why and what exit codes mean."""
    path, shas = make_trunk("fork", [TrunkCommit(f"c{i}", {"a": f"{i}\n"}) for i in range(5)])
    with pytest.raises(BisectAborted, match=r"exited 200.*aborts bisection"):
        bisect(Repository(path), shas[0], shas[-1], [sys.executable, "-c", "raise SystemExit(200)"])


def test_only_skipped_commits_left_is_reported_as_ambiguous_with_suspects(make_trunk: MakeTrunk) -> None:
    """When every commit between the last good and first bad is untestable, the report lists them, no culprit."""
    script = (
        "import pathlib, sys\nroot = pathlib.Path(__file__).parent\n"
        "sys.exit(125 if (root / 'untestable').exists() else 1 if (root / 'broken').exists() else 0)\n"
    )
    commits = [TrunkCommit("base", {"check.py": script})]
    for i in range(1, 8):
        files: dict[str, str | None] = {f"src/m{i}.py": "x\n"}
        if i == 3:
            files["untestable"] = "1\n"
        if i == 5:
            files["untestable"] = None
            files["broken"] = "1\n"
        commits.append(TrunkCommit(f"c{i}", files))
    path, shas = make_trunk("fork", commits)
    report = bisect(
        Repository(path), shas[0], shas[-1], [sys.executable, "check.py"], test_ids=["tests/test_m4.py::t"]
    )
    assert report.status == "ambiguous" and report.culprit is None
    assert report.remaining == (shas[3], shas[4], shas[5])
    assert report.suspects[0].sha == shas[4]  # src/m4.py overlaps tests/test_m4.py
    assert "only skipped commits" in report.reason


def test_range_too_large_for_budget_runs_nothing_and_ranks_suspects(make_trunk: MakeTrunk) -> None:
    """Over budget: no run at all; suspects ranked by overlap of touched files with the failing test."""
    commits = [TrunkCommit("base", {"README": "x\n"})]
    for i in range(1, 65):
        name = "python/triton/ops/matmul.py" if i == 40 else f"docs/page{i}.md"
        commits.append(TrunkCommit(f"c{i}", {name: f"{i}\n"}))
    path, shas = make_trunk("fork", commits)
    report = bisect(
        Repository(path),
        shas[0],
        shas[-1],
        [sys.executable, "-c", "raise SystemExit(1)"],
        budget=3,
        test_ids=["python/test/unit/ops/test_matmul.py::test_matmul[fp16]"],
    )
    assert report.status == "over-budget" and report.runs == 0 and report.probes == ()
    assert "need 6 runs" in report.reason and "budget of 3" in report.reason
    assert report.suspects[0].sha == shas[40]
    assert report.suspects[0].files == ("python/triton/ops/matmul.py",)
    assert len(report.remaining) == 64


def test_search_is_logarithmic_and_skips_to_neighbours() -> None:
    """The pure search: 1,000 candidates in 10 probes; a skipped midpoint costs exactly one more probe."""
    shas = [f"c{i:04d}" for i in range(1000)]

    def make_test(culprit: int, skip: set[int]) -> Callable[[str], Probe]:
        def test(sha: str) -> Probe:
            i = int(sha[1:])
            outcome = SKIP if i in skip else BAD if i >= culprit else GOOD
            return Probe(sha, outcome, "", 0, 0.0)

        return test

    plain = search(shas, make_test(613, set()))
    assert shas[plain.hi] == "c0613" and len(plain.probes) == 10
    skipped = search(shas, make_test(613, {499}))
    assert shas[skipped.hi] == "c0613" and len(skipped.probes) == 11
    assert skipped.probes[0].outcome == SKIP and skipped.probes[1].sha == "c0500"


def test_classify_metric_direction_threshold_and_noise_band() -> None:
    """Lower-is-better metrics regress upward; a change inside the threshold or the noise band is good."""

    def run(value: float) -> CommandResult:
        return CommandResult(("x",), 0, json.dumps({"metrics": {"latency_ms": value}}), "", 0.1)

    rule = MetricRule("latency_ms", threshold=5.0, direction="lower")
    assert classify("a", run(110.0), rule, Reference(100.0)).outcome == BAD
    assert classify("a", run(104.0), rule, Reference(100.0)).outcome == GOOD
    assert classify("a", run(90.0), rule, Reference(100.0)).outcome == GOOD  # faster is not a regression
    assert classify("a", run(110.0), rule, Reference(100.0, band=15.0)).outcome == GOOD
    missing = classify("a", CommandResult(("x",), 0, "no json here", "", 0.1), rule, Reference(100.0))
    assert missing.outcome == SKIP and "latency_ms" in missing.reason


def test_rank_suspects_prefers_the_test_itself_then_its_module() -> None:
    """Touching the failing test file ranks first, then a same-named module, then unrelated files."""
    commits = [
        CommitFiles("a", "docs", ("docs/index.md",)),
        CommitFiles("b", "layout", ("lib/Dialect/TritonGPU/Transforms/RemoveLayoutConversions.cpp",)),
        CommitFiles("c", "test", ("test/TritonGPU/combine.mlir",)),
        CommitFiles("d", "combine pass", ("lib/Dialect/TritonGPU/Transforms/Combine.cpp",)),
    ]
    ranked = rank_suspects(commits, ["TRITON :: TritonGPU/combine.mlir"])
    assert [s.sha for s in ranked[:2]] == ["c", "d"]
    assert ranked[-1].score == 0 and ranked[-1].files == ()


def test_cli_json_output(make_trunk: MakeTrunk, capsys: pytest.CaptureFixture[str]) -> None:
    """``forksync bisect ... --json -- CMD`` prints culprit, runs and skipped, and exits 0 when found."""
    path, shas = make_trunk("fork", planted_trunk(33, culprit=21, infra=(16,)))
    code = main(
        [
            "bisect",
            "--repo",
            str(path),
            "--good",
            shas[0],
            "--bad",
            shas[-1],
            "--metric",
            "tflops",
            "--threshold",
            "10",
            "--direction",
            "higher",
            "--json",
            "--",
            sys.executable,
            "bench.py",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["culprit"] == shas[21]
    assert out["skipped"] == [shas[16]]
    assert out["runs"] == len(out["probes"]) <= 7


def test_cli_errors_are_one_line_with_a_remedy(
    make_trunk: MakeTrunk, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad input (metric without threshold, unknown sha, missing command) exits 2 with a remedy, runs nothing."""
    path, shas = make_trunk("fork", [TrunkCommit(f"c{i}", {"a": f"{i}\n"}) for i in range(3)])
    base = ["bisect", "--repo", str(path), "--good", shas[0], "--bad", shas[-1]]
    assert main([*base, "--metric", "x", "--", "true"]) == 2
    assert "--metric and --threshold go together" in capsys.readouterr().err
    assert main(["bisect", "--repo", str(path), "--good", "nope", "--bad", shas[-1], "--", "true"]) == 2
    assert "--good nope is not a commit" in capsys.readouterr().err
    assert main([*base]) == 2
    assert "no command given" in capsys.readouterr().err
    assert main([*base, "--", "/no/such/tool"]) == 2
    assert "cannot run '/no/such/tool'" in capsys.readouterr().err
    with pytest.raises(ForksyncError, match="not an ancestor"):
        bisect(Repository(path), shas[-1], shas[0], ["true"])


def test_metric_mode_without_a_usable_good_run_says_so(make_trunk: MakeTrunk) -> None:
    """If GOOD gives no metric, bisection stops after that one run, says why, and ranks suspects."""
    commits = [TrunkCommit("base", {"bench.py": "print('no metrics here')\n"})]
    commits += [TrunkCommit(f"c{i}", {f"src/m{i}.py": "x\n"}) for i in range(1, 6)]
    path, shas = make_trunk("fork", commits)
    report = bisect(
        Repository(path),
        shas[0],
        shas[-1],
        [sys.executable, "bench.py"],
        rule=MetricRule("tflops", 5.0),
        test_ids=["tests/test_m3.py::t"],
    )
    assert report.status == "no-good" and report.culprit is None and report.runs == 1
    assert 'no metric "tflops"' in report.reason
    assert report.suspects[0].sha == shas[3] and len(report.remaining) == 5


def test_cli_reference_skips_the_run_at_good(
    make_trunk: MakeTrunk, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--reference VALUE`` judges against the given value: no run at GOOD, one run fewer."""
    path, shas = make_trunk("fork", planted_trunk(17, culprit=9))
    code = main(
        [
            "bisect",
            "--repo",
            str(path),
            "--good",
            shas[0],
            "--bad",
            shas[-1],
            "--metric",
            "tflops",
            "--threshold",
            "10",
            "--reference",
            "100",
            "--json",
            "--",
            sys.executable,
            "bench.py",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["culprit"] == shas[9] and out["reference"] == 100.0
    assert shas[0] not in [p["sha"] for p in out["probes"]] and out["runs"] == 4


def test_run_command_keeps_only_the_tail_and_kills_the_group_on_timeout(tmp_path: Path) -> None:
    """Output goes through files (only the tail is kept); a timeout kills children too, and is reported."""
    from workers.testing.checkout import OUTPUT_LIMIT, run_command

    chatty = run_command([sys.executable, "-c", "print('x' * 3_000_000); print('END')"], tmp_path)
    assert (
        chatty.exit_code == 0
        and chatty.stdout.rstrip().endswith("END")
        and len(chatty.stdout) <= OUTPUT_LIMIT
    )
    marker = tmp_path / "child-alive"
    code = (
        f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
        f"\"import time, pathlib; time.sleep(2); pathlib.Path({str(marker)!r}).write_text('x')\"]); time.sleep(30)"
    )
    hung = run_command([sys.executable, "-c", code], tmp_path, timeout=0.5)
    assert hung.timed_out and hung.exit_code is None and hung.duration_s < 10
    time.sleep(2.5)
    assert not marker.exists()  # the grandchild died with its group
