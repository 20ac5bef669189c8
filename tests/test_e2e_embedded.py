"""The embedded default end to end: `forksync serve` without REDIS_URL (SQLite broker, results,
dedup and locks under the data dir) runs web, worker and beat; the loop works as on Redis."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.fixtures.workers import E2E, ServeProcess, wait_for

pytestmark = pytest.mark.slow


def test_serve_without_redis_runs_the_loop(e2e: Callable[..., E2E]) -> None:
    """A push webhook to `forksync serve` (no Redis anywhere) gives the bundle PR, the chain PR and
    the check; a duplicate delivery is recognised; SIGTERM stops web, worker and beat cleanly."""
    h = e2e(None)
    assert "REDIS_URL" not in h.env
    serve = ServeProcess(h.env, h.root / "serve.log").start()
    try:
        assert "embedded broker in" in serve.text()
        from tests.fixtures.workers import FORK, deliver, push_payload

        head = h.gh.head(FORK, "main") or ""
        payload = push_payload(h.installation, FORK, "refs/heads/main", head, head)
        assert deliver(serve.url, "push", payload, "embedded-1")[0] == 202
        pulls = wait_for(h.bundle_pulls, 60, "the bundle PR")
        assert [p["title"] for p in pulls] == ["[Cherry-pick][BUNDLE] Cherry-pick 2 upstream(#102 #104)"]
        (check,) = wait_for(h.checks, 30, "the ingestion check")
        assert check["conclusion"] == "success" and "pending 3" in check["output"]["title"]
        assert len(h.chain_pulls()) == 1 and h.issues() == []
        assert deliver(serve.url, "push", payload, "embedded-1")[0] == 200  # deduplicated (SQLite)
        assert (h.data_dir / "celery-broker.sqlite").exists()
        assert "beat: Starting" in serve.text()
    finally:
        code = serve.stop()
    assert code == 0, serve.text()[-2000:]
