"""The web tier against hostile senders: unsigned bodies never held whole, slow bodies cut off,
a cap on bodies read at once, and payload text that cannot break answers or log lines."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
import tracemalloc
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from werkzeug.serving import make_server

from bot import create_app
from bot.dispatch import SqliteDeliveryStore
from core.commands import parse
from core.render import commands as render
from tests.fixtures.payloads import load_payload
from tests.fixtures.webhooks import SECRET, RecordingSender, signed


class BrokerLikeSender(RecordingSender):
    """Records like RecordingSender, but serialises kwargs as the broker does (JSON, UTF-8)."""

    def send(self, name: str, kwargs: Mapping[str, Any]) -> None:
        json.dumps(dict(kwargs)).encode("utf-8")
        super().send(name, kwargs)


def make_bot(tmp_path: Path, **env: str) -> tuple[Any, RecordingSender]:
    sender = BrokerLikeSender()
    app = create_app(
        {"FORKSYNC_WEBHOOK_SECRET": SECRET, "FORKSYNC_DATA_DIR": str(tmp_path), **env},
        sender=sender,
        dedup=SqliteDeliveryStore(tmp_path / "d.sqlite", ttl_s=60),
    )
    return app, sender


def test_lone_surrogate_in_a_signed_payload_is_a_clear_400(tmp_path: Path) -> None:
    app, sender = make_bot(tmp_path)
    data = load_payload("push.branch-deleted.json")
    body = json.dumps(data).replace('"ref": "', '"ref": "\\ud800', 1).encode()
    assert b"\\ud800" in body
    body, headers = signed("push", body)
    resp = app.test_client().post("/webhook", data=body, headers=headers)
    assert resp.status_code == 400 and "surrogate" in resp.text, resp.text
    assert sender.sent == []


def test_control_characters_from_a_payload_reach_no_answer_or_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A ref with CR/LF/NUL: the answer stays one line and every log line stays one line."""
    app, _ = make_bot(tmp_path)
    payload = {
        "ref": "refs/tags/v1\r\nforged: line\x00",
        "before": "0" * 40,
        "after": "1" * 40,
        "repository": {"full_name": "acme/fork"},
        "installation": {"id": 1},
        "commits": [],
    }
    body, headers = signed("push", payload)
    with caplog.at_level(logging.INFO):
        resp = app.test_client().post("/webhook", data=body, headers=headers)
    assert (
        resp.status_code < 500
        and resp.text.count("\n") == 1
        and "\r" not in resp.text
        and "\x00" not in resp.text
    )
    for record in caplog.records:
        line = record.getMessage()
        assert "\n" not in line and "\r" not in line and "\x00" not in line, line


def test_nul_in_a_skip_reason_gets_a_clear_reply() -> None:
    (command,) = parse('/skip abc123 "breaks\x00 AMD"')
    assert not command.ok and "control character (U+0000)" in (command.error or "")
    outcome = render.bad_command(command)
    assert "\x00" not in outcome.command + outcome.message and "without it" in outcome.message


class _Zeros:
    """A request body stream of ``size`` zero bytes, made as it is read (nothing allocated up front)."""

    def __init__(self, size: int) -> None:
        self.left = size
        self.read_bytes = 0

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        self.left -= n
        self.read_bytes += n
        return b"\0" * n

    def readline(self, n: int = -1) -> bytes:
        return self.read(n)


def _post_stream(app: Any, stream: Any, size: int, signature: str | None) -> Any:
    headers = {
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "Content-Type": "application/json",
        "Content-Length": str(size),
    }
    if signature:
        headers["X-Hub-Signature-256"] = signature
    # Handed to the app as wsgi.input itself: the test client would measure (seek) a given stream.
    return app.test_client().post(
        "/webhook", headers=headers, environ_overrides={"wsgi.input": stream, "CONTENT_LENGTH": str(size)}
    )


def test_a_body_without_a_signature_is_not_read(tmp_path: Path) -> None:
    app, _ = make_bot(tmp_path)
    stream = _Zeros(20 * 1024 * 1024)
    resp = _post_stream(app, stream, 20 * 1024 * 1024, None)
    assert resp.status_code == 401 and stream.read_bytes == 0


def test_a_wrongly_signed_25mb_body_never_sits_in_memory(tmp_path: Path) -> None:
    """A 25 MB body with a wrong signature is hashed as it streams: peak Python memory stays
    far below the body's size."""
    app, _ = make_bot(tmp_path)
    size = 25 * 1024 * 1024 - 10
    tracemalloc.start()
    try:
        resp = _post_stream(app, _Zeros(size), size, "sha256=" + "0" * 64)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert resp.status_code == 401
    assert peak < 4 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB while reading an unsigned body"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, int, RecordingSender]]:
    app, sender = make_bot(tmp_path, FORKSYNC_BODY_READ_TIMEOUT_S="3", FORKSYNC_MAX_CONCURRENT_READS="2")
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield "127.0.0.1", server.server_port, sender
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _slow_sender(host: str, port: int, stop: threading.Event) -> socket.socket:
    sock = socket.create_connection((host, port))
    sock.sendall(
        b"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"X-GitHub-Event: ping\r\nX-GitHub-Delivery: slow\r\nX-Hub-Signature-256: sha256="
        + b"0" * 64
        + b"\r\nContent-Length: 100000\r\n\r\n"
    )

    def trickle() -> None:
        while not stop.is_set():
            try:
                sock.send(b"{")
            except OSError:
                return
            stop.wait(0.2)

    threading.Thread(target=trickle, daemon=True).start()
    return sock


def _status(sock: socket.socket, timeout: float) -> int:
    sock.settimeout(timeout)
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(1024)
        if not chunk:
            break
        data += chunk
    return int(data.split()[1]) if data else 0


@pytest.mark.slow
def test_slow_bodies_are_cut_off_and_signed_pings_still_answer(
    served: tuple[str, int, RecordingSender],
) -> None:
    """Senders that trickle a byte every 0.2 s get 408 after the read timeout (3 s here); while
    they hold both read slots, another request is refused at once (503) rather than hanging; once
    they are cut off, a signed ping is answered."""
    host, port, _ = served
    stop = threading.Event()
    slow = [_slow_sender(host, port, stop) for _ in range(2)]
    third = None
    try:
        time.sleep(0.3)
        started = time.monotonic()
        third = _slow_sender(host, port, stop)
        assert _status(third, 5) == 503 and time.monotonic() - started < 3
        started = time.monotonic()
        assert [_status(s, 6) for s in slow] == [408, 408]
        assert time.monotonic() - started < 4
    finally:
        stop.set()
        for sock in [*slow, third]:
            if sock is not None:
                sock.close()
    body, headers = signed("ping", {"zen": "Keep it logically awesome.", "hook_id": 1})
    import urllib.request

    req = urllib.request.Request(f"http://{host}:{port}/webhook", data=body, headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=5) as answer:
        assert answer.status == 200 and answer.read().startswith(b"pong")
