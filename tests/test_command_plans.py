"""Comment commands, planned: the pure planners (workers/commands/plan.py) turn a parsed command and
plain state into typed actions; the executor (workers/commands/execute.py) gives the answer."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from core import tasknames
from core.commands import Command, parse
from core.errors import ForksyncError
from core.render import commands as render
from workers.commands import plan
from workers.commands.execute import execute
from workers.commands.services import Services


def cmd(text: str) -> Command:
    (command,) = parse(text)
    assert command.ok, command
    return command


ENTRY = plan.Entry("a" * 40, "`aaaaaaaaaa` Fix the epilogue")
PICKED = plan.Entry("a" * 40, "`aaaaaaaaaa` Fix the epilogue", carriers=("f" * 40,))
INSIDE = plan.PullState(5, "h" * 40, "alice", "MEMBER", "acme/fork", False, False)
OUTSIDE = plan.PullState(6, "e" * 40, "mallory", "NONE", "mallory/fork", True, True)


def test_decisions_mark_then_answer_and_urgent_starts_an_ingestion() -> None:
    mark, reply = plan.plan_decide(cmd("/skip aaaaaaa flaky upstream"), "bob", ENTRY)
    assert mark == plan.MarkCommit("a" * 40, "wont_port", "flaky upstream (by @bob via /skip)")
    assert isinstance(reply, plan.Reply) and reply.outcome.message.endswith("; it will not be picked")
    (defer_mark, defer_reply) = plan.plan_decide(cmd("/defer aaaaaaa"), "bob", ENTRY)
    assert isinstance(defer_mark, plan.MarkCommit) and defer_mark.disposition == "deferred"
    assert isinstance(defer_reply, plan.Reply) and "stays in the backlog" in defer_reply.outcome.message
    mark, enqueue = plan.plan_decide(cmd("/urgent aaaaaaa"), "bob", ENTRY, "it picks cleanly")
    assert isinstance(mark, plan.MarkCommit) and mark.disposition == "urgent"
    assert isinstance(enqueue, plan.Enqueue) and enqueue.task == tasknames.INGEST
    assert enqueue.kwargs == {"reason": "/urgent by @bob"}
    assert (
        enqueue.started.status == render.STARTED
        and "ingestion started now: it picks cleanly" in enqueue.started.message
    )
    assert (
        enqueue.unavailable.status == render.OK
        and "the next ingestion (push or poll)" in enqueue.unavailable.message
    )


def test_a_picked_commit_is_not_marked() -> None:
    (refused,) = plan.plan_decide(cmd("/defer aaaaaaa"), "bob", PICKED)
    assert isinstance(refused, plan.Reply) and refused.outcome.status == render.FAILED
    assert "already picked (carried by `ffffffffff`), so it cannot be deferred" in refused.outcome.message
    (nothing,) = plan.plan_decide(cmd("/urgent aaaaaaa"), "bob", PICKED)
    assert isinstance(nothing, plan.Reply) and nothing.outcome.message.endswith("nothing to hurry")


def test_chain_moves_are_one_action() -> None:
    (move,) = plan.plan_chain(cmd("/chain aaaaaaa into c1"), ENTRY)
    assert isinstance(move, plan.MoveCommit) and (move.op, move.into, move.sha) == ("add", "c1", "a" * 40)
    (out,) = plan.plan_chain(cmd("/unchain aaaaaaa"), ENTRY)
    assert isinstance(out, plan.MoveCommit) and (out.op, out.into) == ("remove", None)


def _plan_state(groups: int = 2) -> plan.PlanState:
    made = tuple(
        render.PlannedGroup("bundle", f"b{i}", (render.CommitLine("c" * 40),)) for i in range(groups)
    )
    return plan.PlanState(made, groups, 0, 0, deferred=3, table="| table |")


def test_bundle_plans_reply_or_start_an_ingestion() -> None:
    (nothing,) = plan.plan_bundle(cmd("/bundle"), "bob", _plan_state(0), None, 40)
    assert isinstance(nothing, plan.Reply) and "(3 deferred)" in nothing.outcome.message
    (dry,) = plan.plan_bundle(cmd("/bundle dry-run"), "bob", _plan_state(), None, 40)
    assert isinstance(dry, plan.Reply) and dry.outcome.details == "| table |"
    assert "the plan (dry run, nothing pushed): 2 bundle(s) and 0 chain(s), 2 commits" in dry.outcome.message
    (run,) = plan.plan_bundle(cmd("/bundle max=3"), "bob", _plan_state(), 3, 40)
    assert isinstance(run, plan.Enqueue) and run.kwargs == {"reason": "/bundle by @bob", "max_commits": 3}
    assert (
        "`bundle.max_commits` = 40 again" in run.started.message and run.unavailable.status == render.FAILED
    )


def test_retest_refuses_on_issues_unknown_suites_and_unapproved_outside_heads() -> None:
    (issue,) = plan.plan_retest(cmd("/retest"), False, ["lit"], None)
    assert isinstance(issue, plan.Reply) and "works on pull requests" in issue.outcome.message
    (unknown,) = plan.plan_retest(cmd("/retest nope"), True, ["lit"], INSIDE)
    assert isinstance(unknown, plan.Reply) and unknown.outcome.status == render.FAILED
    (outside,) = plan.plan_retest(cmd("/retest"), True, ["lit"], OUTSIDE)
    assert (
        isinstance(outside, plan.Reply)
        and "is not approved for the self-hosted runners" in outside.outcome.message
    )
    stale = plan.PullState(**{**OUTSIDE.__dict__, "approved_head": "0" * 40})  # approved an older head
    assert isinstance(plan.plan_retest(cmd("/retest"), True, ["lit"], stale)[0], plan.Reply)
    approved = plan.PullState(**{**OUTSIDE.__dict__, "approved_head": OUTSIDE.head_sha})
    (run,) = plan.plan_retest(cmd("/retest lit"), True, ["lit"], approved)
    assert isinstance(run, plan.Enqueue) and run.task == tasknames.RUN_L1
    assert run.kwargs == {"head_sha": OUTSIDE.head_sha, "number": 6, "suites": ["lit"]}


def test_bisect_finds_the_benchmark_of_a_metric_and_digest_enqueues() -> None:
    benches = plan.Benchmarks({"matmul": ("tflops",), "softmax": ()})
    (run,) = plan.plan_bisect(cmd("/bisect tflops good=abcdef1"), benches, 9)
    assert isinstance(run, plan.Enqueue) and run.task == tasknames.BISECT
    assert run.kwargs == {"benchmark": "matmul", "issue_number": 9, "good": "abcdef1"}
    assert "benchmark `matmul` (metric `tflops`)" in run.started.message
    (unknown,) = plan.plan_bisect(cmd("/bisect nope"), benches, 9)
    assert (
        isinstance(unknown, plan.Reply)
        and "(known: `matmul`, `softmax`, `tflops`)" in unknown.outcome.message
    )
    (digest,) = plan.plan_digest(cmd("/digest"))
    assert (
        isinstance(digest, plan.Enqueue)
        and digest.task == tasknames.DIGEST
        and digest.kwargs == {"reason": "/digest"}
    )


def test_approve_posts_and_labels_only_for_outside_prs_that_need_it() -> None:
    args = ("<!-- m -->", "body", "forksync:approved")
    (issue,) = plan.plan_approve(cmd("/approve"), False, None, *args)
    assert isinstance(issue, plan.Reply) and issue.outcome.status == render.FAILED
    (inside,) = plan.plan_approve(cmd("/approve"), True, INSIDE, *args)
    assert isinstance(inside, plan.Reply) and "branch is in the repository" in inside.outcome.message
    member = plan.PullState(
        **{**OUTSIDE.__dict__, "needs_approval": False, "author_association": "COLLABORATOR"}
    )
    (trusted,) = plan.plan_approve(cmd("/approve"), True, member, *args)
    assert (
        isinstance(trusted, plan.Reply) and "is a collaborator of this repository" in trusted.outcome.message
    )
    post, label, reply = plan.plan_approve(cmd("/approve"), True, OUTSIDE, *args)
    assert post == plan.PostMarked(6, "<!-- m -->", "body") and label == plan.AddLabels(
        6, ("forksync:approved",)
    )
    assert (
        isinstance(reply, plan.Reply) and f"approved head `{OUTSIDE.head_sha[:10]}`" in reply.outcome.message
    )


def test_approve_on_a_pick_pr_learns_its_resolutions_and_records_the_head() -> None:
    """/approve on forksync's own pick PR: its resolutions go to the memory (the answer comes from
    that step), then a marked record names the approved head; nothing is labelled."""
    pick = plan.PullState(**{**INSIDE.__dict__, "head_ref": "forksync/chain/3", "author": "forksync[bot]"})
    assert pick.is_pick and not INSIDE.is_pick
    assert not plan.PullState(**{**OUTSIDE.__dict__, "head_ref": "forksync/chain/3"}).is_pick
    learn, record = plan.plan_approve_resolution(cmd("/approve"), pick, "alice")
    assert learn == plan.LearnResolutions(
        cmd("/approve"), 5, "forksync/chain/3", pick.head_sha, "approved #5 by @alice"
    )
    assert isinstance(record, plan.PostMarked) and record.marker == plan.resolution_marker(5)
    assert record.body.startswith(plan.resolution_marker(5))
    assert f"Approved head: `{pick.head_sha}`" in record.body and "@alice" in record.body


def _ctx(services: Any = None) -> Any:
    task = SimpleNamespace(installation_id=7, repo="acme/fork", delivery="d-1", issue_number=3)
    return SimpleNamespace(
        task=task, repo="acme/fork", services=services, author="bob", gh=None, own_login=None
    )


def test_the_executor_answers_from_the_queue_and_refuses_a_plan_without_an_answer() -> None:
    sent: list[tuple[str, dict[str, Any]]] = []
    services = Services(
        fork_location=lambda repo: repo, send_task=lambda name, kwargs: sent.append((name, kwargs))
    )
    (enqueue,) = plan.plan_digest(cmd("/digest"))
    assert execute(_ctx(services), [enqueue]) == enqueue.started
    assert sent == [
        (
            tasknames.DIGEST,
            {"installation_id": 7, "repo": "acme/fork", "reason": "/digest", "delivery": "d-1"},
        )
    ]
    assert execute(_ctx(None), [enqueue]) == enqueue.unavailable  # no queue in this deployment: said so
    with pytest.raises(ForksyncError, match="gave no answer"):
        execute(_ctx(services), [])
    with pytest.raises(ForksyncError, match="needs the fork's git data"):
        execute(_ctx(services), [plan.MarkCommit("a" * 40, "deferred", "")])
