"""L2 jobs through the loopback GitHub: nightly runs file issues, /bisect answers, L3 runs attach metrics."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from celery.exceptions import DuplicateTaskNameWarning

from core.render.l3 import parse_state
from core.store import open_store
from tests.loopback_github import LoopbackGitHub
from workers.adapters.gitcache import GitCache
from workers.jobs.l2_job import run_bisect_job, run_l2_job, run_l3_job
from workers.testing.l3 import request_l3
from workers.testing.results import ResultStore

REPO = "acme/fork"
BENCH = """\
import json, pathlib
root = pathlib.Path(__file__).parent
print(json.dumps({"metrics": {"tflops": float((root / "speed").read_text())}}))
"""
CONFIG = (
    "l2:\n  recover_after: 2\n  benchmarks:\n    - name: matmul-sweep\n"
    f"      run: [{sys.executable}, bench.py]\n      owners: [carol]\n"
    "      metrics: [{name: tflops, direction: higher, threshold: 5}]\n"
    "l3:\n  workloads:\n"
    f"    - {{name: llama-train, owners: [alice], run: [{sys.executable}, bench.py]}}\n"
)


def job_args(gh: LoopbackGitHub, tmp_path: Path) -> dict[str, Any]:
    return {"clone_url": gh.git_url(REPO), "token": gh.token_for(gh.installation)}


def test_nightly_job_files_then_closes_a_tracking_issue(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """Nightlies on the fork's trunk: a drop files one issue naming the culprit; recovery closes it."""
    gh = loopback_github
    port = gh.adapter(gh.installation)
    caches, data = GitCache(tmp_path / "git"), tmp_path / "data"
    shas = [gh.commit(REPO, {".github/forksync.yml": CONFIG, "bench.py": BENCH, "speed": "100\n"})]
    for i in range(1, 13):
        message = "Slow epilogue" if i == 7 else f"change {i}"
        shas.append(
            gh.commit(
                REPO, {"speed": ("60\n" if 7 <= i < 12 else "100\n"), f"m{i}.py": "x\n"}, message=message
            )
        )
    verdicts = []
    for i in (0, 4, 9, 10, 12):  # the trunk tip is nightly's default when no sha is given
        result = run_l2_job(
            port,
            caches,
            data,
            REPO,
            sha=None if i == 12 else shas[i],
            now=f"night {i}",
            **job_args(gh, tmp_path),
        )
        assert result.status == "done"
        verdicts.append(result.benchmarks["matmul-sweep"])
        if i == 9:
            assert result.culprits == {"matmul-sweep": shas[7]}
    assert verdicts == ["ok", "ok", "regressed", "regressed", "ok"]
    [issue] = [i for i in gh.state.issues[REPO].values() if not i.get("is_pull")]
    # The regression is stored with night 9's run (night 10 continues the streak: nothing new).
    [found] = ResultStore(open_store(None, data)).regressions(REPO)
    assert (found.metric, found.kind, found.first_bad, found.good, found.culprit) == (
        "tflops",
        "regressed",
        shas[9],
        shas[4],
        shas[7],
    )
    assert found.culprit_subject == "Slow epilogue" and found.bisect_status == "found"
    assert found.candidates == 5 and found.bisect_steps >= 2 and found.tracking_issue == issue["number"]
    assert found.delta_pct is not None and found.delta_pct == pytest.approx(-40.0)
    assert issue["title"] == "[trunk] matmul-sweep: tflops regressed"
    assert "Slow epilogue" in issue["body"] and "| occurrences | 2 |" in issue["body"]
    assert issue["state"] == "open"  # one clean night of the two needed
    run_l2_job(port, caches, data, REPO, now="night 13", **job_args(gh, tmp_path))
    assert gh.state.issues[REPO][issue["number"]]["state"] == "closed"


