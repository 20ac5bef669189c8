"""L3 sign-off check runs: their name, what they say, and the sign-off state hidden in their text.

The check run ``forksync / L3: WORKLOAD`` on a PR head is the durable record of an L3 sign-off:
its conclusion says whether it is signed, and its text carries :class:`L3State` as hidden JSON,
so who signed, what the workload measured and where a sign-off came from can be rebuilt from
GitHub alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

CHECK_PREFIX = "forksync / L3: "

_STATE = re.compile(r"<!-- forksync:l3 (?P<json>\{.*?\}) -->", re.DOTALL)


@dataclass(frozen=True)
class L3State:
    """Everything an L3 check run records."""

    workload: str
    owners: tuple[str, ...]
    head_sha: str
    requested_by: str = ""
    signed_by: str = ""
    run: str = ""  # "", queued, running, passed, failed: the workload command's state
    run_detail: str = ""  # exit status, or why it failed
    metrics: Mapping[str, float] = field(default_factory=dict)
    reset_from: str = ""  # the previous head whose sign-off a push reset
    carried_from: str = ""  # the previous head whose sign-off was kept (reset_on_push: false)


def check_name(workload: str) -> str:
    return f"{CHECK_PREFIX}{workload}"


def mentions(owners: tuple[str, ...]) -> str:
    return ", ".join(f"@{o.lstrip('@')}" for o in owners)


def title(state: L3State) -> str:
    if state.signed_by:
        return f"Signed off by @{state.signed_by}"
    return f"Awaiting sign-off from {mentions(state.owners)}"


def summary(state: L3State) -> str:
    lines = [f"L3 workload **{state.workload}** on {state.head_sha[:12]}."]
    if state.signed_by:
        lines.append(f"Signed off by @{state.signed_by} (owners: {mentions(state.owners)}).")
        if state.carried_from:
            lines.append(
                f"The sign-off was given on {state.carried_from[:12]} and kept on push "
                "(`reset_on_push: false`)."
            )
    else:
        lines.append(
            f"Waiting for one of the owners ({mentions(state.owners)}) to comment "
            f"`/signoff {state.workload}` on the pull request."
        )
        if state.reset_from:
            lines.append(f"A new push reset the sign-off given on {state.reset_from[:12]}.")
    if state.requested_by:
        lines.append(f"Requested by @{state.requested_by}.")
    run = {
        "queued": "The workload's command is queued on the l2 queue; its metrics will appear here.",
        "running": "The workload's command is running.",
        "passed": "The workload's command passed.",
        "failed": f"The workload's command failed: {state.run_detail}.",
    }.get(state.run)
    if run:
        lines.append(run)
    return "\n\n".join(lines)


def text(state: L3State) -> str:
    out = []
    if state.metrics:
        out += ["| metric | value |", "| --- | --- |"]
        out += [f"| {name} | {value:g} |" for name, value in sorted(state.metrics.items())]
        out.append("")
    data = json.dumps(asdict(state), sort_keys=True, separators=(",", ":")).replace(">", "\\u003e")
    out.append(f"<!-- forksync:l3 {data} -->")
    return "\n".join(out)


def parse_state(check_text: str | None) -> L3State | None:
    """The state hidden in a check run's text, or None when it is not forksync's or unreadable."""
    m = _STATE.search(check_text or "")
    if not m:
        return None
    try:
        raw: Any = json.loads(m.group("json"))
        known = {f.name for f in fields(L3State)}
        data = {k: v for k, v in raw.items() if k in known}
        data["owners"] = tuple(data.get("owners", ()))
        data["metrics"] = {str(k): float(v) for k, v in (data.get("metrics") or {}).items()}
        return L3State(**data)
    except (ValueError, TypeError, AttributeError):
        return None


def refusal(user: str, workload: str, owners: tuple[str, ...]) -> str:
    return (
        f"@{user} cannot sign off **{workload}**: only its owners can ({mentions(owners)}). "
        f"Ask one of them to comment `/signoff {workload}`."
    )


def unknown_workload(workload: str, known: tuple[str, ...]) -> str:
    listed = ", ".join(f"`{k}`" for k in known) if known else "none are configured"
    return (
        f"There is no L3 workload named `{workload}` in .github/forksync.yml (known: {listed}). "
        "Add it under `l3.workloads` with its owners."
    )


# --------------------------------------------------------------------------- answers to /l3 and /signoff


def already_signed_off(workload: str, signer: str, head_sha: str) -> str:
    return f"L3 **{workload}** is already signed off by @{signer} on {head_sha[:12]}."


def awaiting_queued_again(workload: str, owners: tuple[str, ...]) -> str:
    return f"L3 **{workload}** is awaiting sign-off from {mentions(owners)}; its command is queued again."


def already_awaiting(workload: str, owners: tuple[str, ...], head_sha: str) -> str:
    return f"L3 **{workload}** is already awaiting sign-off from {mentions(owners)} on {head_sha[:12]}."


def requested(workload: str, owners: tuple[str, ...], head_sha: str, *, has_run: bool, queued: bool) -> str:
    """``/l3`` answered on a new check; ``has_run``: the workload has a command, ``queued``: it was sent."""
    shown = (
        f"L3 **{workload}** requested on {head_sha[:12]}: awaiting sign-off from {mentions(owners)} "
        f"(`/signoff {workload}`)."
    )
    if queued:
        shown += " Its command is queued on the l2 queue; metrics will be attached to the check."
    elif has_run:
        shown += " Its command was not queued: no worker queue is available here."
    return shown


def signed_off(signer: str, workload: str, head_sha: str) -> str:
    return f"@{signer} signed off L3 **{workload}** on {head_sha[:12]}."


# --------------------------------------------------------------------------- a workload's run (l2 queue)


def no_run_command(workload: str) -> str:
    return f"L3 **{workload}** has no `run` command to run."


def no_l3_check(workload: str, head_sha: str) -> str:
    return f"no L3 check for **{workload}** on {head_sha[:12]}: comment `/l3 {workload}` first."


def head_not_on_branch(head_sha: str, repo: str, workload: str) -> str:
    """Why a workload's command cannot run: its head is on no branch of the repository."""
    return (
        f"{head_sha[:12]} is not on a branch of {repo}; a maintainer can push it here "
        f"and comment /l3 {workload} again"
    )


def run_did_not_start(workload: str, detail: str) -> str:
    return f"L3 **{workload}** command did not run: {detail}."


def run_detail(
    exit_code: int | None, timed_out: bool, last_line: str, timeout_s: float, tail_chars: int
) -> str:
    """What the check says of the command's end: ``exit 0``, a timeout, or the exit status and last line."""
    if exit_code == 0:
        return "exit 0"
    if timed_out:
        return f"timed out after {timeout_s:.0f}s"
    return f"exit {exit_code}: {last_line[:tail_chars]}".rstrip(": ")


def run_finished(workload: str, run: str, detail: str, metrics: Mapping[str, float]) -> str:
    shown = ", ".join(f"{k}={v:g}" for k, v in sorted(metrics.items())) or "no metrics"
    return f"L3 **{workload}** command {run} ({detail}); {shown}."
