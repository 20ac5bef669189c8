"""Worker process settings: the bot's :class:`Settings` plus what only workers need.

Read from the environment (or a mapping, in tests) when a Celery app is created, never at
import time. Extra variables:

* ``FORKSYNC_CONFIG``: a ``forksync.yml`` whose ``schedule`` and ``l2.schedule`` drive beat
  (defaults when unset); each repository's own ``.github/forksync.yml`` drives its ingestion;
* ``FORKSYNC_GIT_URL_MAP``: JSON object ``{"prefix": "replacement"}`` applied to every git URL
  a worker fetches or pushes (like git's ``url.<base>.insteadOf``), so tests and mirrors can
  point ``https://github.com/...`` at local remotes;
* ``FORKSYNC_WORKER_QUEUES``: the queues this worker consumes (as its ``-Q``); they size its
  Redis visibility timeout (``visibility_for``) and name its own unacked-message index;
* ``FORKSYNC_VISIBILITY_TIMEOUT_S``: Redis visibility timeout (overrides the one from the queues),
  and every queue's lease on the embedded broker (else each queue's own, ``workers/app/embedded.py``);
  tests lower it to see redelivery;
* ``FORKSYNC_RETRY_BASE_S``: first backoff step for transient GitHub errors (default 2 s);
* ``FORKSYNC_LOCK_TTL_S``: how soon a dead holder's repository lock expires (default 60 s;
  a live holder renews it);
* ``FORKSYNC_REPLAY_GRACE_S``: how long an accepted delivery may sit unfinished and untouched
  before the replay pass sends it again (default 300 s; tests lower it);
* ``FORKSYNC_DATABASE_URL``: the shared SQL store (``core/store``) for trunk results, baselines,
  L2 history and series; unset, SQLite at ``<data dir>/store.sqlite``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core import tasknames
from core.config import RepoConfig, Settings, load_repo_config_file
from core.errors import ForksyncError
from core.store import Store, open_store

# The longest task we run: the hard time limit of the slowest queue (L2, core/tasknames.py).
LONGEST_TASK_S = max(tasknames.QUEUE_TIME_LIMIT_S.values())
# Redis re-delivers an unacknowledged (acks_late) message after this long; it must exceed the
# longest task or a healthy long task would be run twice. A worker consuming only some queues
# gets the timeout of those (visibility_for): webhook workers re-run a dead worker's messages
# within a minute.
DEFAULT_VISIBILITY_TIMEOUT_S = LONGEST_TASK_S + 3600


def visibility_for(queues: tuple[str, ...]) -> int:
    """The visibility timeout of a worker consuming ``queues``: above their longest time limit
    (by 5 s for the webhook queue alone, by 15 min otherwise), and no longer."""
    longest = max(tasknames.queue_time_limit(q) for q in queues)
    return longest + (5 if longest < 120 else 15 * 60)


@dataclass(frozen=True)
class WorkerSettings:
    bot: Settings = field(default_factory=Settings)
    process_config: RepoConfig = field(default_factory=RepoConfig)
    git_url_map: tuple[tuple[str, str], ...] = ()
    visibility_timeout_s: int = DEFAULT_VISIBILITY_TIMEOUT_S
    # The queues this worker consumes (FORKSYNC_WORKER_QUEUES, as its -Q): they size its
    # visibility timeout and name its own unacked-message index in Redis.
    worker_queues: tuple[str, ...] = tasknames.QUEUES
    retry_base_s: float = 2.0
    lock_ttl_s: int = 60
    replay_grace_s: float = 300.0
    # FORKSYNC_VISIBILITY_TIMEOUT_S when set: every queue's lease on the embedded broker too.
    visibility_override_s: int | None = None

    @classmethod
    def from_mapping(cls, env: Mapping[str, Any] | None = None) -> WorkerSettings:
        import os

        env = os.environ if env is None else env
        raw_map = env.get("FORKSYNC_GIT_URL_MAP") or "{}"
        try:
            parsed = json.loads(raw_map)
            if not isinstance(parsed, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in parsed.items()
            ):
                raise ValueError("not an object of strings")
        except ValueError as exc:
            raise ForksyncError(
                f"FORKSYNC_GIT_URL_MAP is not a JSON object of prefix to replacement ({exc})",
                'set it like {"https://github.com/": "/srv/mirrors/"} or unset it',
            ) from None
        # Longest prefix first, so a specific mapping wins over a general one.
        url_map = tuple(sorted(parsed.items(), key=lambda kv: -len(kv[0])))
        timeout = env.get("FORKSYNC_VISIBILITY_TIMEOUT_S")
        queues = tuple(q.strip() for q in (env.get("FORKSYNC_WORKER_QUEUES") or "").split(",") if q.strip())
        unknown = [q for q in queues if q not in tasknames.QUEUES and not tasknames.is_l1_pool_queue(q)]
        if unknown:
            raise ForksyncError(
                f"FORKSYNC_WORKER_QUEUES names unknown queue(s) {', '.join(unknown)}",
                f"use some of {', '.join(tasknames.QUEUES)} or an L1 pool's l1-<pool> (the worker's -Q)",
            )
        queues = queues or tasknames.QUEUES
        return cls(
            bot=Settings.from_mapping(env),
            process_config=load_repo_config_file(env.get("FORKSYNC_CONFIG") or None),
            git_url_map=url_map,
            visibility_timeout_s=int(timeout) if timeout else visibility_for(queues),
            worker_queues=queues,
            retry_base_s=float(env.get("FORKSYNC_RETRY_BASE_S") or 2.0),
            lock_ttl_s=int(env.get("FORKSYNC_LOCK_TTL_S") or 60),
            replay_grace_s=float(env.get("FORKSYNC_REPLAY_GRACE_S") or 300.0),
            visibility_override_s=int(timeout) if timeout else None,
        )

    @property
    def data_dir(self) -> Path:
        return Path(self.bot.data_dir).resolve()

    @property
    def embedded(self) -> bool:
        """True without ``REDIS_URL``: broker, results, locks and series live under the data dir."""
        return not self.bot.redis_url

    def store(self) -> Store:
        """The shared SQL store: ``FORKSYNC_DATABASE_URL``, else SQLite under the data dir."""
        return open_store(self.bot.database_url, self.data_dir)

    def map_url(self, url: str) -> str:
        """Apply ``FORKSYNC_GIT_URL_MAP`` (longest matching prefix) to a git URL."""
        for prefix, replacement in self.git_url_map:
            if url.startswith(prefix):
                return replacement + url[len(prefix) :]
        return url
