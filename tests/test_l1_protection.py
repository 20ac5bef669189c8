"""`l1.required_checks` cross-checked against the trunk branch's protection rules (PyGithub
`Branch.get_required_status_checks()` through the loopback, in GitHub's recorded shape)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fixtures.l1 import config_yaml, flow_suite, passing_tests
from tests.loopback_github import LoopbackGitHub
from workers.adapters.gitcache import GitCache
from workers.jobs.l1_checks import coverage_from_github
from workers.jobs.l1_job import L1Job, run_l1_job

REPO = "acme/fork"


def _coverage(gh: LoopbackGitHub) -> dict[str, Any]:
    (cov,) = [r for r in gh.state.check_runs[REPO].values() if r["name"] == "forksync / coverage"]
    return cov


def test_a_check_branch_protection_requires_is_required_by_coverage(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """Protection requires `Build / linux` (and forksync / L1); the config lists only `Lint`: coverage
    requires both Build and Lint, fails naming the missing Build, and says where the two disagree."""
    gh = loopback_github
    cfg = config_yaml(flow_suite("unit", "tests"), extra='  required_checks: ["Lint", "Docs"]\n')
    sha = gh.commit(REPO, {".github/forksync.yml": cfg, "tests/test_a.py": passing_tests(1)})
    gh.protect(REPO, "main", ["forksync / L1", "Build / linux", "Lint"])
    adapter = gh.adapter(gh.installation)
    adapter.create_check_run(REPO, name="Lint", head_sha=sha, conclusion="success")
    adapter.create_check_run(REPO, name="Docs", head_sha=sha, conclusion="success")
    run_l1_job(
        adapter,
        GitCache(tmp_path / "git"),
        tmp_path / "data",
        L1Job(REPO, sha),
        clone_url=gh.git_url(REPO),
        token=gh.token_for(gh.installation),
    )
    cov = _coverage(gh)
    assert cov["conclusion"] == "failure" and cov["output"]["title"] == "Not covered: Build / linux"
    summary = cov["output"]["summary"]
    assert (
        "`main`'s branch protection requires `Build / linux`, which `l1.required_checks` does not list"
        in summary
    )
    assert "`l1.required_checks` lists `Docs`, which `main`'s branch protection does not require" in summary
    assert "forksync / L1" not in summary.split("**Required checks vs branch protection**")[0]


def test_protection_alone_makes_coverage_run(loopback_github: LoopbackGitHub, tmp_path: Path) -> None:
    """With no l1.required_checks at all, a protected trunk still gets `forksync / coverage`;
    an unprotected one without configured checks gets none."""
    gh = loopback_github
    sha = gh.commit(REPO, {".github/forksync.yml": config_yaml(flow_suite("unit", "tests"))})
    adapter = gh.adapter(gh.installation)
    assert coverage_from_github(adapter, REPO, sha) is None
    gh.protect(REPO, "main", ["Build / linux"])
    adapter.create_check_run(REPO, name="Build / linux", head_sha=sha, conclusion="success")
    info = coverage_from_github(adapter, REPO, sha)
    assert info is not None and info.conclusion == "success"
    assert "protection requires `Build / linux`" in _coverage(gh)["output"]["summary"]


def test_protection_the_app_may_not_read_is_said_on_the_check_runs(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """Without `Administration: read` GitHub answers 403 on the protection rules: the L1 and
    coverage check runs say the cross-check could not run and which permission to grant, and the
    configured checks are still required (the 403 is not taken for an unprotected branch)."""
    gh = loopback_github
    cfg = config_yaml(flow_suite("unit", "tests"), extra='  required_checks: ["Lint"]\n')
    sha = gh.commit(REPO, {".github/forksync.yml": cfg, "tests/test_a.py": passing_tests(1)})
    gh.protect(REPO, "main", ["Build / linux"])
    gh.fail(
        403,
        times=10,
        path="/protection/required_status_checks",
        message="Resource not accessible by integration",
    )
    adapter = gh.adapter(gh.installation)
    run_l1_job(
        adapter,
        GitCache(tmp_path / "git"),
        tmp_path / "data",
        L1Job(REPO, sha),
        clone_url=gh.git_url(REPO),
        token=gh.token_for(gh.installation),
    )
    (l1,) = [r for r in gh.state.check_runs[REPO].values() if r["name"] == "forksync / L1"]
    cov = _coverage(gh)
    for check in (l1, cov):
        summary = check["output"]["summary"]
        assert "could not read `main`'s branch protection (GitHub answered 403" in summary
        assert "**Administration: read**" in summary
    assert l1["conclusion"] == "success"
    assert cov["conclusion"] == "failure" and cov["output"]["title"] == "Not covered: Lint"
    assert "Build / linux" not in cov["output"]["summary"]
