"""One suite on two pools (``l1.suites[].pools``): each pool runs it as its own job, records its
executed count and outcome in the store, and the job that reports last concludes
``forksync / L1 pools`` from the stored results; a pool that ran fewer tests is an omission."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from core import tasknames
from core.config import ConfigError, load_repo_config
from core.render.l1 import POOLS_CHECK, pools_check_run
from tests.fixtures.l1 import config_yaml, flow_suite, passing_tests
from tests.loopback_github import LoopbackGitHub
from tests.test_l1_github import disk_full
from workers.adapters.gitcache import GitCache
from workers.jobs.l1_job import L1Job, L1JobResult, run_l1_job
from workers.testing.pools import PENDING, PoolResult, compare

REPO = "acme/fork"
POOLS = {"unit": ("cpu", "gpu-a")}

# Two tests that need a visible GPU (CUDA_VISIBLE_DEVICES, which the sandbox passes through), one that does not.
GPU_TESTS = """\
import os

import pytest

needs_gpu = pytest.mark.skipif(not os.environ.get("CUDA_VISIBLE_DEVICES"), reason="needs a GPU")


@needs_gpu
def test_kernel_a():
    assert True


@needs_gpu
def test_kernel_b():
    assert True
"""


# --------------------------------------------------------------------------- the pure comparison


def test_a_pool_that_ran_fewer_tests_fails_naming_both_pools() -> None:
    got = compare(POOLS, [PoolResult("unit", "cpu", 3, "success"), PoolResult("unit", "gpu-a", 5, "success")])
    assert got.conclusion == "failure"
    (d,) = got.disagreements
    assert (d.kind, d.pool, d.pool_executed, d.other, d.other_executed) == ("fewer", "cpu", 3, "gpu-a", 5)
    out = pools_check_run("a" * 40, got)
    assert out.conclusion == "failure" and out.title == "Pools disagree: cpu ran 3, gpu-a ran 5"
    assert "pool `cpu` executed 3 test(s), pool `gpu-a` executed 5: cpu omitted 2" in out.summary


def test_equal_pools_succeed_and_a_missing_pool_keeps_the_check_in_progress() -> None:
    both = [PoolResult("unit", "cpu", 5, "success"), PoolResult("unit", "gpu-a", 5, "success")]
    assert compare(POOLS, both).conclusion == "success"
    assert pools_check_run("a" * 40, compare(POOLS, both)).title == "All 2 pool(s) agree"
    waiting = compare(POOLS, both[:1])
    assert waiting.conclusion == PENDING and waiting.missing == (("unit", "gpu-a"),)
    out = pools_check_run("a" * 40, waiting)
    assert (out.status, out.conclusion, out.title) == ("in_progress", None, "Waiting on 1 pool(s): gpu-a")


def test_tolerance_outcomes_and_reruns() -> None:
    fewer = [PoolResult("unit", "cpu", 4, "success"), PoolResult("unit", "gpu-a", 5, "success")]
    assert compare(POOLS, fewer, {"unit": 1}).conclusion == "success"
    assert compare(POOLS, fewer, {"unit": 0}).conclusion == "failure"
    differ = compare(
        POOLS, [PoolResult("unit", "cpu", 5, "failure"), PoolResult("unit", "gpu-a", 5, "success")]
    )
    assert differ.conclusion == "failure" and [d.kind for d in differ.disagreements] == ["outcome"]
    # A pool's newer report replaces its earlier one; the order pools report in does not matter.
    rerun = [
        PoolResult("unit", "cpu", 3, "success"),
        PoolResult("unit", "gpu-a", 5, "success"),
        PoolResult("unit", "cpu", 5, "success"),
    ]
    assert compare(POOLS, rerun).conclusion == "success"
    assert compare(POOLS, list(reversed(fewer))) == compare(POOLS, fewer)


def test_pools_config_and_queues() -> None:
    config = load_repo_config(config_yaml(flow_suite("unit", pools="[cpu, gpu-a]", pool_tolerance=2)))
    (suite,) = config.l1.suites
    assert (suite.pools, suite.pool_tolerance) == (("cpu", "gpu-a"), 2)
    assert load_repo_config(config_yaml(flow_suite("unit"))).l1.suites[0].pools == ()
    with pytest.raises(ConfigError, match=r"l1.suites\[0\].pools: one pool compares nothing"):
        load_repo_config(config_yaml(flow_suite("unit", pools="[cpu]")))
    with pytest.raises(ConfigError, match=r"pools\[1\]: pool 'cpu' is listed twice"):
        load_repo_config(config_yaml(flow_suite("unit", pools="[cpu, cpu]")))
    assert [tasknames.l1_pool_queue(p) for p in ("cpu", "gpu", "gpu-a")] == ["l1-cpu", "l1-gpu", "l1-gpu-a"]


# --------------------------------------------------------------------------- through the loopback GitHub


def _job(
    gh: LoopbackGitHub, tmp_path: Path, job: L1Job, sent: list[L1Job] | None = None, **kw: Any
) -> L1JobResult:
    return run_l1_job(
        gh.adapter(gh.installation),
        GitCache(tmp_path / "git"),
        tmp_path / "data",
        job,
        clone_url=gh.git_url(REPO),
        token=gh.token_for(gh.installation),
        dispatch_pool=None if sent is None else sent.append,
        **kw,
    )


def _pools_check(gh: LoopbackGitHub) -> dict[str, Any]:
    (run,) = [r for r in gh.state.check_runs[REPO].values() if r["name"] == POOLS_CHECK]
    return run


def test_pool_jobs_report_into_one_check_and_the_last_concludes(
    loopback_github: LoopbackGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The L1 job dispatches one job per pool; the check stays in progress until both pools have
    reported, and the CPU pool, which skips the GPU tests, fails it naming both pools and counts."""
    gh = loopback_github
    cfg = config_yaml(flow_suite("unit", "tests", pools="[cpu, gpu-a]"), extra="  canary: false\n")
    sha = gh.commit(
        REPO,
        {".github/forksync.yml": cfg, "tests/test_cpu.py": passing_tests(1), "tests/test_gpu.py": GPU_TESTS},
    )
    sent: list[L1Job] = []
    main = _job(gh, tmp_path, L1Job(REPO, sha), sent)
    assert main.status == "done" and [j.pool for j in sent] == ["cpu", "gpu-a"] == [
        j.pool for j in main.pool_jobs
    ]
    assert len({j.pool_run for j in sent}) == 1 and sent[0].pool_run
    retried: list[L1Job] = []  # an infrastructure retry of the L1 job does not send its pools again
    assert _job(gh, tmp_path, L1Job(REPO, sha, attempt=1), retried).status == "done" and retried == []
    assert _pools_check(gh)["status"] == "in_progress"

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert _job(gh, tmp_path, sent[1]).message == PENDING
    check = _pools_check(gh)
    assert (check["status"], check["output"]["title"]) == ("in_progress", "Waiting on 1 pool(s): cpu")

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert _job(gh, tmp_path, sent[0]).message == "failure"
    check = _pools_check(gh)
    assert (check["status"], check["conclusion"]) == ("completed", "failure")
    assert check["output"]["title"] == "Pools disagree: cpu ran 1, gpu-a ran 3"
    assert "pool `cpu` executed 1 test(s), pool `gpu-a` executed 3" in check["output"]["summary"]


