"""Running suites as a worker does: real pytest processes in a clean worktree, each status with its reason."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from core.config import Suite
from tests.fixtures.l1 import FAILING_TEST, passing_tests, pytest_suite
from tests.gitrepo import GitRepo
from workers.engine.git import Repository
from workers.testing.suites import checkout, run_suite

MakeRepo = Callable[[str], GitRepo]


def run_at_head(repo: GitRepo, suite: Suite, tmp_path: Path, baseline: int | None = None):  # type: ignore[no-untyped-def]
    with checkout(repo.path, "HEAD", tmp_path / "worktrees") as (workdir, _sha):
        return run_suite(suite, workdir, tmp_path / "logs", baseline=baseline)


def test_passing_suite_passes_and_keeps_its_log(make_repo: MakeRepo, tmp_path: Path) -> None:
    """A suite whose tests all pass is 'passed' with its counts, duration and a kept log."""
    repo = make_repo("r")
    repo.commit("tests", {"tests/test_a.py": passing_tests(3)})
    out = run_at_head(repo, pytest_suite(), tmp_path)
    assert (out.status, out.passed, out.failed, out.skipped, out.reason) == ("passed", 3, 0, 0, "")
    assert out.duration_s > 0 and Path(out.log_path).read_text().count("passed") >= 1
    assert out.exit_code == 0


def test_failing_suite_names_the_test_and_location(make_repo: MakeRepo, tmp_path: Path) -> None:
    """A failing test makes the suite 'failed', with the test id, message and repository file:line."""
    repo = make_repo("r")
    repo.commit("tests", {"tests/test_a.py": FAILING_TEST, "tests/test_b.py": passing_tests(2)})
    out = run_at_head(repo, pytest_suite(), tmp_path)
    assert (out.status, out.passed, out.failed) == ("failed", 2, 1)
    (failure,) = out.failures
    assert failure.test_id == "tests.test_a::test_adds_one"
    assert (failure.file, failure.line) == ("tests/test_a.py", 6)
    assert "off by one" in failure.message and failure.signature


def test_suite_that_crashes_before_results_is_omitted(make_repo: MakeRepo, tmp_path: Path) -> None:
    """A suite that dies before writing JUnit XML is 'omitted' (a failure), never passed."""
    repo = make_repo("r")
    repo.commit("tests", {"crash.py": "import os\nprint('starting')\nos._exit(3)\n"})
    suite = Suite(name="crashy", run=(sys.executable, "crash.py", "--junitxml={junit}"), timeout=30)
    out = run_at_head(repo, suite, tmp_path)
    assert out.status == "omitted"
    assert "crashed before writing results" in out.reason and "exit code 3" in out.reason
    assert "starting" in Path(out.log_path).read_text()
    assert out.log_tail == "starting", "the check run shows the log's end when no test explains the failure"


def test_suite_with_zero_tests_is_omitted(make_repo: MakeRepo, tmp_path: Path) -> None:
    """A suite that collects 0 tests (wrong path, everything deselected) is omitted, not passed."""
    repo = make_repo("r")
    repo.commit("tests", {"tests/test_a.py": passing_tests(2)})
    out = run_at_head(
        repo,
        pytest_suite(
            run=(
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "tests",
                "-k",
                "nothing_matches",
                "--junitxml={junit}",
            )
        ),
        tmp_path,
    )
    assert out.status == "omitted" and out.reason.startswith("ran 0 tests")
    assert out.passed == 0


def test_suite_under_min_tests_is_omitted(make_repo: MakeRepo, tmp_path: Path) -> None:
    """Fewer tests than min_tests is omitted, and the reason gives both numbers."""
    repo = make_repo("r")
    repo.commit("tests", {"tests/test_a.py": passing_tests(3)})
    out = run_at_head(repo, pytest_suite(min_tests=5), tmp_path)
    assert (out.status, out.passed, out.expected) == ("omitted", 3, 5)
    assert out.reason == "executed 3 tests, fewer than min_tests 5"


def test_suite_under_baseline_fraction_is_omitted(make_repo: MakeRepo, tmp_path: Path) -> None:
    """Under 80% of the rolling trunk baseline is omitted; at or above it passes."""
    repo = make_repo("r")
    repo.commit("tests", {"tests/test_a.py": passing_tests(7)})
    low = run_at_head(repo, pytest_suite(), tmp_path, baseline=10)
    assert low.status == "omitted" and "under 80% of its trunk baseline of 10" in low.reason
    assert low.expected == 8
    ok = run_at_head(repo, pytest_suite(), tmp_path, baseline=8)
    assert ok.status == "passed" and ok.expected == 7


def test_timed_out_suite_is_killed_with_its_grandchild(make_repo: MakeRepo, tmp_path: Path) -> None:
    """A suite past its timeout is 'timed_out' and its whole process group dies, grandchild included."""
    pidfile = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
    )
    repo = make_repo("r")
    repo.commit("sleepy", {"sleepy.py": script})
    suite = Suite(name="sleepy", run=(sys.executable, "sleepy.py"), timeout=3)
    started = time.monotonic()
    out = run_at_head(repo, suite, tmp_path)
    assert time.monotonic() - started < 15
    assert out.status == "timed_out" and "3 s timeout" in out.reason
    grandchild = int(pidfile.read_text())
    for _ in range(50):  # reaped by init shortly after SIGKILL
        if not _alive(grandchild):
            break
        time.sleep(0.1)
    assert not _alive(grandchild), "the grandchild survived the suite's timeout"
    assert "killed after 3 s" in Path(out.log_path).read_text()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"


def test_infrastructure_cause_in_log_is_not_the_change(make_repo: MakeRepo, tmp_path: Path) -> None:
    """A suite that dies with a known infrastructure cause in its log is 'infrastructure', naming it."""
    repo = make_repo("r")
    repo.commit(
        "tests",
        {
            "gpu.py": "import sys\nprint('RuntimeError: CUDA error: unspecified launch failure')\n"
            "sys.exit(1)\n"
        },
    )
    out = run_at_head(repo, Suite(name="gpu", run=(sys.executable, "gpu.py"), timeout=30), tmp_path)
    assert out.status == "infrastructure"
    assert out.infra_cause == "CUDA unspecified launch failure" and "Not caused by this change" in out.reason


def test_a_failing_tests_own_text_is_never_infrastructure(make_repo: MakeRepo, tmp_path: Path) -> None:
    """A test that fails with "No space left on device" or "Connection reset by peer" in its own
    message is the change's failure: the text inside an assertion is not a runner signal."""
    tests = (
        "def test_disk():\n    raise OSError('[Errno 28] No space left on device')\n\n"
        "def test_net():\n    assert False, 'Connection reset by peer'\n"
    )
    repo = make_repo("r")
    repo.commit("tests", {"tests/test_a.py": tests})
    out = run_at_head(repo, pytest_suite(), tmp_path)
    assert (out.status, out.infra_cause, out.failed) == ("failed", None, 2)


