"""Per-repository locks and metric series (Redis and on-disk), and the worker git caches."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from core.store import open_store
from tests.gitrepo import GitRepo
from workers.adapters.gitcache import TMP_REF_PREFIX, GitCache
from workers.adapters.state import LocalState, LockBusy, RedisState, SeriesStore


def _hold_lock_forever(root: str, ready: multiprocessing.synchronize.Event) -> None:
    state = LocalState(Path(root))
    with state.lock("ingest:o/r", ttl_s=60, wait_s=1):
        ready.set()
        time.sleep(60)


@pytest.mark.parametrize("kind", ["local", "redis"])
def test_lock_excludes_a_second_holder(kind: str, tmp_path: Path, redis_url: Callable[[int], str]) -> None:
    """While one task holds a repository's lock, another gets LockBusy; after release it gets it."""
    state = LocalState(tmp_path) if kind == "local" else RedisState(redis_url(3))
    name = f"ingest:o/r-{uuid.uuid4().hex}"
    with state.lock(name, ttl_s=30, wait_s=0.1):
        with pytest.raises(LockBusy), state.lock(name, ttl_s=30, wait_s=0.2):
            pass
        with state.lock(name + "-other", ttl_s=30, wait_s=0.1):
            pass  # another repository is independent
    with state.lock(name, ttl_s=30, wait_s=0.1):
        pass


def test_file_lock_dies_with_a_killed_holder(tmp_path: Path) -> None:
    """A holder killed with SIGKILL releases the lock: the next task is not wedged."""
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()
    proc = ctx.Process(target=_hold_lock_forever, args=(str(tmp_path), ready))
    proc.start()
    try:
        assert ready.wait(10)
        with pytest.raises(LockBusy), LocalState(tmp_path).lock("ingest:o/r", ttl_s=60, wait_s=0.2):
            pass
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(10)
        with LocalState(tmp_path).lock("ingest:o/r", ttl_s=60, wait_s=2):
            pass
    finally:
        if proc.is_alive():
            proc.kill()


def test_redis_lock_expires_after_its_ttl(redis_url: Callable[[int], str]) -> None:
    """A Redis lock whose holder vanished expires after its timeout."""
    name = f"ingest:o/r-{uuid.uuid4().hex}"
    client = redis.Redis.from_url(redis_url(3))
    client.set(f"forksync:lock:{name}", "dead-holder", px=300)
    state = RedisState(redis_url(3))
    with pytest.raises(LockBusy), state.lock(name, ttl_s=5, wait_s=0.05):
        pass
    with state.lock(name, ttl_s=5, wait_s=2):
        pass


@pytest.mark.parametrize("kind", ["local", "redis"])
def test_series_keeps_points_in_order(kind: str, tmp_path: Path, redis_url: Callable[[int], str]) -> None:
    """Appended points come back oldest first; limit keeps the newest."""
    state = (
        LocalState(tmp_path)
        if kind == "local"
        else RedisState(redis_url(3), SeriesStore(open_store(None, tmp_path)))
    )
    name = f"metrics:o/r-{uuid.uuid4().hex}"
    for i in range(5):
        state.append(name, {"t": i, "days_behind": i / 2})
    assert [p["t"] for p in state.series(name)] == [0, 1, 2, 3, 4]
    assert [p["t"] for p in state.series(name, limit=2)] == [3, 4]
    assert state.series(name + "-none") == []


def test_cache_fetches_incrementally_and_prunes(make_repo: Callable[[str], GitRepo], tmp_path: Path) -> None:
    """The cache mirrors the refspecs given, picks up new commits, and drops deleted branches."""
    origin = make_repo("origin")
    first = origin.commit("one", {"a.txt": "1\n"})
    origin.git("branch", "forksync/bundle/x")
    cache = GitCache(tmp_path / "git")
    specs = ["+refs/heads/main:refs/heads/main", "+refs/heads/forksync/*:refs/heads/forksync/*"]
    with cache.open("fork:o/r") as repo:
        cache.fetch(repo, str(origin.path), specs)
        assert repo.rev_parse("refs/heads/main") == first
        assert repo.rev_parse("refs/heads/forksync/bundle/x") == first
    second = origin.commit("two", {"a.txt": "2\n"})
    origin.git("branch", "-D", "forksync/bundle/x")
    with cache.open("fork:o/r") as repo:
        cache.fetch(repo, str(origin.path), specs)
        assert repo.rev_parse("refs/heads/main") == second
        assert repo.rev_parse("refs/heads/forksync/bundle/x") is None


def test_cache_recovers_from_a_crashed_task(make_repo: Callable[[str], GitRepo], tmp_path: Path) -> None:
    """Stale lock files, temporary refs and dead worktrees left by a killed task do not wedge the next fetch."""
    origin = make_repo("origin")
    origin.commit("one", {"a.txt": "1\n"})
    cache = GitCache(tmp_path / "git")
    specs = ["+refs/heads/main:refs/heads/main"]
    with cache.open("fork:o/r") as repo:
        cache.fetch(repo, str(origin.path), specs)
        head = repo.rev_parse("refs/heads/main")
        assert head is not None
        repo.git("update-ref", f"{TMP_REF_PREFIX}build-1", head)
        repo.git("worktree", "add", "--detach", str(tmp_path / "wt"), head)
    # the "crash": leftover lock files and a worktree whose directory vanished
    (repo.path / "refs" / "heads" / "main.lock").write_text("")
    (repo.path / "packed-refs.lock").write_text("")
    import shutil

    shutil.rmtree(tmp_path / "wt")
    newer = origin.commit("two", {"a.txt": "2\n"})
    with cache.open("fork:o/r") as repo:
        assert repo.rev_parse(f"{TMP_REF_PREFIX}build-1") is None
        assert repo.text("worktree", "list").count("\n") == 0  # only the bare repo itself
        cache.fetch(repo, str(origin.path), specs)
        assert repo.rev_parse("refs/heads/main") == newer


def test_redis_lock_is_renewed_while_held(redis_url: Callable[[int], str]) -> None:
    """A holder that outlives the lock's ttl keeps it (renewed in the background); nobody else gets it."""
    state = RedisState(redis_url(3))
    name = f"ingest:o/r-{uuid.uuid4().hex}"
    with state.lock(name, ttl_s=1, wait_s=0.1):
        time.sleep(2.2)
        with pytest.raises(LockBusy), state.lock(name, ttl_s=1, wait_s=0.1):
            pass
    with state.lock(name, ttl_s=1, wait_s=0.1):
        pass
