"""The webhook view: signature, size, dedup over a real socket; the rest with Flask's test client."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis
from werkzeug.serving import make_server

from bot import create_app
from bot.dispatch import DispatchError, SqliteDeliveryStore
from bot.webhooks import signature_ok
from core import tasknames
from tests.datafiles import GITHUB_PAYLOADS
from tests.fixtures.webhooks import SECRET, BotServer, RecordingSender, signed

PAYLOADS = GITHUB_PAYLOADS


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((PAYLOADS / name).read_text())
    return data


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    try:
        conn.request("POST", "/webhook", body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


# --------------------------------------------------------------------------- real socket


def test_valid_delivery_is_enqueued_once_with_its_key(bot_server: BotServer) -> None:
    """A signed push is answered 202 and enqueues forksync.on_push with the small key + delivery id."""
    body, headers = signed("push", load("push.with-new-branch.json"))
    status, text = post(bot_server.url, body, headers)
    assert (status, text.split(":")[0]) == (202, "accepted")
    assert bot_server.sender.sent == [
        (
            tasknames.ON_PUSH,
            {
                "installation_id": 1,
                "repo": "Codertocat/Hello-World",
                "ref": "refs/heads/master",
                "before": "0" * 40,
                "after": "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
                "delivery": headers["X-GitHub-Delivery"],
            },
        )
    ]


@pytest.mark.parametrize("signature", [None, "sha256=" + "0" * 64, "sha1=abc", "garbage"])
def test_missing_or_wrong_signature_is_401_and_nothing_is_enqueued(
    bot_server: BotServer, signature: str | None
) -> None:
    """No or a wrong X-Hub-Signature-256 → 401; no task sent, no delivery id claimed."""
    body, headers = signed("push", load("push.with-new-branch.json"))
    del headers["X-Hub-Signature-256"]
    if signature is not None:
        headers["X-Hub-Signature-256"] = signature
    status, text = post(bot_server.url, body, headers)
    assert status == 401 and "X-Hub-Signature-256" in text
    assert bot_server.sender.sent == []
    # The id was not burnt: the same delivery, correctly signed, is still accepted.
    body2, headers2 = signed("push", body, delivery=headers["X-GitHub-Delivery"])
    assert post(bot_server.url, body2, headers2)[0] == 202


def test_signature_of_another_secret_is_refused(bot_server: BotServer) -> None:
    """A body signed with a different secret is 401."""
    body, headers = signed("push", load("push.with-new-branch.json"), secret="other-secret")
    assert post(bot_server.url, body, headers)[0] == 401
    assert bot_server.sender.sent == []


def test_oversized_content_length_is_413_before_the_body_is_read(bot_server: BotServer) -> None:
    """Content-Length over 25 MB → 413 at once: the server answers without waiting for the body."""
    parts = urlsplit(bot_server.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=5) as sock:
        head = (
            "POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "X-GitHub-Event: push\r\nX-GitHub-Delivery: big\r\nX-Hub-Signature-256: sha256=00\r\n"
            f"Content-Length: {25 * 1024 * 1024 + 1}\r\n\r\n"
        )
        sock.sendall(head.encode() + b"{")  # one byte of 25 MB: a reading server would hang here
        reply = sock.recv(4096).decode()
    assert reply.startswith("HTTP/1.1 413")
    assert bot_server.sender.sent == []


def test_chunked_body_over_the_limit_is_413_while_reading(redis_store: Any, tmp_path: Path) -> None:
    """Without Content-Length, the limit is enforced while reading (chunked upload)."""
    sender = RecordingSender()
    app = create_app(
        {
            "FORKSYNC_WEBHOOK_SECRET": SECRET,
            "FORKSYNC_MAX_BODY_BYTES": "1000",
            "FORKSYNC_DATA_DIR": str(tmp_path),
        },
        sender=sender,
        dedup=redis_store,
    )
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        body, headers = signed("push", {"pad": "x" * 5000, **load("push.with-new-branch.json")})
        conn = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=10)
        conn.request(
            "POST",
            "/webhook",
            body=iter([body[i : i + 512] for i in range(0, len(body), 512)]),
            headers=headers,
            encode_chunked=True,
        )
        resp = conn.getresponse()
        assert resp.status == 413
        conn.close()
        # A small chunked body under the limit is accepted: chunking itself is fine.
        small, h2 = signed("ping", {"zen": "z"})
        conn = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=10)
        conn.request("POST", "/webhook", body=iter([small]), headers=h2, encode_chunked=True)
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        server.shutdown()
        server.server_close()
    assert sender.sent == []


def test_repeated_delivery_is_200_duplicate_and_processed_once(bot_server: BotServer) -> None:
    """The same X-GitHub-Delivery twice → 202 then 200 "duplicate"; one task sent; key in Redis has a TTL."""
    body, headers = signed("pull_request", load("pull_request.opened.json"))
    first = post(bot_server.url, body, headers)
    second = post(bot_server.url, body, headers)
    assert first[0] == 202 and second[0] == 200 and second[1].startswith("duplicate")
    assert [name for name, _ in bot_server.sender.sent] == [tasknames.ON_PULL_REQUEST]
    ttl = bot_server.store.client.ttl(bot_server.store.prefix + headers["X-GitHub-Delivery"])
    assert 0 < ttl <= 60


# --------------------------------------------------------------------------- test client


@pytest.fixture
def client_and_sender(tmp_path: Path) -> tuple[Any, RecordingSender, SqliteDeliveryStore]:
    sender = RecordingSender()
    store = SqliteDeliveryStore(tmp_path / "d.sqlite", ttl_s=60)
    app = create_app(
        {"FORKSYNC_WEBHOOK_SECRET": SECRET, "FORKSYNC_DATA_DIR": str(tmp_path)}, sender=sender, dedup=store
    )
    return app.test_client(), sender, store


def deliver(client: Any, event: str, payload: dict[str, Any] | bytes, **kw: Any) -> Any:
    body, headers = signed(event, payload, **kw)
    return client.post("/webhook", data=body, headers=headers)


def test_ping_is_200_and_enqueues_nothing(client_and_sender: Any) -> None:
    """ping → 200 pong; no task."""
    client, sender, _ = client_and_sender
    resp = deliver(client, "ping", load("ping.with-app_id.json"))
    assert resp.status_code == 200 and resp.text.startswith("pong")
    assert sender.sent == []


def test_unhandled_event_is_202_ignored(client_and_sender: Any) -> None:
    """An event we do not handle → 202 "ignored"; no task."""
    client, sender, _ = client_and_sender
    resp = deliver(client, "star", {"action": "created", "repository": {"full_name": "o/r"}})
    assert resp.status_code == 202 and resp.text.startswith("ignored")
    assert sender.sent == []


def test_not_json_is_400_with_one_line_reason(client_and_sender: Any) -> None:
    """A signed body that is not JSON → 400, one line saying so."""
    client, sender, _ = client_and_sender
    resp = deliver(client, "push", b"{not json")
    assert resp.status_code == 400 and "not JSON" in resp.text and resp.text.count("\n") == 1
    assert sender.sent == []


def test_missing_field_is_400_naming_it(client_and_sender: Any) -> None:
    """A push without "after" → 400 naming the field; nothing enqueued."""
    client, sender, _ = client_and_sender
    data = load("push.with-new-branch.json")
    del data["after"]
    resp = deliver(client, "push", data)
    assert resp.status_code == 400 and "after" in resp.text
    assert sender.sent == []


def test_missing_event_header_is_400(client_and_sender: Any) -> None:
    """No X-GitHub-Event → 400."""
    client, sender, _ = client_and_sender
    body, headers = signed("push", load("push.with-new-branch.json"))
    del headers["X-GitHub-Event"]
    assert client.post("/webhook", data=body, headers=headers).status_code == 400
    assert sender.sent == []


def test_form_encoded_delivery_is_read(client_and_sender: Any) -> None:
    """GitHub's form content type (payload=<json>) is accepted like JSON."""
    from urllib.parse import urlencode

    client, sender, _ = client_and_sender
    body = urlencode({"payload": json.dumps(load("check_suite.rerequested.json"))}).encode()
    _, headers = signed("check_suite", body)
    headers["Content-Type"] = "application/x-www-form-urlencoded"
    assert client.post("/webhook", data=body, headers=headers).status_code == 202
    assert sender.sent[0][0] == tasknames.ON_CHECK_SUITE


