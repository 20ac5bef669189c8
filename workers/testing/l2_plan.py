"""The L2 jobs, planned. The nightly: for one benchmark's outcome at trunk (its run, verdict and
bisection) and the tracking issues that exist, what to file or update, what to store and which
revert to propose, as typed actions; ``workers/jobs/l2_job.py`` reads the facts and executes them.

Pure (no GitHub, no git, no store), after ``workers/testing/tracking.py``, whose issue actions
:class:`Track` carries. The issue a regression record and a revert name is known only once the
tracking actions ran: the actions that need it say which tracking action's issue they mean
(``issue_of``: its index in :attr:`Track.actions`).

On-demand bisection (``/bisect``): :func:`plan_bisect` decides from :class:`BisectFacts` whether
it can run and on what, :func:`plan_bisect_answer` what the issue is told; ``run_bisect_job``
executes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.config import CONFIG_PATH, Benchmark, RepoConfig
from core.render.tracking import (
    SuspectFacts,
    bisect_comment,
    bisect_not_configured,
    bisect_without_runs,
    cannot_bisect,
)
from workers.testing import tracking
from workers.testing.bisect import BisectReport
from workers.testing.l2 import BenchmarkOutcome
from workers.testing.regression import L2Run, Verdict, judge


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


# --------------------------------------------------------------------------- /bisect


@dataclass(frozen=True)
class BisectFacts:
    """What an on-demand bisection reads: the ends (asked, else the newest good run and the newest
    run), the config at the bad end, and the benchmark's recorded runs."""

    benchmark: str
    good: str | None
    bad: str | None
    config: RepoConfig | None  # at ``bad`` (None: no bad end known, or the cache lacks it)
    config_error: str | None = None  # the config at ``bad`` is invalid (one line)
    history: tuple[L2Run, ...] = ()  # the benchmark's runs, oldest first
    issue_number: int | None = None  # where the answer goes (None: only returned)


@dataclass(frozen=True)
class Bisect:
    """Bisect ``good..bad`` for ``bench`` (``l2.bisect_benchmark``); ``verdict``: the bad end's
    recorded verdict against its baseline, as the nightly judged it (None: never run there)."""

    bench: Benchmark
    good: str
    bad: str
    config: RepoConfig
    verdict: Verdict | None


@dataclass(frozen=True)
class Answer:
    """Comment ``text`` on issue ``issue_number`` (None: nowhere); the job returns it."""

    issue_number: int | None
    text: str


def plan_bisect(facts: BisectFacts) -> list[Bisect | Answer]:
    """A bisection runs when the benchmark is configured at the bad end and both ends are known;
    otherwise the answer says what is missing and how to ask."""
    if facts.config_error is not None:
        return [Answer(facts.issue_number, cannot_bisect(facts.benchmark, facts.config_error))]
    config = facts.config
    bench = next((b for b in config.l2.benchmarks if b.name == facts.benchmark), None) if config else None
    if config is not None and bench is None:
        return [Answer(facts.issue_number, bisect_not_configured(facts.benchmark, CONFIG_PATH))]
    if config is None or bench is None or not facts.good or not facts.bad:
        return [Answer(facts.issue_number, bisect_without_runs(facts.benchmark))]
    bad_runs = [r for r in facts.history if r.sha == facts.bad]
    verdict = None
    if bad_runs:
        before = facts.history[: facts.history.index(bad_runs[-1])]
        verdict = judge(bad_runs[-1], before, bench, config.l2.baseline_runs)
    return [Bisect(bench, facts.good, facts.bad, config, verdict)]


def plan_bisect_answer(benchmark: str, report: BisectReport, issue_number: int | None) -> list[Answer]:
    """The bisection's reply: the culprit, or why not and the suspects."""
    suspects = tuple(SuspectFacts(s.sha, s.subject, s.score, s.files) for s in report.suspects)
    text = bisect_comment(
        benchmark,
        report.good,
        report.bad,
        report.culprit,
        report.culprit_subject,
        report.runs,
        len(report.skipped),
        report.reason,
        suspects,
    )
    return [Answer(issue_number, text)]
