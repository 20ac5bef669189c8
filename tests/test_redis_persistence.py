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


def test_a_redis_without_aof_is_warned_about(volatile_redis: PrivateRedis, tmp_path: Path,
                                             caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        create_app(_env(tmp_path, volatile_redis.url))
    assert any("append-only" in r.getMessage() for r in caplog.records)


def test_a_redis_with_aof_starts_quietly(aof_redis: PrivateRedis, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        create_app(_env(tmp_path, aof_redis.url, FORKSYNC_REQUIRE_REDIS_AOF="1"))
    assert not any("append-only" in r.getMessage() for r in caplog.records)
