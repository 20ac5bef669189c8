"""Typed webhook models: every recorded GitHub payload parses; missing fields are named."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.events import (
    CheckRunEvent,
    CheckSuiteEvent,
    InstallationEvent,
    InstallationRepositoriesEvent,
    IssueCommentEvent,
    PayloadError,
    PingEvent,
    PullRequestEvent,
    PushEvent,
    UnhandledEvent,
    parse_event,
)
from tests.datafiles import GITHUB_PAYLOADS

PAYLOADS = GITHUB_PAYLOADS

EXPECTED_TYPE = {
    "push": PushEvent,
    "pull_request": PullRequestEvent,
    "issue_comment": IssueCommentEvent,
    "check_run": CheckRunEvent,
    "check_suite": CheckSuiteEvent,
    "installation": InstallationEvent,
    "installation_repositories": InstallationRepositoriesEvent,
    "ping": PingEvent,
}


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((PAYLOADS / name).read_text())
    return data


def payload_files() -> list[str]:
    return sorted(p.name for p in PAYLOADS.glob("*.json"))


def test_shared_payload_folder_is_not_empty() -> None:
    """The parametrised test below must not pass vacuously on an empty folder."""
    assert len(payload_files()) >= 12


@pytest.mark.parametrize("filename", payload_files())
def test_every_shared_payload_parses_to_its_model(filename: str) -> None:
    """Each real payload in github-payloads/ parses to the model of its event (file name = event.variant)."""
    event_name = filename.split(".")[0]
    event = parse_event(event_name, load(filename))
    assert isinstance(event, EXPECTED_TYPE[event_name])
    assert not isinstance(event, UnhandledEvent)


def test_pull_request_fields_are_read_from_the_payload() -> None:
    """The PR model carries head sha/ref, base ref, merged and the installation."""
    data = load("pull_request.synchronize.json")
    event = parse_event("pull_request", data)
    assert isinstance(event, PullRequestEvent)
    pr = data["pull_request"]
    assert (event.number, event.head_sha, event.head_ref, event.base_ref) == (
        pr["number"],
        pr["head"]["sha"],
        pr["head"]["ref"],
        pr["base"]["ref"],
    )
    assert event.installation_id == data["installation"]["id"]
    assert event.action == "synchronize" and event.merged is False
    assert event.repo == data["repository"]["full_name"]


def test_requested_action_identifier_is_kept() -> None:
    """check_run requested_action keeps the button identifier; rerequested has none."""
    ra = parse_event("check_run", load("check_run.requested_action.json"))
    rr = parse_event("check_run", load("check_run.rerequested.json"))
    assert isinstance(ra, CheckRunEvent) and isinstance(rr, CheckRunEvent)
    assert ra.requested_action == "lgtm|26764"
    assert rr.requested_action is None and rr.action == "rerequested"


def test_comment_on_issue_is_not_a_pull_request_and_bots_are_recognised() -> None:
    """is_pull_request follows issue.pull_request; a [bot] login or type Bot counts as a bot."""
    data = load("issue_comment.created.json")
    event = parse_event("issue_comment", data)
    assert isinstance(event, IssueCommentEvent)
    assert event.is_pull_request is False and event.by_bot is False
    data["issue"]["pull_request"] = {"url": "https://api.github.com/repos/o/r/pulls/1"}
    data["comment"]["user"]["login"] = "forksync[bot]"
    event2 = parse_event("issue_comment", data)
    assert isinstance(event2, IssueCommentEvent)
    assert event2.is_pull_request is True and event2.by_bot is True


def test_installation_repositories_lists_added_and_removed() -> None:
    """installation_repositories keeps both lists as owner/name."""
    event = parse_event("installation_repositories", load("installation_repositories.added.json"))
    assert isinstance(event, InstallationRepositoriesEvent)
    assert event.added == ("Codertocat/Space",) and event.removed == ()


@pytest.mark.parametrize(
    ("filename", "drop", "field"),
    [
        ("push.with-new-branch.json", ("after",), "after"),
        ("pull_request.opened.json", ("pull_request", "head"), "pull_request.head.sha"),
        ("issue_comment.created.json", ("comment", "id"), "comment.id"),
        ("check_run.rerequested.json", ("repository",), "repository.full_name"),
        ("installation.created.json", ("installation", "id"), "installation.id"),
    ],
)
def test_missing_field_is_named_in_the_error(filename: str, drop: tuple[str, ...], field: str) -> None:
    """A payload lacking a needed field raises PayloadError whose one line names the field."""
    data = load(filename)
    node = data
    for key in drop[:-1]:
        node = node[key]
    del node[drop[-1]]
    with pytest.raises(PayloadError) as info:
        parse_event(filename.split(".")[0], data)
    assert field in str(info.value)
    assert "\n" not in str(info.value)


def test_wrong_type_is_reported_not_coerced() -> None:
    """A number where a string belongs is an error, not silently str()-ed."""
    data = load("push.with-new-branch.json")
    data["ref"] = 42
    with pytest.raises(PayloadError, match="ref: expected a string"):
        parse_event("push", data)


def test_unknown_event_is_unhandled_not_an_error() -> None:
    """Events we do not act on parse to UnhandledEvent (the view answers 202 ignored)."""
    event = parse_event("star", {"action": "created"})
    assert event == UnhandledEvent(name="star", action="created")


def test_a_pull_request_re_targeted_is_acted_on_and_other_edits_are_not() -> None:
    """``edited`` with ``changes.base`` (a stacked bundle moved to the trunk) is enqueued so L1 gates
    the PR again; a title or body edit (ingestion rewrites bodies) is not."""
    from bot.events import ignore_reason

    data = load("pull_request.synchronize.json")
    edited = {**data, "action": "edited", "changes": {"base": {"ref": {"from": "forksync/bundle/1a2b3c4"}}}}
    event = parse_event("pull_request", edited)
    assert isinstance(event, PullRequestEvent) and event.base_changed
    assert ignore_reason(event) is None
    body_only = parse_event("pull_request", {**data, "action": "edited", "changes": {"body": {"from": "x"}}})
    assert isinstance(body_only, PullRequestEvent) and not body_only.base_changed
    assert ignore_reason(body_only) == "pull_request edited: only a change of base is acted on"
