"""L1's suites and required checks come from the trunk (the PR's base), not from the PR under
test: a PR cannot switch its own gate off by editing or deleting `.github/forksync.yml`."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.fixtures.l1 import FAILING_TEST, config_yaml, flow_suite, passing_tests
from tests.loopback_github import LoopbackGitHub
from workers.adapters.gitcache import GitCache
from workers.jobs.l1_checks import coverage_from_github
from workers.jobs.l1_job import L1Job, L1JobResult, run_l1_job

REPO = "acme/fork"
TWO_SUITES = config_yaml(flow_suite("unit", "tests"), flow_suite("lit", "lit"))


def _pr(gh: LoopbackGitHub, files: dict[str, str | None]) -> tuple[str, int]:
    """A PR branch cut from main with ``files`` changed: (head sha, PR number)."""
    base = gh.head(REPO, "main")
    assert base is not None
    subprocess.run(["git", "--git-dir", str(gh.bare(REPO)), "update-ref", "refs/heads/pr", base], check=True)
    head = gh.commit(REPO, files, branch="pr")
    return head, gh.add_pull(REPO, "pr")


def _job(gh: LoopbackGitHub, tmp_path: Path, sha: str, number: int) -> L1JobResult:
    return run_l1_job(
        gh.adapter(gh.installation),
        GitCache(tmp_path / "git"),
        tmp_path / "data",
        L1Job(REPO, sha, pr_number=number),
        clone_url=gh.git_url(REPO),
        token=gh.token_for(gh.installation),
        own_login="forksync[bot]",
    )


def _check(gh: LoopbackGitHub, sha: str) -> dict[str, Any]:
    (run,) = [
        r for r in gh.state.check_runs[REPO].values() if r["name"] == "forksync / L1" and r["head_sha"] == sha
    ]
    return run


def _trunk(gh: LoopbackGitHub) -> None:
    gh.commit(
        REPO,
        {
            ".github/forksync.yml": TWO_SUITES,
            "tests/test_a.py": passing_tests(2),
            "lit/test_l.py": passing_tests(2, "lit"),
        },
    )


def test_a_pr_deleting_the_config_still_runs_the_trunk_suites(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """Deleting `.github/forksync.yml` in the PR does not make L1 neutral ("no suites"): the
    trunk's suites run, the check names the drop, and it fails until a maintainer approves it."""
    gh = loopback_github
    _trunk(gh)
    head, number = _pr(gh, {".github/forksync.yml": None, "tests/test_a.py": FAILING_TEST})
    result = _job(gh, tmp_path, head, number)
    assert result.run is not None and [s.name for s in result.run.suites] == ["unit", "lit"]
    check = _check(gh, head)
    assert check["conclusion"] == "failure"
    assert check["output"]["title"].startswith("Drops unit, lit without a maintainer's /approve")
    assert "drops suite(s) `unit`, `lit`: still run here" in check["output"]["summary"]


def test_dropping_a_suite_and_breaking_it_fails(loopback_github: LoopbackGitHub, tmp_path: Path) -> None:
    """A PR that drops `lit` from its config and breaks lit's tests gets the failure of `lit`,
    not a success on the one suite it left."""
    gh = loopback_github
    _trunk(gh)
    head, number = _pr(
        gh, {".github/forksync.yml": config_yaml(flow_suite("unit", "tests")), "lit/test_l.py": FAILING_TEST}
    )
    result = _job(gh, tmp_path, head, number)
    assert result.run is not None
    lit = next(s for s in result.run.suites if s.name == "lit")
    assert lit.status == "failed"
    check = _check(gh, head)
    assert check["conclusion"] == "failure" and "lit" in check["output"]["title"]


def test_a_maintainers_approve_lets_a_drop_through(loopback_github: LoopbackGitHub, tmp_path: Path) -> None:
    """With a maintainer's /approve naming the head, the dropped suite no longer runs and the check
    passes, saying who approved; an approval of an older head does not count."""
    from workers.commands.approval import approval_body, approval_marker

    gh = loopback_github
    _trunk(gh)
    head, number = _pr(
        gh, {".github/forksync.yml": config_yaml(flow_suite("unit", "tests")), "lit/test_l.py": None}
    )
    adapter = gh.adapter(gh.installation)
    adapter.upsert_comment(
        REPO, number, marker=approval_marker(number), body=approval_body(number, "f" * 40, "maint")
    )
    _job(gh, tmp_path, head, number)
    assert _check(gh, head)["conclusion"] == "failure", "an approval of another head must not count"
    adapter.upsert_comment(
        REPO, number, marker=approval_marker(number), body=approval_body(number, head, "maint")
    )
    result = _job(gh, tmp_path, head, number)
    assert result.run is not None and [s.name for s in result.run.suites] == ["unit"]
    check = _check(gh, head)
    assert check["conclusion"] == "success"
    assert "drops suite(s) `lit`: approved by @maint, not run" in check["output"]["summary"]


def test_a_pr_adding_a_suite_runs_the_union(loopback_github: LoopbackGitHub, tmp_path: Path) -> None:
    """A PR adding a suite runs the trunk's suites and its new one, and the check says it adds it."""
    gh = loopback_github
    _trunk(gh)
    cfg = config_yaml(flow_suite("unit", "tests"), flow_suite("lit", "lit"), flow_suite("extra", "extra"))
    head, number = _pr(gh, {".github/forksync.yml": cfg, "extra/test_e.py": passing_tests(1, "e")})
    result = _job(gh, tmp_path, head, number)
    assert result.run is not None and [s.name for s in result.run.suites] == ["unit", "lit", "extra"]
    check = _check(gh, head)
    assert (
        check["conclusion"] == "success"
        and "adds suite(s) `extra`: run here too" in check["output"]["summary"]
    )


def test_required_checks_come_from_the_trunk_too(loopback_github: LoopbackGitHub, tmp_path: Path) -> None:
    """A PR removing `Lint` from required_checks still has `forksync / coverage` require it."""
    gh = loopback_github
    gh.commit(
        REPO,
        {
            ".github/forksync.yml": config_yaml(
                flow_suite("unit", "tests"), extra='  required_checks: ["Lint"]\n'
            ),
            "tests/test_a.py": passing_tests(1),
        },
    )
    head, _number = _pr(gh, {".github/forksync.yml": config_yaml(flow_suite("unit", "tests"))})
    info = coverage_from_github(gh.adapter(gh.installation), REPO, head)
    assert info is not None and info.conclusion == "failure"
    (cov,) = [r for r in gh.state.check_runs[REPO].values() if r["name"] == "forksync / coverage"]
    assert cov["output"]["title"] == "Not covered: Lint"
