"""The webhook endpoint: verify the signature, bound the size, dedupe the delivery, enqueue, answer fast.

Webhooks are triggers, not data (style.md): the view reduces an event to a small key and
sends a task by name (core/tasknames.py); no GitHub call happens inside the request. Every
answer is one line of text starting with its outcome (``accepted``, ``ignored``,
``duplicate``...) so that GitHub's delivery log says why.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import hmac
import html
import json
import logging
import re
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from flask import Blueprint, Flask, Response, current_app, request
from werkzeug.exceptions import ClientDisconnected
from werkzeug.http import HTTP_STATUS_CODES
from werkzeug.wsgi import get_content_length, get_input_stream

from bot.dispatch import DeliveryStore, DispatchError, StoreDeliveryLog, TaskSender
from bot.events import (
    CheckRunEvent,
    CheckSuiteEvent,
    Event,
    InstallationEvent,
    InstallationRepositoriesEvent,
    IssueCommentEvent,
    PayloadError,
    PingEvent,
    PullRequestEvent,
    PushEvent,
    UnhandledEvent,
    ignore_reason,
    parse_event,
)
from core import logs, tasknames, telemetry
from core.config import Settings
from core.logsafe import one_line

log = logging.getLogger("forksync.webhooks")

Environ = dict[str, Any]  # a WSGI environ

blueprint = Blueprint("webhooks", __name__)

_READ_CHUNK = 64 * 1024


@dataclass
class BotState:
    """What the views need, kept in ``app.extensions["forksync"]`` (tests swap parts of it)."""

    settings: Settings
    sender: TaskSender
    dedup: DeliveryStore
    # The durable accepted-delivery log (SQL store): decides duplicates before Redis does.
    deliveries: StoreDeliveryLog | None = None


@dataclass(frozen=True)
class TaskCall:
    name: str
    kwargs: dict[str, Any]


def state() -> BotState:
    bot: BotState = current_app.extensions["forksync"]
    return bot


def _answer(status: int, text: str) -> Response:
    """One line of text: what a payload put in it (CR, LF, NUL...) is escaped, never a new line."""
    return Response(one_line(text) + "\n", status=status, mimetype="text/plain")


def signature_ok(secret: str, body: bytes, header: str | None) -> bool:
    """Constant-time check of ``X-Hub-Signature-256: sha256=<hex HMAC of the body>``."""
    if not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.strip().encode())


def task_for(event: Event, delivery: str, our_app_id: int | None = None) -> TaskCall | str:
    """The task an event triggers, or the one-line reason it triggers none."""
    call: TaskCall | str
    reason = ignore_reason(event, our_app_id)
    if reason is not None:
        return reason
    if isinstance(event, PushEvent):
        call = TaskCall(
            tasknames.ON_PUSH,
            {
                "installation_id": event.installation_id,
                "repo": event.repo,
                "ref": event.ref,
                "before": event.before,
                "after": event.after,
            },
        )
    elif isinstance(event, PullRequestEvent):
        call = TaskCall(
            tasknames.ON_PULL_REQUEST,
            {
                "installation_id": event.installation_id,
                "repo": event.repo,
                "number": event.number,
                "action": event.action,
                "head_sha": event.head_sha,
                "head_ref": event.head_ref,
                "base_ref": event.base_ref,
                "merged": event.merged,
                "base_changed": event.base_changed,
            },
        )
    elif isinstance(event, IssueCommentEvent):
        if event.action != "created":
            return f"comment {event.action}: only new comments are read"
        if event.by_bot:
            return f"comment by bot {event.author}: bots cannot run commands"
        call = TaskCall(
            tasknames.ON_COMMENT,
            {
                "installation_id": event.installation_id,
                "repo": event.repo,
                "issue_number": event.issue_number,
                "comment_id": event.comment_id,
                "author": event.author,
                "author_type": event.author_type,
                "is_pull_request": event.is_pull_request,
            },
        )
    elif isinstance(event, CheckRunEvent):
        if event.action not in ("rerequested", "requested_action"):
            return f"check_run {event.action}: only rerequested and requested_action are acted on"
        call = TaskCall(
            tasknames.ON_CHECK_RUN,
            {
                "installation_id": event.installation_id,
                "repo": event.repo,
                "check_run_id": event.check_run_id,
                "name": event.name,
                "head_sha": event.head_sha,
                "action": event.action,
                "requested_action": event.requested_action,
            },
        )
    elif isinstance(event, CheckSuiteEvent):
        # rerequested: "Re-run all checks" on forksync's suite (bot/events.py drops other Apps' and
        # "requested"); completed: another CI system finished, so the coverage watchdog re-reads.
        if event.action not in ("rerequested", "completed"):
            return f"check_suite {event.action}: only rerequested and completed are acted on"
        call = TaskCall(
            tasknames.ON_CHECK_SUITE,
            {
                "installation_id": event.installation_id,
                "repo": event.repo,
                "check_suite_id": event.check_suite_id,
                "head_sha": event.head_sha,
                "head_branch": event.head_branch,
                "action": event.action,
            },
        )
    elif isinstance(event, InstallationEvent):
        call = TaskCall(
            tasknames.ON_INSTALLATION,
            {
                "installation_id": event.installation_id,
                "action": event.action,
                "repos": list(event.repos),
                "removed": [],
            },
        )
    elif isinstance(event, InstallationRepositoriesEvent):
        call = TaskCall(
            tasknames.ON_INSTALLATION,
            {
                "installation_id": event.installation_id,
                "action": f"repositories_{event.action}",
                "repos": list(event.added),
                "removed": list(event.removed),
            },
        )
    elif isinstance(event, UnhandledEvent):
        return f"event {event.name!r} is not handled"
    else:  # PingEvent is answered before this point
        return f"event {type(event).__name__} needs no task"
    call.kwargs["delivery"] = delivery
    return call


class _TooLarge(Exception):
    pass


class _TooSlow(Exception):
    pass


class _BadSignature(Exception):
    pass


# Kept in memory up to this size while the signature is unchecked; beyond, on disk.
_SPOOL_BYTES = 256 * 1024
_SIGNATURE = re.compile(r"^sha256=[0-9a-fA-F]{64}$")
_READ_SLOTS: dict[int, threading.BoundedSemaphore] = {}
_SLOTS_LOCK = threading.Lock()


def _read_slots(count: int) -> threading.BoundedSemaphore:
    """This process's cap on bodies being read at once (a slow sender holds one slot, not the server)."""
    with _SLOTS_LOCK:
        slots = _READ_SLOTS.get(count)
        if slots is None:
            slots = _READ_SLOTS[count] = threading.BoundedSemaphore(count)
        return slots


