"""GitHub's Re-run buttons on forksync's checks, end to end through the intake and the handlers.

The suites are GitHub's recorded ``check_suite`` payloads (tests/data/github-payloads, octokit
examples): ``rerequested`` is what "Re-run all checks" sends, owned by the recording's App
(29310) unless a test makes it forksync's. Each delivery goes through the signed webhook view;
what it enqueued is dispatched to the real worker handlers (``queued`` records their tasks).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from core import tasknames
from core.github.records import CheckOutput
from core.render.ingest import CHECK_NAME as INGEST_CHECK
from core.render.l1 import COVERAGE_CHECK, L1_CHECK, POOLS_CHECK
from core.render.l3 import check_name as l3_check_name
from tests.datafiles import GITHUB_PAYLOADS
from tests.fixtures.payloads import OUR_APP_ID, deliver
from tests.fixtures.webhooks import RecordingSender
from tests.loopback_github import LoopbackGitHub
from workers.app.handlers import dispatch
from workers.jobs.rerun import ExplainNoRerun, apply_explain, l3_note, plan_check_run_rerun

SUITE_SHA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"  # check_suite.rerequested.json's head
INSTALLATION = 957387
REPO = "Codertocat/Hello-World"


def recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GITHUB_PAYLOADS / name).read_text())
    return data


def ours_suite_rerequested() -> dict[str, Any]:
    data = recorded("check_suite.rerequested.json")
    data["check_suite"]["app"]["id"] = OUR_APP_ID
    return data


def ours_check_run_rerequested(name: str, head_sha: str = SUITE_SHA) -> dict[str, Any]:
    data = recorded("check_run.rerequested.json")
    data["check_run"].update(name=name, head_sha=head_sha)
    data["check_run"]["app"]["id"] = OUR_APP_ID
    data["installation"]["id"] = INSTALLATION
    data["repository"]["full_name"] = REPO
    return data


def accepted(client: Any, sender: RecordingSender, event: str, data: dict[str, Any]) -> dict[str, Any]:
    """Deliver; the view must accept it and enqueue exactly one task, whose kwargs are returned."""
    before = len(sender.sent)
    resp = deliver(client, event, data)
    assert resp.status_code == 202 and resp.text.startswith("accepted: "), resp.text
    assert len(sender.sent) == before + 1, sender.sent
    return sender.sent[-1][1]


def test_rerun_all_checks_on_forksyncs_suite_runs_l1_as_the_l1_check_rerun_does(
    payload_bot: tuple[Any, RecordingSender], queued: list[tuple[str, dict[str, Any]]]
) -> None:
    """Re-run all checks on forksync's suite → ON_CHECK_SUITE rerequested with its head; the handler
    sends run_l1 with the very kwargs a Re-run of ``forksync / L1`` on that head sends (same job, the
    check run updated in place, the outside-PR gate inside the job)."""
    client, sender = payload_bot
    suite = accepted(client, sender, "check_suite", ours_suite_rerequested())
    assert sender.sent[0][0] == tasknames.ON_CHECK_SUITE
    assert (suite["action"], suite["head_sha"], suite["repo"]) == ("rerequested", SUITE_SHA, REPO)
    dispatch(tasknames.ON_CHECK_SUITE, suite)
    assert queued == [
        (
            "run_l1",
            {
                "installation_id": INSTALLATION,
                "repo": REPO,
                "head_sha": SUITE_SHA,
                "delivery": suite["delivery"],
            },
        )
    ]
    check = accepted(client, sender, "check_run", ours_check_run_rerequested(L1_CHECK))
    dispatch(tasknames.ON_CHECK_RUN, check)
    assert len(queued) == 2
    (_, by_suite), (name, by_check) = queued
    assert name == "run_l1"
    assert {**by_suite, "delivery": None} == {**by_check, "delivery": None}


def test_another_apps_suite_is_not_forksyncs_to_rerun(payload_bot: tuple[Any, RecordingSender]) -> None:
    """The recording's own suite belongs to App 29310: answered "ignored" naming it, nothing enqueued."""
    client, sender = payload_bot
    resp = deliver(client, "check_suite", recorded("check_suite.rerequested.json"))
    assert resp.status_code == 202 and resp.text.startswith("ignored: "), resp.text
    assert "29310" in resp.text and "forksync's own suite" in resp.text
    assert sender.sent == []


