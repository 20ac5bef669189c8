"""Task names and routes live in one place: every task the workers register has a route in
``core/tasknames.py``, so none silently falls back to the default queue."""

from __future__ import annotations

from pathlib import Path

from core import tasknames
from core.settings import WorkerSettings
from workers.app.celery_app import create_celery


def test_every_registered_task_has_a_route(tmp_path: Path) -> None:
    """create_celery registers only forksync tasks that TASK_ROUTES routes; no route points at an undeclared queue."""
    app = create_celery(WorkerSettings.from_mapping({"FORKSYNC_DATA_DIR": str(tmp_path / "data")}))
    names = {name for name in app.tasks if not name.startswith("celery.")}
    assert names, "create_celery registered no tasks"
    assert {tasknames.POLL_UPSTREAM, tasknames.L1_COVERAGE, tasknames.L3_RESET, tasknames.RUN_L1} <= names
    unrouted = sorted(names - set(tasknames.TASK_ROUTES))
    assert unrouted == [], f"tasks without a route in core/tasknames.py: {unrouted}"
    assert not [n for n in names if not n.startswith("forksync.")], "a task outside the forksync.* names"
    assert {route["queue"] for route in tasknames.TASK_ROUTES.values()} <= set(tasknames.QUEUES)


def test_beat_sends_routed_names_only(tmp_path: Path) -> None:
    """Every task beat sends is a routed forksync task (beat never sends to the default queue by accident)."""
    app = create_celery(WorkerSettings.from_mapping({"FORKSYNC_DATA_DIR": str(tmp_path / "data")}))
    sent = {entry["task"] for entry in app.conf.beat_schedule.values()}
    assert sent and sent <= set(tasknames.TASK_ROUTES)
    assert tasknames.queue_for(tasknames.POLL_UPSTREAM) == tasknames.Q_INGEST
