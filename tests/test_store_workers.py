"""Two real worker processes, each with its own data dir, triage from one store: what one
records on trunk, the other reads when it triages a PR (per-node files would disagree)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core import tasknames
from core.store import open_store
from tests.fixtures.l1 import FAILING_TEST, config_yaml, flow_suite, passing_tests
from tests.fixtures.workers import REPO_ROOT, WorkerProcess, wait_for
from tests.loopback_github import LoopbackGitHub
from workers.testing.triage import TrunkResults

pytestmark = pytest.mark.slow
FORK = "acme/fork"


@pytest.fixture
def github(tmp_path: Path) -> Iterator[LoopbackGitHub]:
    gh = LoopbackGitHub(tmp_path / "github").start()
    gh.add_repo(FORK)
    yield gh
    gh.close()


def test_two_workers_triage_from_the_same_store(
    github: LoopbackGitHub, tmp_path: Path, store_url: str, shared_redis_db: str
) -> None:
    """Worker A (l1-cpu) records trunk, where `test_adds_one` fails; worker B (l1-gpu, another data
    dir) tests a PR that still fails it: B classifies it broken trunk from A's record, so the PR
    is not blamed and L1 passes."""
    gh = github
    installation = gh.add_installation([FORK])
    cfg = config_yaml(flow_suite("unit", "tests"))
    trunk = gh.commit(
        FORK,
        {".github/forksync.yml": cfg, "tests/test_a.py": FAILING_TEST, "tests/test_b.py": passing_tests(2)},
    )
    subprocess.run(["git", "--git-dir", str(gh.bare(FORK)), "update-ref", "refs/heads/pr", trunk], check=True)
    head = gh.commit(FORK, {"tests/test_c.py": passing_tests(2, "pr")}, branch="pr")
    number = gh.add_pull(FORK, "pr")
    base_env = {
        **os.environ,
        **gh.settings(),
        "REDIS_URL": shared_redis_db,
        "FORKSYNC_DATABASE_URL": store_url,
        "FORKSYNC_GIT_URL_MAP": json.dumps({f"{gh.api_url}/": f"{gh.api_url}/git/"}),
        "PYTHONPATH": str(REPO_ROOT),
    }
    workers = [
        WorkerProcess(
            {**base_env, "FORKSYNC_DATA_DIR": str(tmp_path / f"node-{q}")}, tmp_path / f"{q}.log", queues=q
        )
        for q in (tasknames.Q_L1_CPU, tasknames.Q_L1_GPU)
    ]
    try:
        for w in workers:
            w.start()
        from core.settings import WorkerSettings
        from workers.app.celery_app import create_celery

        app = create_celery(
            WorkerSettings.from_mapping({**base_env, "FORKSYNC_DATA_DIR": str(tmp_path / "sender")})
        )
        app.send_task(
            tasknames.RUN_L1,
            kwargs={
                "installation_id": installation,
                "repo": FORK,
                "head_sha": trunk,
                "trunk": True,
                "push_ref": "refs/heads/main",
            },
            queue=tasknames.Q_L1_CPU,
        )
        results = TrunkResults(open_store(store_url, "."), FORK)
        wait_for(lambda: results.has_run(trunk, "unit"), 90, "worker A's trunk record")
        app.send_task(
            tasknames.RUN_L1,
            kwargs={"installation_id": installation, "repo": FORK, "head_sha": head, "number": number},
            queue=tasknames.Q_L1_GPU,
        )

        def done() -> dict[str, Any] | None:
            with gh.lock:
                runs = [
                    r
                    for r in gh.state.check_runs[FORK].values()
                    if r["name"] == "forksync / L1" and r["head_sha"] == head and r["status"] == "completed"
                ]
            return runs[0] if runs else None

        check = wait_for(done, 90, "worker B's L1 check")
    finally:
        for w in workers:
            w.stop()
    assert "l1-gpu" in workers[1].text() and "forksync.run_l1" in workers[1].text()
    assert "forksync.run_l1" in workers[0].text()
    assert check["conclusion"] == "success", check["output"]
    assert "broken trunk" in (check["output"].get("text") or "") + check["output"]["summary"]
    assert not (tmp_path / "node-l1-gpu" / "l1" / "results.sqlite").exists()