def test_bisect_job_answers_with_the_culprit(loopback_github: LoopbackGitHub, tmp_path: Path) -> None:
    """``/bisect matmul-sweep GOOD BAD`` comments the culprit and the proposed fix on the issue."""
    gh = loopback_github
    port = gh.adapter(gh.installation)
    shas = [gh.commit(REPO, {".github/forksync.yml": CONFIG, "bench.py": BENCH, "speed": "100\n"})]
    for i in range(1, 9):
        shas.append(
            gh.commit(
                REPO,
                {f"m{i}.py": "x\n", **({"bench.py": BENCH + "raise SystemExit(3)\n"} if i == 5 else {})},
                message=f"change {i}",
            )
        )
    number = gh.add_issue(REPO, "matmul is broken")
    text = run_bisect_job(
        port,
        GitCache(tmp_path / "git"),
        tmp_path / "data",
        REPO,
        "matmul-sweep",
        good=shas[0],
        bad=shas[-1],
        issue_number=number,
        **job_args(gh, tmp_path),
    )
    assert f"**Culprit:** {shas[5][:12]} change 5" in text
    [comment] = gh.state.comments[REPO].values()
    assert comment["issue_number"] == number and comment["body"] == text


@pytest.mark.parametrize("benchmark", ["nope", "matmul-sweep"])
def test_bisect_job_without_what_it_needs_says_so(
    loopback_github: LoopbackGitHub, tmp_path: Path, benchmark: str
) -> None:
    """An unknown benchmark or no recorded runs: the answer says what is missing and how to ask."""
    gh = loopback_github
    gh.commit(REPO, {".github/forksync.yml": CONFIG, "bench.py": BENCH, "speed": "1\n"})
    text = run_bisect_job(
        gh.adapter(gh.installation),
        GitCache(tmp_path / "git"),
        tmp_path / "data",
        REPO,
        benchmark,
        **job_args(gh, tmp_path),
    )
    assert text.startswith(f"Cannot bisect `{benchmark}`: no good and bad trunk runs recorded yet")


def test_l3_job_runs_the_workload_at_the_pr_head(loopback_github: LoopbackGitHub, tmp_path: Path) -> None:
    """The l2-queue job fetches the PR branch, runs the workload and puts its metrics on the check."""
    gh = loopback_github
    port = gh.adapter(gh.installation)
    base = gh.commit(REPO, {".github/forksync.yml": CONFIG, "bench.py": BENCH, "speed": "100\n"})
    subprocess.run(["git", "-C", str(gh.bare(REPO)), "update-ref", "refs/heads/feature", base], check=True)
    head = gh.commit(REPO, {"speed": "42.5\n"}, branch="feature", message="feature")
    from core.config import load_repo_config

    request_l3(port, REPO, head, "llama-train", load_repo_config(CONFIG))
    reply = run_l3_job(port, GitCache(tmp_path / "git"), REPO, head, "llama-train", **job_args(gh, tmp_path))
    assert reply.ok, reply.text
    [run] = [r for r in gh.state.check_runs[REPO].values() if r["head_sha"] == head]
    state = parse_state(run["output"]["text"])
    assert state is not None and state.metrics == {"tflops": 42.5} and state.run == "passed"
    assert run["status"] == "in_progress"  # metrics do not sign off: the owners still must


