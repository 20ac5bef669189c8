"""The L1 staleness watchdog (beat): a check that a dead queue never finishes is concluded
timed_out with a reason and an infrastructure issue is filed for the queue; trunk runs that stop
arriving are reported. Through the loopback GitHub, and with a real worker and a dead l1-gpu queue."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from core import tasknames
from core.store import open_store
from tests.fixtures.l1 import config_yaml, flow_suite, passing_tests
from tests.fixtures.workers import REPO_ROOT, WorkerProcess, wait_for
from tests.loopback_github import LoopbackGitHub
from workers.adapters.gitcache import GitCache
from workers.adapters.state import SeriesStore
from workers.jobs.l1_job import L1Job, run_l1_job
from workers.jobs.l1_watchdog import run_l1_watchdog
from workers.testing.staleness import PendingChecks, trunk_push_series
from workers.testing.triage import TrunkResults

REPO = "acme/fork"
GPU_CFG = config_yaml(flow_suite("gpu", "tests", gpu="true", timeout=1)) + "  stale_margin_minutes: 0\n"


def _l1(gh: LoopbackGitHub) -> list[dict[str, Any]]:
    with gh.lock:
        return [dict(r) for r in gh.state.check_runs[REPO].values() if r["name"] == "forksync / L1"]


def _infra(gh: LoopbackGitHub) -> list[dict[str, Any]]:
    with gh.lock:
        return [dict(i) for i in gh.state.issues[REPO].values() if "infrastructure" in i["labels"]]


def test_a_check_handed_to_a_dead_queue_is_concluded_timed_out(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """A CPU worker hands GPU suites to l1-gpu and leaves the check in progress; no GPU worker
    comes. Past the suites' timeout + margin the watchdog concludes it timed_out naming the queue,
    files one issue for the queue, and a second pass changes nothing."""
    gh = loopback_github
    sha = gh.commit(REPO, {".github/forksync.yml": GPU_CFG, "tests/test_a.py": passing_tests(1)})
    store = open_store(None, tmp_path / "data")
    result = run_l1_job(
        gh.adapter(gh.installation),
        GitCache(tmp_path / "git"),
        tmp_path / "data",
        L1Job(REPO, sha, gpu_runner=False, installation_id=gh.installation),
        clone_url=gh.git_url(REPO),
        token=gh.token_for(gh.installation),
        store=store,
    )
    assert result.status == "needs_gpu"
    (pending,) = PendingChecks(store).all()
    assert (pending.queue, pending.check_run_id) == ("l1-gpu", result.check_run_id)

    early = run_l1_watchdog(store, gh.adapter, trunk_silent_s=3600, now=pending.started_at + 0.5)
    assert early == [] and _l1(gh)[0]["status"] == "in_progress", "before the deadline nothing is stale"
    acted = run_l1_watchdog(store, gh.adapter, trunk_silent_s=3600, now=pending.deadline + 1)
    assert [type(a).__name__ for a in acted] == ["ConcludeTimedOut", "ReportQueue"]
    (check,) = _l1(gh)
    assert (check["status"], check["conclusion"]) == ("completed", "timed_out")
    assert check["output"]["title"] == "Timed out: no runner finished L1 (waited on the l1-gpu queue)"
    assert "`/retest`" in check["output"]["summary"]
    (issue,) = _infra(gh)
    assert issue["title"] == "[infra] L1 queue l1-gpu: checks never finished" and sha[:12] in issue["body"]
    assert run_l1_watchdog(store, gh.adapter, trunk_silent_s=3600, now=pending.deadline + 60) == []
    assert len(_infra(gh)) == 1 and PendingChecks(store).all() == []


def test_a_finished_check_is_forgotten(loopback_github: LoopbackGitHub, tmp_path: Path) -> None:
    """A check that completes leaves nothing for the watchdog: no false timeouts."""
    gh = loopback_github
    sha = gh.commit(
        REPO,
        {
            ".github/forksync.yml": config_yaml(flow_suite("unit", "tests")),
            "tests/test_a.py": passing_tests(1),
        },
    )
    store = open_store(None, tmp_path / "data")
    run_l1_job(
        gh.adapter(gh.installation),
        GitCache(tmp_path / "git"),
        tmp_path / "data",
        L1Job(REPO, sha),
        clone_url=gh.git_url(REPO),
        token=gh.token_for(gh.installation),
        store=store,
    )
    assert PendingChecks(store).all() == []
    assert run_l1_watchdog(store, gh.adapter, trunk_silent_s=60, now=time.time() + 10**6) == []
    assert _l1(gh)[0]["conclusion"] == "success"


def test_trunk_runs_that_stop_arriving_are_reported(loopback_github: LoopbackGitHub, tmp_path: Path) -> None:
    """A trunk push with no trunk result recorded after it, past schedule.trunk_silent_minutes,
    files an issue; a result recorded after the push, or a push to another branch, does not."""
    gh = loopback_github
    sha = gh.commit(REPO, {".github/forksync.yml": config_yaml(flow_suite("unit", "tests"))})
    store = open_store(None, tmp_path / "data")
    series = SeriesStore(store)
    t0 = time.time()
    series.append(
        trunk_push_series(REPO),
        {"sha": "f" * 40, "ref": "refs/heads/feature", "t": t0, "installation_id": gh.installation},
    )
    assert run_l1_watchdog(store, gh.adapter, trunk_silent_s=600, now=t0 + 3600) == []
    series.append(
        trunk_push_series(REPO),
        {"sha": sha, "ref": "refs/heads/main", "t": t0, "installation_id": gh.installation},
    )
    TrunkResults(store, REPO).record("older", "unit", "passed", [("t", "passed")], at=t0 - 100)
    assert run_l1_watchdog(store, gh.adapter, trunk_silent_s=600, now=t0 + 300) == [], (
        "not silent for long yet"
    )
    acted = run_l1_watchdog(store, gh.adapter, trunk_silent_s=600, now=t0 + 3600)
    assert [type(a).__name__ for a in acted] == ["ReportTrunkSilent"]
    (issue,) = _infra(gh)
    assert issue["title"] == "[infra] trunk L1 results stopped arriving" and sha[:12] in issue["body"]
    TrunkResults(store, REPO).record(sha, "unit", "passed", [("t", "passed")], at=t0 + 3700)
    assert run_l1_watchdog(store, gh.adapter, trunk_silent_s=600, now=t0 + 7200) == []


def test_a_pr_head_whose_check_was_never_created_gets_one_concluded(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """A PR opened (its webhook accepted) whose L1 job never created a check: past the suites'
    timeouts + margin after the PR last changed, the watchdog creates `forksync / L1` concluded
    timed_out with the reason, files the l1-cpu queue's infrastructure issue, and a second pass
    does nothing. A PR whose L1 job ran, one updated recently, and one last changed before the
    repository's webhooks reached forksync (an old PR at installation) are left alone."""
    from core.store import deliveries

    gh = loopback_github
    cfg = config_yaml(flow_suite("unit", "tests", timeout=60)) + "  stale_margin_minutes: 5\n"
    base = gh.commit(REPO, {".github/forksync.yml": cfg, "tests/test_a.py": passing_tests(1)})
    for branch in ("feature/lost", "feature/ran", "feature/old"):
        subprocess.run(
            ["git", "--git-dir", str(gh.bare(REPO)), "update-ref", f"refs/heads/{branch}", base], check=True
        )
    store = open_store(None, tmp_path / "data")
    deliveries.accept(
        store, deliveries.AcceptedDelivery("d-1", "pull_request", REPO, gh.installation, time.time())
    )
    lost = gh.commit(REPO, {"tests/test_b.py": passing_tests(1)}, branch="feature/lost")
    lost_pr = gh.add_pull(REPO, "feature/lost", title="A PR whose L1 job was lost")
    ran = gh.commit(REPO, {"tests/test_c.py": passing_tests(1)}, branch="feature/ran")
    ran_pr = gh.add_pull(REPO, "feature/ran", title="A PR whose L1 job ran")
    old = gh.commit(REPO, {"tests/test_d.py": passing_tests(1)}, branch="feature/old")
    old_pr = gh.add_pull(REPO, "feature/old", title="A PR from before forksync was installed")
    with gh.lock:  # last changed long before the first webhook forksync logged for the repository
        gh.state.issues[REPO][old_pr]["updated_at"] = "2020-01-01T00:00:00Z"
    run_l1_job(
        gh.adapter(gh.installation),
        GitCache(tmp_path / "git"),
        tmp_path / "data",
        L1Job(REPO, ran, pr_number=ran_pr, installation_id=gh.installation),
        clone_url=gh.git_url(REPO),
        token=gh.token_for(gh.installation),
        store=store,
    )
    t0 = time.time()

    assert run_l1_watchdog(store, gh.adapter, trunk_silent_s=3600, now=t0 + 60 + 4 * 60) == [], (
        "within the margin"
    )
    acted = run_l1_watchdog(store, gh.adapter, trunk_silent_s=3600, now=t0 + 60 + 5 * 60 + 5)
    assert [type(a).__name__ for a in acted] == ["ConcludeNeverStarted", "ReportQueue"]
    (check,) = [c for c in _l1(gh) if c["head_sha"] == lost]
    assert (check["status"], check["conclusion"]) == ("completed", "timed_out")
    assert (
        check["output"]["title"]
        == "Timed out: L1 never started (no worker took its job from the l1-cpu queue)"
    )
    assert "No L1 check was ever created for this head" in check["output"]["summary"]
    assert "`/retest`" in check["output"]["summary"] and check["external_id"] == f"pr:{lost_pr}"
    (issue,) = _infra(gh)
    assert issue["title"] == "[infra] L1 queue l1-cpu: checks never finished"
    assert lost[:12] in issue["body"] and ran[:12] not in issue["body"] and old[:12] not in issue["body"]
    assert [c for c in _l1(gh) if c["head_sha"] == old] == [], "no alarm for a PR older than the webhooks"
    assert [c["conclusion"] for c in _l1(gh) if c["head_sha"] == ran] == ["success"]
    assert run_l1_watchdog(store, gh.adapter, trunk_silent_s=3600, now=t0 + 3600) == []
    assert len(_infra(gh)) == 1 and len([c for c in _l1(gh) if c["head_sha"] == lost]) == 1


