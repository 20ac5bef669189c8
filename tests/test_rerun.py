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
from core.github.records import CheckOutput, CheckRunInfo
from core.render.ingest import CHECK_NAME as INGEST_CHECK
from core.render.l1 import COVERAGE_CHECK, L1_CHECK, POOLS_CHECK
from core.render.l3 import check_name as l3_check_name
from tests.datafiles import GITHUB_PAYLOADS
from tests.fixtures.payloads import OUR_APP_ID, deliver
from tests.fixtures.webhooks import RecordingSender
from tests.loopback_github import LoopbackGitHub
from workers.app.handlers import dispatch
from workers.jobs.rerun import (
    ExplainNoRerun,
    Ingest,
    RecheckCoverage,
    RunL1,
    apply_explain,
    l3_note,
    plan_check_run_rerun,
    plan_suite_rerun,
)

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


def test_rerun_all_checks_on_forksyncs_suite_sends_the_suite_rerun_with_its_head(
    payload_bot: tuple[Any, RecordingSender], queued: list[tuple[str, dict[str, Any]]]
) -> None:
    """Re-run all checks on forksync's suite → ON_CHECK_SUITE rerequested with its head; the handler
    sends ``forksync.rerun_suite``, which reads forksync's check runs on that head to know what to
    run again (the event names the suite, not its checks)."""
    client, sender = payload_bot
    suite = accepted(client, sender, "check_suite", ours_suite_rerequested())
    assert sender.sent[0][0] == tasknames.ON_CHECK_SUITE
    assert (suite["action"], suite["head_sha"], suite["repo"]) == ("rerequested", SUITE_SHA, REPO)
    dispatch(tasknames.ON_CHECK_SUITE, suite)
    assert queued == [
        (
            "rerun_suite",
            {
                "installation_id": INSTALLATION,
                "repo": REPO,
                "head_sha": SUITE_SHA,
                "delivery": suite["delivery"],
            },
        )
    ]


def _info(rid: int, name: str, app_id: int | None = OUR_APP_ID) -> CheckRunInfo:
    return CheckRunInfo(rid, name, SUITE_SHA, "completed", "success", "", app_id=app_id)


def test_the_suite_rerun_plans_each_checks_job_once() -> None:
    """A PR head: L1 once (it re-publishes coverage and pools, so coverage is not recomputed apart),
    each L3 sign-off explained; a trunk commit's suite (the ingestion report alone): the ingestion
    again, not L1 on a commit no PR tests; coverage alone: recomputed; nothing listed: L1, as the
    L1 check's own Re-run does."""
    l3 = l3_check_name("llama-70b")
    pr_head = [_info(1, L1_CHECK), _info(2, COVERAGE_CHECK), _info(3, POOLS_CHECK), _info(4, l3)]
    assert plan_suite_rerun(SUITE_SHA, pr_head) == [
        RunL1(SUITE_SHA),
        ExplainNoRerun(4, SUITE_SHA, l3, l3_note("llama-70b")),
    ]
    assert plan_suite_rerun(SUITE_SHA, [_info(5, INGEST_CHECK)]) == [Ingest()]
    assert plan_suite_rerun(SUITE_SHA, [_info(6, COVERAGE_CHECK)]) == [RecheckCoverage(SUITE_SHA)]
    assert plan_suite_rerun(SUITE_SHA, []) == [RunL1(SUITE_SHA)]


def test_the_suite_rerun_task_reads_the_heads_checks_on_github(
    loopback_github: LoopbackGitHub, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real task on the loopback GitHub: a trunk commit holding forksync's ingestion
    report ingests again; a PR head holding L1 runs L1 with the kwargs the L1 check's Re-run sends;
    another App's check named like forksync's on the trunk commit is not taken for forksync's."""
    from core.settings import WorkerSettings
    from workers.app.celery_app import create_celery

    gh = loopback_github
    repo = "acme/fork"
    trunk = gh.commit(repo, {"a.txt": "a\n"})
    pr_head = gh.commit(repo, {"a.txt": "b\n"})
    port = gh.adapter(gh.installation)
    port.create_check_run(repo, name=INGEST_CHECK, head_sha=trunk, status="completed", conclusion="success")
    foreign = port.create_check_run(
        repo, name=L1_CHECK, head_sha=trunk, status="completed", conclusion="success"
    )
    gh.state.check_runs[repo][foreign.id]["app_id"] = gh.app_id + 1
    port.create_check_run(repo, name=L1_CHECK, head_sha=pr_head, status="completed", conclusion="failure")
    monkeypatch.delenv("REDIS_URL", raising=False)
    app = create_celery(WorkerSettings.from_mapping({**gh.settings(), "FORKSYNC_DATA_DIR": str(tmp_path)}))
    queued: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(app, "send_task", lambda name, kwargs: queued.append((name, kwargs)))
    monkeypatch.setattr(app.tasks[tasknames.RUN_L1], "delay", lambda **kw: queued.append(("run_l1", kw)))
    task = app.tasks[tasknames.RERUN_SUITE]
    base = {"installation_id": gh.installation, "repo": repo, "delivery": "d-1"}
    assert task.apply(kwargs={**base, "head_sha": trunk}).get() == ["Ingest"]
    assert task.apply(kwargs={**base, "head_sha": pr_head}).get() == ["RunL1"]
    assert queued == [
        (tasknames.INGEST, {**base, "reason": "rerun"}),
        ("run_l1", {**base, "head_sha": pr_head}),
    ]


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
