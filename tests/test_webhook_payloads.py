"""The webhook view against the real variety of GitHub payloads (hand-written in tests/payloads/).

Each delivery goes through Flask's test client, signed as GitHub signs it; every answer must be
one line, never a stack trace, and an ignored delivery must enqueue nothing.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import pytest

from bot.events import PullRequestEvent, parse_event
from core import tasknames
from tests.datafiles import GITHUB_PAYLOADS
from tests.fixtures.payloads import PAYLOADS, deliver
from tests.fixtures.payloads import load_payload as load
from tests.fixtures.webhooks import RecordingSender


@pytest.fixture
def bot(payload_bot: tuple[Any, RecordingSender]) -> tuple[Any, RecordingSender]:
    return payload_bot


def assert_ignored(resp: Any, sender: RecordingSender, *words: str) -> None:
    assert resp.status_code == 202 and resp.text.startswith("ignored: "), resp.text
    for word in words:
        assert word in resp.text, resp.text
    assert sender.sent == []


# --------------------------------------------------------------------------- push


@pytest.mark.parametrize(
    ("filename", "word"),
    [
        ("push.branch-deleted.json", "deleted"),
        ("push.tag.json", "refs/tags/v1.2.0"),
        ("push.forksync-branch.json", "loop"),
    ],
)
def test_push_that_no_handler_acts_on_is_ignored(bot: Any, filename: str, word: str) -> None:
    """Branch deletions, tag pushes and forksync's own forksync/* pushes → 202 ignored with why; nothing enqueued."""
    client, sender = bot
    assert_ignored(deliver(client, "push", load(filename)), sender, word)


def test_deletion_is_recognised_by_the_zero_sha_even_without_the_deleted_flag(bot: Any) -> None:
    """after = 40 zeros means a deletion even where "deleted" is absent (older or trimmed payloads)."""
    client, sender = bot
    data = load("push.branch-deleted.json")
    del data["deleted"]
    assert_ignored(deliver(client, "push", data), sender, "deleted")


def test_forced_push_with_no_commits_is_enqueued(bot: Any) -> None:
    """A force push (commits: [], forced: true) to a branch is news: enqueued with before/after."""
    client, sender = bot
    data = load("push.forced.json")
    resp = deliver(client, "push", data)
    assert resp.status_code == 202 and resp.text.startswith("accepted"), resp.text
    assert [(n, k["before"], k["after"]) for n, k in sender.sent] == [
        (tasknames.ON_PUSH, data["before"], data["after"])
    ]


@pytest.mark.parametrize(
    ("event", "filename"),
    [
        ("push", "push.forced.json"),
        ("pull_request", "pull_request.deleted-fork.json"),
        ("issue_comment", "issue_comment.plain-issue.json"),
        ("check_run", "check_run.completed.json"),
    ],
)
def test_repository_event_without_installation_is_accepted_not_a_500(
    bot: Any, event: str, filename: str
) -> None:
    """A delivery with no "installation" (a repository webhook, not the App's) → 202 accepted with
    installation_id None, for the worker to resolve (see the last tests); never a 500 or a 400."""
    client, sender = bot
    data = load(filename)
    del data["installation"]
    if event == "check_run":
        data["action"] = "rerequested"
    resp = deliver(client, event, data)
    assert resp.status_code == 202 and resp.text.startswith("accepted"), resp.text
    assert [k["installation_id"] for _, k in sender.sent] == [None]


# --------------------------------------------------------------------------- pull_request


@pytest.mark.parametrize(
    "action",
    [
        "labeled",
        "unlabeled",
        "edited",
        "assigned",
        "review_requested",
        "converted_to_draft",
        "auto_merge_enabled",
        "milestoned",
        "locked",
        "enqueued",
    ],
)
def test_pull_request_actions_no_handler_uses_are_ignored(bot: Any, action: str) -> None:
    """PR actions other than opened/synchronize/reopened/ready_for_review/closed → 202 ignored; nothing enqueued."""
    client, sender = bot
    data = load("pull_request.labeled.json")
    data["action"] = action
    assert_ignored(deliver(client, "pull_request", data), sender, action)


def test_ready_for_review_is_enqueued(bot: Any) -> None:
    """ready_for_review starts L1 (workers/tasks/l1.py), so it must reach the workers."""
    client, sender = bot
    data = load("pull_request.labeled.json")
    data["action"] = "ready_for_review"
    assert deliver(client, "pull_request", data).status_code == 202
    assert [k["action"] for _, k in sender.sent] == ["ready_for_review"]


