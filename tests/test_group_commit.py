"""The web process's group commit (``bot.dispatch.GroupCommit``): records from many threads are
written in shared batches, each exactly once, each caller told its own result only after its
batch was written, and a failed batch fails exactly its callers."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from bot.dispatch import GroupCommit


class _Log:
    """A write that records its batches (slowly, so that threads pile up behind it)."""

    def __init__(self, fail_when: str | None = None) -> None:
        self.batches: list[list[str]] = []
        self.written: set[str] = set()
        self.fail_when = fail_when
        self.lock = threading.Lock()

    def write(self, batch: list[str]) -> list[bool]:
        time.sleep(0.002)
        if self.fail_when is not None and self.fail_when in batch:
            self.fail_when = None
            raise OSError("disk on fire")
        with self.lock:
            self.batches.append(list(batch))
            firsts = []
            for record in batch:
                firsts.append(record not in self.written)
                self.written.add(record)
            return firsts


def _run(group: GroupCommit, records: list[list[str]]) -> dict[str, list[Any]]:
    results: dict[str, list[Any]] = {}
    lock = threading.Lock()
    start = threading.Barrier(len(records))

    def worker(mine: list[str]) -> None:
        start.wait()
        for record in mine:
            try:
                outcome: Any = group.accept(record)
            except OSError as exc:
                outcome = exc
            with lock:
                results.setdefault(record, []).append(outcome)

    threads = [threading.Thread(target=worker, args=(mine,)) for mine in records]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads), "a caller never returned"
    return results


def test_many_threads_share_batches_and_each_record_is_written_once() -> None:
    """16 threads x 25 records, each record sent by two threads: every record is in exactly one
    written batch per send, exactly one of its two callers is told "first", and batches held
    more than one record (fewer writes than records)."""
    log = _Log()
    group = GroupCommit(log.write)
    records = [[f"r{(t // 2) * 25 + i}" for i in range(25)] for t in range(16)]
    results = _run(group, records)
    assert sorted(results) == sorted({r for mine in records for r in mine})
    assert all(sorted(outcomes) == [False, True] for outcomes in results.values())
    assert sum(len(b) for b in log.batches) == 16 * 25
    assert len(log.batches) < 16 * 25 / 2


def test_a_failed_batch_fails_its_callers_and_the_next_batch_is_written() -> None:
    """The write raises for the batch holding "r-bad": that caller (and whoever shared its batch)
    gets the error, nothing of that batch is marked written, and later records still go through."""
    log = _Log(fail_when="r-bad")
    group = GroupCommit(log.write)
    with pytest.raises(OSError, match="disk on fire"):
        group.accept("r-bad")
    assert group.accept("r-bad") is True  # a redelivery: written now
    results = _run(group, [[f"t{t}-{i}" for i in range(10)] for t in range(8)])
    assert all(outcomes == [True] for outcomes in results.values())
    assert "r-bad" in log.written and len(log.written) == 81
