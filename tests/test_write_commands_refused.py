"""Every write command from a user without write permission is refused, with a reply, and does nothing."""

from __future__ import annotations

from core.commands import SPECS
from tests.fixtures.commands import CommandWorld

# One valid example per write command (arguments as its usage asks).
EXAMPLES = {
    "bundle": "/bundle dry-run",
    "retest": "/retest",
    "skip": '/skip abcd123 "not for us"',
    "defer": "/defer abcd123",
    "urgent": "/urgent abcd123",
    "chain": "/chain abcd123",
    "unchain": "/unchain abcd123",
    "bisect": "/bisect matmul",
    "l3": "/l3 llama",
    "resolve": "/resolve",
    "approve": "/approve",
    "digest": "/digest",
}


def test_every_write_command_is_listed_here() -> None:
    assert {s.name for s in SPECS if s.permission == "write"} == set(EXAMPLES)


def test_readers_and_outsiders_get_a_refusal_for_every_write_command(command_world: CommandWorld) -> None:
    """100%: for a reader and for a user with no access, on an issue and on a PR, every write
    command gets one reply saying denied, a 😕, and nothing is enqueued."""
    w = command_world
    pr = w.open_pull("feature")
    answered = refused = 0
    for author in ("reader", "stranger"):
        for issue in (w.issue, pr):
            for text in EXAMPLES.values():
                cid = w.say(text, author=author, issue=issue)
                replies = w.replies(cid)
                answered += len(replies) == 1
                refused += (
                    len(replies) == 1 and "denied" in replies[0]["body"] and "confused" in w.reactions(cid)
                )
    total = 2 * 2 * len(EXAMPLES)
    assert (answered, refused) == (total, total)
    assert w.sent == []
