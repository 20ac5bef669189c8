"""A red bundle heals itself: when a bundle PR's L1 fails on a suite that trunk passes, bisect
the bundle's commits (``split.find_culprits``) to find the ones that cause it, eject them into
chains with the failing test as the reason, and rebuild the bundle in the same PR.

Pure decisions here (:func:`plan_split`, :func:`upstream_of`, :func:`culprit_reason`); the
executor that builds subsets in memory and runs L1 on them is ``workers/jobs/l1_split.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from workers.testing.l1 import FAILURE, L1Run, failing_test_ids

BUNDLE_BRANCH_PREFIX = "forksync/bundle/"
# L1 runs a split may spend: one culprit among 32 commits costs 6; a budget keeps a flood of
# culprits (a bad base) from holding the runner for hours.
DEFAULT_MAX_RUNS = 12


@dataclass(frozen=True)
class SplitPlan:
    """What a split chases: the suites to re-run on each subset, and the failing ``suite/test``
    ids whose return makes a subset fail."""

    suites: tuple[str, ...]
    targets: frozenset[str]


def plan_split(head_ref: str, run: L1Run, trunk_passing: frozenset[str]) -> SplitPlan | None:
    """A split for a bundle PR whose L1 failed in suites trunk passes at the merge-base (None:
    not a bundle, not failing, or only failing where trunk fails too: nothing to eject)."""
    if not head_ref.startswith(BUNDLE_BRANCH_PREFIX) or run.conclusion != FAILURE or run.trunk:
        return None
    failing = failing_test_ids(run, run.fail_on)
    targets = frozenset(t for t in failing if t.split("/", 1)[0] in trunk_passing)
    if not targets:
        return None
    suites = tuple(sorted({t.split("/", 1)[0] for t in targets}))
    return SplitPlan(suites, targets)


def upstream_of(message: str, patterns: Sequence[str]) -> str | None:
    """The upstream commit a bundle commit carries (its pick trailer), or None."""
    for pattern in patterns:
        found = re.search(pattern, message)
        if found and found.groupdict().get("sha"):
            return found.group("sha")
    return None


def culprit_reason(tests: Sequence[str], pr: int) -> str:
    """The chain reason of an ejected culprit: the test(s) it breaks, and where."""
    shown = ", ".join(f"`{t}`" for t in list(tests)[:3]) + (
        f" and {len(tests) - 3} more" if len(tests) > 3 else ""
    )
    return f"ejected from bundle PR #{pr} by the L1 split: with it {shown} fail(s), without it they pass"
