"""app.yml and Procfile: the manifest asks for what the bot uses; the processes match the queues."""

from __future__ import annotations

from pathlib import Path

import yaml

from bot.events import HANDLED_EVENTS
from core import tasknames

ROOT = Path(__file__).resolve().parents[1]


def test_manifest_has_the_required_keys_and_permissions() -> None:
    """app.yml names the App, its webhook, and exactly the permissions the issue lists."""
    manifest = yaml.safe_load((ROOT / "app.yml").read_text())
    assert {"name", "url", "hook_attributes", "public", "default_permissions", "default_events"} <= set(
        manifest
    )
    assert manifest["hook_attributes"]["url"].endswith("/webhook")
    assert manifest["default_permissions"] == {
        "checks": "write",
        "contents": "write",
        "issues": "write",
        "pull_requests": "write",
        "metadata": "read",
        "statuses": "read",
        "administration": "read",
    }


def test_manifest_subscribes_to_every_handled_event() -> None:
    """Every event the webhook view handles is subscribed (installation* and ping come unasked)."""
    manifest = yaml.safe_load((ROOT / "app.yml").read_text())
    implicit = {"installation", "installation_repositories", "ping"}
    assert set(HANDLED_EVENTS) - implicit == set(manifest["default_events"])


def test_procfile_runs_web_workers_for_every_queue_and_beat() -> None:
    """Procfile: gunicorn serves bot:create_app(); the workers together consume every queue; beat runs."""
    lines = dict(line.split(":", 1) for line in (ROOT / "Procfile").read_text().splitlines() if line.strip())
    assert set(lines) == {"web", "webhooks", "worker", "gpu", "beat"}
    assert "gunicorn" in lines["web"] and "'bot:create_app()'" in lines["web"]
    consumed: set[str] = set()
    for name in ("webhooks", "worker", "gpu"):
        queues = lines[name].split("-Q", 1)[1].split()[0]
        consumed |= set(queues.split(","))
        # Each worker declares its queues, which size its visibility timeout (issue 14).
        assert f"FORKSYNC_WORKER_QUEUES={queues} " in lines[name]
    assert consumed == set(tasknames.QUEUES)
    assert "l1-gpu" not in lines["worker"]  # GPU work only on the GPU worker
    assert "beat" in lines["beat"] and "workers.app.celery_app" in lines["beat"]
