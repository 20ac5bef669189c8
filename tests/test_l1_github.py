"""L1 through the loopback GitHub: the check run goes in progress, then completes in place with
the table, grouped failures and annotations; coverage and infrastructure issues are published."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.fixtures.l1 import FAILING_TEST, config_yaml, flow_suite, passing_tests
from tests.loopback_github import APP_BOT_LOGIN, LoopbackGitHub
from workers.adapters.gitcache import GitCache
from workers.jobs.l1_job import L1Job, run_l1_job
from workers.testing.canary import CanaryResult

REPO = "acme/fork"


def job_for(gh: LoopbackGitHub, tmp_path: Path, sha: str, host_canary: Any = None, **kw: Any):  # type: ignore[no-untyped-def]
    return run_l1_job(
        gh.adapter(gh.installation),
        GitCache(tmp_path / "git"),
        tmp_path / "data",
        L1Job(REPO, sha, **kw),
        clone_url=gh.git_url(REPO),
        token=gh.token_for(gh.installation),
        host_canary=host_canary,
    )


def disk_full() -> CanaryResult:
    return CanaryResult(False, "host", "only 3 MiB free on the runner's disk", 0.0)


def l1_runs(gh: LoopbackGitHub) -> list[dict[str, Any]]:
    return [r for r in gh.state.check_runs[REPO].values() if r["name"] == "forksync / L1"]


def test_l1_check_run_reports_new_failure_with_annotation_and_updates_in_place(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """A new failure completes `forksync / L1` as failure: per-suite table, the failure grouped
    with its first lines, an annotation at file:line; a rerun updates the same check run."""
    gh = loopback_github
    cfg = config_yaml(flow_suite("unit", "tests"))
    sha = gh.commit(
        REPO,
        {".github/forksync.yml": cfg, "tests/test_a.py": FAILING_TEST, "tests/test_b.py": passing_tests(2)},
    )
    result = job_for(gh, tmp_path, sha)
    assert result.status == "done" and result.run is not None
    (run,) = l1_runs(gh)
    assert (run["head_sha"], run["status"], run["conclusion"]) == (sha, "completed", "failure")
    assert run["output"]["title"] == "1 new failure(s)"
    summary = run["output"]["summary"]
    assert "| suite | status | passed | failed | skipped | expected | duration | log |" in summary
    assert "| unit | ❌ failed | 2 | 1 | 0 |" in summary
    assert "This check fails only on new failures" in summary
    text = run["output"]["text"]
    assert "#### new:" in text and "`tests.test_a::test_adds_one`" in text and "off by one" in text
    (note,) = gh.state.annotations[run["id"]]
    assert (note["path"], note["start_line"], note["annotation_level"]) == ("tests/test_a.py", 6, "failure")
    # In progress first: the create carried status in_progress, the completion came as an update.
    methods = [(m, p) for m, p, _ in gh.requests if "check-runs" in p and m in ("POST", "PATCH")]
    assert methods[0][0] == "POST" and methods[-1][0] == "PATCH"

    job_for(gh, tmp_path, sha)
    assert [r["id"] for r in l1_runs(gh)] == [run["id"]], "a rerun must update the check run, not add one"


def test_coverage_check_names_missing_required_check(loopback_github: LoopbackGitHub, tmp_path: Path) -> None:
    """With required_checks, `forksync / coverage` fails naming the one that never ran, not the one that did."""
    gh = loopback_github
    cfg = config_yaml(flow_suite("unit", "tests"), extra='  required_checks: ["Build / linux", "Lint"]\n')
    sha = gh.commit(REPO, {".github/forksync.yml": cfg, "tests/test_b.py": passing_tests(2)})
    gh.adapter(gh.installation).create_check_run(
        REPO, name="Build / linux", head_sha=sha, conclusion="success"
    )
    job_for(gh, tmp_path, sha)
    (l1,) = l1_runs(gh)
    assert l1["conclusion"] == "success" and l1["output"]["title"] == "All 1 suite(s) passed (2 tests)"
    (cov,) = [r for r in gh.state.check_runs[REPO].values() if r["name"] == "forksync / coverage"]
    assert cov["conclusion"] == "failure" and cov["output"]["title"] == "Not covered: Lint"
    assert "`Lint` did not run on this commit" in cov["output"]["summary"]
    assert "✅ `Build / linux` ran" in cov["output"]["summary"]


def test_infrastructure_failure_cancels_and_files_tracking_issue(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """A suite dying of a known infrastructure cause, on a runner whose host canary then fails too,
    completes L1 as cancelled (not the PR's failure), says it retries elsewhere, and opens one
    labelled tracking issue, updated (not duplicated) next time."""
    gh = loopback_github
    run = f'"{sys.executable}", "-c", "import sys; print(\'No space left on device\'); sys.exit(1)"'
    cfg = f"l1:\n  suites:\n    - {{name: disk, run: [{run}], timeout: 30}}\n"
    sha = gh.commit(REPO, {".github/forksync.yml": cfg})
    result = job_for(gh, tmp_path, sha, host_canary=disk_full)
    assert result.infrastructure and result.max_infra_retries == 2
    (check,) = l1_runs(gh)
    # Attempt 0 of 2: the task will retry, so the check stays in progress and says so.
    assert (
        check["status"] == "in_progress" and "retrying on another runner, 1 of 2" in check["output"]["title"]
    )
    job_for(gh, tmp_path, sha, attempt=2, host_canary=disk_full)
    (check,) = l1_runs(gh)
    assert check["conclusion"] == "cancelled" and "not caused by this change" in check["output"]["title"]
    issues = list(gh.state.issues[REPO].values())
    assert len(issues) == 1 and issues[0]["title"].startswith("[infra] out of disk space on ")
    assert "infrastructure" in [
        lbl if isinstance(lbl, str) else lbl.get("name") for lbl in issues[0]["labels"]
    ]


def test_bad_config_fails_the_check_with_the_line(loopback_github: LoopbackGitHub, tmp_path: Path) -> None:
    """A malformed forksync.yml completes L1 as failure quoting the file and line, never a crash."""
    gh = loopback_github
    sha = gh.commit(REPO, {".github/forksync.yml": "l1:\n  suites:\n    - name: u\n      run: pytest -q\n"})
    result = job_for(gh, tmp_path, sha)
    assert result.status == "config_error"
    (check,) = l1_runs(gh)
    assert check["conclusion"] == "failure"
    assert ":4: l1.suites[0].run: expected a list of arguments" in check["output"]["summary"]


def test_trunk_push_records_results_without_a_check_run(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """A push to the trunk branch records results for triage and posts no check run; other branches are skipped."""
    gh = loopback_github
    sha = gh.commit(
        REPO,
        {
            ".github/forksync.yml": config_yaml(flow_suite("unit", "tests")),
            "tests/test_b.py": passing_tests(3),
        },
    )
    other = job_for(gh, tmp_path, sha, trunk=True, push_ref="refs/heads/feature")
    assert other.status == "skipped" and other.run is None
    result = job_for(gh, tmp_path, sha, trunk=True, push_ref="refs/heads/main")
    assert result.run is not None and result.run.trunk and l1_runs(gh) == []
    from core.store import open_store
    from workers.testing.triage import TrunkResults

    assert TrunkResults(open_store(None, tmp_path / "data"), REPO).baseline("unit") == 3


def test_handlers_start_l1_only_for_the_right_events(monkeypatch: Any) -> None:
    """PR opened/synchronize and L1 re-requested enqueue run_l1; a closed PR or another check does not."""
    from core import tasknames
    from workers.app.handlers import handlers_for
    from workers.tasks import l1 as tasks

    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(tasks.run_l1, "delay", lambda **kw: sent.append(kw))
    tasks.l1_on_pull_request(installation_id=1, repo=REPO, number=3, action="synchronize", head_sha="a" * 40)
    tasks.l1_on_pull_request(installation_id=1, repo=REPO, number=3, action="closed", head_sha="b" * 40)
    tasks.l1_on_rerequest(
        installation_id=1,
        repo=REPO,
        check_run_id=7,
        name="forksync / L1",
        head_sha="c" * 40,
        action="rerequested",
    )
    tasks.l1_on_rerequest(
        installation_id=1, repo=REPO, check_run_id=8, name="Build", head_sha="d" * 40, action="rerequested"
    )
    assert [s["head_sha"][0] for s in sent] == ["a", "c"] and sent[0]["number"] == 3
    assert sent[0]["after_push"] is True and "after_push" not in sent[1], "a re-run button always runs"
    assert tasks.l1_on_pull_request in handlers_for(tasknames.ON_PULL_REQUEST)


def test_a_pr_re_targeted_runs_l1_again_and_other_edits_do_not(monkeypatch: Any) -> None:
    """A stacked PR re-targeted to the trunk (``edited`` with a base change) is gated and tested again,
    as a full run (not an after-push run a split may have covered); a body edit starts nothing."""
    from workers.tasks import l1 as tasks

    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(tasks.run_l1, "delay", lambda **kw: sent.append(kw))
    tasks.l1_on_pull_request(
        installation_id=1, repo=REPO, number=4, action="edited", head_sha="e" * 40, base_changed=True
    )
    tasks.l1_on_pull_request(installation_id=1, repo=REPO, number=4, action="edited", head_sha="f" * 40)
    assert [(s["head_sha"][0], s["number"], s["after_push"]) for s in sent] == [("e", 4, False)]


def test_gpu_suites_on_a_cpu_worker_are_handed_to_a_gpu_runner(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """On a CPU-queue worker, a config with GPU suites runs nothing there: the check run is created
    in progress and the job reports it needs the GPU queue (the task re-sends it there)."""
    gh = loopback_github
    sha = gh.commit(
        REPO,
        {
            ".github/forksync.yml": config_yaml(flow_suite("gpu", "tests", gpu="true")),
            "tests/test_b.py": passing_tests(1),
        },
    )
    result = job_for(gh, tmp_path, sha, gpu_runner=False)
    assert result.status == "needs_gpu" and result.run is None
    (check,) = l1_runs(gh)
    assert check["status"] == "in_progress"


def test_outside_pr_runs_only_after_approval_of_its_head(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """A PR from an outside fork is not run on our runners until a maintainer's /approve names its
    head: first a 'waiting for a maintainer' check; after approval the head is fetched and tested."""
    from workers.commands.approval import approval_body, approval_marker

    gh = loopback_github
    gh.commit(
        REPO,
        {
            ".github/forksync.yml": config_yaml(flow_suite("unit", "tests")),
            "tests/test_b.py": passing_tests(1),
        },
    )
    gh.add_repo("stranger/fork")
    base = gh.head(REPO, "main")
    assert base is not None
    import subprocess

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
    sha = gh.commit("stranger/fork", {"tests/test_c.py": passing_tests(2, "new")}, branch="main")
    number = gh.add_pull(REPO, "main", head_repo="stranger/fork", author="stranger")
    adapter = gh.adapter(gh.installation)

    def job(**kw: Any):  # type: ignore[no-untyped-def]
        return run_l1_job(
            adapter,
            GitCache(tmp_path / "git"),
            tmp_path / "data",
            L1Job(REPO, sha, pr_number=number, **kw),
            clone_url=gh.git_url(REPO),
            token=gh.token_for(gh.installation),
            clone_url_for=gh.git_url,
            own_login=APP_BOT_LOGIN,
        )

    waiting = job()
    assert waiting.status == "needs_approval" and waiting.run is None
    (check,) = l1_runs(gh)
    assert check["conclusion"] == "action_required" and "/approve" in check["output"]["summary"]
    adapter.upsert_comment(
        REPO, number, marker=approval_marker(number), body=approval_body(number, sha, "maintainer")
    )
    done = job()
    assert done.status == "done" and done.run is not None and done.run.suites[0].passed == 3
    (check,) = l1_runs(gh)
    assert check["conclusion"] == "success"
