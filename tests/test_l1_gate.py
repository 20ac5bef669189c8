"""L1 through the loopback GitHub: outside PRs wait for a maintainer's /approve (opened, pushed,
re-run), /retest SUITE reruns only those suites, trunk failures file tracking issues, and a
runner's infrastructure issue closes after clean runs."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path
from typing import Any

from core.render import marker
from tests.fixtures.l1 import FAILING_TEST, config_yaml, flow_suite, passing_tests
from tests.loopback_github import LoopbackGitHub
from workers.adapters.gitcache import GitCache
from workers.commands.approval import approval_body, approval_marker
from workers.jobs.l1_job import INFRA_LABEL, L1Job, L1JobResult, run_l1_job
from workers.testing.canary import CanaryResult

REPO = "acme/fork"
OUTSIDER = "stranger/fork"


def run_job(gh: LoopbackGitHub, tmp_path: Path, sha: str, host_canary: Any = None, **kw: Any) -> L1JobResult:
    return run_l1_job(
        gh.adapter(gh.installation),
        GitCache(tmp_path / "git"),
        tmp_path / "data",
        L1Job(REPO, sha, **kw),
        clone_url=gh.git_url(REPO),
        token=gh.token_for(gh.installation),
        clone_url_for=gh.git_url,
        host_canary=host_canary,
        own_login=gh.app().bot_login(),
    )


def disk_full() -> CanaryResult:
    """The host canary of a runner whose disk really is full."""
    return CanaryResult(False, "host", "only 3 MiB free on the runner's disk", 0.0)


def l1_checks(gh: LoopbackGitHub, sha: str) -> list[dict[str, Any]]:
    return [
        r for r in gh.state.check_runs[REPO].values() if r["name"] == "forksync / L1" and r["head_sha"] == sha
    ]


def recording_test(record: Path, name: str = "ran") -> str:
    """A passing test that appends a line to ``record`` each time it runs (proof that code ran)."""
    return f"def test_{name}():\n    with open({str(record)!r}, 'a') as f:\n        f.write('{name}\\n')\n"


def fork_of(gh: LoopbackGitHub, owner_repo: str) -> None:
    gh.add_repo(owner_repo)
    subprocess.run(
        [
            "git",
            "--git-dir",
            str(gh.bare(owner_repo)),
            "fetch",
            "-q",
            str(gh.bare(REPO)),
            "+refs/heads/main:refs/heads/main",
        ],
        check=True,
    )


def approve(gh: LoopbackGitHub, number: int, sha: str) -> None:
    gh.adapter(gh.installation).upsert_comment(
        REPO, number, marker=approval_marker(number), body=approval_body(number, sha, "maintainer")
    )


def test_outside_pr_waits_for_approve_then_a_rerun_runs_it_and_a_push_needs_a_new_one(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """An outside contributor's PR gets an action_required check naming /approve and none of its
    code runs; after /approve of that head the check's Re-run (no PR number in the event) runs it;
    a new push is blocked again until approved again."""
    gh = loopback_github
    record = tmp_path / "ran.txt"
    gh.commit(REPO, {".github/forksync.yml": config_yaml(flow_suite("unit", "tests"))})
    fork_of(gh, OUTSIDER)
    sha = gh.commit(OUTSIDER, {"tests/test_c.py": recording_test(record)}, branch="main")
    number = gh.add_pull(
        REPO, "main", head_repo=OUTSIDER, author="stranger", author_association="CONTRIBUTOR"
    )

    opened = run_job(gh, tmp_path, sha, pr_number=number)
    assert opened.status == "needs_approval" and opened.run is None and not record.exists()
    (check,) = l1_checks(gh, sha)
    assert check["status"] == "completed" and check["conclusion"] == "action_required"
    assert (
        "Waiting for a maintainer" in check["output"]["title"] and "`/approve`" in check["output"]["summary"]
    )
    # Re-run without approval: still nothing runs (the job reads the PR from its check run).
    again = run_job(gh, tmp_path, sha)
    assert again.status == "needs_approval" and not record.exists()

    approve(gh, number, sha)
    rerun = run_job(gh, tmp_path, sha)  # the Re-run button: no PR number in the event
    assert rerun.status == "done" and rerun.run is not None and record.read_text() == "ran\n"
    (check,) = l1_checks(gh, sha)
    assert check["conclusion"] == "success"

    pushed = gh.commit(OUTSIDER, {"tests/test_d.py": recording_test(record, "pushed")}, branch="main")
    blocked = run_job(gh, tmp_path, pushed, pr_number=number)  # PR synchronize
    assert blocked.status == "needs_approval" and record.read_text() == "ran\n"
    (new_check,) = l1_checks(gh, pushed)
    assert new_check["conclusion"] == "action_required"
    assert run_job(gh, tmp_path, pushed).status == "needs_approval" and record.read_text() == "ran\n"


def test_outside_pr_is_gated_even_when_its_commit_is_already_on_a_branch(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """The gate is the PR's origin and author, not whether the commit happens to be in our cache: an
    outside PR whose head is also on one of our branches still waits for /approve."""
    gh = loopback_github
    record = tmp_path / "ran.txt"
    sha = gh.commit(
        REPO,
        {
            ".github/forksync.yml": config_yaml(flow_suite("unit", "tests")),
            "tests/test_c.py": recording_test(record),
        },
    )
    fork_of(gh, OUTSIDER)
    number = gh.add_pull(REPO, "main", head_repo=OUTSIDER, author="stranger", author_association="NONE")
    result = run_job(gh, tmp_path, sha, pr_number=number)
    assert result.status == "needs_approval" and not record.exists()


def test_members_fork_pr_runs_without_approval(loopback_github: LoopbackGitHub, tmp_path: Path) -> None:
    """A PR from a fork whose author is a MEMBER runs at once: its head is fetched and tested."""
    gh = loopback_github
    record = tmp_path / "ran.txt"
    gh.commit(REPO, {".github/forksync.yml": config_yaml(flow_suite("unit", "tests"))})
    fork_of(gh, "alice/fork")
    sha = gh.commit("alice/fork", {"tests/test_c.py": recording_test(record)}, branch="main")
    number = gh.add_pull(REPO, "main", head_repo="alice/fork", author="alice", author_association="MEMBER")
    result = run_job(gh, tmp_path, sha, pr_number=number)
    assert result.status == "done" and record.read_text() == "ran\n"
    (check,) = l1_checks(gh, sha)
    assert check["conclusion"] == "success" and check["external_id"] == f"pr:{number}"


def test_approval_counts_only_from_our_own_bot(loopback_github: LoopbackGitHub, tmp_path: Path) -> None:
    """Another App's bot comment carrying the approval record (a bot that echoes contributor text)
    approves nothing when the runner knows its own login (GET /app); forksync's own record does."""
    from tests.fixtures.commands import add_user_comment

    gh = loopback_github
    record = tmp_path / "ran.txt"
    gh.commit(REPO, {".github/forksync.yml": config_yaml(flow_suite("unit", "tests"))})
    fork_of(gh, OUTSIDER)
    sha = gh.commit(OUTSIDER, {"tests/test_c.py": recording_test(record)}, branch="main")
    number = gh.add_pull(REPO, "main", head_repo=OUTSIDER, author="stranger")
    own = gh.app().bot_login()
    assert own == "forksync[bot]"
    add_user_comment(gh, number, approval_body(number, sha, "maintainer"), "echo-helper[bot]", repo=REPO)

    def job() -> L1JobResult:
        return run_l1_job(
            gh.adapter(gh.installation),
            GitCache(tmp_path / "git"),
            tmp_path / "data",
            L1Job(REPO, sha, pr_number=number),
            clone_url=gh.git_url(REPO),
            token=gh.token_for(gh.installation),
            clone_url_for=gh.git_url,
            own_login=own,
        )

    assert job().status == "needs_approval" and not record.exists()
    # forksync's own record, written through the adapter (as forksync[bot]), older than a second forgery.
    gh.adapter(gh.installation).create_comment(REPO, number, approval_body(number, sha, "maintainer"))
    add_user_comment(gh, number, approval_body(number, sha, "maintainer"), "echo-helper[bot]", repo=REPO)
    assert job().status == "done" and record.read_text() == "ran\n"


