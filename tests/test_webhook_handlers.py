"""Worker handlers fed the kwargs the webhook view enqueues for real GitHub payload variants.

The view and the handlers agree on a contract (core/tasknames.py); these tests run the view's
output through ``workers.app.handlers.dispatch`` so that a drift between the two shows up.
"""

from __future__ import annotations

from typing import Any

import pytest

from core import tasknames
from tests.fixtures.payloads import deliver
from tests.fixtures.payloads import load_payload as load
from tests.fixtures.webhooks import RecordingSender


@pytest.fixture
def bot(payload_bot: tuple[Any, RecordingSender]) -> tuple[Any, RecordingSender]:
    return payload_bot


def test_added_repositories_are_ingested_by_the_handler(
    bot: Any, queued: list[tuple[str, dict[str, Any]]]
) -> None:
    """installation_repositories added, as the view enqueues it ("repositories_added"), makes the
    ingest handler ingest each added repository (it used to match only "added" and ingest none)."""
    from workers.app.handlers import dispatch

    client, sender = bot
    data = load("installation_repositories.removed.json")
    data["action"] = "added"
    data["repositories_added"], data["repositories_removed"] = data["repositories_removed"], []
    assert deliver(client, "installation_repositories", data).status_code == 202
    [(name, kwargs)] = sender.sent
    dispatch(name, kwargs)
    assert [(n, kw["repo"]) for n, kw in queued if n == "ingest"] == [("ingest", "acme/fork")]


def test_forced_push_kwargs_run_through_every_push_handler(
    bot: Any, queued: list[tuple[str, dict[str, Any]]]
) -> None:
    """The kwargs the view sends for a force push are accepted by every ON_PUSH handler (no
    TypeError): ingest, trunk L1 and the L3 reset each enqueue their follow-up once."""
    from workers.app.handlers import dispatch

    client, sender = bot
    assert deliver(client, "push", load("push.forced.json")).status_code == 202
    [(name, kwargs)] = sender.sent
    dispatch(name, kwargs)
    assert sorted(n for n, _ in queued) == ["ingest", "l3_reset", "run_l1"]
    assert all(kw["installation_id"] == 2311213 for _, kw in queued)


def test_push_without_installation_is_resolved_from_the_repository(
    bot: Any, queued: list[tuple[str, dict[str, Any]]], loopback_github: Any
) -> None:
    """A repository webhook (no "installation") is enqueued with installation_id None; the worker
    looks the App's installation up (GET /repos/{repo}/installation) and the handlers act with it."""
    from workers.app.handlers import dispatch
    from workers.tasks.webhooks import with_installation

    client, sender = bot
    data = load("push.forced.json")
    del data["installation"]
    data["repository"]["full_name"] = "acme/fork"
    assert deliver(client, "push", data).status_code == 202
    [(name, kwargs)] = sender.sent
    assert kwargs["installation_id"] is None
    resolved = with_installation(name, kwargs, loopback_github.app().installation_for_repo)
    assert resolved is not None and resolved["installation_id"] == loopback_github.installation
    dispatch(name, resolved)
    assert queued and all(kw["installation_id"] == loopback_github.installation for _, kw in queued)


def test_no_installation_and_none_found_is_dropped_with_a_warning(
    loopback_github: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Without an installation and with the App not installed on the repo, nothing runs and the log says why."""
    from workers.tasks.webhooks import with_installation

    kwargs = {"installation_id": None, "repo": "nobody/none", "delivery": "d-1"}
    with caplog.at_level("WARNING", logger="workers.tasks.webhooks"):
        assert (
            with_installation(tasknames.ON_PUSH, kwargs, loopback_github.app().installation_for_repo) is None
        )
    assert "nobody/none" in caplog.text and "d-1" in caplog.text