@pytest.mark.parametrize(
    ("event", "filename", "task", "keys"),
    [
        (
            "pull_request",
            "pull_request.closed.json",
            tasknames.ON_PULL_REQUEST,
            {
                "installation_id",
                "repo",
                "number",
                "action",
                "head_sha",
                "head_ref",
                "base_ref",
                "merged",
                "base_changed",
            },
        ),
        (
            "issue_comment",
            "issue_comment.created.json",
            tasknames.ON_COMMENT,
            {
                "installation_id",
                "repo",
                "issue_number",
                "comment_id",
                "author",
                "author_type",
                "is_pull_request",
            },
        ),
        (
            "check_run",
            "check_run.requested_action.json",
            tasknames.ON_CHECK_RUN,
            {"installation_id", "repo", "check_run_id", "name", "head_sha", "action", "requested_action"},
        ),
        (
            "check_run",
            "check_run.rerequested.json",
            tasknames.ON_CHECK_RUN,
            {"installation_id", "repo", "check_run_id", "name", "head_sha", "action", "requested_action"},
        ),
        (
            "check_suite",
            "check_suite.rerequested.json",
            tasknames.ON_CHECK_SUITE,
            {"installation_id", "repo", "check_suite_id", "head_sha", "head_branch", "action"},
        ),
        (
            "installation",
            "installation.created.json",
            tasknames.ON_INSTALLATION,
            {"installation_id", "action", "repos", "removed"},
        ),
        (
            "installation_repositories",
            "installation_repositories.added.json",
            tasknames.ON_INSTALLATION,
            {"installation_id", "action", "repos", "removed"},
        ),
    ],
)
def test_each_handled_event_enqueues_its_task_with_primitive_kwargs(
    client_and_sender: Any, event: str, filename: str, task: str, keys: set[str]
) -> None:
    """Each handled event → 202 and exactly its task, kwargs = the contract keys + delivery, all primitives."""
    client, sender, _ = client_and_sender
    resp = deliver(client, event, load(filename))
    assert resp.status_code == 202, resp.text
    assert len(sender.sent) == 1
    name, kwargs = sender.sent[0]
    assert name == task
    assert set(kwargs) == keys | {"delivery"}
    json.dumps(kwargs)  # primitives only: must serialise