def test_a_suite_requested_on_push_enqueues_nothing_and_says_why(
    payload_bot: tuple[Any, RecordingSender],
) -> None:
    """check_suite requested (GitHub opens a suite on every push, forksync's included): L1 starts
    from pull_request and push, so nothing is enqueued and the answer says so."""
    client, sender = payload_bot
    for data in (recorded("check_suite.requested.json"), ours_suite_rerequested() | {"action": "requested"}):
        resp = deliver(client, "check_suite", data)
        assert resp.status_code == 202 and resp.text.startswith("ignored: "), resp.text
        assert "requested" in resp.text and "pull_request" in resp.text
    assert sender.sent == []


@pytest.mark.parametrize(
    ("check", "job"),
    [
        (L1_CHECK, "run_l1"),
        (POOLS_CHECK, "run_l1"),
        (COVERAGE_CHECK, "l1_coverage"),
        (INGEST_CHECK, tasknames.INGEST),
        (l3_check_name("llama-70b"), "explain_no_rerun"),
        ("forksync / something new", "explain_no_rerun"),
    ],
)
def test_each_forksync_check_runs_re_run_does_its_job_or_says_why(
    payload_bot: tuple[Any, RecordingSender],
    queued: list[tuple[str, dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
    check: str,
    job: str,
) -> None:
    from workers.tasks import l1 as l1_tasks

    def send_task(name: str, kwargs: dict[str, Any]) -> None:
        queued.append((name, kwargs))

    monkeypatch.setattr(l1_tasks.run_l1.app, "send_task", send_task)
    monkeypatch.setattr(
        l1_tasks.explain_no_rerun, "delay", lambda **kw: queued.append(("explain_no_rerun", kw))
    )
    client, sender = payload_bot
    kwargs = accepted(client, sender, "check_run", ours_check_run_rerequested(check))
    dispatch(tasknames.ON_CHECK_RUN, kwargs)
    assert [name for name, _ in queued] == [job]
    sent = queued[0][1]
    assert sent["repo"] == REPO and sent["installation_id"] == INSTALLATION
    if job == "explain_no_rerun":
        assert sent["check_run_id"] == kwargs["check_run_id"] and sent["name"] == check
        assert "/retest" in sent["note"] or "/signoff llama-70b" in sent["note"]
    elif job == tasknames.INGEST:
        assert sent["reason"] == "rerun"
    else:
        assert sent["head_sha"] == SUITE_SHA


def test_a_check_run_not_named_as_forksyncs_is_left_alone() -> None:
    """Another App's check (the intake drops it when the App id is known) plans nothing."""
    assert plan_check_run_rerun("Build", 1, SUITE_SHA) is None


def test_the_explanation_tops_the_l3_check_once_and_keeps_its_state(loopback_github: LoopbackGitHub) -> None:
    """On the loopback GitHub: the note goes on top of the summary; the title, conclusion and the
    text holding the L3 state are kept; a second click adds nothing."""
    gh = loopback_github
    repo = "acme/fork"
    sha = gh.commit(repo, {"a.txt": "a\n"})
    port = gh.adapter(gh.installation)
    name = l3_check_name("llama-70b")
    state = '<!-- forksync:l3 {"workload":"llama-70b"} -->'
    info = port.create_check_run(
        repo,
        name=name,
        head_sha=sha,
        status="in_progress",
        output=CheckOutput("Awaiting sign-off from @alice", "L3 workload **llama-70b**.", state),
    )
    action = plan_check_run_rerun(name, info.id, sha)
    assert action == ExplainNoRerun(info.id, sha, name, l3_note("llama-70b"))
    assert apply_explain(port, repo, action) and apply_explain(port, repo, action)
    run = gh.state.check_runs[repo][info.id]
    assert run["status"] == "in_progress" and run["conclusion"] is None
    assert run["output"]["title"] == "Awaiting sign-off from @alice"
    assert run["output"]["summary"] == f"{l3_note('llama-70b')}\n\nL3 workload **llama-70b**."
    assert run["output"]["text"] == state
    gone = ExplainNoRerun(info.id + 1000, sha, name, l3_note("llama-70b"))
    assert apply_explain(port, repo, gone) is False
