"""Pure builders of bot-written text (PR bodies, check-run output, issue bodies, replies).

One module per domain; bot-owned sections carry hidden HTML markers so they are edited in
place, never duplicated. Builders take plain data and return strings: no I/O here.
"""

from __future__ import annotations


def marker(kind: str, key: str) -> str:
    """The hidden HTML comment that identifies a bot-owned PR, issue or comment."""
    return f"<!-- forksync:{kind}:{key} -->"