class _Watchdog:
    """One thread per process that fires read deadlines (a thread started per request cost
    ~0.1 ms of CPU and a context switch on every delivery). ``arm`` registers a callback for a
    time; ``disarm`` (when the body arrived in time) removes it.

    The thread sleeps until the earliest deadline and is woken only when a new one comes before
    it: every request's deadline is "now + the same timeout", so after the first it never is, and
    a delivery costs a heap push and a set update, not a thread switch (waking the thread on each
    arm cost ~80 us of CPU per delivery). Disarmed entries leave the heap when they reach its top,
    or all at once when they outnumber the live ones."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._live: set[int] = set()
        self._seq = 0
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, fire: Callable[[], None]) -> int:
        with self._cond:
            self._seq += 1
            token = self._seq
            if len(self._heap) > 2 * len(self._live) + 64:  # mostly disarmed entries: drop them
                self._heap = [entry for entry in self._heap if entry[1] in self._live]
                heapq.heapify(self._heap)
            entry = (time.monotonic() + seconds, token, fire)
            heapq.heappush(self._heap, entry)
            self._live.add(token)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="webhook-read-deadlines", daemon=True)
                self._thread.start()
            if self._heap[0] is entry:  # earlier than what the thread sleeps towards
                self._cond.notify()
            return token

    def disarm(self, token: int) -> None:
        with self._cond:
            self._live.discard(token)

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0][1] not in self._live:
                    heapq.heappop(self._heap)  # disarmed: the body came in time
                if not self._heap:
                    self._cond.wait()
                    continue
                when, token, fire = self._heap[0]
                delay = when - time.monotonic()
                if delay > 0:
                    self._cond.wait(delay)
                    continue
                heapq.heappop(self._heap)
                self._live.discard(token)
                # Under the lock (fire is quick: an event and a shutdown): once disarm returns,
                # no deadline of that request can fire on a connection serving the next one.
                fire()


_WATCHDOG = _Watchdog()


@contextlib.contextmanager
def _deadline(environ: Environ, seconds: float) -> Iterator[threading.Event]:
    """Shut the client's socket when ``seconds`` pass (gunicorn gives the app its socket), so a
    sender that trickles its body cannot hold a thread for longer; the event says it fired."""
    fired = threading.Event()
    sock = environ.get("gunicorn.socket") or environ.get("werkzeug.socket")
    token = None
    if sock is not None and seconds > 0:

        def expire() -> None:
            fired.set()
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RD)  # reads end; the 408 can still be written

        token = _WATCHDOG.arm(seconds, expire)
    try:
        yield fired
    finally:
        if token is not None:
            _WATCHDOG.disarm(token)


def _read_verified(environ: Environ, secret: str, header: str | None, limit: int, timeout_s: float) -> bytes:
    """The request body, read in chunks through HMAC-SHA256, returned only when the signature
    matches. While unchecked, it is kept on disk past a small buffer: an unsigned 25 MB body never
    sits in memory. Refuses (before and while reading) anything over ``limit`` bytes."""
    length = get_content_length(environ)
    if length is not None and length > limit:
        raise _TooLarge
    if not header or not _SIGNATURE.match(header.strip()):
        raise _BadSignature
    mac = hmac.new(secret.encode(), digestmod=hashlib.sha256)
    # What Flask's request.stream is: bounded by Content-Length, or the server's own end of a
    # chunked body (wsgi.input_terminated), else empty.
    stream = get_input_stream(environ)
    total = 0
    with (
        tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES) as spool,
        _deadline(environ, timeout_s) as fired,
    ):
        try:
            while True:
                chunk = stream.read(_READ_CHUNK)
                if not chunk:
                    break
                total += len(chunk)
                if total > limit:  # chunked bodies, or a Content-Length that lied
                    raise _TooLarge
                mac.update(chunk)
                spool.write(chunk)
        except (OSError, ValueError, ClientDisconnected) as exc:
            if fired.is_set():
                raise _TooSlow from None
            raise _TooSlow from exc
        if fired.is_set() or (length is not None and total < length):
            raise _TooSlow
        expected = "sha256=" + mac.hexdigest()
        if not hmac.compare_digest(expected.encode(), header.strip().lower().encode()):
            raise _BadSignature
        spool.seek(0)
        return spool.read()


def _has_lone_surrogate(value: Any) -> bool:
    """True when a string in the payload holds a lone UTF-16 surrogate (``"\\ud800"``): valid JSON,
    but no UTF-8 text, so nothing downstream (queue, log, GitHub) could carry it."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


