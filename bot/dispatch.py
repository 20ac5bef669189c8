"""Where an accepted webhook goes: the delivery-dedup store and the task sender.

Both are small protocols so that tests and the embedded (Redis-less) mode plug in their own:
Redis ``SET NX EX`` or an SQLite file for dedup; Celery ``send_task`` by name for sending.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import socket
import sqlite3
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from core import logs
from core.errors import ForksyncError
from core.tasknames import TASK_ROUTES, embedded_broker_url, queue_for


class DispatchError(ForksyncError):
    """The dedup store or the task queue is unreachable: the delivery was not accepted."""


class DeliveryStore(Protocol):
    """Remembers delivery ids for a while, so a redelivered webhook is processed once."""

    def claim(self, delivery: str) -> bool:
        """Atomically record ``delivery``; True the first time, False when already seen."""
        ...

    def release(self, delivery: str) -> None:
        """Forget ``delivery`` (its enqueue failed), so that a redelivery is processed."""
        ...

    def check(self) -> str:
        """Raise :class:`DispatchError` when the store is down; else a one-line description."""
        ...


class TaskSender(Protocol):
    """Enqueues a task by name with primitive kwargs (the bot never imports workers)."""

    def send(self, name: str, kwargs: Mapping[str, Any]) -> None: ...

    def describe(self) -> str:
        """One line for the status page (no secrets: broker passwords are masked)."""
        ...


@runtime_checkable
class AtomicSender(Protocol):
    """A sender that claims the delivery id and enqueues in one atomic step (no half-accepted delivery)."""

    def send_once(self, delivery: str, name: str, kwargs: Mapping[str, Any]) -> bool:
        """Enqueue unless ``delivery`` was seen within the TTL; True when enqueued."""
        ...


# --------------------------------------------------------------------------- dedup stores


class RedisDeliveryStore:
    """Dedup with Redis ``SET key 1 NX EX ttl``: one round trip, atomic across processes."""

    def __init__(self, url: str, ttl_s: int, prefix: str = "forksync:delivery:") -> None:
        import redis

        self.client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self.ttl_s = ttl_s
        self.prefix = prefix
        self._url = _mask_url(url)

    def claim(self, delivery: str) -> bool:
        import redis

        try:
            return bool(self.client.set(self.prefix + delivery, b"1", nx=True, ex=self.ttl_s))
        except redis.RedisError as exc:
            raise DispatchError(
                f"Redis at {self._url} is unreachable ({type(exc).__name__})", "start Redis or fix REDIS_URL"
            ) from None

    def release(self, delivery: str) -> None:
        import redis

        with contextlib.suppress(redis.RedisError):  # the claim expires with its TTL anyway
            self.client.delete(self.prefix + delivery)

    def check(self) -> str:
        import redis

        try:
            self.client.ping()
        except redis.RedisError as exc:
            raise DispatchError(
                f"Redis at {self._url} is unreachable ({type(exc).__name__})", "start Redis or fix REDIS_URL"
            ) from None
        return f"redis {self._url}"


class SqliteDeliveryStore:
    """Dedup in an SQLite file (embedded mode, no Redis): safe across gunicorn processes."""

    def __init__(self, path: str | Path, ttl_s: int) -> None:
        self.path = Path(path)
        self.ttl_s = ttl_s
        self._local = threading.local()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._db() as db:
            db.execute("CREATE TABLE IF NOT EXISTS deliveries (id TEXT PRIMARY KEY, expires REAL NOT NULL)")

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=5, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            self._local.db = db
        return db

    def claim(self, delivery: str) -> bool:
        now = time.time()
        try:
            db = self._db()
            # Insert, or take over a row whose TTL has passed; rowcount says which happened.
            cur = db.execute(
                "INSERT INTO deliveries (id, expires) VALUES (?, ?) "
                "ON CONFLICT(id) DO UPDATE SET expires = excluded.expires WHERE deliveries.expires < ?",
                (delivery, now + self.ttl_s, now),
            )
            if cur.rowcount and int(now) % 97 == 0:
                db.execute("DELETE FROM deliveries WHERE expires < ?", (now,))
            return cur.rowcount == 1
        except sqlite3.Error as exc:
            raise DispatchError(
                f"delivery store {self.path} failed: {exc}", "check FORKSYNC_DATA_DIR is writable"
            ) from None

    def release(self, delivery: str) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._db().execute("DELETE FROM deliveries WHERE id = ?", (delivery,))

    def check(self) -> str:
        try:
            self._db().execute("SELECT 1").fetchone()
        except sqlite3.Error as exc:
            raise DispatchError(
                f"delivery store {self.path} failed: {exc}", "check FORKSYNC_DATA_DIR is writable"
            ) from None
        return f"sqlite {self.path}"


class _Waiting:
    """One record waiting in a :class:`GroupCommit`, and what became of it."""

    __slots__ = ("done", "error", "first", "lead", "ready", "record")

    def __init__(self, record: Any) -> None:
        self.record = record
        self.ready: threading.Event | None = None  # only a thread that waits needs one
        self.done = False
        self.lead = False  # handed the writing of the next batch
        self.first = False
        self.error: BaseException | None = None


class GroupCommit:
    """Writes the records of all threads of a process in shared transactions: the thread that
    finds no write in progress writes everything waiting (its own record first) in one
    transaction, the others wait for its commit; when it is done and more records arrived, it
    hands the next batch to the first of their threads. Every caller returns only after the
    transaction holding its record committed (or with its error).

    Why: under gunicorn's threads an SQLite commit per delivery made 24 writers (3 processes x 8
    threads) queue on the database's one write lock, SQLite's busy handler sleeping 1, 2, 5, 10 ms
    and more between tries: the delivery log alone took the intake from ~3,300 to ~1,500
    deliveries/s and its p99 from ~60 to ~290 ms at 64 connections (benchmarks/README.md). One
    writer per process with batches keeps the commits and the lock waits few."""

    def __init__(self, write: Callable[[list[Any]], list[bool]]) -> None:
        self._write = write
        self._lock = threading.Lock()
        self._queue: list[_Waiting] = []
        self._writing = False

    def accept(self, record: Any) -> bool:
        me = _Waiting(record)
        with self._lock:
            lead = me.lead = not self._writing
            if not lead:
                me.ready = threading.Event()
            self._queue.append(me)
            self._writing = True
        while not lead:
            assert me.ready is not None
            me.ready.wait()
            me.ready.clear()
            if me.done:
                break
            lead = me.lead
        if not me.done:
            self._write_batches(me)
        if me.error is not None:
            raise me.error
        return me.first

    def _write_batches(self, me: _Waiting) -> None:
        with self._lock:
            batch, self._queue = self._queue, []
        try:
            firsts = self._write([w.record for w in batch])
            for waiting, first in zip(batch, firsts, strict=True):
                waiting.first = first
        except BaseException as exc:  # every record of the batch failed with it
            for waiting in batch:
                waiting.error = exc
        finally:
            with self._lock:
                following = self._queue[0] if self._queue else None
                if following is None:
                    self._writing = False
                else:
                    following.lead = True  # still "writing": no other thread starts a batch
            for waiting in batch:
                waiting.done = True
                if waiting.ready is not None:
                    waiting.ready.set()
            if following is not None and following.ready is not None:
                following.ready.set()


class StoreDeliveryLog:
    """The durable accepted-delivery log (``core/store/deliveries.py``) for the web process.

    The store (``FORKSYNC_DATABASE_URL``, else SQLite under the data dir) is opened at the first
    delivery, not at start-up. One insert per accepted delivery; its primary key decides
    duplicates, so a Redis restart without persistence cannot make an old delivery run again.
    """

    def __init__(self, database_url: str | None, data_dir: str | Path) -> None:
        self.database_url = database_url
        self.data_dir = data_dir
        self._opened: Any = None
        self._group = GroupCommit(self._write)

    def _store(self) -> Any:
        # Kept after the first delivery: open_store resolves the data dir's path on every call
        # (~0.1 ms of syscalls a delivery), and the store it returns is the same each time.
        if self._opened is None:
            from core.store import open_store

            self._opened = open_store(self.database_url, self.data_dir)
        return self._opened

    def accept(
        self,
        delivery: str,
        event: str,
        repo: str,
        installation_id: int | None,
        task: str = "",
        kwargs: Mapping[str, Any] | None = None,
    ) -> bool:
        """Record an accepted delivery and the task it sends (``kwargs``: kept so that the worker's
        replay pass can send it again if the queued message is lost); True the first time, False
        when it was accepted before."""
        from core.store import deliveries

        record = deliveries.AcceptedDelivery(
            delivery,
            event,
            repo,
            installation_id,
            time.time(),
            task,
            json.dumps(dict(kwargs)) if kwargs is not None else "",
        )
        try:
            return self._group.accept(record)
        except Exception as exc:  # SQLAlchemy/driver errors: the delivery is not accepted
            raise DispatchError(
                f"the delivery log could not record {delivery} ({type(exc).__name__})",
                "check FORKSYNC_DATABASE_URL (or that FORKSYNC_DATA_DIR is writable)",
            ) from None

    def _write(self, records: list[Any]) -> list[bool]:
        from core.store import deliveries

        return deliveries.accept_many(self._store(), records)

    def forget(self, delivery: str) -> None:
        from core.store import deliveries

        with contextlib.suppress(Exception):  # a leftover row only makes GitHub's redelivery a duplicate
            deliveries.forget(self._store(), delivery)


# --------------------------------------------------------------------------- senders


class CelerySender:
    """Sends tasks by name through a Celery client app (no task code imported)."""

    def __init__(self, broker_url: str) -> None:
        from celery import Celery

        self._url = _mask_url(broker_url)
        self.celery = Celery("forksync-bot", broker=broker_url, set_as_current=False)
        self.celery.conf.update(
            task_routes=TASK_ROUTES,
            broker_connection_retry_on_startup=False,
            # Fail fast inside a webhook request: the view answers 503 and GitHub can redeliver.
            broker_transport_options={"max_retries": 1, "interval_start": 0, "interval_step": 0.2},
            broker_connection_timeout=2,
        )

    def send(self, name: str, kwargs: Mapping[str, Any]) -> None:
        try:
            with warnings.catch_warnings():
                # kombu's SQL transport uses SQLAlchemy's deprecated "noload" on first use: kombu's
                # to fix, harmless, and it must not turn a delivery into a 503 where warnings are errors.
                warnings.filterwarnings("ignore", message=r".*noload.*", category=DeprecationWarning)
                self.celery.send_task(name, kwargs=dict(kwargs), retry=False, headers=logs.publish_headers())
        except Exception as exc:  # kombu/redis raise many types; all mean "not enqueued"
            raise DispatchError(
                f"could not enqueue {name} on {self._url} ({type(exc).__name__})",
                "check that the broker is running",
            ) from None

    def describe(self) -> str:
        return f"celery {self._url}"


# Claim the delivery id and push the task message in one round trip, atomically.
_SEND_ONCE = """
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[1]) then
  redis.call('LPUSH', KEYS[2], ARGV[2])
  return 1