def test_missing_command_and_cwd_did_not_run(make_repo: MakeRepo, tmp_path: Path) -> None:
    """A command not on PATH and a cwd absent at this commit are omitted with a reason, not a crash."""
    repo = make_repo("r")
    repo.commit("x", {"a.txt": "a\n"})
    out = run_at_head(repo, Suite(name="x", run=("no-such-runner-xyz", "{junit}")), tmp_path)
    assert out.status == "omitted" and "command not found: 'no-such-runner-xyz'" in out.reason
    out = run_at_head(repo, Suite(name="y", run=(sys.executable, "-V"), cwd="python/test"), tmp_path)
    assert out.status == "omitted" and "cwd 'python/test' does not exist" in out.reason


def test_worktree_is_detached_clean_and_removed_even_on_failure(make_repo: MakeRepo, tmp_path: Path) -> None:
    """The checkout is a detached worktree at the ref, without the user's uncommitted files, and it
    is removed and pruned afterwards even when the block raises."""
    repo = make_repo("r")
    sha = repo.commit("x", {"a.txt": "a\n"})
    (repo.path / "dirty.txt").write_text("uncommitted\n")
    with pytest.raises(RuntimeError), checkout(repo.path, "main", tmp_path / "wt") as (workdir, got):
        assert got == sha and (workdir / "a.txt").exists() and not (workdir / "dirty.txt").exists()
        assert Repository(workdir).text("rev-parse", "--abbrev-ref", "HEAD") == "HEAD"  # detached
        raise RuntimeError("suite runner blew up")
    assert not workdir.exists()
    assert str(workdir) not in repo.git("worktree", "list")
    assert (repo.path / "dirty.txt").read_text() == "uncommitted\n"  # the user's tree is untouched


def test_infrastructure_retries_are_bounded(make_repo: MakeRepo, tmp_path: Path) -> None:
    """An infrastructure death is retried at most l1.max_infra_retries times; then the run is
    'cancelled' (not the change's failure), each attempt's log kept."""
    from core.config import L1Config, RepoConfig
    from workers.testing.l1 import run_l1_for_ref

    counter = tmp_path / "attempts"
    script = (
        f"import sys\nopen({str(counter)!r}, 'a').write('x')\n"
        "print('fatal: unable to access: Could not resolve host: pypi.org')\nsys.exit(1)\n"
    )
    repo = make_repo("r")
    repo.commit("net", {"net.py": script})
    config = RepoConfig(
        l1=L1Config(
            suites=(Suite(name="net", run=(sys.executable, "net.py"), timeout=30),), max_infra_retries=2
        )
    )
    from workers.testing.canary import CanaryResult

    offline = CanaryResult(False, "host", "no route to the package index", 0.0)
    run = run_l1_for_ref(repo.path, "HEAD", config, data_dir=tmp_path / "data", host_canary=lambda: offline)
    (suite,) = run.suites
    assert counter.read_text() == "xxx", "1 run + 2 retries, no more"
    assert (suite.status, suite.attempts, suite.infra_cause) == ("infrastructure", 3, "network failure")
    assert run.conclusion == "cancelled"
    assert (
        Path(suite.log_path).name == "net.attempt3.log" and (Path(suite.log_path).parent / "net.log").exists()
    )
