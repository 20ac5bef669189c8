"""Every event and action forksync says it acts on, from GitHub's recorded payloads, end to end
through the intake and the worker handlers it enqueues.

The recorded payloads (``tests/data/github-payloads``, octokit/webhooks examples, MIT) hold one
action per event; GitHub sends the other actions of an event in the same shape, so each claimed
action is the recorded payload with its ``action`` set. A claimed action must be accepted and
its handlers must run on what the view enqueued (``queued`` records their follow-up tasks);
an action forksync does not act on must be answered "ignored" with the reason, nothing enqueued.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.events import INSTALLATION_ACTIONS, PULL_REQUEST_ACTIONS
from tests.datafiles import GITHUB_PAYLOADS
from tests.fixtures.payloads import OUR_APP_ID, deliver
from tests.fixtures.webhooks import RecordingSender

RECORDED = {
    "pull_request": "pull_request.opened.json",
    "check_suite": "check_suite.requested.json",
    "check_run": "check_run.rerequested.json",
    "installation": "installation.created.json",
    "installation_repositories": "installation_repositories.added.json",
    "issue_comment": "issue_comment.created.json",
    "push": "push.with-new-branch.json",
}
CLAIMED = [
    *(("pull_request", a) for a in sorted(PULL_REQUEST_ACTIONS)),
    *(("check_suite", a) for a in ("rerequested", "completed")),
    *(("check_run", a) for a in ("rerequested", "requested_action")),
    *(("installation", a) for a in sorted(INSTALLATION_ACTIONS)),
    ("installation_repositories", "added"),
    ("issue_comment", "created"),
    ("push", None),
]
NOT_ACTED_ON = [
    ("pull_request", "labeled"),
    ("pull_request", "edited"),  # a title or body edit; a change of base is tested in test_events
    ("check_run", "completed"),
    ("check_suite", "requested"),  # GitHub opens a suite on every push; L1 starts from push and PR events
    ("installation", "deleted"),
    ("installation", "suspend"),
    ("issue_comment", "edited"),
]


def recorded(event: str, action: str | None) -> dict[str, Any]:
    own = GITHUB_PAYLOADS / f"{event}.{action}.json"  # the action's own recording, where there is one
    data: dict[str, Any] = json.loads(
        (own if own.is_file() else GITHUB_PAYLOADS / RECORDED[event]).read_text()
    )
    if action is not None:
        data["action"] = action
    if event == "check_run":
        data["check_run"]["app"]["id"] = OUR_APP_ID  # forksync's own check run
    if event == "check_suite" and action == "rerequested":
        data["check_suite"]["app"]["id"] = OUR_APP_ID  # forksync's own suite
    return data


@pytest.mark.parametrize(("event", "action"), CLAIMED)
def test_a_claimed_action_is_accepted_and_its_handlers_run_on_what_was_enqueued(
    payload_bot: tuple[Any, RecordingSender],
    queued: list[tuple[str, dict[str, Any]]],
    event: str,
    action: str | None,
) -> None:
    from workers.app.handlers import dispatch

    client, sender = payload_bot
    resp = deliver(client, event, recorded(event, action))
    assert resp.status_code == 202 and resp.text.startswith("accepted: "), resp.text
    assert sender.sent, resp.text
    for name, kwargs in sender.sent:
        dispatch(name, kwargs)  # raises on a drift between the view's kwargs and the handlers


@pytest.mark.parametrize(("event", "action"), NOT_ACTED_ON)
def test_an_action_forksync_does_not_act_on_is_ignored_with_its_reason(
    payload_bot: tuple[Any, RecordingSender], event: str, action: str
) -> None:
    client, sender = payload_bot
    resp = deliver(client, event, recorded(event, action))
    assert resp.status_code == 202 and resp.text.startswith("ignored: ") and action in resp.text, resp.text
    assert sender.sent == []
