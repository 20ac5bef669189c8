"""Start-up refuses (or warns about) a Redis that would lose deliveries on a restart."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot import create_app
from core.errors import ForksyncError
from tests.fixtures.workers import PrivateRedis


@pytest.fixture
def volatile_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path / "volatile", persistent=False).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def aof_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path / "aof", persistent=True).start()
    try:
        yield server
    finally:
        server.stop()


def _env(tmp_path: Path, url: str, **extra: str) -> dict[str, str]:
    return {"FORKSYNC_WEBHOOK_SECRET": "s", "FORKSYNC_DATA_DIR": str(tmp_path), "REDIS_URL": url, **extra}


def test_a_redis_without_aof_is_refused_when_required(volatile_redis: PrivateRedis, tmp_path: Path) -> None:
    with pytest.raises(ForksyncError) as err:
        create_app(_env(tmp_path, volatile_redis.url, FORKSYNC_REQUIRE_REDIS_AOF="1"))
    assert "appendonly" in err.value.one_line()


def test_a_redis_without_aof_is_warned_about(
    volatile_redis: PrivateRedis, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        create_app(_env(tmp_path, volatile_redis.url))
    assert any("append-only" in r.getMessage() for r in caplog.records)


def test_a_redis_with_aof_starts_quietly(
    aof_redis: PrivateRedis, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        create_app(_env(tmp_path, aof_redis.url, FORKSYNC_REQUIRE_REDIS_AOF="1"))
    assert not any("append-only" in r.getMessage() for r in caplog.records)


def _worker_report(tmp_path: Path, url: str | None, **extra: str) -> tuple[int, str, bool]:
    from core.settings import WorkerSettings
    from workers.app.celery_app import persistence_report

    env = {"FORKSYNC_DATA_DIR": str(tmp_path), **({"REDIS_URL": url} if url else {}), **extra}
    return persistence_report(WorkerSettings.from_mapping(env), env)


def test_workers_say_at_start_up_whether_redis_keeps_queued_messages(
    volatile_redis: PrivateRedis,
    aof_redis: PrivateRedis,
    tmp_path: Path,
) -> None:
    """Issue 14 finding 4: every worker checks persistence at start-up, in one line; a Redis
    without AOF is a warning saying what the delivery log covers, or a refusal when required."""
    level, line, refuse = _worker_report(tmp_path, aof_redis.url)
    assert level == logging.INFO and "AOF on" in line and not refuse and "\n" not in line
    level, line, refuse = _worker_report(tmp_path, volatile_redis.url)
    assert (
        level == logging.WARNING
        and "AOF off" in line
        and "replayed from the delivery log" in line
        and not refuse
    )
    level, line, refuse = _worker_report(tmp_path, volatile_redis.url, FORKSYNC_REQUIRE_REDIS_AOF="1")
    assert level == logging.ERROR and refuse and "refusing to start" in line
    level, line, refuse = _worker_report(tmp_path, None)
    assert level == logging.INFO and "embedded broker" in line and not refuse


def test_a_worker_refuses_to_start_on_a_redis_without_aof_when_required(
    volatile_redis: PrivateRedis, tmp_path: Path
) -> None:
    """The real ``celery worker`` process: it logs the line and exits instead of consuming."""
    import os
    import subprocess
    import sys

    from tests.fixtures.workers import REPO_ROOT

    env = {
        **os.environ,
        "REDIS_URL": volatile_redis.url,
        "FORKSYNC_DATA_DIR": str(tmp_path / "data"),
        "FORKSYNC_REQUIRE_REDIS_AOF": "1",
        "PYTHONPATH": str(REPO_ROOT),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "workers.app.celery_app",
            "worker",
            "-Q",
            "github",
            "--pool",
            "solo",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "refusing to start (FORKSYNC_REQUIRE_REDIS_AOF=1)" in done.stdout + done.stderr
    assert " ready." not in done.stdout + done.stderr
