"""The optional outgoing webhook: Slack-compatible JSON for digests and L2 regressions, per fork.

``digest.notify_url`` in the fork's config says where; ``FORKSYNC_NOTIFY_SECRET`` signs each body
(``X-Forksync-Signature-256: sha256=<HMAC-SHA256 of the body>``, as GitHub signs its webhooks) so
the receiver can check it came from us. Sending is a task of its own (``forksync.notify``, retried
with backoff on network errors, 429 and 5xx), so a slow or dead receiver never blocks the loop.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from typing import Any

from core.errors import ForksyncError

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Forksync-Signature-256"
TIMEOUT_S = 10.0


class NotifyRetry(Exception):
    """The receiver did not take the message now (network, 429, 5xx): the task retries."""


def payload(text: str, repo: str) -> bytes:
    """Slack's incoming-webhook shape (``text``), plus who sent it."""
    return json.dumps(
        {"text": text, "username": "forksync", "forksync": {"repo": repo}}, sort_keys=True
    ).encode()


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def post(url: str, body: bytes, secret: str | None) -> int:
    """POST once; the status on success; NotifyRetry when worth retrying; ForksyncError otherwise."""
    import requests

    headers = {"Content-Type": "application/json", "User-Agent": "forksync"}
    if secret:
        headers[SIGNATURE_HEADER] = signature(secret, body)
    try:
        answer = requests.post(url, data=body, headers=headers, timeout=TIMEOUT_S)
        answer.close()
    except requests.RequestException as exc:
        raise NotifyRetry(f"{type(exc).__name__}") from None
    if answer.status_code == 429 or answer.status_code >= 500:
        raise NotifyRetry(f"HTTP {answer.status_code}")
    if answer.status_code >= 400:
        raise ForksyncError(
            f"the notify webhook refused the message (HTTP {answer.status_code})",
            "check digest.notify_url in .github/forksync.yml",
        )
    return int(answer.status_code)


def enqueue(url: str, text: str, repo: str) -> None:
    """Send ``forksync.notify`` (from inside a worker: the current Celery app)."""
    from celery import current_app

    from core import tasknames

    current_app.send_task(tasknames.NOTIFY, kwargs={"url": url, "text": text, "repo": repo})


def notifier_for(url: str | None, repo: str) -> Any:
    """A ``text -> None`` callable that enqueues, or None when the fork has no notify_url."""
    if not url:
        return None
    return lambda text: enqueue(url, text, repo)