def test_equal_pools_conclude_success_and_a_stale_dispatch_is_ignored(
    loopback_github: LoopbackGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gh = loopback_github
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    cfg = config_yaml(flow_suite("unit", "tests", pools="[cpu, gpu-a]"), extra="  canary: false\n")
    sha = gh.commit(REPO, {".github/forksync.yml": cfg, "tests/test_gpu.py": GPU_TESTS})
    first: list[L1Job] = []
    _job(gh, tmp_path, L1Job(REPO, sha), first)
    again: list[L1Job] = []
    _job(gh, tmp_path, L1Job(REPO, sha), again)  # a rerun: a new pool run on the same check
    assert _job(gh, tmp_path, first[0]).status == "stale"
    for pool_job in again:
        _job(gh, tmp_path, pool_job)
    check = _pools_check(gh)
    assert (check["conclusion"], check["output"]["title"]) == ("success", "All 2 pool(s) agree")


def test_the_l1_check_points_at_the_pools_check(loopback_github: LoopbackGitHub, tmp_path: Path) -> None:
    """With every suite on pools, `forksync / L1` says where they run instead of "no suites configured"."""
    gh = loopback_github
    cfg = config_yaml(flow_suite("unit", "tests", pools="[cpu, gpu-a]"), extra="  canary: false\n")
    sha = gh.commit(REPO, {".github/forksync.yml": cfg, "tests/test_cpu.py": passing_tests(1)})
    _job(gh, tmp_path, L1Job(REPO, sha), [])
    (l1,) = [r for r in gh.state.check_runs[REPO].values() if r["name"] == "forksync / L1"]
    assert l1["output"]["title"] == "1 suite(s) run on pools: see forksync / L1 pools"
    assert "compared in `forksync / L1 pools`: `unit`" in l1["output"]["summary"]


def test_a_pool_whose_runner_failed_retries_before_it_reports(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """An infrastructure failure on one pool is retried on its queue: nothing is recorded for that
    pool until the last attempt, so the comparison never concludes over a broken runner early."""
    gh = loopback_github
    run = f'"{sys.executable}", "-c", "import sys; print(\'No space left on device\'); sys.exit(1)"'
    cfg = f"l1:\n  canary: false\n  suites:\n    - {{name: disk, run: [{run}], timeout: 30, pools: [cpu, gpu-a]}}\n"
    sha = gh.commit(REPO, {".github/forksync.yml": cfg})
    sent: list[L1Job] = []
    _job(gh, tmp_path, L1Job(REPO, sha), sent)
    first = _job(gh, tmp_path, sent[0], host_canary=disk_full)
    assert first.infrastructure and first.max_infra_retries == 2 and first.message == "retrying"
    assert _pools_check(gh)["output"]["title"] == "Waiting on 2 pool(s): cpu, gpu-a"
    _job(gh, tmp_path, replace(sent[0], attempt=2), host_canary=disk_full)
    _job(gh, tmp_path, replace(sent[1], attempt=2), host_canary=disk_full)
    check = _pools_check(gh)
    assert (check["conclusion"], check["output"]["title"]) == ("cancelled", "Every pool concluded cancelled")


def test_two_pool_jobs_finishing_together_conclude_once(
    loopback_github: LoopbackGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers (their own git caches, one store and lock dir) run the two pools at once: the
    reports are serialised by the repository lock, so the check is concluded exactly once, by the
    job that saw both results, and the verdict counts both pools."""
    import contextlib
    import threading
    from collections.abc import Iterator

    from workers.adapters.state import LocalState

    gh = loopback_github
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    cfg = config_yaml(flow_suite("unit", "tests", pools="[cpu, gpu-a]"), extra="  canary: false\n")
    sha = gh.commit(REPO, {".github/forksync.yml": cfg, "tests/test_gpu.py": GPU_TESTS})
    sent: list[L1Job] = []
    _job(gh, tmp_path, L1Job(REPO, sha), sent)
    results: dict[str, L1JobResult] = {}
    both_done = threading.Barrier(2, timeout=60)  # both suites have run: the reports contend for the lock
    lock_dir = LocalState(tmp_path / "data")

    class Contending:
        @contextlib.contextmanager
        def lock(self, name: str, ttl_s: int, wait_s: float) -> Iterator[None]:
            both_done.wait()
            with lock_dir.lock(name, ttl_s, wait_s):
                yield

    def worker(pool_job: L1Job) -> None:
        assert pool_job.pool is not None
        results[pool_job.pool] = run_l1_job(
            gh.adapter(gh.installation),
            GitCache(tmp_path / f"git-{pool_job.pool}"),
            tmp_path / "data",
            pool_job,
            clone_url=gh.git_url(REPO),
            token=gh.token_for(gh.installation),
            state=Contending(),
        )  # type: ignore[arg-type]

    threads = [threading.Thread(target=worker, args=(j,)) for j in sent]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(r.message for r in results.values()) == ["pending", "success"]
    check = _pools_check(gh)
    assert (check["conclusion"], check["output"]["title"]) == ("success", "All 2 pool(s) agree")
    assert "| unit | cpu | 2 | success |" in check["output"]["summary"]
    assert "| unit | gpu-a | 2 | success |" in check["output"]["summary"]


def test_a_pool_worker_consumes_its_pools_queue(tmp_path: Path) -> None:
    """FORKSYNC_WORKER_QUEUES=l1-gpu-a is a pool's worker: accepted, declared, with the L1 time limit."""
    from core.errors import ForksyncError
    from core.settings import WorkerSettings
    from workers.app.celery_app import celery_config

    settings = WorkerSettings.from_mapping(
        {"FORKSYNC_WORKER_QUEUES": "l1-gpu-a", "FORKSYNC_DATA_DIR": str(tmp_path)}
    )
    assert settings.worker_queues == ("l1-gpu-a",)
    assert settings.visibility_timeout_s > tasknames.QUEUE_TIME_LIMIT_S[tasknames.Q_L1_CPU]
    assert "l1-gpu-a" in [q.name for q in celery_config(settings)["task_queues"]]
    with pytest.raises(ForksyncError, match="unknown queue"):
        WorkerSettings.from_mapping({"FORKSYNC_WORKER_QUEUES": "gpu-a"})