def test_check_suite_completed_reaches_the_coverage_watchdog(client_and_sender: Any) -> None:
    """Another CI system's suite completing is enqueued (the coverage check re-reads the required
    checks); a check_suite action we do not act on is ignored and enqueues nothing."""
    client, sender, _ = client_and_sender
    data = load("check_suite.requested.json")
    data["action"] = "completed"
    resp = deliver(client, "check_suite", data)
    assert resp.status_code == 202 and not resp.text.startswith("ignored")
    assert [(name, kwargs["action"]) for name, kwargs in sender.sent] == [
        (tasknames.ON_CHECK_SUITE, "completed")
    ]
    data["action"] = "in_progress"
    resp = deliver(client, "check_suite", data)
    assert resp.status_code == 202 and resp.text.startswith("ignored") and len(sender.sent) == 1


@pytest.mark.parametrize("change", ["edited", "deleted", "bot-type", "bot-login"])
def test_comment_edits_and_bot_comments_are_ignored(client_and_sender: Any, change: str) -> None:
    """Only new comments by humans are enqueued; edits, deletions and bots → 202 ignored."""
    client, sender, _ = client_and_sender
    data = load("issue_comment.created.json")
    if change in ("edited", "deleted"):
        data["action"] = change
    elif change == "bot-type":
        data["comment"]["user"]["type"] = "Bot"
    else:
        data["comment"]["user"]["login"] = "dependabot[bot]"
    resp = deliver(client, "issue_comment", data)
    assert resp.status_code == 202 and resp.text.startswith("ignored")
    assert sender.sent == []


