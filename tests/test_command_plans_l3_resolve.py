"""Comment commands, planned (continued): ``/l3``, ``/signoff`` (the pure planners of workers/testing/l3.py and
``plan_l3`` over them) and ``/resolve`` (``resolve_refusal``, ``plan_resolve``), on plain data: no GitHub, no git."""

from __future__ import annotations

from core.commands import Command, parse
from core.config import L3Config, RepoConfig, Workload
from core.github.records import CheckRunInfo
from core.render.l3 import L3State
from workers.commands import plan
from workers.testing import l3

HEAD = "c" * 40
CONFIG = RepoConfig(
    l3=L3Config((Workload("llama", ("alice", "Bob"), ("./run.sh",)), Workload("ads", ("carol",))))
)


def cmd(text: str) -> Command:
    (command,) = parse(text)
    assert command.ok, command
    return command


def check(run_id: int, state: L3State | None) -> tuple[CheckRunInfo, L3State | None]:
    return CheckRunInfo(run_id, "forksync / L3: llama", HEAD, "in_progress", None, ""), state


def test_a_first_request_opens_the_check_and_queues_the_command_only_with_a_queue() -> None:
    opened, queued, answer = l3.plan_request(CONFIG, "LLAMA", HEAD, None, requested_by="dave", can_queue=True)
    assert opened == l3.OpenL3Check(
        L3State("llama", ("alice", "Bob"), HEAD, requested_by="dave", run="queued")
    )
    assert queued == l3.QueueL3Run("llama", None)  # the id of the check just opened
    assert (
        isinstance(answer, l3.Answer)
        and answer.ok
        and answer.started
        and "queued on the l2 queue" in answer.text
    )
    opened, answer = l3.plan_request(CONFIG, "llama", HEAD, None, can_queue=False)
    assert isinstance(opened, l3.OpenL3Check) and opened.state.run == ""
    assert isinstance(answer, l3.Answer) and "was not queued: no worker queue" in answer.text
    assert not answer.started, "nothing was queued: the reply is not a 🚀"
    opened, answer = l3.plan_request(
        CONFIG, "ads", HEAD, None, can_queue=True
    )  # no command: nothing to queue
    assert (
        isinstance(answer, l3.Answer)
        and not answer.started
        and "awaiting sign-off from @carol" in answer.text
    )


def test_a_second_request_writes_nothing_unless_a_failed_run_can_be_queued_again() -> None:
    awaiting = L3State("llama", ("alice", "Bob"), HEAD, run="passed")
    assert l3.plan_request(CONFIG, "llama", HEAD, check(9, awaiting), can_queue=True) == [
        l3.Answer(
            True,
            f"L3 **llama** is already awaiting sign-off from @alice, @Bob on {HEAD[:12]}.",
            check_run_id=9,
        )
    ]
    failed = L3State("llama", ("alice", "Bob"), HEAD, run="failed", run_detail="exit 1")
    update, queue, answer = l3.plan_request(CONFIG, "llama", HEAD, check(9, failed), can_queue=True)
    assert update == l3.UpdateL3Check(9, L3State("llama", ("alice", "Bob"), HEAD, run="queued"))
    assert queue == l3.QueueL3Run("llama", 9) and isinstance(answer, l3.Answer) and answer.started
    signed = L3State("llama", ("alice", "Bob"), HEAD, signed_by="bob")
    (done,) = l3.plan_request(CONFIG, "llama", HEAD, check(9, signed), can_queue=True)
    assert isinstance(done, l3.Answer) and "already signed off by @bob" in done.text


def test_signoff_is_the_owners_alone_and_completes_or_opens_the_check() -> None:
    (refused,) = l3.plan_signoff(CONFIG, "llama", HEAD, "mallory", None)
    assert (
        isinstance(refused, l3.Answer)
        and not refused.ok
        and "only its owners can (@alice, @Bob)" in refused.text
    )
    update, answer = l3.plan_signoff(
        CONFIG, "llama", HEAD, "@bob", check(9, L3State("llama", ("alice",), HEAD))
    )
    assert update == l3.UpdateL3Check(
        9, L3State("llama", ("alice", "Bob"), HEAD, signed_by="bob"), signed=True
    )
    assert answer == l3.Answer(True, f"@bob signed off L3 **llama** on {HEAD[:12]}.")
    opened, _ = l3.plan_signoff(
        CONFIG, "llama", HEAD, "alice", None
    )  # no /l3 first: the owner's word opens it
    assert isinstance(opened, l3.OpenL3Check) and opened.signed and opened.state.signed_by == "alice"
    (unknown,) = l3.plan_signoff(CONFIG, "lama", HEAD, "alice", None)
    assert isinstance(unknown, l3.Answer) and not unknown.ok and "`llama`, `ads`" in unknown.text


