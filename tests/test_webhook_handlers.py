"""Worker handlers fed the kwargs the webhook view enqueues for real GitHub payload variants.

The view and the handlers agree on a contract (bot/tasknames.py); these tests run the view's
output through ``workers.handlers.dispatch`` so that a drift between the two shows up.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.fixtures.payloads import deliver
from tests.fixtures.payloads import load_payload as load
from tests.fixtures.webhooks import RecordingSender


@pytest.fixture
def bot(payload_bot: tuple[Any, RecordingSender]) -> tuple[Any, RecordingSender]:
    return payload_bot


def test_added_repositories_are_ingested_by_the_handler(bot: Any, queued: list[tuple[str, dict[str, Any]]]) -> None:
    """installation_repositories added, as the view enqueues it ("repositories_added"), makes the
    ingest handler ingest each added repository (it used to match only "added" and ingest none)."""
    from workers.handlers import dispatch

    client, sender = bot
    data = load("installation_repositories.removed.json")
    data["action"] = "added"
    data["repositories_added"], data["repositories_removed"] = data["repositories_removed"], []
    assert deliver(client, "installation_repositories", data).status_code == 202
    [(name, kwargs)] = sender.sent
    dispatch(name, kwargs)
    assert [(n, kw["repo"]) for n, kw in queued if n == "ingest"] == [("ingest", "acme/fork")]


def test_forced_push_kwargs_run_through_every_push_handler(bot: Any, queued: list[tuple[str, dict[str, Any]]]) -> None:
    """The kwargs the view sends for a force push are accepted by every ON_PUSH handler (no
    TypeError): ingest, trunk L1 and the L3 reset each enqueue their follow-up once."""
    from workers.handlers import dispatch

    client, sender = bot
    assert deliver(client, "push", load("push.forced.json")).status_code == 202
    [(name, kwargs)] = sender.sent
    dispatch(name, kwargs)
    assert sorted(n for n, _ in queued) == ["ingest", "l3_reset", "run_l1"]
    assert all(kw["installation_id"] == 2311213 for _, kw in queued)
