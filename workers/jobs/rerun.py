"""GitHub's "Re-run" buttons on forksync's checks: what each one does.

A maintainer clicks **Re-run** on one of forksync's check runs (``check_run rerequested``) or
**Re-run all checks** on forksync's check suite (``check_suite rerequested``); the intake has
already dropped the check runs and suites of other Apps. :func:`plan_check_run_rerun` and
:func:`plan_suite_rerun` decide which job runs again, the first from the event alone, the
second from forksync's check runs on the suite's head (:func:`suite_rerun` lists them); the
handlers in ``workers/tasks/l1.py`` enqueue what they plan. A check whose re-run cannot mean
anything (an L3 sign-off is a person's word, not a job) gets :class:`ExplainNoRerun`: its check
run says why and what to do instead, so the button never does nothing in silence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.github.records import CheckOutput, CheckRunInfo
from core.github.roles import GitHubPort
from core.render.ingest import CHECK_NAME as INGEST_CHECK
from core.render.l1 import COVERAGE_CHECK, L1_CHECK, POOLS_CHECK
from core.render.l3 import CHECK_PREFIX as L3_CHECK_PREFIX

OWN_PREFIX = "forksync / "  # every check run forksync writes is named so (core/render/*)


@dataclass(frozen=True)
class RunL1:
    """Run L1 on the head again, updating ``forksync / L1`` in place (the job reads the PR from
    that check run, so an outside PR still needs its ``/approve``); it also re-publishes
    ``forksync / coverage`` and re-sends the pool jobs of ``forksync / L1 pools``."""

    head_sha: str


@dataclass(frozen=True)
class RecheckCoverage:
    """Recompute ``forksync / coverage`` on the head from the checks GitHub holds now."""

    head_sha: str


@dataclass(frozen=True)
class Ingest:
    """Run the ingestion loop of the repository once more (``forksync / ingestion`` is its report)."""


@dataclass(frozen=True)
class ExplainNoRerun:
    """Say on the check run why its Re-run starts nothing, and what to do instead."""

    check_run_id: int
    head_sha: str
    name: str
    note: str


RerunAction = RunL1 | RecheckCoverage | Ingest | ExplainNoRerun


def l3_note(workload: str) -> str:
    return (
        f"**Re-run** cannot redo an L3 check: it is a sign-off by one of the workload's owners, "
        f"not a job. Comment `/l3 {workload}` on the pull request to request a new run, and an "
        f"owner signs it off with `/signoff {workload}`."
    )


UNKNOWN_NOTE = (
    "**Re-run** is not wired for this check. Comment `/retest` on the pull request to run L1 again, "
    "or `/help` for the commands."
)


def plan_check_run_rerun(name: str, check_run_id: int, head_sha: str) -> RerunAction | None:
    """The job a Re-run of forksync's check run ``name`` starts (None: not a forksync check)."""
    if name in (L1_CHECK, POOLS_CHECK):
        return RunL1(head_sha)
    if name == COVERAGE_CHECK:
        return RecheckCoverage(head_sha)
    if name == INGEST_CHECK:
        return Ingest()
    if name.startswith(L3_CHECK_PREFIX):
        return ExplainNoRerun(check_run_id, head_sha, name, l3_note(name.removeprefix(L3_CHECK_PREFIX)))
    if name.startswith(OWN_PREFIX):
        return ExplainNoRerun(check_run_id, head_sha, name, UNKNOWN_NOTE)
    return None


def plan_suite_rerun(head_sha: str, checks: Sequence[CheckRunInfo]) -> list[RerunAction]:
    """Re-run all checks of forksync's suite on ``head_sha``: each of forksync's check runs there
    (``checks``) does what its own Re-run does, each job once. L1 re-publishes its coverage and
    pool checks, so beside an L1 check the coverage is not recomputed apart; a trunk commit's suite
    holds the ingestion report, so there Re-run all ingests again instead of running L1 on a commit
    no PR is testing; an L3 sign-off gets its explanation. With none of forksync's check runs
    listed (GitHub dropped them, or the listing came back empty), L1 runs again, as a Re-run of
    ``forksync / L1`` would."""
    planned: list[RerunAction] = []
    for check in checks:
        action = plan_check_run_rerun(check.name, check.id, head_sha)
        if action is not None and action not in planned:
            planned.append(action)
    if not planned:
        return [RunL1(head_sha)]
    if RunL1(head_sha) in planned:
        planned = [a for a in planned if not isinstance(a, RecheckCoverage)]
    return planned


def suite_rerun(github: GitHubPort, repo: str, head_sha: str, app_id: int | None) -> list[RerunAction]:
    """The jobs "Re-run all checks" on ``head_sha`` starts, planned from forksync's check runs
    GitHub lists there (``app_id``: forksync's App, so another App's runs on the head, whatever
    their names, are not taken for forksync's; None: told apart by name alone)."""
    checks = [
        c
        for c in github.list_check_runs(repo, head_sha)
        if c.name.startswith(OWN_PREFIX) and (app_id is None or c.app_id in (None, app_id))
    ]
    return plan_suite_rerun(head_sha, checks)


def explained(note: str, summary: str | None) -> str:
    """The check run's summary with ``note`` on top, once (clicking Re-run again adds nothing)."""
    old = summary or ""
    if old.startswith(note):
        return old
    return f"{note}\n\n{old}" if old else note


def apply_explain(github: GitHubPort, repo: str, action: ExplainNoRerun) -> bool:
    """Put the note on top of the check run's summary, keeping its title, text and conclusion
    (an L3 check keeps its state in the text). False: the check run is gone from the head."""
    runs = [
        r
        for r in github.list_check_runs(repo, action.head_sha, name=action.name)
        if r.id == action.check_run_id
    ]
    if not runs:
        return False
    run = runs[0]
    output = CheckOutput(run.title or action.name, explained(action.note, run.summary), run.text)
    github.update_check_run(repo, run.id, output=output)
    return True