_SURROGATE = re.compile("[\ud800-\udfff]")


def _decode(body: bytes, content_type: str) -> Mapping[str, Any]:
    """JSON body (the App's setting), or the form encoding GitHub also offers (payload=<json>)."""
    text: str | bytes = body
    if content_type.startswith("application/x-www-form-urlencoded"):
        fields = parse_qs(body.decode("utf-8", "replace"))
        if "payload" not in fields:
            raise ValueError(
                "form body without a payload field; set the webhook's content type to application/json"
            )
        text = fields["payload"][0]
    try:
        data = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(
            f"body is not JSON ({exc.msg if isinstance(exc, json.JSONDecodeError) else exc.reason})"
        ) from None
    except RecursionError:  # "[[[[..." nested past Python's limit: not a payload GitHub sends
        raise ValueError("body is JSON nested too deeply to be a GitHub payload") from None
    if not isinstance(data, dict):
        raise ValueError(f"body is JSON but not an object ({type(data).__name__})")
    if b"\\u" in body and _has_lone_surrogate(data):
        raise ValueError("body holds a lone UTF-16 surrogate escape (such as \\ud800), which is no text")
    return data


@blueprint.post("/webhook")
def webhook() -> Response:
    """The same intake as :class:`WebhookIntake` (which answers POST /webhook before Flask does
    in the app that :func:`bot.create_app` builds), for an app that mounts only the blueprint."""
    status, text = intake(state(), request.environ)
    return _answer(status, text)


class WebhookIntake:
    """WSGI middleware that answers ``POST /webhook`` itself, without Flask's request machinery
    (request context, session, URL routing, response object: ~2/3 of the CPU of a bare Flask view,
    benchmarks/README.md); every other request goes on to Flask. The answers, headers included, are
    those of the Flask view above: the two call the same :func:`intake`."""

    def __init__(self, app: Flask, downstream: Callable[..., Any]) -> None:
        self.app = app
        self.downstream = downstream

    def __call__(self, environ: Environ, start_response: Callable[..., Any]) -> Any:
        if environ.get("PATH_INFO") != "/webhook" or environ.get("REQUEST_METHOD") != "POST":
            return self.downstream(environ, start_response)
        try:
            status, text = intake(self.app.extensions["forksync"], environ)
        except Exception:
            if self.app.testing or self.app.config.get("PROPAGATE_EXCEPTIONS"):
                raise
            log.exception("webhook delivery %s failed", environ.get("HTTP_X_GITHUB_DELIVERY", ""))
            status, text = 500, "error: the server failed on this delivery; GitHub may redeliver it"
        data = (one_line(text) + "\n").encode()
        start_response(
            _STATUS_LINES[status], [(_CONTENT_TYPE, _TEXT_PLAIN), ("Content-Length", str(len(data)))]
        )
        return [data]


