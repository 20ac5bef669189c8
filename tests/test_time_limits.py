"""Nothing waits forever: network git calls time out, every task has a limit fit for its queue,
and each worker's visibility timeout fits the queues it consumes."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core import tasknames
from core.settings import WorkerSettings, visibility_for
from workers.app.celery_app import celery_config, create_celery
from workers.engine.git import GitError, Repository


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never answers (a black-holed remote)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                held.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(2)
        for conn in held:
            conn.close()
        server.close()


def test_a_fetch_from_a_remote_that_never_answers_times_out(
    silent_server: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git fetch from a socket that accepts and stays silent fails (transient, "timed out") after
    FORKSYNC_GIT_TIMEOUT_S instead of pinning the worker."""
    monkeypatch.setenv("FORKSYNC_GIT_TIMEOUT_S", "2")
    repo = Repository(tmp_path / "cache.git")
    repo.path.mkdir()
    repo.git("init", "-q", "--bare")
    started = time.monotonic()
    with pytest.raises(GitError) as err:
        repo.git(
            "fetch",
            "--quiet",
            "--",
            f"http://127.0.0.1:{silent_server}/acme/repo.git",
            "+refs/heads/main:refs/x",
        )
    assert time.monotonic() - started < 10
    assert err.value.returncode == 124 and "timed out" in err.value.stderr
    assert err.value.args_list[0] == "fetch"


def test_every_task_has_a_time_limit_fit_for_its_queue(tmp_path: Path) -> None:
    app = create_celery(WorkerSettings.from_mapping({"FORKSYNC_DATA_DIR": str(tmp_path / "data")}))
    names = [n for n in app.tasks if n.startswith("forksync.")]
    assert set(tasknames.WEBHOOK_TASKS) <= set(names)
    for name in names:
        task = app.tasks[name]
        queue = tasknames.queue_for(name)
        assert task.time_limit is not None, f"{name} has no time_limit"
        assert task.time_limit <= tasknames.QUEUE_TIME_LIMIT_S[queue], (name, task.time_limit)
        assert visibility_for((queue,)) > task.time_limit


def test_webhook_workers_redeliver_within_a_minute_and_long_workers_never_early(tmp_path: Path) -> None:
    """A worker consuming only the webhook queue has a visibility timeout under a minute and its own
    unacked index; a worker with L2 has one above L2's limit (a healthy 12 h run is not redone)."""
    fast = WorkerSettings.from_mapping(
        {
            "FORKSYNC_DATA_DIR": str(tmp_path),
            "REDIS_URL": "redis://127.0.0.1:1/0",
            "FORKSYNC_WORKER_QUEUES": "github",
        }
    )
    slow = WorkerSettings.from_mapping(
        {
            "FORKSYNC_DATA_DIR": str(tmp_path),
            "REDIS_URL": "redis://127.0.0.1:1/0",
            "FORKSYNC_WORKER_QUEUES": "ingest,l1-cpu,l2",
        }
    )
    everything = WorkerSettings.from_mapping(
        {"FORKSYNC_DATA_DIR": str(tmp_path), "REDIS_URL": "redis://127.0.0.1:1/0"}
    )
    fast_opts = celery_config(fast)["broker_transport_options"]
    slow_opts = celery_config(slow)["broker_transport_options"]
    assert fast_opts["visibility_timeout"] + fast_opts["unacked_restore_interval"] <= 60
    assert slow_opts["visibility_timeout"] > tasknames.QUEUE_TIME_LIMIT_S[tasknames.Q_L2]
    assert (
        celery_config(everything)["broker_transport_options"]["visibility_timeout"]
        > tasknames.QUEUE_TIME_LIMIT_S[tasknames.Q_L2]
    )
    assert fast_opts["unacked_index_key"] != slow_opts["unacked_index_key"]
