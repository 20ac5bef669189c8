"""Proposed fixes that are fixes: for a trunk regression with a culprit, a revert PR.

:func:`plan_revert` is the pure rule (open one revert PR per culprit, never a second, never
merge it: a maintainer does); ``workers/jobs/revert.py`` builds the revert in memory, pushes it,
opens the PR (L1 runs on it like on any PR) and links it from the tracking issue.
"""

from __future__ import annotations

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


RevertAction = OpenRevert | LinkExisting


def revert_branch(culprit: str) -> str:
    return f"{REVERT_BRANCH_PREFIX}{culprit[:12]}"


def plan_revert(culprit: str, subject: str, trunk_branch: str, issue: int, existing_pr: int | None) -> RevertAction:
    """What to do for ``culprit`` (a trunk commit) found by the tracking ``issue``."""
    if existing_pr is not None:
        return LinkExisting(culprit, existing_pr, issue)
    title = f'Revert "{subject}"' if subject else f"Revert {culprit[:12]}"
    return OpenRevert(culprit, revert_branch(culprit), trunk_branch, title[:250], issue)