def test_broker_down_is_503_and_the_delivery_can_be_redelivered(client_and_sender: Any) -> None:
    """If enqueueing fails → 503 and the dedup claim is released, so a redelivery is accepted."""
    client, sender, _ = client_and_sender
    data = load("push.with-new-branch.json")
    delivery = str(uuid.uuid4())
    sender.fail = True
    assert deliver(client, "push", data, delivery=delivery).status_code == 503
    sender.fail = False
    assert deliver(client, "push", data, delivery=delivery).status_code == 202
    assert len(sender.sent) == 1


def test_no_webhook_secret_configured_refuses_everything(tmp_path: Path) -> None:
    """Without FORKSYNC_WEBHOOK_SECRET nothing is accepted (503 naming the setting)."""
    sender = RecordingSender()
    app = create_app(
        {"FORKSYNC_DATA_DIR": str(tmp_path)},
        sender=sender,
        dedup=SqliteDeliveryStore(tmp_path / "d.sqlite", 60),
    )
    body, headers = signed("push", load("push.with-new-branch.json"))
    resp = app.test_client().post("/webhook", data=body, headers=headers)
    assert resp.status_code == 503 and "FORKSYNC_WEBHOOK_SECRET" in resp.text
    assert sender.sent == []


class _DownStore:
    def claim(self, delivery: str) -> bool:
        raise DispatchError("Redis at redis://x is unreachable", "start Redis")

    def release(self, delivery: str) -> None:
        pass

    def check(self) -> str:
        raise DispatchError("Redis at redis://x is unreachable", "start Redis")


def test_healthz_is_200_when_store_is_up_and_503_when_down(tmp_path: Path) -> None:
    """/healthz reports the dedup store: 200 up, 503 down (and a delivery is then 503, not lost silently)."""
    up = create_app(
        {"FORKSYNC_WEBHOOK_SECRET": SECRET, "FORKSYNC_DATA_DIR": str(tmp_path)},
        sender=RecordingSender(),
        dedup=SqliteDeliveryStore(tmp_path / "d.sqlite", 60),
    )
    assert up.test_client().get("/healthz").status_code == 200
    sender = RecordingSender()
    down = create_app(
        {"FORKSYNC_WEBHOOK_SECRET": SECRET, "FORKSYNC_DATA_DIR": str(tmp_path)},
        sender=sender,
        dedup=_DownStore(),
    )
    resp = down.test_client().get("/healthz")
    assert resp.status_code == 503 and "unreachable" in resp.text
    body, headers = signed("push", load("push.with-new-branch.json"))
    assert down.test_client().post("/webhook", data=body, headers=headers).status_code == 503
    assert sender.sent == []


def test_healthz_checks_real_redis(tmp_path: Path, redis_url: Callable[[int], str]) -> None:
    """With REDIS_URL (the default stores), /healthz pings Redis: up → 200; a dead port → 503."""
    ok = create_app(
        {"FORKSYNC_WEBHOOK_SECRET": SECRET, "FORKSYNC_DATA_DIR": str(tmp_path), "REDIS_URL": redis_url(0)}
    )
    assert ok.test_client().get("/healthz").status_code == 200
    dead = create_app(
        {
            "FORKSYNC_WEBHOOK_SECRET": SECRET,
            "FORKSYNC_DATA_DIR": str(tmp_path),
            "REDIS_URL": "redis://127.0.0.1:1/0",
        }
    )
    assert dead.test_client().get("/healthz").status_code == 503


