"""``forksync l1`` and ``forksync kernels`` as a user runs them: real processes, the JSON contract, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fixtures.l1 import FAILING_TEST, config_yaml, flow_suite, passing_tests
from tests.gitrepo import GitRepo

MakeRepo = Callable[[str], GitRepo]
ROOT = Path(__file__).resolve().parent.parent


def forksync(
    *args: str, env: dict[str, str] | None = None, timeout: int = 120
) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ)
    full.update(env or {})
    full["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "workers.cli", *args],
        capture_output=True,
        text=True,
        env=full,
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )


def test_l1_json_contract_and_exit_status(make_repo: MakeRepo, tmp_path: Path) -> None:
    """--json prints {"conclusion", "suites": [{name, status, passed, failed, skipped, expected,
    duration_s}]}; a new failure exits 1, and the config is read from the ref."""
    repo = make_repo("r")
    cfg = config_yaml(flow_suite("good", "tests/good"), flow_suite("bad", "tests/bad", min_tests=1))
    repo.commit(
        "suites",
        {
            ".github/forksync.yml": cfg,
            "tests/good/test_g.py": passing_tests(2),
            "tests/bad/test_b.py": FAILING_TEST,
        },
    )
    proc = forksync("l1", "--repo", str(repo.path), "--json", "--data-dir", str(tmp_path / "d"))
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert data["conclusion"] == "failure"
    keys = {"name", "status", "passed", "failed", "skipped", "expected", "duration_s"}
    assert [keys <= set(s) for s in data["suites"]] == [True, True]
    good, bad = data["suites"]
    assert (good["name"], good["status"], good["passed"], good["failed"], good["skipped"]) == (
        "good",
        "passed",
        2,
        0,
        0,
    )
    assert (bad["status"], bad["failed"], bad["expected"]) == ("failed", 1, 1)
    assert bad["failures"][0]["triage"] == "new" and bad["failures"][0]["file"] == "tests/bad/test_b.py"
    assert isinstance(good["duration_s"], float)


def test_l1_suite_selection_and_success_exit(make_repo: MakeRepo, tmp_path: Path) -> None:
    """--suite runs only the named suite; all passing exits 0 with a readable text summary."""
    repo = make_repo("r")
    cfg = config_yaml(flow_suite("good", "tests/good"), flow_suite("bad", "tests/bad"))
    repo.commit(
        "suites",
        {
            ".github/forksync.yml": cfg,
            "tests/good/test_g.py": passing_tests(2),
            "tests/bad/test_b.py": FAILING_TEST,
        },
    )
    proc = forksync("l1", "--repo", str(repo.path), "--suite", "good", "--data-dir", str(tmp_path / "d"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "success - All 1 suite(s) passed (2 tests)" in proc.stdout
    assert "bad" not in proc.stdout.split("\n", 1)[1]


def test_l1_unknown_suite_and_bad_config_are_one_line_errors(make_repo: MakeRepo, tmp_path: Path) -> None:
    """An unknown --suite and a malformed config exit 2 with one line naming the problem and remedy."""
    repo = make_repo("r")
    repo.commit("suites", {".github/forksync.yml": config_yaml(flow_suite("good"))})
    proc = forksync("l1", "--repo", str(repo.path), "--suite", "nope", "--data-dir", str(tmp_path / "d"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "no L1 suite named 'nope'; configured suites: good" in proc.stderr
    bad = tmp_path / "bad.yml"
    bad.write_text("l1:\n  suites:\n    - name: x\n      run: pytest -q\n")
    proc = forksync("l1", "--repo", str(repo.path), "--config", str(bad), "--data-dir", str(tmp_path / "d"))
    assert proc.returncode == 2 and f"{bad}:4: l1.suites[0].run: expected a list of arguments" in proc.stderr


def test_l1_gpu_suite_after_failed_canary_is_infrastructure(make_repo: MakeRepo, tmp_path: Path) -> None:
    """On a runner with no GPU the canary fails: GPU suites are 'infrastructure' without running,
    CPU suites still run, and the exit status (3) says the runner, not the change, failed."""
    repo = make_repo("r")
    cfg = config_yaml(flow_suite("cpu", "tests"), flow_suite("gpu", "tests", gpu="true"))
    repo.commit("suites", {".github/forksync.yml": cfg, "tests/test_g.py": passing_tests(1)})
    proc = forksync(
        "l1",
        "--repo",
        str(repo.path),
        "--json",
        "--data-dir",
        str(tmp_path / "d"),
        env={"CUDA_VISIBLE_DEVICES": ""},
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["conclusion"] == "cancelled"
    assert [(s["name"], s["status"]) for s in data["suites"]] == [
        ("cpu", "passed"),
        ("gpu", "infrastructure"),
    ]
    assert "runner canary failed: " in data["suites"][1]["reason"] and not data["canary"]["ok"]
    assert (
        "CPU-only build" in data["canary"]["reason"]
        or "CUDA_VISIBLE_DEVICES is empty" in data["canary"]["reason"]
    )


@pytest.mark.slow
def test_l1_interpreter_canary_lets_gpu_suites_run(make_repo: MakeRepo, tmp_path: Path) -> None:
    """--canary interpreter checks Triton on the CPU (a real kernel compiles and runs), then GPU suites run."""
    repo = make_repo("r")
    repo.commit(
        "suites",
        {
            ".github/forksync.yml": config_yaml(flow_suite("gpu", "tests", gpu="true")),
            "tests/test_g.py": passing_tests(1),
        },
    )
    proc = forksync(
        "l1", "--repo", str(repo.path), "--json", "--canary", "interpreter", "--data-dir", str(tmp_path / "d")
    )
    data = json.loads(proc.stdout)
    assert proc.returncode == 0 and data["canary"] == {"ok": True, "backend": "interpreter", "reason": ""}
    assert data["suites"][0]["status"] == "passed"


@pytest.mark.slow
def test_kernel_pack_runs_in_interpreter_and_writes_junit(tmp_path: Path) -> None:
    """`forksync kernels --junitxml` with no GPU sets TRITON_INTERPRET=1, says so, runs every kernel
    for fp32/fp16/bf16, skips only bf16 matmul with its reason, and prints one summary line."""
    xml = tmp_path / "out.xml"
    proc = forksync("kernels", "--junitxml", str(xml), env={"CUDA_VISIBLE_DEVICES": ""}, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Triton CPU interpreter (set TRITON_INTERPRET=1: " in proc.stdout
    summary = [ln for ln in proc.stdout.splitlines() if ln.startswith("forksync kernels: passed:")]
    assert len(summary) == 1 and " 0 failed" in summary[0]
    cases = ET.parse(xml).getroot().iter("testcase")
    by_kernel: dict[str, set[str]] = {}
    skipped = []
    for case in cases:
        name = case.get("name", "")
        by_kernel.setdefault(name.split("[")[0], set()).update(
            d for d in ("float32", "float16", "bfloat16") if d in name
        )
        skip = case.find("skipped")
        if skip is not None:
            skipped.append((name, skip.get("message", "")))
    for kernel in (
        "test_vector_add_matches_torch",
        "test_softmax_matches_torch",
        "test_layer_norm_matches_torch",
        "test_matmul_matches_torch",
        "test_row_sum_matches_torch",
        "test_row_max_is_exact",
    ):
        assert by_kernel[kernel] == {"float32", "float16", "bfloat16"}, kernel
    assert skipped and all("bfloat16" in n and "matmul" in n for n, _ in skipped)
    assert all("not supported by Triton's CPU interpreter" in m for _, m in skipped)