FLAKY_ONCE = """\
import os


def test_flaky():
    # Fails on its first run only: the file records that it has run.
    seen = os.path.exists({state!r})
    open({state!r}, "a").close()
    assert seen, "first run fails"
"""


def test_retest_named_suite_reruns_only_it_and_keeps_the_others(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """/retest SUITE runs only that suite; the others keep their earlier result on the commit, and the
    check concludes over all: a still-failing kept suite keeps it red, a fixed one turns it green."""
    gh = loopback_github
    record = tmp_path / "ran.txt"
    cfg = config_yaml(
        flow_suite("flaky", "flaky"),
        flow_suite("steady", "steady"),
        flow_suite("broken", "broken"),
        extra="  flaky_reruns: 0\n",
    )
    sha = gh.commit(
        REPO,
        {
            ".github/forksync.yml": cfg,
            "flaky/test_f.py": FLAKY_ONCE.format(state=str(tmp_path / "flaky-state")),
            "steady/test_s.py": recording_test(record, "steady"),
            "broken/test_b.py": FAILING_TEST,
        },
    )
    first = run_job(gh, tmp_path, sha)
    assert first.run is not None and {s.name: s.status for s in first.run.suites} == {
        "flaky": "failed",
        "steady": "passed",
        "broken": "failed",
    }
    assert record.read_text() == "steady\n"

    rerun = run_job(gh, tmp_path, sha, suite_names=("flaky",))
    assert rerun.run is not None and [s.name for s in rerun.run.suites] == ["flaky"]
    assert record.read_text() == "steady\n", "a suite that was not named must not run again"
    (check,) = l1_checks(gh, sha)
    assert check["conclusion"] == "failure"
    assert check["output"]["title"].startswith("Rerun of flaky: ")
    assert "still failing from the earlier run: broken" in check["output"]["title"]
    assert (
        "**Kept from the earlier run on this commit** (not rerun): `broken` ❌ failure, `steady` ✅ success"
        in check["output"]["summary"]
    )


def test_retest_named_suite_passing_turns_the_check_green(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """When the only failing suite is rerun and passes, the check succeeds (the kept suites passed)."""
    gh = loopback_github
    cfg = config_yaml(
        flow_suite("flaky", "flaky"), flow_suite("steady", "steady"), extra="  flaky_reruns: 0\n"
    )
    sha = gh.commit(
        REPO,
        {
            ".github/forksync.yml": cfg,
            "flaky/test_f.py": FLAKY_ONCE.format(state=str(tmp_path / "flaky-state")),
            "steady/test_s.py": passing_tests(1),
        },
    )
    run_job(gh, tmp_path, sha)
    assert l1_checks(gh, sha)[0]["conclusion"] == "failure"
    run_job(gh, tmp_path, sha, suite_names=("flaky",))
    (check,) = l1_checks(gh, sha)
    assert check["conclusion"] == "success" and check["output"]["title"].startswith("Rerun of flaky: ")


def test_retest_named_suite_on_an_untested_commit_runs_the_rest_too(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """With no earlier result on the commit, the other suites run as well: the check never
    concludes over suites that did not run."""
    gh = loopback_github
    record = tmp_path / "ran.txt"
    cfg = config_yaml(flow_suite("a", "a"), flow_suite("b", "b"))
    sha = gh.commit(
        REPO,
        {
            ".github/forksync.yml": cfg,
            "a/test_a.py": recording_test(record, "a"),
            "b/test_b.py": recording_test(record, "b"),
        },
    )
    result = run_job(gh, tmp_path, sha, suite_names=("a",))
    assert result.run is not None and sorted(record.read_text().split()) == ["a", "b"]
    assert l1_checks(gh, sha)[0]["conclusion"] == "success"


def test_run_l1_task_passes_pr_number_and_suites_to_the_job(monkeypatch: Any, tmp_path: Path) -> None:
    """The forksync.run_l1 task hands /retest's PR number and suite names to the job unchanged
    (without them an outside PR could not be approved and a named rerun would run everything)."""
    from types import SimpleNamespace

    from workers.jobs.l1_job import L1JobResult
    from workers.tasks import l1 as tasks

    seen: list[L1Job] = []
    app = SimpleNamespace(
        adapter=lambda iid: None,
        push_url_template="file:///{repo}",
        installation_token=lambda iid: None,
        bot_login=lambda: "forksync[bot]",
    )
    settings = SimpleNamespace(
        data_dir=tmp_path, map_url=lambda url: url, store=lambda: None, bot=SimpleNamespace(redis_url=None)
    )
    monkeypatch.setattr(tasks, "_adapter", lambda task, iid: (app, settings))
    monkeypatch.setattr(
        tasks, "run_l1_job", lambda gh, caches, data, job, **kw: seen.append(job) or L1JobResult("done")
    )
    tasks.run_l1(installation_id=1, repo=REPO, head_sha="a" * 40, number=7, suites=["lit", "unit"])
    tasks.run_l1(installation_id=1, repo=REPO, head_sha="b" * 40)
    assert (seen[0].pr_number, seen[0].suite_names) == (7, ("lit", "unit"))
    assert (seen[1].pr_number, seen[1].suite_names) == (None, ())
    # A pool job (l1.suites[].pools) keeps its pool and the run id it reports under.
    tasks.run_l1(installation_id=1, repo=REPO, head_sha="c" * 40, number=7, pool="gpu-a", pool_run="ab12")
    assert (seen[2].pool, seen[2].pool_run, seen[2].pr_number) == ("gpu-a", "ab12", 7)


def _tracking_issues(gh: LoopbackGitHub) -> list[dict[str, Any]]:
    return [i for i in gh.state.issues[REPO].values() if "forksync:tracking" in i["labels"]]


def test_trunk_failure_files_a_tracking_issue_closed_after_clean_runs(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """An L1 failure on a trunk push opens one tracking issue (as L2 does); the same failure on the
    next push updates it, not a second one; l2.recover_after clean trunk runs close it."""
    gh = loopback_github
    cfg = config_yaml(flow_suite("unit", "tests")) + "l2:\n  recover_after: 2\n"
    bad = gh.commit(REPO, {".github/forksync.yml": cfg, "tests/test_a.py": FAILING_TEST})
    run_job(gh, tmp_path, bad, trunk=True, push_ref="refs/heads/main")
    (issue,) = _tracking_issues(gh)
    assert issue["state"] == "open" and "test_adds_one" in issue["body"] and l1_checks(gh, bad) == []
    again = gh.commit(REPO, {"README": "x\n"})
    run_job(gh, tmp_path, again, trunk=True, push_ref="refs/heads/main")
    assert [i["number"] for i in _tracking_issues(gh)] == [issue["number"]]
    fixed = gh.commit(REPO, {"tests/test_a.py": passing_tests(1)})
    run_job(gh, tmp_path, fixed, trunk=True, push_ref="refs/heads/main")
    assert _tracking_issues(gh)[0]["state"] == "open", "one clean run is not recover_after=2"
    run_job(gh, tmp_path, gh.commit(REPO, {"README": "y\n"}), trunk=True, push_ref="refs/heads/main")
    (closed,) = _tracking_issues(gh)
    assert closed["state"] == "closed"


def _infra_issues(gh: LoopbackGitHub) -> list[dict[str, Any]]:
    return [
        i
        for i in gh.state.issues[REPO].values()
        if INFRA_LABEL in i["labels"] and "forksync:infra:" in i["body"]
    ]


def test_infra_issue_closes_after_clean_runs_on_that_runner(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """The runner's infrastructure issue stays open after fewer than l2.recover_after clean runs and
    is closed with a comment at that count; a recurrence reopens it and the count starts again."""
    import sys

    gh = loopback_github
    disk = f'"{sys.executable}", "-c", "import sys; print(\'No space left on device\'); sys.exit(1)"'
    broken_cfg = f"l1:\n  max_infra_retries: 0\n  suites:\n    - {{name: unit, run: [{disk}], timeout: 30}}\nl2:\n  recover_after: 2\n"
    healthy_cfg = config_yaml(flow_suite("unit", "tests")) + "l2:\n  recover_after: 2\n"
    sha = gh.commit(REPO, {".github/forksync.yml": broken_cfg})
    run_job(gh, tmp_path, sha, host_canary=disk_full)
    (issue,) = _infra_issues(gh)
    assert issue["state"] == "open" and socket.gethostname() in issue["title"]

    ok = gh.commit(REPO, {".github/forksync.yml": healthy_cfg, "tests/test_b.py": passing_tests(1)})
    run_job(gh, tmp_path, ok)
    assert _infra_issues(gh)[0]["state"] == "open"
    run_job(gh, tmp_path, ok)
    (closed,) = _infra_issues(gh)
    assert closed["state"] == "closed"
    comments = [c["body"] for c in gh.state.comments[REPO].values() if c["issue_number"] == issue["number"]]
    assert any("ran L1 cleanly 2 times in a row" in c for c in comments)

    again = gh.commit(REPO, {".github/forksync.yml": broken_cfg})
    run_job(gh, tmp_path, again, host_canary=disk_full)
    (reopened,) = _infra_issues(gh)
    assert reopened["state"] == "open" and "infra-healthy" not in reopened["body"]


def test_gpu_infra_issue_is_not_closed_by_cpu_only_runs(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """A GPU cause (device busy) is only shown gone by runs with GPU suites: clean CPU-only runs on
    the same runner leave its issue open and uncounted."""
    gh = loopback_github
    runner = socket.gethostname()
    gh.adapter(gh.installation).ensure_issue(
        REPO,
        marker=marker("infra", f"CUDA device busy or unavailable:{runner}"),
        title=f"[infra] CUDA device busy or unavailable on {runner}",
        body="device busy",
        labels=[INFRA_LABEL],
    )
    sha = gh.commit(
        REPO,
        {
            ".github/forksync.yml": config_yaml(flow_suite("unit", "tests")) + "l2:\n  recover_after: 1\n",
            "tests/test_b.py": passing_tests(1),
        },
    )
    run_job(gh, tmp_path, sha)
    (issue,) = _infra_issues(gh)
    assert issue["state"] == "open" and "infra-healthy" not in issue["body"]