def test_index_page_says_what_the_app_is_without_secrets(tmp_path: Path) -> None:
    """GET /status names the app and its state, and never shows the secret or the key (/ is the dashboard)."""
    app = create_app(
        {
            "FORKSYNC_WEBHOOK_SECRET": SECRET,
            "GITHUB_PRIVATE_KEY": "-----BEGIN SECRET KEY-----",
            "GITHUB_APP_ID": "42",
        },
        sender=RecordingSender(),
        dedup=SqliteDeliveryStore(tmp_path / "d.sqlite", 60),
    )
    page = app.test_client().get("/status").text
    assert "forksync" in page and "42" in page and "POST /webhook" in page
    assert SECRET not in page and "BEGIN" not in page


def test_sqlite_store_claims_once_and_releases(tmp_path: Path) -> None:
    """The embedded dedup store: first claim True, second False; after release, True again."""
    store = SqliteDeliveryStore(tmp_path / "d.sqlite", ttl_s=60)
    assert store.claim("a") is True and store.claim("a") is False
    store.release("a")
    assert store.claim("a") is True
    expired = SqliteDeliveryStore(tmp_path / "e.sqlite", ttl_s=-1)
    assert expired.claim("b") is True and expired.claim("b") is True  # TTL passed: seen anew


def test_signature_ok_is_exact() -> None:
    """signature_ok accepts only the HMAC-SHA256 of the exact body."""
    _body, headers = signed("push", b"{}")
    assert signature_ok(SECRET, b"{}", headers["X-Hub-Signature-256"])
    assert not signature_ok(SECRET, b"{} ", headers["X-Hub-Signature-256"])
    assert not signature_ok(SECRET, b"{}", None)


def test_default_redis_path_over_a_socket_enqueues_one_celery_message(
    tmp_path: Path, redis_url: Callable[[int], str]
) -> None:
    """With REDIS_URL and no injected parts: dedup + enqueue in Redis; a redelivery adds no message."""
    url = redis_url(15)
    client = redis.Redis.from_url(url)
    client.delete(tasknames.Q_GITHUB)
    app = create_app(
        {"FORKSYNC_WEBHOOK_SECRET": SECRET, "FORKSYNC_DATA_DIR": str(tmp_path), "REDIS_URL": url}
    )
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    body, headers = signed("push", load("push.with-new-branch.json"))
    try:
        live = f"http://127.0.0.1:{server.server_port}"
        assert post(live, body, headers)[0] == 202
        assert post(live, body, headers)[0] == 200
        messages = client.lrange(tasknames.Q_GITHUB, 0, -1)
        assert len(messages) == 1
        message = json.loads(messages[0])
        assert message["headers"]["task"] == tasknames.ON_PUSH
        assert message["properties"]["delivery_info"]["routing_key"] == tasknames.Q_GITHUB
    finally:
        server.shutdown()
        server.server_close()
        client.delete(tasknames.Q_GITHUB, "forksync:delivery:" + headers["X-GitHub-Delivery"])


def test_concurrent_redeliveries_are_enqueued_exactly_once(
    tmp_path: Path, redis_url: Callable[[int], str]
) -> None:
    """Twelve simultaneous posts of one delivery over a socket → one 202, eleven duplicates, one message."""
    from concurrent.futures import ThreadPoolExecutor

    url = redis_url(15)
    client = redis.Redis.from_url(url)
    client.delete(tasknames.Q_GITHUB)
    app = create_app(
        {"FORKSYNC_WEBHOOK_SECRET": SECRET, "FORKSYNC_DATA_DIR": str(tmp_path), "REDIS_URL": url}
    )
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    body, headers = signed("pull_request", load("pull_request.synchronize.json"))
    live = f"http://127.0.0.1:{server.server_port}"
    try:
        with ThreadPoolExecutor(12) as pool:
            statuses = sorted(
                status for status, _ in pool.map(lambda _: post(live, body, headers), range(12))
            )
        assert statuses == [200] * 11 + [202]
        assert client.llen(tasknames.Q_GITHUB) == 1
    finally:
        server.shutdown()
        server.server_close()
        client.delete(tasknames.Q_GITHUB, "forksync:delivery:" + headers["X-GitHub-Delivery"])
