"""The pin-update digest: periods, owners, the pure planner, the executor on the loopback GitHub,
and the outgoing webhook."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from core.commands import parse
from core.config import load_repo_config
from core.dashboard.feed import ForkFeed, InFlight, L2Metric, Regression
from core.errors import ForksyncError
from core.render.digest import digest_marker, notified_in
from tests.loopback_github import LoopbackGitHub
from workers.adapters import notify
from workers.jobs.digest import (
    ClosePrevious,
    IssueState,
    MentionOwners,
    Notify,
    UpsertDigest,
    build_view,
    codeowners_glob,
    owners_of,
    parse_codeowners,
    period_of,
    plan,
    run_digest,
)

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC).timestamp()  # a Thursday
MONDAY = datetime(2026, 11, 30, tzinfo=UTC).timestamp()
OWNERS = {"cmake/llvm-hash.txt": ("llvm-owner",), "lib/Dialect/": ("acme/layout",), "python/": ("py-lead",)}


def _landed(t: float = MONDAY + 3600) -> list[dict[str, Any]]:
    return [
        {
            "sha": "a" * 40,
            "pr": 8101,
            "subject": "Bump LLVM",
            "t": t,
            "fork_sha": "f1" * 20,
            "paths": ["cmake/llvm-hash.txt"],
        },
        {
            "sha": "b" * 40,
            "pr": 8102,
            "subject": "Layouts",
            "t": t,
            "fork_sha": "f1" * 20,
            "resolved": True,
            "resolver": "human",
            "paths": ["lib/Dialect/TritonGPU/IR/L.cpp", "cmake/llvm-hash.txt"],
        },
        {
            "sha": "c" * 40,
            "pr": 8103,
            "subject": "Docs",
            "t": t,
            "fork_sha": "f2" * 20,
            "paths": ["README.md"],
        },
        {
            "sha": "d" * 40,
            "pr": 7000,
            "subject": "Last week",
            "t": MONDAY - 3600,
            "fork_sha": "f0" * 20,
            "paths": ["python/x.py"],
        },
    ]


def _view(**kw: Any):  # type: ignore[no-untyped-def]
    return build_view(
        "acme/fork",
        period_of(NOW, 7),
        landed=kw.pop("landed", _landed()),
        feed=kw.pop("feed", None),
        owners=kw.pop("owners", OWNERS),
        upstream_url="https://github.com/triton-lang/triton",
        fork_url="https://github.com/acme/fork",
        **kw,
    )


def test_periods_are_weeks_from_the_configured_day() -> None:
    week = period_of(NOW, 7, "monday")
    assert week.key == "2026-11-30" and week.end - week.start == 7 * 86400
    assert period_of(NOW, 7, "thursday").key == "2026-12-03"
    assert period_of(week.start, 7).key == week.key and period_of(week.end, 7).key == "2026-12-07"
    two = period_of(NOW, 14)
    assert two.start <= NOW < two.end and two.previous().end == two.start


def test_codeowners_patterns_follow_githubs_rules() -> None:
    rules = parse_codeowners(
        "# owners\n* @everyone\n/lib/Dialect/ @acme/layout\n*.py @py-lead  # python\ndocs/ @docs\n"
    )
    assert [r[0] for r in rules] == ["**", "lib/Dialect/", "**/*.py", "**/docs/"]
    assert owners_of("lib/Dialect/x.cpp", {}, rules) == [("lib/Dialect/", ("acme/layout",))]
    assert owners_of("tools/a.py", {}, rules) == [("**/*.py", ("py-lead",))]  # the last match wins
    assert owners_of("README", {}, rules) == [("**", ("everyone",))]
    assert codeowners_glob("/cmake/llvm-hash.txt") == "cmake/llvm-hash.txt"


def test_view_groups_what_landed_by_area_and_lists_each_owner_once() -> None:
    view = _view()
    by_area = {a.pattern: [c.pr for c in a.changes] for a in view.areas}
    assert by_area == {
        "cmake/llvm-hash.txt": [8101, 8102],
        "lib/Dialect/": [8102],
        "": [8103],
    }  # 7000 was last week
    assert view.owners == ("llvm-owner", "acme/layout") and view.landed() == 3
    assert [c.pr for c in view.by_hand] == [8102]


def test_digest_body_mentions_each_owner_once_and_only_for_touched_areas() -> None:
    (upsert, *_rest) = plan(_view(), None, None, notify=False)
    assert isinstance(upsert, UpsertDigest) and upsert.marker == digest_marker("2026-11-30")
    body = upsert.body
    assert body.count("@llvm-owner") == 1 and body.count("@acme/layout") == 1 and "@py-lead" not in body
    assert "[#8101](https://github.com/triton-lang/triton/pull/8101)" in body and "resolved by hand" in body
    assert notified_in(body) == {"llvm-owner", "acme/layout"}


def test_a_new_period_opens_a_new_issue_closes_the_last_and_notifies_once() -> None:
    previous = IssueState(5, "old", "open")
    actions = plan(_view(), None, previous, notify=True)
    assert [type(a) for a in actions] == [UpsertDigest, ClosePrevious, Notify]
    assert actions[1].number == 5  # type: ignore[union-attr]
    assert "acme/fork" in actions[2].text and "3 upstream commits" in actions[2].text  # type: ignore[union-attr]


def test_editing_in_place_mentions_only_owners_not_yet_mentioned() -> None:
    first = plan(_view(landed=_landed()[:1]), None, None, notify=True)[0]
    assert isinstance(first, UpsertDigest) and notified_in(first.body) == {"llvm-owner"}
    again = plan(_view(), IssueState(9, first.body, "open"), None, notify=True)
    assert [type(a) for a in again] == [UpsertDigest, MentionOwners]  # no second Notify, no close
    mention = again[1]
    assert (
        isinstance(mention, MentionOwners)
        and mention.owners == ("acme/layout",)
        and "@llvm-owner" not in mention.text
    )
    assert notified_in(again[0].body) == {"llvm-owner", "acme/layout"}  # type: ignore[union-attr]
    quiet = plan(_view(), IssueState(9, again[0].body, "open"), None, notify=True)  # type: ignore[union-attr]
    assert [type(a) for a in quiet] == [UpsertDigest]


def test_stuck_deferred_and_l2_changes_come_from_the_feed() -> None:
    feed = ForkFeed(
        "acme/fork",
        NOW,
        in_flight=(
            InFlight("chain", "c1", "Risky chain", 7, None, 2, NOW, conflicts=("lib/a.cpp",)),
            InFlight("bundle", "b1", "Bundle", 8, None, 5, NOW, l1="failure"),
            InFlight("bundle", "b2", "Fine bundle", 9, None, 5, NOW, l1="success"),
        ),
        l2=(
            L2Metric(
                "matmul",
                "tflops",
                regressions=(Regression("e" * 40, -7.9, "f" * 40, "https://x/issues/3", MONDAY + 7200),),
            ),
        ),
    )
    view = _view(feed=feed)
    assert [(s.number, s.why) for s in view.stuck] == [
        (7, "waits on conflicts in lib/a.cpp"),
        (8, "its L1 check fails"),
    ]
    assert view.l2[0].delta_pct == -7.9 and view.l2[0].issue_url == "https://x/issues/3"


def test_digest_command_parses() -> None:
    (command,) = parse("/digest")
    assert command.name == "digest"


def test_the_digest_issue_is_one_per_period_on_github(loopback_github: LoopbackGitHub) -> None:
    """Run twice in a period: one issue, edited; a later owner gets one comment; next period: new issue, old closed."""
    gh = loopback_github
    port = gh.adapter(gh.installation)
    config = load_repo_config("owners:\n  cmake/llvm-hash.txt: [llvm-owner]\n  lib/Dialect/: [acme/layout]\n")
    sent: list[str] = []
    first = run_digest(
        port, "acme/fork", config, landed=_landed()[:1], feed=None, now=NOW, notifier=sent.append
    )
    second = run_digest(
        port, "acme/fork", config, landed=_landed(), feed=None, now=NOW + 3600, notifier=sent.append
    )
    assert first == second
    issues = gh.state.issues["acme/fork"]
    assert len(issues) == 1 and "forksync:digest" in [
        lbl["name"] if isinstance(lbl, dict) else lbl for lbl in issues[first]["labels"]
    ]
    comments = [c["body"] for c in gh.state.comments["acme/fork"].values()]
    assert len(comments) == 1 and "@acme/layout" in comments[0] and "@llvm-owner" not in comments[0]
    assert len(sent) == 1
    third = run_digest(
        port,
        "acme/fork",
        config,
        landed=_landed(MONDAY + 7 * 86400 + 60),
        feed=None,
        now=NOW + 7 * 86400,
        notifier=sent.append,
    )
    assert third != first and issues[first]["state"] == "closed" and len(sent) == 2


def test_the_digest_uses_codeowners_when_the_config_has_no_owners(loopback_github: LoopbackGitHub) -> None:
    gh = loopback_github
    gh.commit("acme/fork", {".github/CODEOWNERS": "/cmake/ @llvm-team\n"})
    number = run_digest(
        gh.adapter(gh.installation), "acme/fork", load_repo_config(""), landed=_landed(), feed=None, now=NOW
    )
    assert number is not None
    body = gh.state.issues["acme/fork"][number]["body"]
    assert body.count("@llvm-team") == 1


class _Receiver(BaseHTTPRequestHandler):
    answers: ClassVar[list[int]] = []
    got: ClassVar[list[tuple[dict[str, str], bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).got.append((dict(self.headers), body))
        status = type(self).answers.pop(0) if type(self).answers else 200
        self.send_response(status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, type[_Receiver]]]:
    handler = type("Receiver", (_Receiver,), {"answers": [], "got": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/hook", handler
    finally:
        server.shutdown()
        server.server_close()


def test_outgoing_webhook_is_slack_json_signed_and_retryable(receiver: tuple[str, type[_Receiver]]) -> None:
    url, handler = receiver
    body = notify.payload("digest text", "acme/fork")
    assert notify.post(url, body, "shh") == 200
    headers, got = handler.got[-1]
    assert json.loads(got)["text"] == "digest text"
    assert headers[notify.SIGNATURE_HEADER] == "sha256=" + hmac.new(b"shh", got, hashlib.sha256).hexdigest()
    handler.answers.extend([503, 429])
    for _ in range(2):
        with pytest.raises(notify.NotifyRetry):
            notify.post(url, body, "shh")
    handler.answers.append(404)
    with pytest.raises(ForksyncError, match="notify_url"):
        notify.post(url, body, None)
    with pytest.raises(notify.NotifyRetry):
        notify.post("http://127.0.0.1:9/nothing", body, None)


@pytest.mark.parametrize(
    "url",
    [
        "http://hooks.example.com/x",
        "https://127.0.0.1/x",
        "https://u:p@hooks.example.com/x",
        "https://localhost/x",
        "file:///etc/passwd",
    ],
)
def test_notify_url_from_a_repositorys_config_must_be_a_public_https_host(url: str) -> None:
    """Anyone who can push writes the config and the workers POST to it: no local or credentialed URLs."""
    from core.config import ConfigError

    with pytest.raises(ConfigError, match="notify_url"):
        load_repo_config(f'digest: {{notify_url: "{url}"}}')
    assert load_repo_config(
        'digest: {notify_url: "https://hooks.slack.com/services/T/B/X"}'
    ).digest.notify_url
