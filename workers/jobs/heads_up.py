"""Heads-up before a risky landing: a bundle, urgent or chain PR that is ready to merge (its L1
passed; a chain's also built to its end, no conflict left) and that touches an owned area (``owners:`` of the config, else the fork's CODEOWNERS: the LLVM pin,
diverged zones, any owned path) requests review from those owners and says, in one comment edited
in place, what changed upstream in their area. Pure :func:`plan`, thin :func:`execute`."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.dashboard.feed import InFlight
from core.render.heads_up import heads_up_body, heads_up_marker
from workers.jobs.digest import owners_of

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HeadsUp:
    number: int  # the PR
    users: tuple[str, ...]
    teams: tuple[str, ...]  # team slugs (the org part dropped, as the API wants)
    marker: str
    body: str


def plan(
    items: Sequence[InFlight],
    commits: Mapping[str, Sequence[Mapping[str, Any]]],
    owners: Mapping[str, tuple[str, ...]],
    codeowners: Sequence[tuple[str, tuple[str, ...]]] = (),
    upstream_url: str | None = None,
    author: str = "",
) -> list[HeadsUp]:
    """One heads-up per ready PR whose upstream commits touch owned areas (see :func:`ready`)."""
    out = []
    for item in items:
        if not ready(item) or item.number is None:
            continue
        areas: dict[str, tuple[tuple[str, ...], list[tuple[str, str, int | None]]]] = {}
        for c in commits.get(item.key, ()):
            for pattern, who in {m for p in c.get("paths", ()) for m in owners_of(p, owners, codeowners)}:
                entry = areas.setdefault(pattern, (who, []))
                if all(sha != c["sha"] for sha, _, _ in entry[1]):
                    entry[1].append((c["sha"], c.get("subject", ""), c.get("pr")))
        if not areas:
            continue
        everyone = [o for who, _ in areas.values() for o in who if o != author]
        users = tuple(dict.fromkeys(o for o in everyone if "/" not in o))
        teams = tuple(dict.fromkeys(o.split("/", 1)[1] for o in everyone if "/" in o))
        assert item.number is not None  # ready() passes PRs only
        out.append(
            HeadsUp(
                item.number,
                users,
                teams,
                heads_up_marker(item.key),
                heads_up_body(
                    item.key, {k: (v[0], v[1]) for k, v in areas.items()}, upstream_url, kind=item.kind
                ),
            )
        )
    return out


def ready(item: InFlight) -> bool:
    """A PR that is ready to merge: its L1 check passed; a chain must also be a PR (a chain still
    waiting on a conflict is a tracking issue, or a PR built only up to the conflict)."""
    if not item.number or item.l1 != "success":
        return False
    if item.kind in ("bundle", "urgent"):
        return True
    return item.kind == "chain" and item.pull and not item.conflicts


def execute(port: Any, repo: str, actions: Sequence[HeadsUp]) -> int:
    """Post or edit each heads-up comment, then request the reviews; returns how many were new."""
    posted = 0
    for action in actions:
        _comment, created = port.upsert_comment(repo, action.number, marker=action.marker, body=action.body)
        if created:
            posted += 1
            try:
                port.request_reviewers(repo, action.number, users=action.users, teams=action.teams)
            except Exception as exc:  # an owner who is not a collaborator: the comment still names them
                log.warning("review request on %s#%d refused: %s", repo, action.number, exc)
    return posted