# What werkzeug's Response writes for a text/plain answer (status line, Content-Type).
_STATUS_LINES = {code: f"{code} {name.upper()}" for code, name in HTTP_STATUS_CODES.items()}
_CONTENT_TYPE, _TEXT_PLAIN = "Content-Type", "text/plain; charset=utf-8"


def _header(environ: Environ, key: str) -> str | None:
    """A request header from the environ (``HTTP_X_GITHUB_EVENT``...) as werkzeug's ``headers.get``
    gives it: the server's latin-1 string re-read as UTF-8."""
    value: str | None = environ.get(key)
    if value is None:
        return None
    return value if value.isascii() else value.encode("latin1").decode(errors="replace")


def intake(bot: BotState, environ: Environ) -> tuple[int, str]:
    """One webhook delivery, from its WSGI environ to the answer (HTTP status, one line of text);
    counted in ``/metrics`` by event and answer."""
    delivery = _header(environ, "HTTP_X_GITHUB_DELIVERY") or ""
    event = _header(environ, "HTTP_X_GITHUB_EVENT") or ""
    with logs.bound(delivery=delivery or None):
        status, text = _webhook(bot, environ, delivery, event)
    _count(event if event in COUNTED_EVENTS else "other", telemetry.answer_kind(one_line(text)))
    return status, text


# Events counted by name in /metrics; anything else (or a forged header) is "other", so a
# sender cannot grow the label set.
COUNTED_EVENTS = frozenset(
    {
        "push",
        "pull_request",
        "pull_request_review",
        "issue_comment",
        "check_run",
        "check_suite",
        "installation",
        "installation_repositories",
        "ping",
    }
)
_COUNTERS: dict[tuple[str, str], Any] = {}


def _count(event: str, answer: str) -> None:
    # The labelled child is looked up once per (event, answer); both label sets are bounded
    # (COUNTED_EVENTS, and the outcome words this module writes).
    child = _COUNTERS.get((event, answer))
    if child is None:
        child = _COUNTERS[(event, answer)] = telemetry.WEBHOOK_DELIVERIES.labels(event=event, answer=answer)
    child.inc()


def _webhook(bot: BotState, environ: Environ, delivery: str, event_name: str) -> tuple[int, str]:
    settings = bot.settings
    if not settings.webhook_secret:
        log.error("webhook refused: FORKSYNC_WEBHOOK_SECRET is not set")
        return 503, "unavailable: the server has no webhook secret; set FORKSYNC_WEBHOOK_SECRET"
    slots = _read_slots(settings.max_concurrent_reads)
    if not slots.acquire(timeout=0.5):
        log.warning(
            "delivery %s refused: %d bodies are being read already", delivery, settings.max_concurrent_reads
        )
        return 503, "busy: too many webhook bodies are being read at once; GitHub may redeliver it"
    try:
        body = _read_verified(
            environ,
            settings.webhook_secret,
            _header(environ, "HTTP_X_HUB_SIGNATURE_256"),
            settings.max_body_bytes,
            settings.body_read_timeout_s,
        )
    except _TooLarge:
        log.warning("delivery %s refused: body over %d bytes", delivery, settings.max_body_bytes)
        return 413, f"too large: webhook bodies are limited to {settings.max_body_bytes} bytes"
    except _TooSlow:
        log.warning(
            "delivery %s refused: body not received within %s s", delivery, settings.body_read_timeout_s
        )
        return 408, f"timeout: the body did not arrive within {settings.body_read_timeout_s:g} s"
    except _BadSignature:
        log.warning("delivery %s refused: missing or wrong X-Hub-Signature-256", delivery)
        return 401, "unauthorized: missing or wrong X-Hub-Signature-256; check the App's webhook secret"
    finally:
        slots.release()
    if not event_name:
        return 400, "bad request: missing X-GitHub-Event header"
    try:
        payload = _decode(body, _header(environ, "CONTENT_TYPE") or "")
        event = parse_event(event_name, payload)
    except ValueError as exc:
        return 400, f"bad request: {exc}"
    except PayloadError as exc:
        return 400, f"bad request: {exc.problem}"
    if isinstance(event, PingEvent):
        log.info("ping %s: %s", delivery, event.zen)
        return 200, f"pong: {event.zen}" if event.zen else "pong"
    call = task_for(event, delivery, settings.numeric_app_id)
    if isinstance(call, str):
        log.info("delivery %s (%s) ignored: %s", delivery, event_name, call)
        return 202, f"ignored: {call}"
    if not delivery:
        return 400, "bad request: missing X-GitHub-Delivery header"
    if len(delivery) > 100:  # GitHub's are 36-character GUIDs; the delivery log keys on it
        return 400, "bad request: X-GitHub-Delivery is longer than 100 characters"
    with logs.bound(repo=call.kwargs.get("repo"), installation=call.kwargs.get("installation_id")):
        return _enqueue(bot, call, delivery, event_name)