end
return 0
"""


class RedisTaskQueue:
    """Celery messages pushed straight onto the Redis queue, deduplicated in the same Lua call.

    Why not Celery's own ``send_task`` (which the web process could call without importing
    workers: ``CelerySender`` does, for the embedded broker): the delivery claim and the enqueue
    must be one atomic step, so that no delivery is ever marked seen but not enqueued (a crash
    between the two would drop it for the dedup TTL), and ``send_task`` cannot run inside the
    claim's Lua script. It is also slower on the hot path: claim + ``send_task`` took 1.57 ms per
    delivery against 1.10 ms for this one round trip (local Redis, best of 3 x 300, load 3.7 on
    2 cores). The price is that this class writes Celery's task protocol 2 itself, exactly as
    ``send_task`` writes it for the Redis transport (default exchange, routing key = the queue
    from core/tasknames.py); tests/test_dispatch.py checks it field by field against what
    ``send_task`` pushes, and runs it on a real worker, so a Celery upgrade that changes the wire
    format fails there.
    """

    def __init__(self, url: str, ttl_s: int, prefix: str = "forksync:delivery:") -> None:
        import redis

        self.client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self.ttl_s = ttl_s
        self.prefix = prefix
        self._url = _mask_url(url)
        self._lua = _SEND_ONCE.encode()
        self._sha = hashlib.sha1(self._lua).hexdigest().encode()  # what EVALSHA names it by
        self._ttl_arg = str(int(ttl_s)).encode()
        self._origin = f"forksync-web-{os.getpid()}@{socket.gethostname()}"

    def message(self, name: str, kwargs: Mapping[str, Any]) -> str:
        """The JSON envelope of one task message (Celery protocol 2, JSON body, base64 encoded)."""
        task_id = str(uuid.uuid4())
        body = json.dumps(
            [[], dict(kwargs), {"callbacks": None, "errbacks": None, "chain": None, "chord": None}]
        )
        return json.dumps(
            {
                "body": base64.b64encode(body.encode()).decode(),
                "content-encoding": "utf-8",
                "content-type": "application/json",
                "headers": {
                    "lang": "py",
                    "task": name,
                    "id": task_id,
                    "shadow": None,
                    "eta": None,
                    "expires": None,
                    "group": None,
                    "group_index": None,
                    "retries": 0,
                    "timelimit": [None, None],
                    "root_id": task_id,
                    "parent_id": None,
                    "argsrepr": "()",
                    "kwargsrepr": repr(dict(kwargs)),
                    "origin": self._origin,
                    "ignore_result": None,
                    "replaced_task_nesting": 0,
                    "stamped_headers": None,
                    "stamps": {},
                    **logs.publish_headers(),
                },
                "properties": {
                    "correlation_id": task_id,
                    "reply_to": "",
                    "delivery_mode": 2,
                    "delivery_info": {"exchange": "", "routing_key": queue_for(name)},
                    "priority": 0,
                    "body_encoding": "base64",
                    "delivery_tag": str(uuid.uuid4()),
                },
            }
        )

    def send_once(self, delivery: str, name: str, kwargs: Mapping[str, Any]) -> bool:
        import redis

        try:
            return self._claim_and_push(
                (self.prefix + delivery).encode(),
                queue_for(name).encode(),
                self.message(name, kwargs).encode(),
            )
        except redis.RedisError as exc:
            raise DispatchError(
                f"could not enqueue {name} on {self._url} ({type(exc).__name__})",
                "start Redis or fix REDIS_URL",
            ) from None

    def _claim_and_push(self, key: bytes, queue: bytes, message: bytes) -> bool:
        """The claim-and-push script (``EVALSHA``, ``EVAL`` when the server lost its script cache)
        on one of the client's pooled connections, the command packed here. redis-py's command
        layer around the same round trip (argument encoding, the retry wrapper, the observability
        hooks) cost ~4x the round trip's own CPU (benchmarks/README.md, webhook intake). A
        connection that broke (Redis restarted) is dropped and the call made once more on a new
        one: were the first call executed before the break, the second finds the key and answers
        "seen" (the message is queued once either way)."""
        import redis

        ttl = self._ttl_arg
        pool = self.client.connection_pool
        for attempt in (1, 2):
            conn: Any = pool.get_connection()  # redis-py's Connection: untyped
            try:
                try:
                    conn.send_packed_command([_pack(b"EVALSHA", self._sha, b"2", key, queue, ttl, message)])
                    reply = conn.read_response()
                except redis.exceptions.NoScriptError:
                    conn.send_packed_command([_pack(b"EVAL", self._lua, b"2", key, queue, ttl, message)])
                    reply = conn.read_response()
            except redis.ConnectionError:
                conn.disconnect()
                if attempt == 2:
                    raise
                continue
            except BaseException:
                conn.disconnect()  # a reply may be left unread on it
                raise
            finally:
                pool.release(conn)
            return bool(reply)
        raise AssertionError("unreachable")

    def send(self, name: str, kwargs: Mapping[str, Any]) -> None:
        import redis

        try:
            self.client.lpush(queue_for(name), self.message(name, kwargs))
        except redis.RedisError as exc:
            raise DispatchError(
                f"could not enqueue {name} on {self._url} ({type(exc).__name__})",
                "start Redis or fix REDIS_URL",
            ) from None

    def describe(self) -> str:
        return f"celery over redis {self._url}"


def _pack(*args: bytes) -> bytes:
    """One Redis command in RESP (an array of bulk strings)."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        parts += (b"$%d\r\n" % len(arg), arg, b"\r\n")
    return b"".join(parts)


