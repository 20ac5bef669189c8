"""Who may run a command, and how often: a short-lived permission cache and a per-user rate limit.

Both live in Redis when there is one (shared by every worker, expiring by TTL) and in process
memory otherwise (the embedded, one-machine default). Neither is a source of truth: flushing
Redis only means one more permission lookup and a fresh rate window (design.md).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

# GitHub's collaborator permission levels that may steer the bot.
WRITE_LEVELS = frozenset({"write", "maintain", "admin"})


@dataclass(frozen=True)
class RateDecision:
    """``allowed`` is False when the user is over the limit; then retry after ``retry_after_s``."""

    allowed: bool
    used: int
    retry_after_s: int


class Gate(Protocol):
    def permission(self, repo: str, user: str, ttl_s: int, lookup: Callable[[], str]) -> str: ...

    def take(self, repo: str, user: str, count: int, limit: int, window_s: int) -> RateDecision: ...


# A reply whose commands ran but whose posting failed (GitHub said "later") is kept this long, so
# the retried task posts it alone instead of running the commands again.
PENDING_REPLY_S = 6 * 3600


def pending_json(body: str, reactions: tuple[str, ...]) -> str:
    import json

    return json.dumps({"body": body, "reactions": list(reactions)})


def pending_from(raw: str | bytes | None) -> tuple[str, tuple[str, ...]] | None:
    import json

    if raw is None:
        return None
    data = json.loads(raw)
    return str(data["body"]), tuple(str(r) for r in data["reactions"])


def can_write(permission: str | None) -> bool:
    return (permission or "").lower() in WRITE_LEVELS


class MemoryGate:
    """In-process gate for one machine without Redis (and for tests that need no server)."""

    # Entries kept at most (each map); past it, expired ones go first, then the soonest to expire.
    MAX_ENTRIES = 10_000

    def __init__(self, clock: Callable[[], float] = time.monotonic, max_entries: int = MAX_ENTRIES) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._perms: dict[tuple[str, str], tuple[float, str]] = {}
        self._windows: dict[tuple[str, str], tuple[float, int]] = {}
        self._replies: dict[tuple[str, str], tuple[float, str]] = {}
        self._max = max_entries

    def remember_reply(self, repo: str, comment_id: int, body: str, reactions: tuple[str, ...]) -> None:
        now = self._clock()
        with self._lock:
            self._evict(self._replies, now)
            self._replies[(repo.lower(), str(comment_id))] = (
                now + PENDING_REPLY_S,
                pending_json(body, reactions),
            )

    def pending_reply(self, repo: str, comment_id: int) -> tuple[str, tuple[str, ...]] | None:
        with self._lock:
            hit = self._replies.get((repo.lower(), str(comment_id)))
        return pending_from(hit[1]) if hit and hit[0] > self._clock() else None

    def forget_reply(self, repo: str, comment_id: int) -> None:
        with self._lock:
            self._replies.pop((repo.lower(), str(comment_id)), None)

    def size(self) -> int:
        """Entries held (permissions and rate windows)."""
        return len(self._perms) + len(self._windows)

    def _evict(self, table: dict[tuple[str, str], Any], now: float) -> None:
        """Keep ``table`` (entries ``(expires, value)``) under the cap; call with the lock held."""
        if len(table) < self._max:
            return
        for key in [k for k, v in table.items() if v[0] <= now]:
            del table[key]
        if len(table) >= self._max:
            for key in sorted(table, key=lambda k: table[k][0])[: len(table) - self._max + 1]:
                del table[key]

    def permission(self, repo: str, user: str, ttl_s: int, lookup: Callable[[], str]) -> str:
        key = (repo.lower(), user.lower())
        now = self._clock()
        with self._lock:
            hit = self._perms.get(key)
            if hit and hit[0] > now:
                return hit[1]
        value = lookup()
        if ttl_s > 0:
            with self._lock:
                self._evict(self._perms, now)
                self._perms[key] = (now + ttl_s, value)
        return value

    def take(self, repo: str, user: str, count: int, limit: int, window_s: int) -> RateDecision:
        key = (repo.lower(), user.lower())
        now = self._clock()
        with self._lock:
            ends, used = self._windows.get(key, (0.0, 0))
            if ends <= now:
                ends, used = now + window_s, 0
            if used + count > limit:
                return RateDecision(False, used, max(1, int(ends - now + 0.999)))
            if key not in self._windows:
                self._evict(self._windows, now)
            self._windows[key] = (ends, used + count)
            return RateDecision(True, used + count, 0)


class RedisGate:
    """The same over Redis: ``SET EX`` for permissions, an ``INCRBY`` counter with a TTL per window."""

    def __init__(self, client: Any, prefix: str = "forksync:cmd:") -> None:
        self.client = client
        self.prefix = prefix

    @classmethod
    def from_url(cls, url: str) -> RedisGate:
        import redis

        return cls(redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5))

    def permission(self, repo: str, user: str, ttl_s: int, lookup: Callable[[], str]) -> str:
        key = f"{self.prefix}perm:{repo.lower()}:{user.lower()}"
        cached = self.client.get(key)
        if cached is not None:
            return bytes(cached).decode() if isinstance(cached, bytes | bytearray) else str(cached)
        value = lookup()
        if ttl_s > 0:
            self.client.set(key, value.encode(), ex=ttl_s)
        return value

    def remember_reply(self, repo: str, comment_id: int, body: str, reactions: tuple[str, ...]) -> None:
        self.client.set(
            f"{self.prefix}reply:{repo.lower()}:{comment_id}",
            pending_json(body, reactions),
            ex=PENDING_REPLY_S,
        )

    def pending_reply(self, repo: str, comment_id: int) -> tuple[str, tuple[str, ...]] | None:
        return pending_from(self.client.get(f"{self.prefix}reply:{repo.lower()}:{comment_id}"))

    def forget_reply(self, repo: str, comment_id: int) -> None:
        self.client.delete(f"{self.prefix}reply:{repo.lower()}:{comment_id}")

    def take(self, repo: str, user: str, count: int, limit: int, window_s: int) -> RateDecision:
        key = f"{self.prefix}rate:{repo.lower()}:{user.lower()}"
        pipe = self.client.pipeline()
        # SET NX EX: the window starts with its first command and later ones do not extend it
        # (works on any Redis, unlike EXPIRE NX which needs 7.0).
        pipe.set(key, 0, ex=window_s, nx=True)
        pipe.incrby(key, count)
        pipe.ttl(key)
        _, used, ttl = pipe.execute()
        if int(used) > limit:
            # Refused commands do not count, so the user is not locked out for longer.
            self.client.decrby(key, count)
            return RateDecision(False, int(used) - count, max(1, int(ttl) if int(ttl) > 0 else window_s))
        return RateDecision(True, int(used), 0)
