"""End to end with real parts: Redis, `celery worker` processes, the web app on a socket, the
loopback GitHub, real bare git remotes. One rule per test; each also asserts what must not happen."""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Callable

import pytest

from tests.fixtures.workers import E2E, FORK, PrivateRedis, deliver, merged_pr_payload, wait_for

pytestmark = pytest.mark.slow

BUNDLE_TITLE = "[Cherry-pick][BUNDLE] Cherry-pick 2 upstream(#102 #104)"


def test_upstream_ahead_gives_bundle_pr_chain_pr_and_check(
    e2e: Callable[..., E2E], shared_redis_db: str
) -> None:
    """A push webhook leads to one bundle PR, one chain PR (both on the trunk) and a success check with the right
    figures; the same delivery again is answered "duplicate" and opens nothing more."""
    h = e2e(shared_redis_db)
    h.start_web()
    h.start_worker()
    started = time.monotonic()
    status, text = h.push_to_fork(delivery="delivery-1")
    assert status == 202, text
    pulls = wait_for(h.bundle_pulls, 60, "the bundle PR")
    latency = time.monotonic() - started
    print(f"\nwebhook -> bundle PR: {latency:.2f} s")
    checks = wait_for(h.checks, 30, "the ingestion check run")
    assert [p["title"] for p in pulls] == [BUNDLE_TITLE]
    assert pulls[0]["base"] == "main"
    (chain,) = h.chain_pulls()
    assert "Bump LLVM (#103)" in chain["body"] and chain["base"] == "main"
    assert h.issues() == []
    (check,) = checks
    assert check["conclusion"] == "success"
    assert check["head_sha"] == h.gh.head(FORK, "main")
    assert "pending 3" in check["output"]["title"] and "backlog 0" in check["output"]["title"]
    assert re.search(r"\| pending commits \| 3 \|", check["output"]["summary"])
    # the same delivery again: deduplicated at the door, nothing new on GitHub
    assert h.push_to_fork(delivery="delivery-1")[0] == 200
    time.sleep(1.0)
    assert (
        len(h.bundle_pulls()) == 1 and len(h.chain_pulls()) == 1 and h.issues() == [] and len(h.checks()) == 1
    )


def test_redelivered_and_overlapping_triggers_open_one_pr(
    e2e: Callable[..., E2E], shared_redis_db: str
) -> None:
    """Several distinct deliveries for the same state (redelivery with new ids, overlapping polls)
    race on two workers: the repository lock serialises them and exactly one PR and issue exist."""
    h = e2e(shared_redis_db)
    h.start_web()
    h.start_worker(concurrency=2)
    for _ in range(4):
        assert h.push_to_fork()[0] == 202
    wait_for(lambda: len(h.checks()) == 4, 90, "four ingestion runs")
    assert [p["title"] for p in h.bundle_pulls()] == [BUNDLE_TITLE]
    assert len(h.chain_pulls()) == 1 and h.issues() == []


def test_merged_bundle_moves_the_ledger(e2e: Callable[..., E2E], shared_redis_db: str) -> None:
    """When the bundle PR is merged (pull_request closed+merged webhook), the next check shows the
    ledger moved: pending 0, backlog 1 (the chain's commit), 0 days behind; no new bundle PR."""
    h = e2e(shared_redis_db)
    url = h.start_web()
    h.start_worker()
    h.push_to_fork()
    (pull,) = wait_for(h.bundle_pulls, 60, "the bundle PR")
    wait_for(h.checks, 30, "the first check")
    # merge on "GitHub": fast-forward main to the bundle head (what a merge of a stacked-on-main PR gives)
    head = h.gh.head(FORK, pull["head"])
    assert head is not None
    from workers.engine.git import Repository

    Repository(h.gh.bare(FORK)).git("update-ref", "refs/heads/main", head)
    with h.gh.lock:
        h.gh.state.pulls[FORK][pull["number"]].update(merged=True)
        h.gh.state.issues[FORK][pull["number"]]["state"] = "closed"
    payload = merged_pr_payload(h.installation, FORK, pull["number"], pull["head"], head, "main")
    assert deliver(url, "pull_request", payload)[0] == 202
    checks = wait_for(
        lambda: [c for c in h.checks() if c["head_sha"] == head], 60, "a check on the merged trunk"
    )
    assert "pending 0" in checks[-1]["output"]["title"] and "backlog 1" in checks[-1]["output"]["title"]
    assert checks[-1]["output"]["title"].startswith("0.0 days behind")
    assert len(h.bundle_pulls()) == 1  # the merged one; no new bundle
    assert h.gh.head(FORK, pull["head"]) is None  # the merged bundle's branch was deleted


