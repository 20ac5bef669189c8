"""L3 sign-off: ``/l3 WORKLOAD`` opens a check run awaiting the owners, ``/signoff WORKLOAD`` completes it.

The check run ``forksync / L3: WORKLOAD`` on the PR head is the record (see ``core/render/l3.py``):
nothing is kept elsewhere, so a lost worker or a flushed Redis loses no sign-off. A workload with
a ``run`` command has it run on the l2 queue (``workers/testing/l3_run.py``), its metrics attached to
the check. A push resets sign-offs unless the workload says ``reset_on_push: false``.
Called by the comment-command handler (``/l3``, ``/signoff``) and the push handler.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from core.config import RepoConfig, Workload
from core.errors import ForksyncError
from core.github.records import CheckOutput, CheckRunInfo
from core.github.roles import Checks
from core.render.l3 import (
    L3State,
    already_awaiting,
    already_signed_off,
    awaiting_queued_again,
    check_name,
    mentions,
    parse_state,
    refusal,
    requested,
    signed_off,
    summary,
    text,
    title,
    unknown_workload,
)
from core.tasknames import RUN_L3

# ``enqueue(task_name, kwargs)``: Celery's ``send_task`` in production, a recorder in tests.
Enqueue = Callable[[str, Mapping[str, Any]], object]


@dataclass(frozen=True)
class Reply:
    """What to answer the comment with; ``ok`` False means refused (the text says why and what to do)."""

    ok: bool
    text: str
    check_run_id: int | None = None


def check_output(state: L3State) -> CheckOutput:
    return CheckOutput(title=title(state), summary=summary(state), text=text(state))


def is_owner(user: str, workload: Workload) -> bool:
    """Owners are GitHub logins, compared without case or a leading @."""
    login = user.lstrip("@").lower()
    return any(owner.lstrip("@").lower() == login for owner in workload.owners)


def current(
    gh: Checks, repo: str, head_sha: str, workload: str
) -> tuple[CheckRunInfo, L3State | None] | None:
    """The newest L3 check run of ``workload`` on ``head_sha`` and its recorded state, if any."""
    runs = gh.list_check_runs(repo, head_sha, name=check_name(workload))
    runs = [r for r in runs if r.name == check_name(workload) and r.head_sha == head_sha]
    if not runs:
        return None
    newest = max(runs, key=lambda r: r.id)
    return newest, parse_state(newest.text)


def state_of(info: CheckRunInfo | None, recorded: L3State | None, w: Workload, head_sha: str) -> L3State:
    if recorded is not None:
        return replace(recorded, owners=w.owners)
    state = L3State(w.name, w.owners, head_sha)
    # A check without our state (made by hand or by an older version) still says whether it passed.
    if info is not None and info.conclusion == "success":
        shown = info.title or ""
        signer = shown.removeprefix("Signed off by @") if shown.startswith("Signed off by @") else "unknown"
        state = replace(state, signed_by=signer)
    return state


# --------------------------------------------------------------------------- /l3 and /signoff: plan, then act
#
# The readers give the newest check run of the workload on the head (:func:`current`); the pure
# planners below decide from it and the config what to write; :func:`apply_l3` writes it.


@dataclass(frozen=True)
class OpenL3Check:
    """Create the workload's check run on the head: in progress, or completed (success) when ``signed``."""

    state: L3State
    signed: bool = False


@dataclass(frozen=True)
class UpdateL3Check:
    """Rewrite check run ``check_run_id``: in progress, or completed (success) when ``signed``."""

    check_run_id: int
    state: L3State
    signed: bool = False


@dataclass(frozen=True)
class QueueL3Run:
    """Send the workload's command to the l2 queue; ``check_run_id`` None: the check opened just before."""

    workload: str
    check_run_id: int | None


@dataclass(frozen=True)
class Answer:
    """The reply: ``ok`` False is a refusal; ``started``: work was queued (the command answers 🚀);
    ``check_run_id`` None with a check opened by the plan: that check's."""

    ok: bool
    text: str
    started: bool = False
    check_run_id: int | None = None


L3Action = OpenL3Check | UpdateL3Check | QueueL3Run | Answer


