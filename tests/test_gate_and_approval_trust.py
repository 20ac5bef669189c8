"""The in-process command gate stays bounded; an approval counts only when written by our own App."""

from __future__ import annotations

from typing import Any

from tests.fixtures.commands import FORK, CommandWorld
from workers.commands.approval import approval_body, approval_marker, is_approved
from workers.commands.gate import MemoryGate


def test_memory_gate_evicts_expired_and_stays_under_its_cap() -> None:
    now = [0.0]
    gate = MemoryGate(clock=lambda: now[0], max_entries=100)
    for i in range(1000):
        gate.permission("acme/fork", f"user{i}", 60, lambda: "read")
        gate.take("acme/fork", f"user{i}", 1, 10, 600)
        now[0] += 1
    assert gate.size() <= 200
    # A live window is still counted: the rate limit holds for the newest user.
    assert not gate.take("acme/fork", "user999", 10, 10, 600).allowed


def test_another_apps_approval_record_is_not_trusted_without_our_login(command_world: CommandWorld) -> None:
    """A bot comment by another App with a perfect approval body is ignored, with own_login or not."""
    from tests.fixtures.commands import add_user_comment

    w = command_world
    pr = w.open_pull("patch", head_repo="stranger/fork", author="stranger")
    head = w.gh.head("stranger/fork", "patch")
    cid = add_user_comment(w.gh, pr, approval_body(pr, head, "maint"), "other-app[bot]")
    with w.gh.lock:
        w.gh.state.comments[FORK][cid]["author_type"] = "Bot"
    adapter: Any = w.gh.adapter(w.gh.installation)
    assert approval_marker(pr) in approval_body(pr, head, "maint")
    assert not is_approved(adapter, FORK, pr)
    assert not is_approved(adapter, FORK, pr, own_login="forksync[bot]")