def test_deleted_head_fork_and_null_merged_and_other_base_are_read(bot: Any) -> None:
    """head.repo null (deleted fork), merged null and a non-trunk base: parsed, enqueued with merged False."""
    client, sender = bot
    data = load("pull_request.deleted-fork.json")
    event = parse_event("pull_request", data)
    assert isinstance(event, PullRequestEvent)
    assert event.head_repo is None and event.from_fork and event.merged is False
    resp = deliver(client, "pull_request", data)
    assert resp.status_code == 202, resp.text
    [(name, kwargs)] = sender.sent
    assert name == tasknames.ON_PULL_REQUEST
    assert (kwargs["base_ref"], kwargs["merged"], kwargs["head_sha"]) == (
        "release/2.4",
        False,
        data["pull_request"]["head"]["sha"],
    )


# --------------------------------------------------------------------------- issue_comment


def test_comment_on_plain_issue_with_long_unicode_body_is_enqueued_without_the_body(bot: Any) -> None:
    """A comment on an issue (no issue.pull_request), 60k chars of unicode: enqueued with
    is_pull_request False; the body itself never travels in the task (webhooks are triggers)."""
    client, sender = bot
    data = load("issue_comment.plain-issue.json")
    data["comment"]["body"] = "/status 🚀 ünïcödé 漢字 " + "é" * 60_000
    resp = deliver(client, "issue_comment", data)
    assert resp.status_code == 202, resp.text
    [(name, kwargs)] = sender.sent
    assert name == tasknames.ON_COMMENT and kwargs["is_pull_request"] is False
    assert "body" not in kwargs and len(json.dumps(kwargs)) < 1000


def test_comment_by_another_app_is_ignored(bot: Any) -> None:
    """A comment by another GitHub App ("renovate[bot]", type Bot) → ignored; bots never run commands."""
    client, sender = bot
    assert_ignored(
        deliver(client, "issue_comment", load("issue_comment.by-app.json")), sender, "renovate[bot]"
    )


# --------------------------------------------------------------------------- check_run / check_suite


def test_check_run_of_another_app_is_not_rerun(bot: Any) -> None:
    """rerequested on a check run owned by another App (even one named like ours) → ignored, nothing enqueued."""
    client, sender = bot
    assert_ignored(
        deliver(client, "check_run", load("check_run.other-app.rerequested.json")), sender, "15368"
    )


def test_check_run_of_our_app_rerequested_is_enqueued_and_completed_is_ignored(bot: Any) -> None:
    """Our own check run: rerequested → enqueued; completed → ignored."""
    client, sender = bot
    data = load("check_run.completed.json")
    assert_ignored(deliver(client, "check_run", data), sender, "completed")
    data["action"] = "rerequested"
    assert deliver(client, "check_run", data).status_code == 202
    assert [(n, k["action"]) for n, k in sender.sent] == [(tasknames.ON_CHECK_RUN, "rerequested")]


def test_requested_action_identifier_reaches_the_task(bot: Any) -> None:
    """requested_action with an identifier → enqueued carrying the identifier."""
    client, sender = bot
    data = load("check_run.completed.json")
    data["action"] = "requested_action"
    data["requested_action"] = {"identifier": "retest"}
    assert deliver(client, "check_run", data).status_code == 202
    assert [k["requested_action"] for _, k in sender.sent] == ["retest"]


# --------------------------------------------------------------------------- installation


@pytest.mark.parametrize(
    ("event", "filename"),
    [
        ("installation", "installation.suspend.json"),
        ("installation", "installation.new_permissions_accepted.json"),
        ("installation_repositories", "installation_repositories.removed.json"),
    ],
)
def test_installation_changes_that_start_no_ingest_are_ignored(bot: Any, event: str, filename: str) -> None:
    """suspend, new_permissions_accepted (no "repositories" key at all) and repositories removed → ignored."""
    client, sender = bot
    data = load(filename)
    assert_ignored(deliver(client, event, data), sender, data["action"])


def test_installation_deleted_and_unsuspend(bot: Any) -> None:
    """deleted → ignored; unsuspend → enqueued with the repositories (they are ingested again)."""
    client, sender = bot
    data = load("installation.suspend.json")
    data["action"] = "deleted"
    assert_ignored(deliver(client, "installation", data), sender, "deleted")
    data["action"] = "unsuspend"
    assert deliver(client, "installation", data).status_code == 202
    assert [(k["action"], k["repos"]) for _, k in sender.sent] == [("unsuspend", ["acme/fork"])]