def plan_request(
    config: RepoConfig,
    workload: str,
    head_sha: str,
    found: tuple[CheckRunInfo, L3State | None] | None,
    *,
    requested_by: str = "",
    can_queue: bool = False,
) -> list[L3Action]:
    """``/l3 WORKLOAD`` on ``head_sha`` (``found``: :func:`current`; ``can_queue``: a worker queue is
    reachable): a check run awaiting the owners' sign-off, once per head, and the workload queued."""
    w = config.workload(workload)
    if w is None:
        return [Answer(False, unknown_workload(workload, tuple(x.name for x in config.l3.workloads)))]
    if found is not None:
        info, recorded = found
        state = state_of(info, recorded, w, head_sha)
        if state.signed_by:
            return [Answer(True, already_signed_off(w.name, state.signed_by, head_sha), check_run_id=info.id)]
        if w.run and can_queue and state.run in ("", "failed"):
            state = replace(state, run="queued", run_detail="")
            return [
                UpdateL3Check(info.id, state),
                QueueL3Run(w.name, info.id),
                Answer(True, awaiting_queued_again(w.name, w.owners), started=True, check_run_id=info.id),
            ]
        return [Answer(True, already_awaiting(w.name, w.owners, head_sha), check_run_id=info.id)]
    queued = bool(w.run) and can_queue
    state = L3State(w.name, w.owners, head_sha, requested_by=requested_by, run="queued" if queued else "")
    # 🚀 only when work was queued; a command no queue took answers 👍 and says it was not queued.
    answer = Answer(
        True, requested(w.name, w.owners, head_sha, has_run=bool(w.run), queued=queued), started=queued
    )
    return [OpenL3Check(state), *([QueueL3Run(w.name, None)] if queued else []), answer]


def plan_signoff(
    config: RepoConfig,
    workload: str,
    head_sha: str,
    user: str,
    found: tuple[CheckRunInfo, L3State | None] | None,
) -> list[L3Action]:
    """``/signoff WORKLOAD`` by ``user``: an owner completes the check (success); anyone else is refused."""
    w = config.workload(workload)
    if w is None:
        return [Answer(False, unknown_workload(workload, tuple(x.name for x in config.l3.workloads)))]
    if not is_owner(user, w):
        return [Answer(False, refusal(user.lstrip("@"), w.name, w.owners))]
    state = state_of(found[0] if found else None, found[1] if found else None, w, head_sha)
    if state.signed_by:
        return [
            Answer(
                True,
                already_signed_off(w.name, state.signed_by, head_sha),
                check_run_id=found[0].id if found else None,
            )
        ]
    state = replace(state, signed_by=user.lstrip("@"))
    # An owner may sign off without an /l3 first: their word is what the check records.
    write: L3Action = (
        OpenL3Check(state, signed=True) if found is None else UpdateL3Check(found[0].id, state, signed=True)
    )
    return [write, Answer(True, signed_off(state.signed_by, w.name, head_sha))]


def apply_l3(
    gh: Checks,
    repo: str,
    head_sha: str,
    actions: Sequence[L3Action],
    *,
    enqueue: Enqueue | None = None,
    installation_id: int | None = None,
) -> Reply:
    """The one executor of the L3 planners: write the check runs, queue the runs, give the answer."""
    opened: int | None = None
    for action in actions:
        if isinstance(action, OpenL3Check):
            name, output = check_name(action.state.workload), check_output(action.state)
            info = (
                gh.create_check_run(repo, name=name, head_sha=head_sha, conclusion="success", output=output)
                if action.signed
                else gh.create_check_run(
                    repo, name=name, head_sha=head_sha, status="in_progress", output=output
                )
            )
            opened = info.id
        elif isinstance(action, UpdateL3Check):
            if action.signed:
                gh.update_check_run(
                    repo,
                    action.check_run_id,
                    status="completed",
                    conclusion="success",
                    output=check_output(action.state),
                )
            else:
                gh.update_check_run(
                    repo, action.check_run_id, status="in_progress", output=check_output(action.state)
                )
        elif isinstance(action, QueueL3Run):
            check_run_id = action.check_run_id if action.check_run_id is not None else opened
            if enqueue is None or check_run_id is None:
                raise ForksyncError(
                    "an L3 run was planned without a queue or a check run (a bug in forksync)",
                    "report it to the bot's operators",
                )
            enqueue(
                RUN_L3,
                {
                    "repo": repo,
                    "head_sha": head_sha,
                    "workload": action.workload,
                    "check_run_id": check_run_id,
                    "installation_id": installation_id,
                },
            )  # as _enqueue
        else:
            return Reply(
                action.ok, action.text, action.check_run_id if action.check_run_id is not None else opened
            )
    raise ForksyncError("the L3 plan gave no answer (a bug in forksync)", "report it to the bot's operators")


