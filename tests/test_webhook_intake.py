"""The WSGI fast path for POST /webhook (``bot.webhooks.WebhookIntake``): it answers exactly as the
Flask view does (status line, headers, body), and leaves every other request to Flask."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from bot import create_app, webhooks
from bot.dispatch import SqliteDeliveryStore
from tests.datafiles import GITHUB_PAYLOADS
from tests.fixtures.webhooks import SECRET, RecordingSender, signed


def _app(tmp_path: Path, sender: RecordingSender) -> Flask:
    return create_app(
        {
            "FORKSYNC_WEBHOOK_SECRET": SECRET,
            "FORKSYNC_DATA_DIR": str(tmp_path / "data"),
            "FORKSYNC_MAX_BODY_BYTES": "12000",  # the 8.8 kB push fits
        },
        sender=sender,
        dedup=SqliteDeliveryStore(tmp_path / "d.sqlite", ttl_s=60),
    )


def _push() -> bytes:
    return (GITHUB_PAYLOADS / "push.with-new-branch.json").read_bytes()


def _cases() -> list[tuple[str, bytes, dict[str, str]]]:
    """Deliveries that end at each of the intake's answers."""
    push, headers = signed("push", _push(), delivery="intake-1")
    ping, ping_headers = signed("ping", (GITHUB_PAYLOADS / "ping.with-app_id.json").read_bytes())
    star, star_headers = signed("star", {"action": "created", "repository": {"full_name": "o/r"}})
    bad_json, bad_json_headers = signed("push", b"{not json")
    large, large_headers = signed("push", b" " * 12001)
    no_event = dict(headers, **{"X-GitHub-Delivery": "intake-2"})
    del no_event["X-GitHub-Event"]
    return [
        ("accepted", push, headers),
        ("duplicate", push, headers),
        ("wrong signature", push, dict(headers, **{"X-Hub-Signature-256": "sha256=" + "0" * 64})),
        ("no signature", push, {k: v for k, v in headers.items() if k != "X-Hub-Signature-256"}),
        ("ping", ping, ping_headers),
        ("ignored", star, star_headers),
        ("not json", bad_json, bad_json_headers),
        ("no event header", push, no_event),
        ("long delivery id", push, dict(headers, **{"X-GitHub-Delivery": "x" * 101})),
        ("too large", large, large_headers),
    ]


def _answers(app: Flask) -> list[tuple[str, int, list[tuple[str, str]], bytes]]:
    client = app.test_client()
    out = []
    for label, body, headers in _cases():
        resp = client.post("/webhook", data=body, headers=headers)
        out.append((label, resp.status_code, sorted(resp.headers.items()), resp.get_data()))
    return out


def test_the_fast_path_answers_as_the_flask_view_does(tmp_path: Path) -> None:
    """Each outcome (accepted, duplicate, 401, ping, ignored, 400s, 413): the same status, headers
    and body whether WebhookIntake or Flask's own view (the middleware taken out) answered it, and
    the same tasks sent."""
    fast_sender, flask_sender = RecordingSender(), RecordingSender()
    fast = _app(tmp_path / "fast", fast_sender)
    assert isinstance(fast.wsgi_app, webhooks.WebhookIntake)
    through_flask = _app(tmp_path / "flask", flask_sender)
    intake = through_flask.wsgi_app
    assert isinstance(intake, webhooks.WebhookIntake)
    through_flask.wsgi_app = intake.downstream  # type: ignore[method-assign]
    fast_answers, flask_answers = _answers(fast), _answers(through_flask)
    assert fast_answers == flask_answers
    statuses = {label: status for label, status, _, _ in fast_answers}
    assert statuses == {
        "accepted": 202,
        "duplicate": 200,
        "wrong signature": 401,
        "no signature": 401,
        "ping": 200,
        "ignored": 202,
        "not json": 400,
        "no event header": 400,
        "long delivery id": 400,
        "too large": 413,
    }
    assert [n for n, _ in fast_sender.sent] == [n for n, _ in flask_sender.sent] == ["forksync.on_push"]
    assert fast_sender.sent[0][1]["delivery"] == "intake-1"


def test_other_requests_still_go_through_flask(tmp_path: Path) -> None:
    """GET /webhook is Flask's 405, /healthz and /status are Flask's views, a trailing slash is
    Flask's 404: the fast path takes POST /webhook only."""
    client = _app(tmp_path, RecordingSender()).test_client()
    assert client.get("/webhook").status_code == 405
    assert client.post("/webhook/", data=b"{}").status_code == 404
    assert client.get("/healthz").status_code == 200
    assert "POST /webhook" in client.get("/status").get_data(as_text=True)


def test_a_failure_inside_the_intake_is_a_500_line_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An unexpected exception (a bug, not a refusal) answers 500 with one line and is logged with
    its traceback, as Flask does for its views; with app.testing it propagates, as Flask's does."""
    app = _app(tmp_path, RecordingSender())

    def broken(*_: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(webhooks, "parse_event", broken)
    body, headers = signed("push", _push())
    resp = app.test_client().post("/webhook", data=body, headers=headers)
    assert resp.status_code == 500 and resp.get_data(as_text=True).startswith("error:")
    assert resp.get_data(as_text=True).count("\n") == 1
    assert any(r.exc_info and "boom" in str(r.exc_info[1]) for r in caplog.records)
    app.testing = True
    with pytest.raises(RuntimeError, match="boom"):
        app.test_client().post("/webhook", data=body, headers=signed("push", _push())[1])


def test_deliveries_are_counted_by_event_and_answer(tmp_path: Path) -> None:
    """The fast path counts what the view counted: forksync_webhook_deliveries{event, answer}."""
    from core import telemetry

    def count(event: str, answer: str) -> float:
        value = telemetry.WEBHOOK_DELIVERIES.labels(event=event, answer=answer)._value.get()
        return float(value)

    before = (count("push", "accepted"), count("other", "ignored"))
    client = _app(tmp_path, RecordingSender()).test_client()
    body, headers = signed("push", _push())
    assert client.post("/webhook", data=body, headers=headers).status_code == 202
    star, star_headers = signed("star", json.dumps({"action": "created"}).encode())
    client.post("/webhook", data=star, headers=star_headers)
    assert (count("push", "accepted"), count("other", "ignored")) == (before[0] + 1, before[1] + 1)
