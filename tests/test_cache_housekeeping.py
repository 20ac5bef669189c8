"""The pair cache's housekeeping: trial merges' loose objects do not pile up without bound.

Real repositories (the ledger fixture's upstream and fork), the real cache repository
``open_pair`` makes, and git's own ``gc --auto`` run by :meth:`Pair.tidy` (made synchronous here
with ``gc.autoDetach=false`` so the test can look at the result).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable

import pygit2
import pytest

from core.config import load_repo_config
from core.errors import ForksyncError
from tests.fixtures.ledger import ForkedPair
from workers.engine.pair import CACHE_LAYOUT, CACHE_SETTINGS, Pair, open_pair
from workers.engine.planning import make_plan

Forked = Callable[[], ForkedPair]
DAY = 24 * 3600


def _config(pair: Pair, key: str) -> str:
    return pair.repo.git("config", "--get", key).decode().strip()


def _loose(pair: Pair) -> set[str]:
    objects = pair.repo.path / "objects"
    return {f"{d.name}{f.name}" for d in objects.iterdir() if len(d.name) == 2 for f in d.iterdir()}


def _age(pair: Pair, oid: str, seconds: int) -> None:
    path = pair.repo.path / "objects" / oid[:2] / oid[2:]
    then = time.time() - seconds
    os.utime(path, (then, then))


def _due(pair: Pair, repo: pygit2.Repository) -> list[str]:
    """Make ``gc --auto`` due: git estimates the loose objects from one fan-out directory
    (``objects/17``), so with ``gc.auto=1`` two old loose objects must land there."""
    pair.repo.git("config", "gc.auto", "1")
    pair.repo.git("config", "gc.autoDetach", "false")  # synchronous, to look at the result
    there: list[str] = []
    i = 0
    while len(there) < 2:
        oid = str(repo.create_blob(f"an old trial object {i}\n".encode()))
        i += 1
        if oid.startswith("17"):
            there.append(oid)
            _age(pair, oid, 10 * DAY)
    return there


def test_a_new_cache_gets_the_housekeeping_settings_and_an_old_one_on_open(forked: Forked) -> None:
    made = forked()
    pair = open_pair(str(made.upstream.path), str(made.fork.path))
    for key, value in CACHE_SETTINGS:
        assert _config(pair, key) == value
    layout = pair.cache_dir / "layout.txt"
    assert layout.read_text().strip() == CACHE_LAYOUT
    # A cache made before housekeeping: auto-gc off, no layout file.
    pair.repo.git("config", "gc.auto", "0")
    layout.unlink()
    again = open_pair(str(made.upstream.path), str(made.fork.path))
    assert _config(again, "gc.auto") == dict(CACHE_SETTINGS)["gc.auto"]
    assert layout.read_text().strip() == CACHE_LAYOUT


def test_tidy_prunes_old_unreachable_loose_objects_and_keeps_the_rest(forked: Forked) -> None:
    made = forked()
    pair = open_pair(str(made.upstream.path), str(made.fork.path))
    repo = pygit2.Repository(str(pair.repo.path))
    old = [str(repo.create_blob(f"old trial object {i}\n".encode())) for i in range(5)]
    fresh = str(repo.create_blob(b"written by the plan that just ran\n"))
    # A loose object a cache ref reaches (as the resolution memory's commits are), however old.
    sig = pygit2.Signature("t", "t@example.com", 0, 0)
    kept_tree = repo.TreeBuilder().write()
    kept = str(repo.create_commit("refs/forksync/memory-test", sig, sig, "kept", kept_tree, []))
    for oid in (*old, kept):
        _age(pair, oid, 10 * DAY)
    assert {*old, fresh, kept} <= _loose(pair)
    old += _due(pair, repo)

    pair.tidy()

    left = _loose(pair)
    assert not set(old) & left  # unreachable, not written for 10 days: pruned
    assert fresh in left  # unreachable but recent: a running plan may still use it
    assert kept in repo  # reachable from a cache ref: kept (now packed)
    # The borrowed histories are untouched: the fork's own objects are still read through the cache.
    assert pygit2.Oid(hex=made.base) in repo


def test_tidy_with_nothing_to_do_leaves_every_object_and_a_plan_calls_it(forked: Forked) -> None:
    made = forked()
    made.up(2)
    pair = open_pair(str(made.upstream.path), str(made.fork.path))
    before = _loose(pair)
    pair.tidy()  # below gc.auto: nothing happens
    assert _loose(pair) == before
    # A plan tidies the cache after its trial picks (here: due at once, run in the foreground).
    repo = pygit2.Repository(str(pair.repo.path))
    stale = _due(pair, repo)
    make_plan(pair, load_repo_config(""))
    assert not set(stale) & _loose(pair)
    assert (
        subprocess.run(
            ["git", "-C", str(pair.repo.path), "fsck", "--connectivity-only"], check=False
        ).returncode
        == 0
    )


def test_a_cache_whose_layout_cannot_be_written_is_a_clear_error(forked: Forked) -> None:
    made = forked()
    pair = open_pair(str(made.upstream.path), str(made.fork.path))
    layout = pair.cache_dir / "layout.txt"
    layout.unlink()
    layout.mkdir()  # something in the way that cannot be written as a file
    with pytest.raises(ForksyncError) as caught:
        open_pair(str(made.upstream.path), str(made.fork.path))
    assert "layout.txt" in str(caught.value) and "FORKSYNC_CACHE_DIR" in caught.value.remedy
