"""Skipped is not run: the omitted-suite watchdog counts executed tests, against min_tests and the
trunk's usual executed count, and the check names the skip reasons."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.fixtures.l1 import config_yaml, flow_suite, passing_tests
from tests.loopback_github import LoopbackGitHub
from workers.adapters.gitcache import GitCache
from workers.jobs.l1_job import L1Job, L1JobResult, run_l1_job

REPO = "acme/fork"


def skipped_tests(count: int, reason: str, prefix: str = "sk") -> str:
    return "import pytest\n\n" + "".join(
        f"@pytest.mark.skip(reason={reason!r})\ndef test_{prefix}_{i}():\n    assert True\n\n"
        for i in range(count)
    )


def _job(gh: LoopbackGitHub, tmp_path: Path, sha: str, **kw: Any) -> L1JobResult:
    return run_l1_job(
        gh.adapter(gh.installation),
        GitCache(tmp_path / "git"),
        tmp_path / "data",
        L1Job(REPO, sha, **kw),
        clone_url=gh.git_url(REPO),
        token=gh.token_for(gh.installation),
    )


def _check(gh: LoopbackGitHub, sha: str) -> dict[str, Any]:
    (run,) = [
        r for r in gh.state.check_runs[REPO].values() if r["name"] == "forksync / L1" and r["head_sha"] == sha
    ]
    return run


def test_a_suite_whose_tests_all_skip_is_omitted(loopback_github: LoopbackGitHub, tmp_path: Path) -> None:
    """Five tests that all skip do not pass `min_tests: 3` ("passed (0 tests)"): the suite is
    omitted, the check fails, and it names the skip reason with its count."""
    gh = loopback_github
    sha = gh.commit(
        REPO,
        {
            ".github/forksync.yml": config_yaml(flow_suite("unit", "tests", min_tests=3)),
            "tests/test_a.py": skipped_tests(5, "needs a GPU"),
        },
    )
    result = _job(gh, tmp_path, sha)
    assert result.run is not None
    (suite,) = result.run.suites
    assert (suite.status, suite.passed, suite.skipped, suite.executed) == ("omitted", 0, 5, 0)
    check = _check(gh, sha)
    assert check["conclusion"] == "failure" and check["output"]["title"] == "unit omitted"
    assert (
        "executed 0 tests (5 skipped: needs a GPU ×5): a skipped test is not a run"
        in check["output"]["summary"]
    )


def test_skips_below_the_trunk_share_are_an_omission(loopback_github: LoopbackGitHub, tmp_path: Path) -> None:
    """Trunk executes 10 tests; a PR that reports 10 but skips 6 executed 4, under 80% of the
    trunk's count: omitted, with the trunk count and the reasons in the check."""
    gh = loopback_github
    trunk = gh.commit(
        REPO,
        {
            ".github/forksync.yml": config_yaml(flow_suite("unit", "tests")),
            "tests/test_a.py": passing_tests(10),
        },
    )
    _job(gh, tmp_path, trunk, trunk=True, push_ref="refs/heads/main")
    subprocess.run(["git", "--git-dir", str(gh.bare(REPO)), "update-ref", "refs/heads/pr", trunk], check=True)
    head = gh.commit(
        REPO, {"tests/test_a.py": passing_tests(4) + skipped_tests(6, "flaky on CI")}, branch="pr"
    )
    number = gh.add_pull(REPO, "pr")
    result = _job(gh, tmp_path, head, pr_number=number)
    assert result.run is not None and result.run.suites[0].status == "omitted"
    summary = _check(gh, head)["output"]["summary"]
    assert "executed 4 tests, under 80% of its trunk baseline of 10 executed (at least 8 expected)" in summary
    assert "6 skipped: flaky on CI ×6" in summary


def test_a_passing_suite_with_skips_says_why(loopback_github: LoopbackGitHub, tmp_path: Path) -> None:
    """Enough executed tests pass; the check still lists what was skipped and why."""
    gh = loopback_github
    sha = gh.commit(
        REPO,
        {
            ".github/forksync.yml": config_yaml(flow_suite("unit", "tests", min_tests=3)),
            "tests/test_a.py": passing_tests(3) + skipped_tests(2, "slow"),
        },
    )
    _job(gh, tmp_path, sha)
    check = _check(gh, sha)
    assert (
        check["conclusion"] == "success"
        and check["output"]["title"] == "All 1 suite(s) passed (3 tests, 2 skipped)"
    )
    assert "- **unit**: 2 skipped (not run, not counted): slow ×2" in check["output"]["summary"]
