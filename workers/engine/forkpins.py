"""The fork's own pins, as its bundle bodies state them, beside forksync's computed ones.

fbtriton-style bundle bodies keep two pins: ``UPSTREAM_HASH`` (everything up to it has landed:
forksync's *contiguous pin*) and ``UPSTREAM_FRONTIER_HASH`` (everything up to it has been
triaged: forksync's *frontier*). A statement names its commit by sha or by upstream ``#N``
("``UPSTREAM_FRONTIER_HASH`` advanced to #10059 (``ca6bd0c``)", ``UPSTREAM_HASH = <sha>``);
"unchanged" / "remains" keeps the previous value. The newest fork commit that states a pin
wins. Pure: fork commits and the upstream index in, :class:`ForkPins` out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workers.engine.history import Commit
from workers.engine.recognise.index import UpstreamIndex

_PIN = re.compile(r"(?<![A-Za-z0-9_])UPSTREAM_(FRONTIER_)?HASH(?![A-Za-z0-9_])`?")
_CLAUSE_END = re.compile(r";|\n|\.\s|\.$")
_KEEP = re.compile(r"(?i)^\W*(?:is\s+)?(?:unchanged|remains|stays|kept|keeps|not\s+moved|advance\))")
_SHA = re.compile(r"(?<![0-9a-zA-Z])([0-9a-f]{7,40})(?![0-9a-zA-Z])")
_NUMBER = re.compile(r"#(\d+)\b")


@dataclass(frozen=True)
class ForkPins:
    """The pins the fork states, each with the fork commit that stated it last."""

    upstream_hash: str | None = None
    upstream_hash_in: str | None = None
    frontier_hash: str | None = None
    frontier_hash_in: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "upstream_hash": self.upstream_hash,
            "upstream_hash_in": self.upstream_hash_in,
            "upstream_frontier_hash": self.frontier_hash,
            "upstream_frontier_hash_in": self.frontier_hash_in,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ForkPins:
        return cls(
            d.get("upstream_hash"),
            d.get("upstream_hash_in"),
            d.get("upstream_frontier_hash"),
            d.get("upstream_frontier_hash_in"),
        )

    def disagreements(self, frontier: str, contiguous_pin: str) -> list[str]:
        """One line per pin the fork states that differs from forksync's computed one."""
        out = []
        if self.frontier_hash is not None and self.frontier_hash != frontier:
            out.append(
                f"the fork's UPSTREAM_FRONTIER_HASH is {self.frontier_hash[:12]} but forksync's frontier is {frontier[:12]}"
            )
        if self.upstream_hash is not None and self.upstream_hash != contiguous_pin:
            out.append(
                f"the fork's UPSTREAM_HASH is {self.upstream_hash[:12]} but forksync's contiguous pin is {contiguous_pin[:12]}"
            )
        return out


def read_pins(fork: Sequence[Commit], index: UpstreamIndex) -> ForkPins:
    """The pins stated in ``fork`` (oldest first); the newest statement of each wins."""
    upstream_hash = upstream_in = frontier = frontier_in = None
    for commit in fork:
        message = commit.message
        if not message or "UPSTREAM_" not in message:
            continue
        for m in _PIN.finditer(message):
            value = _value(message[m.end() : m.end() + 200], index)
            if value is None:
                continue
            if m.group(1):
                frontier, frontier_in = value, commit.sha
            else:
                upstream_hash, upstream_in = value, commit.sha
    return ForkPins(upstream_hash, upstream_in, frontier, frontier_in)


def _value(after: str, index: UpstreamIndex) -> str | None:
    end = _CLAUSE_END.search(after)
    clause = after[: end.start()] if end else after
    if _KEEP.match(clause):
        return None
    for token in _SHA.findall(clause):
        sha = index.sha(token)
        if sha:
            return sha
    for number in _NUMBER.findall(clause):
        sha = index.pr(int(number))
        if sha:
            return sha
    return None
