"""Recognisers ``trailer``, ``change-id`` and ``pr-pattern``: what the configured trailer
patterns (carry, defer, won't-port: one scan of the message), Gerrit's ``Change-Id`` and the
configured PR patterns name."""

from __future__ import annotations

import re

from workers.engine.recognise.index import UpstreamIndex
from workers.engine.recognise.rules import Rules

# Gerrit's trailer: a cherry-pick keeps it, so the fork's copy names the same change as upstream's.
_CHANGE_ID_TRAILER = re.compile(r"(?m)^[ \t]*Change-Id:[ \t]*(I[0-9a-f]{40})[ \t]*$")


def _trailers(message: str, index: UpstreamIndex, rules: Rules) -> list[str]:
    return [sha for sha, kind in _markers(message, index, rules) if kind == "carry"]


def _markers(message: str, index: UpstreamIndex, rules: Rules) -> list[tuple[str, str]]:
    """(upstream sha, "carry" | "deferred" | "wont_port") for every trailer the message has."""
    found: list[tuple[str, str]] = []
    if rules.markers is not None:
        for m in rules.markers.finditer(message):
            name = m.lastgroup
            i = int(name[1:]) if name and name.startswith("s") else -1
            if i < 0:  # the matching pattern's sha group is nested: find the one that matched
                i = next(j for j in range(len(rules.marker_kinds)) if m.group(f"s{j}") is not None)
            sha = index.sha(m.group(f"s{i}"))
            if sha:
                found.append((sha, rules.marker_kinds[i]))
        return found
    for kind, patterns in (
        ("carry", rules.trailer_patterns),
        ("deferred", rules.defer_patterns),
        ("wont_port", rules.wont_port_patterns),
    ):
        for pattern in patterns:
            for m in pattern.finditer(message):
                sha = index.sha(m.group("sha"))
                if sha:
                    found.append((sha, kind))
    return found


def _pr_patterns(message: str, index: UpstreamIndex, rules: Rules) -> list[str]:
    found = []
    for pattern in rules.pr_patterns:
        for m in pattern.finditer(message):
            sha = index.pr(int(m.group("pr")))
            if sha:
                found.append(sha)
    return found