# --------------------------------------------------------------------------- other events, ping, bodies


@pytest.mark.parametrize(
    ("event", "filename"),
    [("workflow_run", "workflow_run.completed.json"), ("repository_dispatch", "repository_dispatch.json")],
)
def test_unknown_events_are_ignored(bot: Any, event: str, filename: str) -> None:
    """Events forksync does not handle → 202 ignored naming the event."""
    client, sender = bot
    assert_ignored(deliver(client, event, load(filename)), sender, event)


def test_unknown_event_with_an_odd_action_is_still_ignored(bot: Any) -> None:
    """A new event whose "action" is not a string is ignored, not refused as a bad payload."""
    client, sender = bot
    assert_ignored(
        deliver(client, "sponsorship", {"action": {"new": True}, "sender": {"login": "x"}}),
        sender,
        "sponsorship",
    )


@pytest.mark.parametrize("filename", ["ping.organization.json", "ping.app.json"])
def test_ping_from_organization_or_app_hook_is_pong(bot: Any, filename: str) -> None:
    """ping with hook type Organization (no repository, no app_id) or App → 200 pong; nothing enqueued."""
    client, sender = bot
    resp = deliver(client, "ping", load(filename))
    assert resp.status_code == 200 and resp.text.startswith("pong: ")
    assert sender.sent == []


@pytest.mark.parametrize(
    ("body", "kind"), [(b"[1, 2]", "list"), (b'"push"', "str"), (b"42", "int"), (b"null", "NoneType")]
)
def test_json_that_is_not_an_object_is_400(bot: Any, body: bytes, kind: str) -> None:
    """Valid JSON that is not an object → 400 naming what it is; nothing enqueued."""
    client, sender = bot
    resp = deliver(client, "push", body)
    assert resp.status_code == 400 and "not an object" in resp.text and kind in resp.text
    assert sender.sent == []


def test_deeply_nested_json_is_400_not_500(bot: Any) -> None:
    """JSON nested past Python's recursion limit → 400, not a RecursionError 500."""
    client, sender = bot
    resp = deliver(client, "push", b"[" * 100_000 + b"]" * 100_000)
    assert resp.status_code == 400 and "nested" in resp.text
    assert sender.sent == []


def test_form_encoded_push_is_read_and_form_without_payload_names_the_fix(bot: Any) -> None:
    """payload=<json> form deliveries are read like JSON; a form without "payload" → 400 naming the field."""
    client, sender = bot
    body = urlencode({"payload": json.dumps(load("push.forced.json"))}).encode()
    assert deliver(client, "push", body, "application/x-www-form-urlencoded").status_code == 202
    assert [n for n, _ in sender.sent] == [tasknames.ON_PUSH]
    resp = deliver(client, "push", b"other=1", "application/x-www-form-urlencoded")
    assert resp.status_code == 400 and "payload" in resp.text and "application/json" in resp.text
    assert len(sender.sent) == 1


# --------------------------------------------------------------------------- every field, every odd value


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Any:
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*prefix, key)
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list) and node:
        yield (*prefix, 0)
        yield from _paths(node[0], (*prefix, 0))


def _mutated(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(data))
    node: Any = copy
    for key in path[:-1]:
        node = node[key]
    if value is _DROP:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return copy


_DROP = object()


@pytest.mark.slow
def test_no_field_dropped_nulled_or_retyped_escapes_as_anything_but_a_payload_error() -> None:
    """Every field of every fixture payload, dropped or set to null/list/str/int/object/bool: parsing
    either succeeds (and the task kwargs serialise) or raises PayloadError (a 400), nothing else (a 500)."""
    from bot.events import PayloadError
    from bot.webhooks import TaskCall, task_for

    files = sorted(PAYLOADS.glob("*.json")) + sorted(GITHUB_PAYLOADS.glob("*.json"))
    tried = refused = 0
    for file in files:
        event = file.name.split(".")[0]
        data = json.loads(file.read_text())
        for path in _paths(data):
            for value in (_DROP, None, [], "x", 3, {}, True):
                tried += 1
                try:
                    parsed = parse_event(event, _mutated(data, path, value))
                except PayloadError as exc:
                    refused += 1
                    assert "\n" not in str(exc), (file.name, path, value)
                    continue
                call = task_for(parsed, "d", 31337)
                if isinstance(call, TaskCall):
                    json.dumps(call.kwargs)
    assert tried > 5000 and 0 < refused < tried  # the mutations did reach required fields, and not only those
