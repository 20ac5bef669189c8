"""Proposed fixes that are fixes: for a trunk regression with a culprit, a revert PR.

:func:`plan_revert` is the pure rule (open one revert PR per culprit, never a second, never
merge it: a maintainer does); ``workers/jobs/revert.py`` builds the revert in memory, pushes it,
opens the PR (L1 runs on it like on any PR) and links it from the tracking issue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

REVERT_BRANCH_PREFIX = "forksync/revert/"


@dataclass(frozen=True)
class OpenRevert:
    culprit: str
    branch: str
    base: str
    title: str
    issue: int


@dataclass(frozen=True)
class LinkExisting:
    """A revert PR for this culprit is already open: only link it from the issue."""

    culprit: str
    pr: int
    issue: int


@dataclass(frozen=True)
class Declined:
    """A maintainer closed this culprit's revert PR without merging it: respected, never reopened
    nor proposed again; the issue says so."""

    culprit: str
    pr: int
    issue: int


@dataclass(frozen=True)
class AlreadyReverted:
    """This culprit's revert PR was merged: nothing to propose; the issue says which PR."""

    culprit: str
    pr: int
    issue: int


@dataclass(frozen=True)
class RevertPull:
    """A PR ever opened from a culprit's revert branch, as GitHub lists it."""

    number: int
    state: str  # "open" or "closed"
    merged: bool


RevertAction = OpenRevert | LinkExisting | Declined | AlreadyReverted


def revert_branch(culprit: str) -> str:
    return f"{REVERT_BRANCH_PREFIX}{culprit[:12]}"


def plan_revert(
    culprit: str,
    subject: str,
    trunk_branch: str,
    issue: int,
    existing_pr: int | None,
    pulls: Sequence[RevertPull] = (),
) -> RevertAction:
    """What to do for ``culprit`` (a trunk commit) found by the tracking ``issue``; ``pulls``:
    every PR ever opened from its revert branch (open, merged, or closed by a maintainer)."""
    opened = [p.number for p in pulls if p.state == "open"]
    if existing_pr is not None or opened:
        return LinkExisting(culprit, existing_pr if existing_pr is not None else max(opened), issue)
    merged = [p.number for p in pulls if p.merged]
    if merged:
        return AlreadyReverted(culprit, max(merged), issue)
    declined = [p.number for p in pulls if p.state == "closed"]
    if declined:
        return Declined(culprit, max(declined), issue)
    title = f'Revert "{subject}"' if subject else f"Revert {culprit[:12]}"
    return OpenRevert(culprit, revert_branch(culprit), trunk_branch, title[:250], issue)
