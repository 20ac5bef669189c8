"""The command gate: permission caching and the per-user rate limit, in memory and on real Redis."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from workers.commands.gate import Gate, MemoryGate, RedisGate, can_write


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def redis_gate(redis_url: Callable[[int], str]) -> Iterator[RedisGate]:
    import redis

    client = redis.Redis.from_url(redis_url(0))
    prefix = f"forksync-test:{uuid.uuid4().hex}:"
    yield RedisGate(client, prefix)
    for key in client.scan_iter(f"{prefix}*"):
        client.delete(key)
    client.close()


def test_write_levels() -> None:
    """write, maintain and admin may act; read, triage, none and unknown may not."""
    assert all(can_write(p) for p in ("write", "maintain", "admin", "Admin"))
    assert not any(can_write(p) for p in ("read", "triage", "none", "", None))


def _gates(redis_gate: RedisGate) -> list[Gate]:
    return [MemoryGate(), redis_gate]


def test_permission_is_cached_within_ttl(redis_gate: RedisGate) -> None:
    """A second lookup within the TTL does not ask GitHub again; another user does."""
    for gate in _gates(redis_gate):
        calls: list[str] = []

        def lookup(value: str = "write", calls: list[str] = calls) -> str:
            calls.append(value)
            return value

        assert gate.permission("o/r", "Ann", 60, lookup) == "write"
        assert gate.permission("o/r", "ann", 60, lambda: lookup("read")) == "write"
        assert gate.permission("o/r", "bob", 60, lambda: lookup("read")) == "read"
        assert calls == ["write", "read"], type(gate).__name__


def test_permission_cache_expires() -> None:
    """After the TTL, permission is asked again (a revoked user loses access quickly)."""
    clock = FakeClock()
    gate = MemoryGate(clock)
    assert gate.permission("o/r", "ann", 60, lambda: "write") == "write"
    clock.now += 61
    assert gate.permission("o/r", "ann", 60, lambda: "read") == "read"


def test_zero_ttl_disables_the_cache(redis_gate: RedisGate) -> None:
    """permission_cache_s: 0 asks every time."""
    for gate in _gates(redis_gate):
        assert gate.permission("o/r", "zed", 0, lambda: "write") == "write"
        assert gate.permission("o/r", "zed", 0, lambda: "read") == "read"


def test_rate_limit_counts_commands_and_refusals_do_not_count(redis_gate: RedisGate) -> None:
    """Up to the limit is allowed; over it is refused with a retry time, and refused ones are not counted."""
    for gate in _gates(redis_gate):
        assert gate.take("o/r", "ann", 2, 3, 600).allowed
        refused = gate.take("o/r", "ann", 2, 3, 600)
        assert not refused.allowed and 1 <= refused.retry_after_s <= 600 and refused.used == 2
        assert gate.take("o/r", "ann", 1, 3, 600).allowed
        assert not gate.take("o/r", "ann", 1, 3, 600).allowed
        # Other users and other repositories have their own budget.
        assert gate.take("o/r", "bob", 3, 3, 600).allowed
        assert gate.take("o/other", "ann", 3, 3, 600).allowed


def test_rate_window_resets() -> None:
    """When the window ends, the user has the full budget again."""
    clock = FakeClock()
    gate = MemoryGate(clock)
    assert gate.take("o/r", "ann", 3, 3, 60).allowed
    assert gate.take("o/r", "ann", 1, 3, 60).retry_after_s == 60
    clock.now += 60
    assert gate.take("o/r", "ann", 3, 3, 60).allowed


def test_redis_window_expires_by_ttl(redis_gate: RedisGate) -> None:
    """On Redis the counter carries a TTL of the window, so it cannot grow forever."""
    redis_gate.take("o/r", "ann", 1, 3, 600)
    ttl = redis_gate.client.ttl(f"{redis_gate.prefix}rate:o/r:ann")
    assert 0 < ttl <= 600