@pytest.mark.slow
def test_dead_gpu_queue_with_real_worker_and_beat_task(tmp_path: Path, shared_redis_db: str) -> None:
    """A real worker serving l1-cpu and github only (the l1-gpu queue is dead): the PR's check is
    left in progress after the hand-over; the beat's forksync.l1_watchdog task, sent as beat sends
    it, concludes it timed_out and files the queue's issue."""
    gh = LoopbackGitHub(tmp_path / "github").start()
    try:
        gh.add_repo(REPO)
        installation = gh.add_installation([REPO])
        sha = gh.commit(REPO, {".github/forksync.yml": GPU_CFG, "tests/test_a.py": passing_tests(1)})
        env = {
            **os.environ,
            **gh.settings(),
            "REDIS_URL": shared_redis_db,
            "FORKSYNC_DATA_DIR": str(tmp_path / "data"),
            "FORKSYNC_GIT_URL_MAP": json.dumps({f"{gh.api_url}/": f"{gh.api_url}/git/"}),
            "PYTHONPATH": str(REPO_ROOT),
        }
        env.pop("FORKSYNC_DATABASE_URL", None)
        worker = WorkerProcess(env, tmp_path / "worker.log", queues="l1-cpu,github").start()
        try:
            from core.settings import WorkerSettings
            from workers.app.celery_app import create_celery

            app = create_celery(WorkerSettings.from_mapping(env))
            app.send_task(
                tasknames.RUN_L1, kwargs={"installation_id": installation, "repo": REPO, "head_sha": sha}
            )
            wait_for(
                lambda: _l1(gh) and PendingChecks(open_store(None, tmp_path / "data")).all(),
                60,
                "the in-progress check handed to l1-gpu",
            )
            time.sleep(1.5)  # past the suite's 1 s timeout (margin 0)
            app.send_task(tasknames.L1_WATCHDOG)
            check = wait_for(
                lambda: next((c for c in _l1(gh) if c["status"] == "completed"), None),
                60,
                "the watchdog's conclusion",
            )
            wait_for(lambda: _infra(gh), 30, "the queue's infrastructure issue")
        finally:
            worker.stop()
        assert check["conclusion"] == "timed_out" and "l1-gpu" in check["output"]["title"]
        assert "forksync.l1_watchdog" in worker.text()
    finally:
        gh.close()