def test_worker_killed_mid_task_is_redelivered_and_completes_once(
    e2e: Callable[..., E2E], shared_redis_db: str
) -> None:
    """SIGKILL of the process running the ingest (GitHub answering slowly) requeues the message
    (acks_late + reject_on_worker_lost); the retry completes and there is still one PR."""
    h = e2e(shared_redis_db)
    h.start_web()
    worker = h.start_worker()
    h.gh.slow(4.0, method="POST", path=f"/repos/{FORK}/pulls")
    (child,) = worker.pool_pids()
    h.push_to_fork()
    wait_for(
        lambda: h.gh.head(FORK, next(iter(_bundle_branches(h)), "none")) is not None,
        60,
        "the bundle branch pushed",
    )
    time.sleep(0.5)  # now inside the slow POST /pulls
    import os

    os.kill(child, signal.SIGKILL)
    wait_for(
        lambda: "WorkerLostError" in worker.text() or "exited with 'signal 9" in worker.text(),
        20,
        "the worker to notice",
    )
    wait_for(lambda: len(h.checks()) >= 1, 60, "the redelivered ingest to finish")
    time.sleep(1.0)
    assert [p["title"] for p in h.bundle_pulls()] == [BUNDLE_TITLE]
    assert len(h.chain_pulls()) == 1 and h.issues() == []
    assert worker.alive()


def _bundle_branches(h: E2E) -> list[str]:
    from workers.engine.git import Repository

    out = Repository(h.gh.bare(FORK)).text(
        "for-each-ref", "--format=%(refname:lstrip=2)", "refs/heads/forksync/bundle/"
    )
    return out.split()


def test_github_502_and_secondary_rate_limit_are_retried(
    e2e: Callable[..., E2E], shared_redis_db: str
) -> None:
    """GitHub answers 502, then a secondary rate limit with Retry-After: the task retries (no sooner
    than Retry-After) and succeeds; exactly one bundle PR, one chain PR and one check result."""
    h = e2e(shared_redis_db)
    h.start_web()
    h.start_worker()
    h.gh.fail(502, times=1, method="POST", path=f"/repos/{FORK}/pulls")
    h.gh.secondary_rate_limit(retry_after=1, method="POST", path=f"/repos/{FORK}/check-runs")
    h.push_to_fork()
    wait_for(h.checks, 60, "the ingestion check after retries")
    statuses = [s for (m, p, s) in h.gh.requests if m == "POST" and p.startswith(f"/repos/{FORK}/")]
    assert 502 in statuses and 403 in statuses
    assert [p["title"] for p in h.bundle_pulls()] == [BUNDLE_TITLE]
    assert len(h.chain_pulls()) == 1 and h.issues() == [] and len(h.checks()) == 1
    assert "retry" in h.workers[0].text().lower()


def test_bad_config_fails_the_check_and_the_worker_stays_healthy(
    e2e: Callable[..., E2E], shared_redis_db: str
) -> None:
    """A bad .github/forksync.yml gives a failing check quoting the line; nothing is opened; after the
    fix, the same worker ingests normally."""
    h = e2e(shared_redis_db)
    h.start_web()
    worker = h.start_worker()
    good = h.pair.fork.git("show", "HEAD:.github/forksync.yml")
    h.pair.fork.commit("break config", {".github/forksync.yml": good + "bundle_size: 3\n"})
    h.pair.push_fork()
    h.push_to_fork()
    (check,) = wait_for(h.checks, 60, "the failing check")
    assert check["conclusion"] == "failure"
    assert "forksync.yml:" in check["output"]["title"]
    assert "bundle_size: 3" in check["output"]["summary"]
    assert h.bundle_pulls() == [] and h.issues() == []
    h.pair.fork.commit("fix config", {".github/forksync.yml": good})
    h.pair.push_fork()
    h.push_to_fork()
    wait_for(h.bundle_pulls, 60, "the bundle PR after the fix")
    assert worker.alive()


