"""Whether Redis keeps queued messages across a restart (its append-only file), asked once at
start-up by the web process (``bot/dispatch.py``) and by every worker (``workers/app/celery_app.py``),
which say so in one log line (docs/security.md, operator's checklist, item 6)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RedisPersistence:
    """``aof`` is True (appendonly yes), False (no) or None (could not tell: ``detail`` says why)."""

    aof: bool | None
    fsync: str = ""
    detail: str = ""


def redis_persistence(redis_url: str) -> RedisPersistence:
    """Ask the Redis at ``redis_url`` for ``appendonly`` and ``appendfsync`` (CONFIG GET)."""
    import redis

    client = redis.Redis.from_url(redis_url, socket_connect_timeout=2, socket_timeout=2)
    try:
        config = client.config_get("append*")
    except redis.ResponseError:
        return RedisPersistence(None, detail="CONFIG GET is not allowed here (managed Redis?)")
    except redis.RedisError as exc:
        return RedisPersistence(None, detail=f"cannot reach Redis ({exc})")
    finally:
        client.close()
    return RedisPersistence(config.get("appendonly") == "yes", str(config.get("appendfsync") or ""))