def _enqueue(
    enqueue: Enqueue, repo: str, head_sha: str, w: Workload, check_run_id: int, installation_id: int | None
) -> None:
    enqueue(
        RUN_L3,
        {
            "repo": repo,
            "head_sha": head_sha,
            "workload": w.name,
            "check_run_id": check_run_id,
            "installation_id": installation_id,
        },
    )


def request_l3(
    gh: Checks,
    repo: str,
    head_sha: str,
    workload: str,
    config: RepoConfig,
    *,
    requested_by: str = "",
    enqueue: Enqueue | None = None,
    installation_id: int | None = None,
) -> Reply:
    """``/l3 WORKLOAD``: read, :func:`plan_request`, :func:`apply_l3`."""
    w = config.workload(workload)
    found = current(gh, repo, head_sha, w.name) if w is not None else None
    actions = plan_request(
        config, workload, head_sha, found, requested_by=requested_by, can_queue=enqueue is not None
    )
    return apply_l3(gh, repo, head_sha, actions, enqueue=enqueue, installation_id=installation_id)


def signoff_l3(gh: Checks, repo: str, head_sha: str, workload: str, user: str, config: RepoConfig) -> Reply:
    """``/signoff WORKLOAD`` by ``user``: read, :func:`plan_signoff`, :func:`apply_l3`."""
    w = config.workload(workload)
    found = current(gh, repo, head_sha, w.name) if w is not None and is_owner(user, w) else None
    return apply_l3(gh, repo, head_sha, plan_signoff(config, workload, head_sha, user, found))


def reset_l3_on_push(
    gh: Checks,
    repo: str,
    before_sha: str,
    after_sha: str,
    config: RepoConfig,
    *,
    enqueue: Enqueue | None = None,
    installation_id: int | None = None,
) -> list[Reply]:
    """A push moved the PR head: each L3 check on the old head gets its successor on the new one.

    Signed-off workloads start over awaiting sign-off (and their command is queued again),
    unless the workload says ``reset_on_push: false``, in which case the sign-off is carried.
    """
    replies = []
    for w in config.l3.workloads:
        found = current(gh, repo, before_sha, w.name)
        if found is None or current(gh, repo, after_sha, w.name) is not None:
            continue
        old = state_of(found[0], found[1], w, before_sha)
        if old.signed_by and not w.reset_on_push:
            state = replace(
                old, head_sha=after_sha, carried_from=before_sha, reset_from="", run="", run_detail=""
            )
            info = gh.create_check_run(
                repo,
                name=check_name(w.name),
                head_sha=after_sha,
                conclusion="success",
                output=check_output(state),
            )
            replies.append(
                Reply(
                    True, f"L3 **{w.name}**: sign-off by @{old.signed_by} kept on {after_sha[:12]}.", info.id
                )
            )
            continue
        queued = bool(w.run) and enqueue is not None
        state = L3State(
            w.name,
            w.owners,
            after_sha,
            requested_by=old.requested_by,
            reset_from=before_sha if old.signed_by else old.reset_from,
            run="queued" if queued else "",
        )
        info = gh.create_check_run(
            repo,
            name=check_name(w.name),
            head_sha=after_sha,
            status="in_progress",
            output=check_output(state),
        )
        if queued:
            assert enqueue is not None
            _enqueue(enqueue, repo, after_sha, w, info.id, installation_id)
        what = "sign-off reset" if old.signed_by else "still awaiting sign-off"
        replies.append(
            Reply(True, f"L3 **{w.name}**: {what} on {after_sha[:12]} ({mentions(w.owners)}).", info.id)
        )
    return replies