def test_the_commands_planner_answers_on_issues_without_checks_and_maps_the_answer() -> None:
    args = (HEAD, CONFIG, None, "dave", True)
    (on_issue,) = plan.plan_l3(cmd("/l3 llama"), False, True, *args)
    assert isinstance(on_issue, plan.Reply) and on_issue.outcome.status == "failed"
    (no_checks,) = plan.plan_l3(cmd("/l3 llama"), True, False, *args)
    assert isinstance(no_checks, plan.Reply) and "check-run adapter" in no_checks.outcome.message
    apply, reply = plan.plan_l3(cmd("/l3 llama"), True, True, *args)
    assert (
        isinstance(apply, plan.ApplyL3)
        and apply.head_sha == HEAD
        and isinstance(apply.steps[0], l3.OpenL3Check)
    )
    assert isinstance(reply, plan.Reply) and reply.outcome.status == "started"
    (refused,) = plan.plan_l3(cmd("/signoff llama"), True, True, *args)  # dave is no owner: nothing to write
    assert isinstance(refused, plan.Reply) and refused.outcome.status == "failed"
    (other,) = plan.plan_l3(cmd("/signoff llama"), True, True, HEAD, CONFIG, None, "carol", True)
    assert isinstance(other, plan.Reply) and other.outcome.status == "failed"  # carol owns ads, not llama
    apply, reply = plan.plan_l3(cmd("/signoff llama"), True, True, HEAD, CONFIG, None, "alice", True)
    assert isinstance(apply, plan.ApplyL3) and isinstance(reply, plan.Reply) and reply.outcome.status == "ok"


# --------------------------------------------------------------------------- /resolve, planned (plain data)

PICK = "p" * 40
BUILT = "b" * 40


def resolve_state(
    built: object, *, human: tuple[str, ...] = (), missing: tuple[str, ...] = ()
) -> plan.ResolveState:
    from workers.engine.resolve.branch import BuildResult

    assert built is None or isinstance(built, BuildResult)
    return plan.ResolveState(
        7,
        "forksync/pick-x",
        "[Cherry-pick][CONFLICTS] Say hello",
        "intro\n",
        "Upstream-Commit",
        missing,
        (PICK,),
        human,
        False,
        built,
    )


def test_resolve_is_refused_off_a_pick_pr_and_without_a_configured_agent() -> None:
    refused = plan.resolve_refusal(cmd("/resolve"), False, "", False, True)
    assert refused is not None and refused.outcome.status == "failed"
    refused = plan.resolve_refusal(cmd("/resolve"), True, "feature/x", False, True)
    assert refused is not None and "feature/x" in refused.outcome.message
    assert plan.resolve_refusal(cmd("/resolve"), True, "forksync/pick", True, True) is not None  # from a fork
    refused = plan.resolve_refusal(cmd("/resolve agent"), True, "forksync/pick", False, False)
    assert refused is not None and refused.outcome.status == "failed"
    assert plan.resolve_refusal(cmd("/resolve agent"), True, "forksync/pick", False, True) is None


def test_resolve_pushes_and_retitles_only_a_built_bot_branch() -> None:
    from workers.engine.resolve.branch import BuildResult
    from workers.engine.resolve.model import ResolveOutcome, Waiting

    resolved = ResolveOutcome(PICK, "f" * 40, True, "t" * 40)
    push, edit, reply = plan.plan_resolve(cmd("/resolve"), resolve_state(BuildResult(BUILT, (resolved,))))
    assert push == plan.PushBranch(BUILT, "refs/heads/forksync/pick-x")
    assert (
        isinstance(edit, plan.EditPull)
        and edit.number == 7
        and edit.title == "[Cherry-pick][RESOLVED] Say hello"
    )
    assert edit.body.startswith("intro\n") and len(edit.body) > len("intro\n")  # the pick's section added
    assert isinstance(reply, plan.Reply) and reply.outcome.status == "ok"
    (kept,) = plan.plan_resolve(
        cmd("/resolve"), resolve_state(BuildResult(BUILT, (resolved,)), human=("h" * 40,))
    )
    assert isinstance(kept, plan.Reply) and "hhhhhhhhhh" in kept.outcome.message  # a human's commit: no push
    waiting = ResolveOutcome(PICK, "f" * 40, False, None, waiting=(Waiting("app.py", "both sides changed"),))
    (wait,) = plan.plan_resolve(cmd("/resolve"), resolve_state(BuildResult(None, (waiting,))))
    assert isinstance(wait, plan.Reply)
    (missing,) = plan.plan_resolve(cmd("/resolve"), resolve_state(None, missing=("abc1234",)))
    assert isinstance(missing, plan.Reply) and "abc1234" in missing.outcome.message
    (shown,) = plan.plan_resolve(cmd("/resolve show nope.py"), resolve_state(BuildResult(None, (waiting,))))
    assert isinstance(shown, plan.Reply) and "`app.py`" in shown.outcome.remedy
