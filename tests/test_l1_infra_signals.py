"""Infrastructure is classified from the runner's and harness's own signals (exit by signal, a
cause in the log of a run without results, the canary failing after the suite), never from the
text of a test's assertion; a suspected infrastructure failure is settled by re-running the
canary: if it passes, the failure is the PR's."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.fixtures.l1 import config_yaml, flow_suite, passing_tests
from tests.loopback_github import LoopbackGitHub
from workers.adapters.gitcache import GitCache
from workers.jobs.l1_job import INFRA_LABEL, L1Job, L1JobResult, run_l1_job
from workers.testing.canary import CanaryResult

REPO = "acme/fork"
HEALTHY = CanaryResult(True, "host", "", 0.0)
SICK = CanaryResult(False, "host", "only 3 MiB of memory available on the runner", 0.0)
KILLED = f'"{sys.executable}", "-c", "import os; os.kill(os.getpid(), 9)"'


def _job(gh: LoopbackGitHub, tmp_path: Path, sha: str, **kw: Any) -> L1JobResult:
    return run_l1_job(
        gh.adapter(gh.installation),
        GitCache(tmp_path / "git"),
        tmp_path / "data",
        L1Job(REPO, sha),
        clone_url=gh.git_url(REPO),
        token=gh.token_for(gh.installation),
        max_infra_retries=0,
        **kw,
    )


def _check(gh: LoopbackGitHub, sha: str) -> dict[str, Any]:
    (run,) = [
        r for r in gh.state.check_runs[REPO].values() if r["name"] == "forksync / L1" and r["head_sha"] == sha
    ]
    return run


def _infra_issues(gh: LoopbackGitHub) -> list[dict[str, Any]]:
    return [i for i in gh.state.issues[REPO].values() if INFRA_LABEL in i["labels"]]


def test_an_assertion_mentioning_a_network_error_is_the_prs_failure(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """`assert ..., "Connection reset by peer"` fails the check as a new failure: not retried,
    not cancelled, no infrastructure issue."""
    gh = loopback_github
    test = "def test_fetch():\n    assert 1 == 2, 'upstream said: Connection reset by peer'\n"
    sha = gh.commit(
        REPO,
        {
            ".github/forksync.yml": config_yaml(flow_suite("unit", "tests")),
            "tests/test_a.py": test + passing_tests(1),
        },
    )
    result = _job(gh, tmp_path, sha)
    assert result.run is not None and not result.infrastructure
    check = _check(gh, sha)
    assert (check["conclusion"], check["output"]["title"]) == ("failure", "1 new failure(s)")
    assert _infra_issues(gh) == []


def test_exit_by_signal_is_infrastructure_only_if_the_canary_fails_too(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """A suite killed by SIGKILL on a runner whose host canary then fails is infrastructure
    (cancelled, issue filed); on a healthy runner the same death is the PR's (omitted, failure)."""
    gh = loopback_github
    sha = gh.commit(
        REPO,
        {".github/forksync.yml": f"l1:\n  suites:\n    - {{name: unit, run: [{KILLED}], timeout: 30}}\n"},
    )
    sick = _job(gh, tmp_path, sha, host_canary=lambda: SICK)
    assert sick.infrastructure and sick.run is not None
    assert sick.run.suites[0].infra_cause == "killed by SIGKILL"
    assert _check(gh, sha)["conclusion"] == "cancelled"
    (issue,) = _infra_issues(gh)
    assert issue["title"].startswith("[infra] killed by SIGKILL on ")

    healthy = _job(gh, tmp_path, sha, host_canary=lambda: HEALTHY)
    assert healthy.run is not None and not healthy.infrastructure
    suite = healthy.run.suites[0]
    assert suite.status == "omitted" and suite.infra_cause is None
    assert (
        "killed by SIGKILL, but the host canary passed after the suite: the runner is healthy" in suite.reason
    )
    assert _check(gh, sha)["conclusion"] == "failure"


def _canaries(*results: bool) -> Iterator[CanaryResult]:
    for ok in results:
        yield CanaryResult(ok, "cuda:H200", "" if ok else "CUDA error: device lost", 0.1)


def test_a_gpu_suite_failing_and_then_the_canary_is_infrastructure(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """A GPU suite whose tests fail, with the GPU canary passing before it and failing right after,
    is the runner's (the device died under it); the same failures with a healthy canary after
    are the PR's."""
    gh = loopback_github
    test = "def test_kernel():\n    assert False, 'wrong values'\n"
    sha = gh.commit(
        REPO,
        {
            ".github/forksync.yml": config_yaml(flow_suite("gpu", "tests", gpu="true")),
            "tests/test_a.py": test,
        },
    )
    died = _canaries(True, False)
    result = _job(gh, tmp_path, sha, canary=lambda: next(died))
    assert result.run is not None and result.infrastructure
    assert result.run.suites[0].infra_cause == "runner canary failed after the suite"
    fine = _canaries(True, True)
    result = _job(gh, tmp_path, sha, canary=lambda: next(fine))
    assert (
        result.run is not None
        and result.run.suites[0].status == "failed"
        and result.run.conclusion == "failure"
    )
