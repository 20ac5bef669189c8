"""The l2-queue half of ``/l3``: a workload's ``run`` command at the PR head, planned.

:func:`plan_run` decides from plain data (the config, the workload's newest check on the head,
why the command cannot run at all) whether it runs; :func:`plan_result` what the check and the
answer say once it ran; :func:`execute_run` is their executor (the check's text rewritten through
the checks role, the command run in a clean checkout). Texts from ``core.render.l3``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.config import RepoConfig
from core.errors import ForksyncError
from core.github.records import CheckRunInfo
from core.github.roles import Checks
from core.render import l3 as render
from core.render.l3 import L3State
from workers.engine.git import Repository
from workers.testing.bisect import parse_metrics
from workers.testing.checkout import CleanCheckout, run_command
from workers.testing.l3 import Answer, Reply, check_output, current, state_of

# L3 workloads are heavy by definition; this bounds a hung one.
RUN_TIMEOUT_S = 6 * 3600
TAIL_CHARS = 2000

Found = tuple[CheckRunInfo, L3State | None] | None  # l3.current: the workload's newest check on the head


@dataclass(frozen=True)
class RunFacts:
    """What the run decides from."""

    workload: str
    head_sha: str
    config: RepoConfig  # at the head (the trunk's when the head's cannot be read: it names the workload)
    found: Found  # the workload's newest check on the head
    cannot_run: str | None = None  # why the command cannot run at all (head not fetchable, bad config)


@dataclass(frozen=True)
class RecordL3Run:
    """Rewrite check run ``check_run_id``'s text with ``state`` (its status and sign-off as they are)."""

    check_run_id: int
    state: L3State


@dataclass(frozen=True)
class RunL3Command:
    """Run ``argv`` in a clean checkout of the head; then :func:`plan_result` over ``running``."""

    argv: tuple[str, ...]
    check_run_id: int
    running: L3State
    timeout_s: float = RUN_TIMEOUT_S


@dataclass(frozen=True)
class RunResult:
    """What the command did, as :func:`plan_result` needs it."""

    exit_code: int | None
    timed_out: bool
    last_line: str  # the output's last line
    metrics: Mapping[str, float] = field(default_factory=dict)  # parsed from its stdout


RunAction = RecordL3Run | RunL3Command | Answer


def plan_run(facts: RunFacts, timeout_s: float = RUN_TIMEOUT_S) -> list[RunAction]:
    """A command that cannot run says why on its check (when there is one); an unknown workload,
    one without a ``run`` command or without a check on the head is answered; otherwise the check
    says it is running and the command runs."""
    w = facts.config.workload(facts.workload)
    if facts.cannot_run is not None:
        if w is None or facts.found is None:
            return [Answer(False, facts.cannot_run)]
        info, recorded = facts.found
        state = replace(
            state_of(info, recorded, w, facts.head_sha), run="failed", run_detail=facts.cannot_run
        )
        return [
            RecordL3Run(info.id, state),
            Answer(False, render.run_did_not_start(w.name, facts.cannot_run), check_run_id=info.id),
        ]
    if w is None:
        return [
            Answer(
                False,
                render.unknown_workload(facts.workload, tuple(x.name for x in facts.config.l3.workloads)),
            )
        ]
    if not w.run:
        return [Answer(False, render.no_run_command(facts.workload))]
    if facts.found is None:
        return [Answer(False, render.no_l3_check(w.name, facts.head_sha))]
    info, recorded = facts.found
    running = replace(state_of(info, recorded, w, facts.head_sha), run="running", run_detail="")
    return [RecordL3Run(info.id, running), RunL3Command(tuple(w.run), info.id, running, timeout_s)]


def plan_result(
    config: RepoConfig, step: RunL3Command, fresh: Found, result: RunResult
) -> list[RecordL3Run | Answer]:
    """After the command: its state, detail and metrics written over the check as it is now (an
    owner may have signed off while it ran: re-read, never overwritten), and the answer."""
    w = config.workload(step.running.workload)
    run = "passed" if result.exit_code == 0 else "failed"
    detail = render.run_detail(
        result.exit_code, result.timed_out, result.last_line, step.timeout_s, TAIL_CHARS
    )
    latest = state_of(fresh[0], fresh[1], w, step.running.head_sha) if fresh and w else step.running
    metrics = {k: v for k, v in result.metrics.items() if math.isfinite(v)}
    final = replace(latest, run=run, run_detail=detail, metrics=metrics)
    return [
        RecordL3Run(step.check_run_id, final),
        Answer(
            run == "passed",
            render.run_finished(step.running.workload, run, detail, metrics),
            check_run_id=step.check_run_id,
        ),
    ]


def execute_run(
    gh: Checks, repo: str, head_sha: str, config: RepoConfig, actions: Sequence[RunAction], repo_path: Path
) -> Reply:
    """The executor of :func:`plan_run` and :func:`plan_result`: the check's text rewritten, the
    command run at ``head_sha`` in a clean checkout of ``repo_path``, the answer given."""
    for action in actions:
        if isinstance(action, RecordL3Run):
            gh.update_check_run(repo, action.check_run_id, output=check_output(action.state))
        elif isinstance(action, RunL3Command):
            with CleanCheckout(Repository(repo_path)) as checkout:
                done = run_command(action.argv, checkout.at(head_sha), timeout=action.timeout_s)
            result = RunResult(
                done.exit_code,
                done.timed_out,
                (done.output.strip().splitlines()[-1:] or [""])[0],
                parse_metrics(done.stdout) or {},
            )
            fresh = current(gh, repo, head_sha, action.running.workload)
            return execute_run(
                gh, repo, head_sha, config, plan_result(config, action, fresh, result), repo_path
            )
        else:
            return Reply(action.ok, action.text, action.check_run_id)
    raise ForksyncError(
        "the L3 run's plan gave no answer (a bug in forksync)", "report it to the bot's operators"
    )


def run_l3_workload(
    gh: Checks,
    repo: str,
    head_sha: str,
    workload: str,
    config: RepoConfig,
    repo_path: Path,
    *,
    timeout: float = RUN_TIMEOUT_S,
    cannot_run: str | None = None,
) -> Reply:
    """The l2-queue job: read the workload's check on the head, plan, run the command at
    ``head_sha`` and attach its metrics to the check (``cannot_run``: say why it cannot instead)."""
    w = config.workload(workload)
    found = current(gh, repo, head_sha, w.name) if w is not None else None
    facts = RunFacts(workload, head_sha, config, found, cannot_run)
    return execute_run(gh, repo, head_sha, config, plan_run(facts, timeout), repo_path)
