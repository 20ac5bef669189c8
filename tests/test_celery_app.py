"""The Celery factory: queues and routes from one place, both brokers, beat from config, retries."""

from __future__ import annotations

from pathlib import Path

import pytest
from celery.schedules import crontab

from core import tasknames
from core.config import load_repo_config
from core.github.errors import RetryableGitHubError
from core.settings import WorkerSettings
from workers.app import celery_app


def settings(tmp_path: Path, **env: str) -> WorkerSettings:
    return WorkerSettings.from_mapping({"FORKSYNC_DATA_DIR": str(tmp_path / "data"), **env})


def test_embedded_default_without_redis_url(tmp_path: Path) -> None:
    """Without REDIS_URL, broker and results are SQLite files under the data dir (no Redis URL anywhere)."""
    conf = celery_app.celery_config(settings(tmp_path))
    data = (tmp_path / "data").resolve()
    assert conf["broker_url"] == f"embedded+sqlite:///{data / 'celery-broker.sqlite'}"
    assert conf["result_backend"] == f"db+sqlite:///{data / 'celery-results.sqlite'}"
    # the file is the one the webhook view sends to
    assert tasknames.embedded_broker_url(str(data)).split("+", 1)[1] == conf["broker_url"].split("+", 1)[1]
    assert "redis" not in repr(conf)


def test_redis_url_makes_it_distributed(tmp_path: Path) -> None:
    """With REDIS_URL both broker and results use it, with a visibility timeout above the longest task."""
    conf = celery_app.celery_config(settings(tmp_path, REDIS_URL="redis://127.0.0.1:6379/3"))
    assert conf["broker_url"] == conf["result_backend"] == "redis://127.0.0.1:6379/3"
    from core.settings import LONGEST_TASK_S

    assert conf["broker_transport_options"]["visibility_timeout"] > LONGEST_TASK_S


def test_queues_and_routes_come_from_tasknames(tmp_path: Path) -> None:
    """Every queue of core/tasknames.py is declared, and every route there is used unchanged."""
    conf = celery_app.celery_config(settings(tmp_path))
    assert (
        [q.name for q in conf["task_queues"]]
        == list(tasknames.QUEUES)
        == ["ingest", "github", "l1-cpu", "l1-gpu", "l2"]
    )
    for name, route in tasknames.TASK_ROUTES.items():
        assert conf["task_routes"][name] == route
    assert conf["task_routes"][celery_app.POLL_UPSTREAM] == {"queue": "ingest"}


def test_beat_schedule_follows_config() -> None:
    """Beat polls and snapshots at the configured periods and triggers L2 at l2.schedule (UTC)."""
    config = load_repo_config(
        "schedule: {poll_upstream_minutes: 3, snapshot_minutes: 15}\nl2: {schedule: '04:30'}\n"
    )
    beat = celery_app.beat_schedule(config)
    assert beat["poll-upstream"]["task"] == celery_app.POLL_UPSTREAM
    assert beat["poll-upstream"]["schedule"].total_seconds() == 180
    assert beat["snapshot-metrics"]["task"] == tasknames.SNAPSHOT_METRICS
    assert beat["snapshot-metrics"]["schedule"].total_seconds() == 900
    assert beat["nightly-l2"]["task"] == tasknames.RUN_L2 == "forksync.run_l2"
    assert beat["nightly-l2"]["schedule"] == crontab(hour=4, minute=30)


def test_beat_reads_the_process_config_file(tmp_path: Path) -> None:
    """FORKSYNC_CONFIG names the forksync.yml whose schedule beat follows."""
    cfg = tmp_path / "forksync.yml"
    cfg.write_text("schedule:\n  poll_upstream_minutes: 7\n")
    conf = celery_app.celery_config(settings(tmp_path, FORKSYNC_CONFIG=str(cfg)))
    assert conf["beat_schedule"]["poll-upstream"]["schedule"].total_seconds() == 420


def test_factory_registers_ingest_and_webhook_tasks(tmp_path: Path) -> None:
    """create_celery binds the ingest task (acks_late, reject on worker lost) and one task per webhook."""
    app = celery_app.create_celery(settings(tmp_path))
    ingest = app.tasks[tasknames.INGEST]
    assert ingest.acks_late and ingest.reject_on_worker_lost
    for name in tasknames.WEBHOOK_TASKS:
        assert name in app.tasks
    assert celery_app.settings_of(app).data_dir == (tmp_path / "data").resolve()


