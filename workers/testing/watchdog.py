"""The watchdogs: an L1 suite that ran too little is "omitted" (a failure), and required checks
from other CI systems that are missing, skipped or neutral fail ``forksync / coverage``.

Both are pure decisions on plain data; the seed's silent blind spot was a suite that "passed"
because it ran nothing, so every rule here says which rule fired and what to do.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from core.config import Suite

COVERAGE_CHECK = "forksync / coverage"


def expected_tests(suite: Suite, baseline: int | None, fraction: float) -> int:
    """The fewest tests the suite must run: its ``min_tests``, or the share of its trunk baseline."""
    floor = suite.min_tests
    if baseline:
        floor = max(floor, math.ceil(baseline * fraction))
    return floor


def omission(
    suite: Suite,
    *,
    ran: bool,
    readable: bool,
    problem: str,
    executed: int,
    baseline: int | None,
    fraction: float,
    skipped: int = 0,
    skip_reasons: str = "",
) -> str | None:
    """Why the suite counts as omitted, or None when it ran enough tests to be judged.

    ``ran``: the command started; ``readable``/``problem``: what reading its results gave;
    ``executed``: the test cases that actually ran (passed or failed: a skipped test is reported,
    not run); ``baseline``: its rolling trunk executed count (None: no history); ``skipped`` and
    ``skip_reasons`` (see :func:`describe_skips`): named in the reason so the author sees why.
    """
    if not ran:
        return problem or "did not run"
    if not readable:
        return f"crashed before writing results ({problem})" if problem else "crashed before writing results"
    skips = (
        f" ({skipped} skipped: {skip_reasons})"
        if skipped and skip_reasons
        else f" ({skipped} skipped)"
        if skipped
        else ""
    )
    if executed == 0:
        if skipped:
            return f"executed 0 tests{skips}: a skipped test is not a run"
        return "ran 0 tests: check the command's test selection and the suite's cwd"
    if suite.min_tests and executed < suite.min_tests:
        return f"executed {executed} tests, fewer than min_tests {suite.min_tests}{skips}"
    if baseline and executed < math.ceil(baseline * fraction):
        return (
            f"executed {executed} tests, under {fraction:.0%} of its trunk baseline of {baseline} executed "
            f"(at least {math.ceil(baseline * fraction)} expected){skips}"
        )
    return None


def describe_skips(reasons: Iterable[str], limit: int = 5) -> str:
    """``needs a GPU ×3, slow ×1``: each skip reason with its count, most frequent first."""
    counts: dict[str, int] = {}
    for reason in reasons:
        key = " ".join(reason.split())[:120] or "no reason given"
        counts[key] = counts.get(key, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{r} ×{n}" for r, n in ranked[:limit])
    if len(ranked) > limit:
        text += f", and {len(ranked) - limit} more reason(s)"
    return text


# --------------------------------------------------------------------------- coverage


@dataclass(frozen=True)
class CheckRunState:
    """A check run present on the PR head, as the GitHub API gives it."""

    name: str
    status: str  # queued, in_progress, completed
    conclusion: str | None  # success, failure, neutral, cancelled, skipped, timed_out, action_required, stale


@dataclass(frozen=True)
class CoverageGap:
    check: str
    problem: str  # "missing", "skipped", "neutral", "pending", "failed", ...

    def describe(self) -> str:
        return {
            "missing": f"`{self.check}` did not run on this commit",
            "skipped": f"`{self.check}` was skipped",
            "neutral": f"`{self.check}` finished neutral (it did not test anything conclusive)",
            "pending": f"`{self.check}` has not finished yet",
        }.get(self.problem, f"`{self.check}` concluded {self.problem}")


@dataclass(frozen=True)
class CoverageResult:
    """The outcome of ``forksync / coverage`` on one commit."""

    required: tuple[str, ...]
    gaps: tuple[CoverageGap, ...]
    present: tuple[str, ...]  # required checks that ran and concluded (success or failure)

    @property
    def conclusion(self) -> str:
        if any(g.problem in ("missing", "skipped", "neutral", "cancelled", "stale") for g in self.gaps):
            return "failure"
        if any(g.problem == "pending" for g in self.gaps):
            return "pending"
        return "success"

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(g.check for g in self.gaps if g.problem != "pending")


def coverage(required: Sequence[str], runs: Iterable[CheckRunState]) -> CoverageResult:
    """Check that each required check ran to a real conclusion on the commit.

    A failed required check is not a coverage gap (it ran; its own check shows the failure).
    Several runs of one name (reruns): the newest completed one counts, and any still running
    makes it pending. Names compare case-insensitively, as GitHub's branch protection does.
    """
    by_name: dict[str, list[CheckRunState]] = {}
    for run in runs:
        by_name.setdefault(run.name.strip().lower(), []).append(run)
    gaps: list[CoverageGap] = []
    present: list[str] = []
    for name in required:
        found = by_name.get(name.strip().lower(), [])
        if not found:
            gaps.append(CoverageGap(name, "missing"))
            continue
        completed = [r for r in found if r.status == "completed"]
        if len(completed) < len(found) or not completed:
            gaps.append(CoverageGap(name, "pending"))
            continue
        conclusions = {r.conclusion or "neutral" for r in completed}
        if conclusions & {"success", "failure", "timed_out", "action_required"}:
            present.append(name)
            continue
        # Only skipped / neutral / cancelled / stale runs: the check produced no verdict.
        gaps.append(CoverageGap(name, sorted(conclusions)[0]))
    return CoverageResult(required=tuple(required), gaps=tuple(gaps), present=tuple(present))


@dataclass(frozen=True)
class RequiredChecks:
    """What ``forksync / coverage`` requires on a commit: ``l1.required_checks`` and the checks
    the branch's protection requires, cross-checked (the seed's saturated validation)."""

    checks: tuple[str, ...]
    branch: str = ""
    only_in_protection: tuple[str, ...] = ()  # GitHub blocks merging on them; forksync was not told
    only_in_config: tuple[str, ...] = ()  # forksync requires them; GitHub would merge without them
    protected: bool = False
    # Why the branch's protection could not be read (GitHub's 403 answer); empty when it was read.
    unreadable: str = ""


def cross_check(
    configured: Sequence[str], protection: Sequence[str] | None, *, branch: str = "", own: Sequence[str] = ()
) -> RequiredChecks:
    """The union of configured and protected checks (forksync's own ``own`` checks left out: they
    are not for coverage to judge), and which side lacks which (names compare case-insensitively)."""
    own_l = {o.lower() for o in own}
    conf = [c for c in configured if c.lower() not in own_l]
    prot = [c for c in (protection or ()) if c.lower() not in own_l]
    conf_l, prot_l = {c.lower() for c in conf}, {c.lower() for c in prot}
    union = list(conf) + [c for c in prot if c.lower() not in conf_l]
    return RequiredChecks(
        checks=tuple(union),
        branch=branch,
        only_in_protection=tuple(c for c in prot if c.lower() not in conf_l),
        only_in_config=tuple(c for c in conf if c.lower() not in prot_l) if protection is not None else (),
        protected=protection is not None,
    )
