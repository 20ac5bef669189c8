"""Revert proposals for a trunk culprit: the revert PR's body and the tracking issue's comment
(one per culprit, edited in place: proposed, does not apply, declined by a maintainer, merged)."""

from __future__ import annotations

from core.render import neutral


def _what(culprit: str, subject: str) -> str:
    return f"{culprit[:12]} {neutral(subject)}".rstrip()


def revert_pr_body(culprit: str, issue: int) -> str:
    return (
        f"Reverts {culprit} (found by bisection in #{issue}).\n\n"
        "Proposed by forksync: L1 runs on this PR like on any other, and **it is never merged "
        "without a maintainer**. Merge it to fix trunk, or close it and fix forward: a closed revert "
        "PR is not proposed again for this commit."
    )


def revert_proposed(culprit: str, subject: str, pr: int) -> str:
    return (
        f"**Proposed fix:** revert PR #{pr} reverts {_what(culprit, subject)}. L1 runs on it; a maintainer "
        "merges it (forksync never does)."
    )


def revert_does_not_apply(culprit: str, trunk_sha: str) -> str:
    return (
        f"The revert of {culprit[:12]} does not apply cleanly on trunk `{trunk_sha[:12]}`: no revert PR "
        "was opened. Revert it by hand, or eject it into a chain."
    )


def revert_declined(culprit: str, subject: str, pr: int) -> str:
    return (
        f"**Revert declined:** a maintainer closed revert PR #{pr} of {_what(culprit, subject)} without "
        "merging it. forksync respects that: it does not reopen it nor propose this revert again. A new "
        "culprit found by a later bisection gets its own proposal; to have this one proposed again, reopen "
        f"#{pr}."
    )


def revert_merged(culprit: str, subject: str, pr: int) -> str:
    return (
        f"**Reverted:** revert PR #{pr} of {_what(culprit, subject)} was merged. If this issue stays open, "
        "the regression has another cause: the next bisection names it."
    )
