"""The nightly L2 job, planned: for one benchmark's outcome at trunk (its run, verdict and
bisection) and the tracking issues that exist, what to file or update, what to store and which
revert to propose, as typed actions; ``workers/jobs/l2_job.py`` reads the facts and executes them.

Pure (no GitHub, no git, no store), after ``workers/testing/tracking.py``, whose issue actions
:class:`Track` carries. The issue a regression record and a revert name is known only once the
tracking actions ran: the actions that need it say which tracking action's issue they mean
(``issue_of``: its index in :attr:`Track.actions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.config import Benchmark
from workers.testing import tracking
from workers.testing.l2 import BenchmarkOutcome


@dataclass(frozen=True)
class Track:
    """Open, edit, close or reopen the tracking issues (``tracking.execute``)."""

    actions: tuple[tracking.Action, ...]


@dataclass(frozen=True)
class StoreRegressions:
    """Store what ``outcome`` found (``l2.regression_records``), linked to the issue tracking action
    ``issue_of`` touched (None: no issue)."""

    outcome: BenchmarkOutcome
    issue_of: int | None


@dataclass(frozen=True)
class ProposeRevert:
    """Open the revert PR of ``culprit`` (never merged by us), named on the issue of tracking action ``issue_of``."""

    culprit: str
    subject: str
    issue_of: int


Action = Track | StoreRegressions | ProposeRevert


def plan_outcome(
    outcome: BenchmarkOutcome,
    bench: Benchmark,
    known: Sequence[tracking.KnownIssue],
    at: str,
    recover_after: int,
) -> list[Action]:
    """The actions for one benchmark's outcome: its issues, its records, and a revert PR for each
    issue a bisected culprit is named on (a closed issue needs none)."""
    issues = tuple(tracking.plan(known, tracking.report_from_l2(outcome, bench, at), recover_after))
    named = [i for i, action in enumerate(issues) if not isinstance(action, tracking.CloseIssue)]
    actions: list[Action] = [Track(issues), StoreRegressions(outcome, named[0] if named else None)]
    culprit = outcome.bisect.culprit if outcome.bisect else None
    if culprit and outcome.bisect is not None:
        actions += [ProposeRevert(culprit, outcome.bisect.culprit_subject, i) for i in named]
    return actions
