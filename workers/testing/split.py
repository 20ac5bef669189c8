"""Split a failing bundle, bisection-style, to find the commit(s) that cause its failures.

In the spirit of merge-queue batch bisection: the bundle (ordered commits on top of a base
that passes) fails as a whole; the oracle answers "does the bundle with this subset of its
commits, in order, fail?". One culprit among N costs ceil(log2 N) oracle runs to find plus one
to confirm the rest passes without it (32 commits: 6 runs); each further culprit costs the same
again. The bundling engine ejects the culprits into a chain and rebuilds the bundle.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

# The oracle: True when the bundle made of these commits (a subsequence, in bundle order) fails.
Oracle = Callable[[Sequence[str]], bool]


@dataclass(frozen=True)
class OracleRun:
    commits: tuple[str, ...]
    failed: bool


@dataclass(frozen=True)
class SplitResult:
    """The culprits (bundle order), every oracle run made, and whether the search finished."""

    culprits: tuple[str, ...]
    runs: tuple[OracleRun, ...] = field(default_factory=tuple)
    complete: bool = True  # False: the run budget ran out, culprits found so far are listed
    note: str = ""

    @property
    def remaining(self) -> int:
        return len(self.runs)


class _Budget(Exception):
    pass


def find_culprits(
    commits: Sequence[str],
    fails: Oracle,
    *,
    max_runs: int | None = None,
    verify_whole: bool = False,
) -> SplitResult:
    """Find the commits whose presence makes the bundle fail.

    Assumes the base alone passes and the whole bundle fails (pass ``verify_whole=True`` to
    spend one run checking the latter: a bundle that passes now was flaky and has no culprit).
    Invariant of each search: the prefix ``seq[:lo]`` passes and ``seq[:hi]`` fails, where
    ``seq`` is the bundle minus the culprits found so far; then ``seq[hi-1]`` is a culprit.
    """
    order = list(commits)
    runs: list[OracleRun] = []

    def ask(subset: Sequence[str]) -> bool:
        if max_runs is not None and len(runs) >= max_runs:
            raise _Budget
        failed = bool(fails(tuple(subset)))
        runs.append(OracleRun(tuple(subset), failed))
        return failed

    culprits: list[str] = []
    try:
        if not order:
            return SplitResult((), (), True, "empty bundle")
        if verify_whole and not ask(order):
            return SplitResult((), tuple(runs), True, "the whole bundle passes on rerun: flaky, no culprit")
        seq = order
        lo = 0  # seq[:lo] is known to pass (the base itself for the first search)
        while True:
            hi = len(seq)  # seq[:hi] is known to fail
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if ask(seq[:mid]):
                    hi = mid
                else:
                    lo = mid
            culprit = seq[hi - 1]
            culprits.append(culprit)
            rest = [c for c in seq if c != culprit]
            # Everything before the culprit passes without it, so the next search starts there.
            lo = hi - 1
            if lo >= len(rest) or not ask(rest):
                break
            seq = rest
    except _Budget:
        return SplitResult(tuple(culprits), tuple(runs), False, f"stopped after {len(runs)} runs (budget)")
    by_position = sorted(culprits, key=order.index)
    return SplitResult(tuple(by_position), tuple(runs), True, "")


def failing_tests_oracle(
    run_subset: Callable[[Sequence[str]], frozenset[str]], targets: frozenset[str]
) -> Oracle:
    """An oracle from a runner: ``run_subset(commits)`` builds base + those commits and returns its
    failing test ids (e.g. :func:`workers.testing.l1.failing_test_ids` of an L1 run on it). A
    subset fails when one of ``targets`` (the bundle's new failures) fails again, so a different,
    unrelated failure in some subset does not send the search astray."""

    def fails(commits: Sequence[str]) -> bool:
        return bool(run_subset(commits) & targets)

    return fails