def test_redis_restart_mid_flow_loses_nothing_and_duplicates_nothing(
    e2e: Callable[..., E2E], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A private Redis restarted while an ingest is in flight: the ingest completes (or is redelivered
    after the visibility timeout), a webhook sent after the restart is processed, one PR in the end."""
    private = PrivateRedis(tmp_path_factory.mktemp("redis")).start()
    try:
        h = e2e(private.url)
        h.start_web()
        worker = h.start_worker(env={"FORKSYNC_VISIBILITY_TIMEOUT_S": "5"})
        h.gh.slow(3.0, method="POST", path=f"/repos/{FORK}/pulls")
        assert h.push_to_fork(delivery="before-restart")[0] == 202
        wait_for(lambda: _bundle_branches(h), 60, "the ingest to be in flight")
        private.restart()
        wait_for(h.bundle_pulls, 60, "the bundle PR")
        h.pair.advance_upstream("Add d (#105)", {"src/d.py": "d = 4\n"})
        assert h.push_to_fork(delivery="after-restart")[0] == 202
        wait_for(lambda: any("#105" in p["title"] for p in h.bundle_pulls()), 60, "the post-restart ingest")
        assert h.push_to_fork(delivery="before-restart")[0] == 200  # the dedup key survived the restart
        time.sleep(1.0)
        assert len(h.bundle_pulls()) == 1 and len(h.chain_pulls()) == 1 and h.issues() == []
        assert worker.alive()
    finally:
        private.stop()


def test_beat_poll_and_snapshot_reach_every_installed_repository(
    e2e: Callable[..., E2E], shared_redis_db: str
) -> None:
    """The beat tasks (sent as beat sends them, no arguments): the poll enqueues an ingest for each
    installed repository (bundle PR appears), the snapshot records a metrics point per repository."""
    from core import tasknames
    from core.settings import WorkerSettings
    from workers.adapters.state import SeriesStore
    from workers.app.celery_app import POLL_UPSTREAM, create_celery

    h = e2e(shared_redis_db)
    h.start_worker()
    app = create_celery(WorkerSettings.from_mapping(h.env))
    app.send_task(POLL_UPSTREAM)
    wait_for(h.bundle_pulls, 60, "the polled ingest's bundle PR")
    wait_for(h.checks, 30, "the polled ingest's check")
    app.send_task(tasknames.SNAPSHOT_METRICS)
    state = SeriesStore(WorkerSettings.from_mapping(h.env).store())  # series live in SQL, never only in Redis
    points = wait_for(lambda: state.series(f"snapshots:{FORK}"), 30, "a metrics snapshot")
    assert points[-1]["pending"] == 3 and points[-1]["backlog"] == 0
    assert len(h.bundle_pulls()) == 1


def test_whole_worker_killed_mid_task_is_redelivered_to_another(
    e2e: Callable[..., E2E], shared_redis_db: str
) -> None:
    """SIGKILL of the whole worker (main and pool process) mid-ingest: Redis re-delivers the unacked
    message after the visibility timeout to another worker, which completes it; one PR in the end."""
    h = e2e(shared_redis_db)
    h.start_web()
    slow_env = {"FORKSYNC_VISIBILITY_TIMEOUT_S": "3"}
    first = h.start_worker(env=slow_env)
    h.gh.slow(4.0, method="POST", path=f"/repos/{FORK}/pulls")
    h.push_to_fork()
    wait_for(lambda: _bundle_branches(h), 60, "the ingest to be in flight")
    time.sleep(0.5)
    first.kill()  # SIGKILL to the main process, then to its orphaned pool process
    assert not first.alive()
    second = h.start_worker(env=slow_env)
    wait_for(h.checks, 60, "the re-delivered ingest on the second worker")
    time.sleep(1.0)
    assert "forksync.ingest" in second.text()
    assert [p["title"] for p in h.bundle_pulls()] == [BUNDLE_TITLE]
    assert len(h.chain_pulls()) == 1 and h.issues() == [] and len(h.checks()) == 1