def test_tasks_are_registered_on_the_l2_queue_and_a_push_resets_l3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run_l2, bisect and run_l3 are bound (l2 queue); a branch push enqueues the L3 reset, a deletion does not."""
    from core import tasknames
    from core.settings import WorkerSettings
    from workers.app import celery_app
    from workers.app.handlers import handlers_for
    from workers.tasks import l2 as l2_tasks

    with warnings.catch_warnings():
        # Other tests in this process bind throwaway tasks under the webhook task names; that
        # duplicate is theirs, not what this test is about.
        warnings.simplefilter("ignore", DuplicateTaskNameWarning)
        app = celery_app.create_celery(
            WorkerSettings.from_mapping({"FORKSYNC_DATA_DIR": str(tmp_path / "data")})
        )
    for name in (tasknames.RUN_L2, tasknames.BISECT, tasknames.RUN_L3, l2_tasks.L3_RESET):
        assert name in app.tasks and app.tasks[name].acks_late
    for name in (tasknames.RUN_L2, tasknames.BISECT, tasknames.RUN_L3):
        assert tasknames.queue_for(name) == "l2"
    assert l2_tasks.l3_reset_on_push in handlers_for(tasknames.ON_PUSH)
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(l2_tasks.l3_reset, "delay", lambda **kw: sent.append(kw))
    l2_tasks.l3_reset_on_push(
        installation_id=1, repo=REPO, ref="refs/heads/feature", before="a" * 40, after="b" * 40
    )
    l2_tasks.l3_reset_on_push(
        installation_id=1, repo=REPO, ref="refs/heads/feature", before="a" * 40, after="0" * 40
    )
    l2_tasks.l3_reset_on_push(
        installation_id=1, repo=REPO, ref="refs/tags/v1", before="a" * 40, after="b" * 40
    )
    assert sent == [{"installation_id": 1, "repo": REPO, "before": "a" * 40, "after": "b" * 40}]


def test_l3_job_never_runs_code_that_is_not_on_a_branch_here(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """A head that is on no branch of the repository (an outside fork's PR) is not run; the check says why."""
    gh = loopback_github
    port = gh.adapter(gh.installation)
    gh.commit(REPO, {".github/forksync.yml": CONFIG, "bench.py": BENCH, "speed": "1\n"})
    outside = "c" * 40
    from core.config import load_repo_config

    request_l3(port, REPO, outside, "llama-train", load_repo_config(CONFIG))
    reply = run_l3_job(
        port, GitCache(tmp_path / "git"), REPO, outside, "llama-train", **job_args(gh, tmp_path)
    )
    assert not reply.ok and "is not on a branch of acme/fork" in reply.text
    [run] = [r for r in gh.state.check_runs[REPO].values() if r["head_sha"] == outside]
    state = parse_state(run["output"]["text"])
    assert state is not None and state.run == "failed" and state.metrics == {}
    assert "a maintainer can push it here" in run["output"]["summary"]
    assert run["status"] == "in_progress"  # still awaiting the owners, never passed by default


def test_a_regression_with_a_culprit_gets_a_revert_pr_linked_from_its_issue(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """The culprit found by the nightly's bisection gets one revert PR (built in memory on the trunk
    tip, never merged), linked from the tracking issue; the next night links it again, no second PR."""
    gh = loopback_github
    port = gh.adapter(gh.installation)
    caches, data = GitCache(tmp_path / "git"), tmp_path / "data"
    shas = [gh.commit(REPO, {".github/forksync.yml": CONFIG, "bench.py": BENCH, "speed": "100\n"})]
    for i in range(1, 9):
        shas.append(
            gh.commit(
                REPO,
                {"speed": "60\n" if i >= 5 else "100\n", f"m{i}.py": "x\n"},
                message="Slow epilogue (#55)" if i == 5 else f"change {i}",
            )
        )
    run_l2_job(port, caches, data, REPO, sha=shas[2], now="night 1", **job_args(gh, tmp_path))
    result = run_l2_job(port, caches, data, REPO, now="night 2", **job_args(gh, tmp_path))
    assert result.culprits == {"matmul-sweep": shas[5]}
    pulls = list(gh.state.pulls[REPO].values())
    assert (
        len(pulls) == 1
        and pulls[0]["head"] == f"forksync/revert/{shas[5][:12]}"
        and not pulls[0].get("merged")
    )
    pr_issue = gh.state.issues[REPO][pulls[0]["number"]]
    assert (
        pr_issue["title"] == 'Revert "Slow epilogue (#55)"'
        and "never merged without a maintainer" in pr_issue["body"]
    )
    revert = subprocess.run(
        ["git", "--git-dir", str(gh.bare(REPO)), "show", f"{pulls[0]['head']}:speed"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    files = subprocess.run(
        ["git", "--git-dir", str(gh.bare(REPO)), "ls-tree", "--name-only", pulls[0]["head"]],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert revert == "100\n" and "m5.py" not in files and "m8.py" in files
    [issue] = [i for i in gh.state.issues[REPO].values() if not i.get("is_pull")]
    links = [c["body"] for c in gh.state.comments[REPO].values() if c["issue_number"] == issue["number"]]
    assert len(links) == 1 and f"revert PR #{pulls[0]['number']}" in links[0]
    run_l2_job(port, caches, data, REPO, now="night 3", **job_args(gh, tmp_path))
    assert len(gh.state.pulls[REPO]) == 1, "no second revert PR for the same culprit"


def test_a_revert_pr_a_maintainer_closed_is_not_reopened_nightly(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """A maintainer closes the proposed revert PR without merging. The benchmark passes once more
    (a run at the commit before the culprit) and breaks again, so the next night bisects to the
    same culprit: no new PR is opened, nothing is reopened, and the tracking issue's comment says
    the revert was declined."""
    gh = loopback_github
    port = gh.adapter(gh.installation)
    caches, data = GitCache(tmp_path / "git"), tmp_path / "data"
    shas = [gh.commit(REPO, {".github/forksync.yml": CONFIG, "bench.py": BENCH, "speed": "100\n"})]
    for i in range(1, 9):
        shas.append(
            gh.commit(
                REPO,
                {"speed": "60\n" if i >= 5 else "100\n", f"m{i}.py": "x\n"},
                message="Slow epilogue (#55)" if i == 5 else f"change {i}",
            )
        )
    run_l2_job(port, caches, data, REPO, sha=shas[2], now="night 1", **job_args(gh, tmp_path))
    run_l2_job(port, caches, data, REPO, now="night 2", **job_args(gh, tmp_path))
    (pr,) = gh.state.pulls[REPO]
    port.close_pull_request(REPO, pr, comment="We fix forward instead.")
    run_l2_job(port, caches, data, REPO, sha=shas[4], now="night 3", **job_args(gh, tmp_path))
    result = run_l2_job(port, caches, data, REPO, now="night 4", **job_args(gh, tmp_path))
    assert result.culprits == {"matmul-sweep": shas[5]}, "bisected again to the same culprit"
    assert list(gh.state.pulls[REPO]) == [pr], "no second revert PR"
    assert gh.state.issues[REPO][pr]["state"] == "closed", "the declined PR stays closed"
    [issue] = [i for i in gh.state.issues[REPO].values() if not i.get("is_pull")]
    links = [c["body"] for c in gh.state.comments[REPO].values() if c["issue_number"] == issue["number"]]
    assert len(links) == 1, "one comment per culprit, edited in place"
    assert f"**Revert declined:** a maintainer closed revert PR #{pr}" in links[0]
    assert "does not reopen it nor propose this revert again" in links[0]


def test_the_revert_rule_respects_a_maintainers_close() -> None:
    """plan_revert from plain data: an open PR is linked; a merged one means reverted; a closed,
    unmerged one is declined; none at all opens the first."""
    from workers.testing.revert import (
        AlreadyReverted,
        Declined,
        LinkExisting,
        OpenRevert,
        RevertPull,
        plan_revert,
    )

    sha = "a" * 40
    assert plan_revert(
        sha, "x", "main", 9, None, [RevertPull(3, "closed", False), RevertPull(7, "open", False)]
    ) == LinkExisting(sha, 7, 9)
    assert plan_revert(sha, "x", "main", 9, None, [RevertPull(3, "closed", True)]) == AlreadyReverted(
        sha, 3, 9
    )
    assert plan_revert(sha, "x", "main", 9, None, [RevertPull(3, "closed", False)]) == Declined(sha, 3, 9)
    assert isinstance(plan_revert(sha, "x", "main", 9, None, []), OpenRevert)