def test_flask_pattern_runs_tasks_in_app_context(tmp_path: Path) -> None:
    """Given a Flask app, tasks run inside its app context and the app keeps the Celery instance."""
    from flask import Flask, current_app

    flask_app = Flask("probe")
    flask_app.config["FORKSYNC_DATA_DIR"] = str(tmp_path / "data")
    app = celery_app.create_celery(flask_app)
    assert flask_app.extensions["celery"] is app

    @app.task(name="probe.app_name", shared=False)  # never leak into later Celery apps
    def app_name() -> str:
        return str(current_app.name)

    assert app_name.apply().get() == "probe"


def test_bad_url_map_is_a_clear_error() -> None:
    """A malformed FORKSYNC_GIT_URL_MAP names the variable and the expected shape."""
    from core.errors import ForksyncError

    with pytest.raises(ForksyncError, match="FORKSYNC_GIT_URL_MAP"):
        WorkerSettings.from_mapping({"FORKSYNC_GIT_URL_MAP": "[1]"})


def test_url_map_longest_prefix_wins() -> None:
    """The most specific prefix rewrites a URL; unmatched URLs pass unchanged."""
    s = WorkerSettings.from_mapping(
        {"FORKSYNC_GIT_URL_MAP": '{"https://github.com/": "/m/", "https://github.com/o/up": "/special/up"}'}
    )
    assert s.map_url("https://github.com/o/up.git") == "/special/up.git"
    assert s.map_url("https://github.com/x/y") == "/m/x/y"
    assert s.map_url("/local/path") == "/local/path"


def transient(retry_after_s: float) -> RetryableGitHubError:
    return RetryableGitHubError("GitHub answered 502", retry_after_s, status=502)


def test_backoff_honours_retry_after_and_grows() -> None:
    """Backoff never undercuts GitHub's Retry-After, doubles per retry, and stays capped."""
    assert celery_app.retry_after(transient(30)) == 30.0
    assert celery_app.retry_after(ValueError("x")) is None
    assert celery_app.backoff_s(0, floor_s=30) >= 30
    assert 2 <= celery_app.backoff_s(0) < 3
    assert 16 <= celery_app.backoff_s(3) < 21
    assert celery_app.backoff_s(40) <= celery_app.RETRY_MAX_S + 1


def test_transient_error_retries_then_succeeds(tmp_path: Path) -> None:
    """A task raising a retryable error is retried (eagerly here) until it succeeds; others fail at once."""
    app = celery_app.create_celery(settings(tmp_path))
    app.conf.task_always_eager = True
    calls: list[int] = []

    @app.task(name="probe.flaky", bind=True, retry_base_s=0.0, shared=False)
    def flaky(self: object) -> str:
        calls.append(1)
        if len(calls) < 3:
            raise transient(0)
        return "ok"

    assert flaky.apply().get() == "ok"
    assert len(calls) == 3

    @app.task(name="probe.broken", shared=False)
    def broken() -> None:
        raise ValueError("not transient")

    result = flaky.app.tasks["probe.broken"].apply()
    assert isinstance(result.result, ValueError)


def test_serve_rejects_an_unknown_queue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`forksync serve --queues` names the unknown queue and the known ones, exit 2, nothing started."""
    from workers.cli import main

    monkeypatch.setenv("FORKSYNC_DATA_DIR", str(tmp_path / "data"))
    assert main(["serve", "--queues", "ingest,gpu-fast"]) == 2
    err = capsys.readouterr().err
    assert "unknown queue(s) gpu-fast" in err and "l1-gpu" in err
    assert not (tmp_path / "data").exists()


def test_serve_worker_command_runs_beat_unless_told_not_to() -> None:
    """The worker serve starts consumes the given queues with embedded beat, or without it."""
    from workers.cli.serve import DEFAULT_QUEUES, worker_command

    assert "l1-gpu" not in DEFAULT_QUEUES.split(",")
    cmd = worker_command(DEFAULT_QUEUES, 1, beat=True)
    assert cmd[cmd.index("-Q") + 1] == DEFAULT_QUEUES and "--beat" in cmd
    assert "--beat" not in worker_command("ingest", 2, beat=False)