def _enqueue(bot: BotState, call: TaskCall, delivery: str, event_name: str) -> tuple[int, str]:
    if bot.deliveries is not None:
        installation = call.kwargs.get("installation_id")
        try:
            first = bot.deliveries.accept(
                delivery,
                event_name[:64],
                str(call.kwargs.get("repo") or "")[:200],
                installation if isinstance(installation, int) and 0 < installation < 2**63 else None,
                call.name,
                call.kwargs,
            )
        except DispatchError as exc:
            log.error("delivery %s not accepted: %s", delivery, exc)
            return 503, f"unavailable: {exc}"
        if not first:
            log.info("delivery %s (%s) is a duplicate (delivery log)", delivery, event_name)
            return 200, f"duplicate: delivery {delivery} was already accepted"
    answer = _send(bot, call, delivery, event_name)
    if answer[0] >= 500 and bot.deliveries is not None:
        bot.deliveries.forget(delivery)  # not enqueued: GitHub's redelivery must be processed
    return answer


def _send(bot: BotState, call: TaskCall, delivery: str, event_name: str) -> tuple[int, str]:
    # An AtomicSender, told by its method: isinstance on a runtime-checkable Protocol walks the
    # protocol's members on every call (~15 us a delivery).
    send_once = getattr(bot.sender, "send_once", None)
    if send_once is not None:
        try:
            fresh = send_once(delivery, call.name, call.kwargs)
        except DispatchError as exc:
            log.error("delivery %s not enqueued: %s", delivery, exc)
            return 503, f"unavailable: {exc}"
    else:
        try:
            fresh = bot.dedup.claim(delivery)
        except DispatchError as exc:
            log.error("delivery %s not accepted: %s", delivery, exc)
            return 503, f"unavailable: {exc}"
        if fresh:
            try:
                bot.sender.send(call.name, call.kwargs)
            except DispatchError as exc:
                bot.dedup.release(delivery)  # so that GitHub's redelivery is processed
                log.error("delivery %s not enqueued: %s", delivery, exc)
                return 503, f"unavailable: {exc}"
    if not fresh:
        log.info("delivery %s (%s) is a duplicate", delivery, event_name)
        return 200, f"duplicate: delivery {delivery} was already accepted"
    log.info("delivery %s (%s) accepted: %s", delivery, event_name, call.name)
    return 202, f"accepted: {call.name}"


@blueprint.get("/healthz")
def healthz() -> Response:
    try:
        store = state().dedup.check()
    except DispatchError as exc:
        return _answer(503, f"down: {exc}")
    return _answer(200, f"ok: {store}")


@blueprint.get("/status")
def index() -> Response:
    bot = state()
    s = bot.settings
    try:
        store = "up: " + bot.dedup.check()
    except DispatchError as exc:
        store = f"DOWN: {exc}"
    rows = [
        ("webhook endpoint", "POST /webhook"),
        ("webhook secret", "set" if s.webhook_secret else "NOT SET: deliveries are refused"),
        ("GitHub App id", s.app_id or "NOT SET: workers cannot act on GitHub"),
        ("private key", "set" if s.private_key else "NOT SET"),
        ("GitHub API", s.api_url),
        ("task queue", bot.sender.describe()),
        ("delivery dedup", store),
    ]
    table = "\n".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>forksync</title></head><body>"
        "<h1>forksync</h1><p>A GitHub App that keeps a fork close to a fast-moving upstream by "
        "continuous cherry-picking, guarded by L1/L2/L3 tests.</p>"
        f"<table>{table}</table><p><a href='/'>dashboard</a></p></body></html>"
    )
    return Response(page, mimetype="text/html")


def register(app: Flask, bot: BotState) -> None:
    app.extensions["forksync"] = bot
    app.register_blueprint(blueprint)
    app.wsgi_app = WebhookIntake(app, app.wsgi_app)  # type: ignore[method-assign]
