"""Structured logs: the context filter, the JSON lines, and one delivery followed from webhook to PR."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import logging
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from core import logs


def test_json_lines_carry_the_unit_of_works_fields() -> None:
    stream = io.StringIO()
    handler = logs.install(logging.StreamHandler(stream), "json")
    logger = logging.getLogger("forksync.test.json")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        with logs.bound(delivery="d-1", repo="acme/fork"), logs.bound(installation=7):
            logger.info("hello %s", "there")
        logger.info("outside")
    finally:
        logger.removeHandler(handler)
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["msg"] == "hello there" and first["delivery"] == "d-1" and first["repo"] == "acme/fork"
    assert first["installation"] == 7 and first["level"] == "info" and first["ts"].endswith("Z")
    assert "delivery" not in second  # the context ended with its unit of work


def test_text_format_appends_the_fields() -> None:
    record = logging.LogRecord("x", logging.INFO, "f", 1, "msg", None, None)
    with logs.bound(delivery="d-2"):
        logs.ContextFilter().filter(record)
    assert logs.TextFormatter().format(record).endswith("msg [delivery=d-2]")


def test_a_task_inherits_its_senders_context_and_adds_its_own() -> None:
    """Headers from the sender, then the task's own kwargs (repo, installation_id, delivery) and id."""
    with logs.bound(delivery="d-3", repo="acme/fork", task_id="parent"):
        headers = logs.publish_headers()
    assert headers == {logs.HEADER: {"delivery": "d-3", "repo": "acme/fork"}}  # not the parent's task id
    request = SimpleNamespace(id="t-9", headers=None, **headers)
    assert logs.from_task(request, {"installation_id": 4}) == {
        "delivery": "d-3",
        "repo": "acme/fork",
        "installation": 4,
        "task_id": "t-9",
    }


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []
        self.addFilter(logs.ContextFilter())

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.mark.slow
def test_one_delivery_is_followed_from_webhook_to_pr(tmp_path: Path) -> None:
    """A push delivery: the view's line, the handler task's, the ingest task's (sent by the handler)
    and the bundle PR line all carry the same delivery id, the repo and the installation."""
    from celery.contrib.testing.worker import start_worker

    from bot import create_app
    from core.github.ingest import DryGitHub
    from core.settings import WorkerSettings
    from workers.app import handlers, runtime
    from workers.app.celery_app import create_celery
    from workers.demo.loop import FORK_REPO, SECRET, _AppSender, _push_payload
    from workers.demo.sample import UPSTREAM_URL, make_sample
    from workers.engine.git import Repository, run_git

    sample = make_sample(tmp_path)
    remote = tmp_path / "github" / f"{FORK_REPO}.git"
    remote.parent.mkdir(parents=True)
    run_git(tmp_path, ["clone", "--quiet", "--mirror", "--no-local", str(sample.fork), str(remote)])
    data = tmp_path / "data"
    settings = WorkerSettings.from_mapping(
        {
            "FORKSYNC_DATA_DIR": str(data),
            "FORKSYNC_GIT_URL_MAP": json.dumps({UPSTREAM_URL: str(sample.upstream)}),
        }
    )
    gh = DryGitHub(remotes={FORK_REPO: str(remote)})
    runtime.use(github=lambda _s, _i: gh)
    celery = create_celery(settings)
    web = create_app(
        {"FORKSYNC_WEBHOOK_SECRET": SECRET, "FORKSYNC_DATA_DIR": str(data)}, sender=_AppSender(celery)
    )
    capture = _Records()
    root = logging.getLogger()
    root.addHandler(capture)
    old_level = root.level
    root.setLevel(logging.INFO)
    delivery = "5f0e1a2b-follow-me"
    try:
        with (
            handlers.only_from("workers.tasks.ingest"),
            start_worker(celery, perform_ping_check=False, loglevel="INFO", shutdown_timeout=30),
        ):
            body = json.dumps(_push_payload(Repository(remote).rev_parse("refs/heads/main") or "")).encode()
            answer = web.test_client().post(
                "/webhook",
                data=body,
                headers={
                    "Content-Type": "application/json",
                    "X-GitHub-Event": "push",
                    "X-GitHub-Delivery": delivery,
                    "X-Hub-Signature-256": "sha256="
                    + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest(),
                },
            )
            assert answer.status_code == 202
            deadline = time.monotonic() + 90
            while not gh.checks and time.monotonic() < deadline:
                time.sleep(0.05)
            assert gh.checks, "the ingest did not finish"
    finally:
        runtime.use()
        root.removeHandler(capture)
        root.setLevel(old_level)
    ours = [r for r in capture.records if getattr(r, "delivery", None) == delivery]
    messages = [r.getMessage() for r in ours]
    loggers = {r.name for r in ours}
    assert any("accepted: forksync.on_push" in m for m in messages)  # the webhook view
    assert any(
        m.startswith("ingest example-org/triton") and "because push" in m for m in messages
    )  # the ingest task
    assert any(m.startswith("bundle PR #") for m in messages)  # ...down to the PR
    assert "forksync.webhooks" in loggers and "workers.jobs.ingestion" in loggers
    # Lines logged by the workers' code carry the task's id; the web request's lines (the view, and
    # the store's first migration when the delivery log opens in the request) have none.
    task_ids = {r.task_id for r in ours if r.name.startswith("workers.")}
    assert len(task_ids) >= 1 and None not in task_ids
    assert all(r.repo == FORK_REPO and r.installation == 1 for r in ours)
    # Nothing of this delivery is logged without its id (the ingest's lines all carry it).
    ingest_lines = [r for r in capture.records if r.name == "workers.jobs.ingestion"]
    assert ingest_lines and all(getattr(r, "delivery", None) == delivery for r in ingest_lines)