def _mask_url(url: str) -> str:
    """A broker URL without its password, for messages and the status page."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    creds, _, host = rest.rpartition("@")
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user + ':***' if user else '***'}@{host}"


def default_store(redis_url: str | None, data_dir: str, ttl_s: int) -> DeliveryStore:
    """Redis when configured, else an SQLite file under the data dir."""
    if redis_url:
        return RedisDeliveryStore(redis_url, ttl_s)
    return SqliteDeliveryStore(Path(data_dir) / "deliveries.sqlite", ttl_s)


def default_sender(redis_url: str | None, data_dir: str, ttl_s: int) -> TaskSender:
    """Celery messages straight into Redis when configured, else Celery on the embedded broker."""
    if redis_url:
        return RedisTaskQueue(redis_url, ttl_s)
    return CelerySender(embedded_broker_url(data_dir))


REQUIRE_AOF_VAR = "FORKSYNC_REQUIRE_REDIS_AOF"


def redis_persistence_problem(redis_url: str) -> str | None:
    """Why this Redis would lose accepted deliveries and dedup keys on a restart, or None.

    The queue and the dedup keys live in Redis: without the append-only file (``appendonly yes``)
    a restart forgets queued messages (lost deliveries) and dedup keys (old deliveries run twice).
    An unreachable server, or one that hides ``CONFIG`` (managed Redis), is reported as unknown.
    """
    from core.persistence import redis_persistence

    state = redis_persistence(redis_url)
    if state.aof is None:
        if state.detail.startswith("CONFIG GET"):
            return "cannot check Redis persistence (CONFIG GET is not allowed here); make sure AOF is on"
        return f"cannot reach Redis to check its persistence ({state.detail})"
    if not state.aof:
        return (
            "Redis runs without its append-only file (appendonly no): a restart loses the messages "
            "queued at that moment (webhook deliveries are replayed from the delivery log after "
            "FORKSYNC_REPLAY_GRACE_S, and their dedup is in the store; queued ingests and L1/L2 runs "
            "wait for beat or the next event)"
        )
    return None


def check_redis_persistence(redis_url: str | None, env: Mapping[str, Any]) -> None:
    """At start-up: warn when Redis would lose deliveries on a restart; refuse to start when
    ``FORKSYNC_REQUIRE_REDIS_AOF=1`` (docs/security.md, operator's checklist)."""
    import logging

    if not redis_url:
        return
    problem = redis_persistence_problem(redis_url)
    if problem is None:
        return
    remedy = "set appendonly yes (and appendfsync everysec) in redis.conf, or CONFIG SET appendonly yes"
    if str(env.get(REQUIRE_AOF_VAR) or "") in ("1", "true", "yes"):
        raise ForksyncError(problem, remedy)
    logging.getLogger("forksync.dispatch").warning("%s; %s", problem, remedy)
