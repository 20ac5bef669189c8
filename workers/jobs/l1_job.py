"""One L1 job on a worker: fetch the commit into the L1 git cache, run the suites, and publish
``forksync / L1`` (in progress first, then updated in place), ``forksync / coverage`` and the
infrastructure tracking issue through the GitHub adapter.

Plan, then act: the decisions before and after the suites are the pure planners of
``workers/testing/l1_plan.py`` (``plan_start``, ``plan_report``: typed actions from plain
data); this module reads what they need and is their executor (``_start``, ``_report``).

The Celery task (``workers/tasks/l1.py``) is a thin shell around :func:`run_l1_job`; tests call
this directly against the loopback GitHub.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from core import tasknames
from core.config import CONFIG_PATH, ConfigError, RepoConfig, Suite, load_repo_config
from core.github.errors import GitHubValidationError
from core.github.records import CheckOutput, PullRequestInfo
from core.github.roles import GitHubPort
from core.render import l1 as render
from core.render import marker
from core.store import Store, open_store
from workers.adapters.gitcache import TMP_REF_PREFIX, GitCache
from workers.adapters.state import LocalState, SeriesStore, StateStore
from workers.engine.bundle import BUNDLE_BRANCH
from workers.engine.git import GitError, Repository
from workers.jobs.ingest_plan import approvers
from workers.jobs.l1_checks import check_output, publish_coverage, required_checks_for, upsert_check
from workers.jobs.l1_split import Eject, SplitOutcome, split_bundle
from workers.testing.canary import CanaryResult
from workers.testing.l1 import CANCELLED, L1Run, run_l1_for_ref
from workers.testing.l1_plan import (
    Action,
    CloseIssue,
    Comment,
    DispatchPool,
    FetchPullHead,
    FileIssue,
    ForgetPending,
    GateFacts,
    HandOverToGpu,
    PublishCoverage,
    PublishRetest,
    Refuse,
    RememberPending,
    ReportFacts,
    RunSuites,
    Skip,
    TrackTrunk,
    UpdateCheck,
    UpdateIssue,
    UpsertCheck,
    infra_issue_actions,
    plan_fetched,
    plan_gate,
    plan_pools,
    plan_report,
)
from workers.testing.l1_run_plan import (
    JobFacts,
    JobPlan,
    PoolReportFacts,
    RecordPoolResults,
    RequestReviews,
    RetryPool,
    RunPool,
    StalePoolRun,
    plan_after_split,
    plan_job,
    plan_pool_report,
    plan_pool_results,
    plan_pool_suites,
    plan_split_step,
    retested_check,
)
from workers.testing.pools import as_point, from_point, pool_series
from workers.testing.red_bundle import DEFAULT_MAX_RUNS
from workers.testing.staleness import PendingCheck, PendingChecks, deadline_for
from workers.testing.triage import TrunkResults
from workers.testing.watchdog import RequiredChecks

log = logging.getLogger(__name__)

INFRA_LABEL = "infrastructure"


@dataclass(frozen=True)
class L1Job:
    """What to test: ``head_sha`` of ``repo``; ``trunk`` for a push to the fork's trunk branch."""

    repo: str
    head_sha: str
    trunk: bool = False
    push_ref: str | None = None  # for trunk jobs: the pushed ref, checked against fork.branch
    attempt: int = 0  # infrastructure retries so far (the task's retry count)
    # False on a worker of the CPU queue: a config with GPU suites sends the job to a GPU runner.
    gpu_runner: bool = True
    # The PR being tested, when known: a PR from outside (another repository, an author who is not
    # an owner, member or collaborator) runs once a maintainer's /approve names its head
    # (workers/commands/approval.py). Unknown for a re-run button: read from our check run.
    pr_number: int | None = None
    # /retest SUITE …: only these run; the others keep their results on this commit.
    suite_names: tuple[str, ...] = ()
    # The installation the job acts as: what the staleness watchdog needs to conclude its check.
    installation_id: int = 0
    # A pool job (``l1.suites[].pools``): run only the suites of this pool, record their results
    # under ``pool_run`` (the dispatching job's id) and conclude ``forksync / L1 pools`` if last.
    pool: str | None = None
    pool_run: str = ""
    # Started by a push to the PR (pull_request opened/synchronize): a head the red-bundle split
    # rebuilt and re-tested itself is not run again (a /retest or a re-run button still runs it).
    after_push: bool = False


@dataclass(frozen=True)
class L1JobResult:
    # "done", "skipped", "config_error", "not_fetchable", "needs_gpu", "needs_approval", "stale"
    status: str
    check_run_id: int | None = None
    run: L1Run | None = None
    message: str = ""
    # The pool jobs this job dispatched (each to ``tasknames.l1_pool_queue(job.pool)``).
    pool_jobs: tuple[L1Job, ...] = ()
    max_infra_retries: int = 0  # from the repository's l1 config: how often the task may retry

    @property
    def infrastructure(self) -> bool:
        return self.run is not None and self.run.conclusion == CANCELLED

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "check_run_id": self.check_run_id,
            "message": self.message,
            "l1": None if self.run is None else self.run.as_json(),
        }


def cache_key(repo: str) -> str:
    # Its own cache, not ingestion's: an L1 run holds the lock for as long as its suites run.
    return f"l1:{repo}"


def run_l1_job(
    github: GitHubPort,
    caches: GitCache,
    data_dir: Path,
    job: L1Job,
    *,
    clone_url: str,
    token: str | None,
    clone_url_for: Callable[[str], str] | None = None,
    canary: Callable[[], CanaryResult] | None = None,
    host_canary: Callable[[], CanaryResult] | None = None,
    max_infra_retries: int | None = None,
    log_url: Callable[[str], str | None] | None = None,
    own_login: str | None = None,
    store: Store | None = None,
    eject: Eject | None = None,
    rebuild: Callable[[], None] | None = None,
    dispatch_pool: Callable[[L1Job], None] | None = None,
    state: StateStore | None = None,
) -> L1JobResult:
    """Run L1 for ``job`` and publish it. Never leaves a check run in progress: any failure of
    ours completes it with the reason before the exception goes on to the task's retry logic.
    ``own_login``: the App's bot login; an outside PR's ``/approve`` record counts only from it.
    ``store``: the shared SQL store (``WorkerSettings.store()``; default: the embedded one under
    ``data_dir``), where trunk results and baselines live. ``eject(upstream sha, reason)`` and
    ``rebuild()``: how a red bundle's culprits go to chains and the bundle is rebuilt (the task
    wires the chains ref and an ingest); without them a split only reports its culprits.
    ``dispatch_pool(job)``: how a pool job is sent to its pool's queue (the task's; the jobs are
    also listed in the result); ``state``: whose repository lock serialises the pool reports.

    Read, plan, act, phase by phase: the gate (``plan_gate``), the facts and the start
    (``plan_job``), the pools (``plan_pools``), the suites and a red bundle's split
    (``plan_split_step``, ``plan_after_split``), the report (``plan_report``)."""
    store = store or open_store(None, data_dir)
    if job.after_push and not job.trunk and not job.suite_names and job.pool is None:
        tested = retested_check(
            job.head_sha, github.list_check_runs(job.repo, job.head_sha, name=render.L1_CHECK)
        )
        if tested is not None:
            return L1JobResult(
                "skipped", tested, message="the L1 split that rebuilt this bundle re-tested it already"
            )
    with caches.open(cache_key(job.repo)) as cache:
        caches.fetch(cache, clone_url, ["+refs/heads/*:refs/heads/*"], token)
        if not job.trunk and job.pr_number is None:
            job = replace(job, pr_number=_pr_of_check(github, job))
        refused = _gate(github, caches, cache, job, clone_url, token, clone_url_for, own_login)
        if refused is not None:
            return refused
        facts, pull = _read_facts(github, cache, job, own_login)
        planned = plan_job(facts)
        if isinstance(planned, Skip):
            return L1JobResult(planned.status, message=planned.message)
        if isinstance(planned, RunPool):
            retries = planned.config.l1.max_infra_retries if max_infra_retries is None else max_infra_retries
            local = state or LocalState(data_dir, SeriesStore(store))
            return _run_pool(
                github, cache, job, planned.config, store, data_dir, canary, host_canary, local, retries
            )
        if planned.unknown:
            log.info(
                "L1 %s@%s: /retest names suites not configured here: %s",
                job.repo,
                job.head_sha[:12],
                list(planned.unknown),
            )
        config = planned.config
        pending = PendingChecks(store)
        started = _start(github, job, planned.start, pending, config.l1.stale_margin_minutes)
        if started.result is not None or started.run is None:
            assert started.result is not None
            return started.result
        check_id = started.check_id
        # Once per L1 run: an infrastructure retry of this job (attempt > 0) leaves its pools be.
        pools = plan_pools(
            job.head_sha,
            planned.pooled,
            uuid.uuid4().hex[:16],
            trunk=job.trunk,
            attempt=job.attempt,
            external_id=_external_id(job),
        )
        pool_jobs = _dispatch_pools(
            github, job, pools, pending, config.l1.stale_margin_minutes, dispatch_pool
        )
        suites = Suites(cache, config, data_dir, store, job.repo, canary, host_canary)
        try:
            run = suites.run(
                job.head_sha, list(started.run.names) if started.run.partial else None, trunk=job.trunk
            )
            split, retest = _split_step(github, cache, job, run, pull, suites, eject, rebuild)
        except Exception as exc:
            _fail(github, job, check_id, pending, exc)
            raise
    retries = config.l1.max_infra_retries if max_infra_retries is None else max_infra_retries
    observe_suites(run)
    report = _report_facts(
        github, job, planned, check_id, run, retries, split, retest, bool(pool_jobs), log_url
    )
    _report(github, job, plan_report(report), run, pending, config)
    return L1JobResult("done", check_id, run, max_infra_retries=retries, pool_jobs=pool_jobs)


def _report_facts(
    github: GitHubPort,
    job: L1Job,
    planned: JobPlan,
    check_id: int | None,
    run: L1Run,
    retries: int,
    split: SplitOutcome | None,
    retest: L1Run | None,
    dispatched: bool,
    log_url: Callable[[str], str | None] | None,
) -> ReportFacts:
    """What ``plan_report`` decides from: the run and the split, this job, and what GitHub says of
    the open infrastructure issues and the trunk's required checks (read only when they count)."""
    config = planned.config
    clean = bool(run.suites) and not any(s.status == "infrastructure" for s in run.suites)
    return ReportFacts(
        repo=job.repo,
        head_sha=job.head_sha,
        trunk=job.trunk,
        pr_number=job.pr_number,
        attempt=job.attempt,
        retries=retries,
        check_run_id=check_id,
        run=run,
        suite_plan=planned.suite_plan,
        runner=socket.gethostname(),
        # Read only when a clean run may count against them (as before: no listing otherwise).
        infra_issues=tuple(github.list_issues(job.repo, labels=[INFRA_LABEL])) if clean else (),
        recover_after=config.l2.recover_after,
        required=(
            required_checks_for(github, job.repo, planned.trunk_branch, config.l1.required_checks)
            if check_id is not None
            else RequiredChecks(())
        ),
        retry_queue=tasknames.Q_L1_GPU if job.gpu_runner else tasknames.Q_L1_CPU,
        suites=planned.suites,
        kept=planned.kept,
        pooled=tuple(s.name for s in planned.pooled) if dispatched else (),
        split_note=None if split is None else _split_note(split, retest),
        retest=retest,
        rebuilt_head=None if split is None else split.rebuilt_head,
        external_id=_external_id(job),
        log_url=log_url,
    )


def _read_facts(
    github: GitHubPort, cache: Repository, job: L1Job, own_login: str | None
) -> tuple[JobFacts, PullRequestInfo | None]:
    """What ``plan_job`` decides from: the configs at the head and at the trunk (the PR's base
    branch, else the head's fork.branch, when the cache has it), the maintainer's approval of a
    suite drop, the last check's suite results for ``/retest SUITE …``; and the PR as read."""
    pull = (
        github.get_pull_request(job.repo, job.pr_number)
        if job.pr_number is not None and not job.trunk
        else None
    )
    facts = JobFacts(
        job.head_sha,
        job.trunk,
        job.gpu_runner,
        RepoConfig(),
        RepoConfig(),
        None,
        push_ref=job.push_ref,
        pool=job.pool,
        pool_run=job.pool_run,
        suite_names=job.suite_names,
        external_id=_external_id(job),
    )
    try:
        head_config = _config_at(cache, job.head_sha)
        trunk_ref = None
        if not job.trunk:
            ref = f"refs/heads/{pull.base_ref if pull is not None else head_config.fork.branch}"
            trunk_ref = ref if cache.rev_parse(ref) is not None else None
        trunk_config = head_config if trunk_ref is None else _config_at(cache, trunk_ref)
    except ConfigError as exc:
        return replace(facts, config_error=exc.one_line()), pull
    return replace(
        facts,
        head_config=head_config,
        trunk_config=trunk_config,
        trunk_ref=trunk_ref,
        drop_approved_by=_drop_approval(github, job, own_login),
        previous=_previous_suites(github, job)
        if job.suite_names and not job.trunk and job.pool is None
        else {},
    ), pull


@dataclass(frozen=True)
class Suites:
    """The runner of this job's suites on a commit of its cache (the job's head, a split's rebuilt head)."""

    cache: Repository
    config: RepoConfig
    data_dir: Path
    store: Store
    repo: str
    canary: Callable[[], CanaryResult] | None
    host_canary: Callable[[], CanaryResult] | None

    def run(self, sha: str, names: Sequence[str] | None = None, *, trunk: bool = False) -> L1Run:
        return run_l1_for_ref(
            self.cache.path,
            sha,
            self.config,
            data_dir=self.data_dir,
            base_ref=self.config.fork.branch,
            trunk=trunk,
            canary=self.canary,
            host_canary=self.host_canary,
            infra_retries=0,
            suite_names=names,
            results=self.results(),
        )

    def results(self) -> TrunkResults:
        return TrunkResults(self.store, self.repo)


def _fail(
    github: GitHubPort, job: L1Job, check_id: int | None, pending: PendingChecks, exc: Exception
) -> None:
    """Our own error concludes the check with it (never left in progress); the watchdog forgets it."""
    if check_id is None:
        return
    github.update_check_run(
        job.repo,
        check_id,
        conclusion="failure",
        output=CheckOutput("L1 could not run (forksync error)", f"{type(exc).__name__}: {exc}"[:2000]),
    )
    pending.forget(job.repo, check_id)


@dataclass(frozen=True)
class _Started:
    check_id: int | None
    result: L1JobResult | None  # the job ends here (config error, skip, GPU hand-over)
    run: RunSuites | None = None  # else: what to run


def _start(
    github: GitHubPort,
    job: L1Job,
    actions: Sequence[Action | Skip],
    pending: PendingChecks,
    margin_minutes: int,
) -> _Started:
    """Apply :func:`plan_start`'s actions; stops at a skip or a hand-over, else the suites run."""
    check_id: int | None = None
    for action in actions:
        if isinstance(action, Skip):
            return _Started(check_id, L1JobResult(action.status, check_id, message=action.message))
        if isinstance(action, UpsertCheck):
            check_id = upsert_check(
                github, job.repo, job.head_sha, action.output, external_id=action.external_id
            ).id
        elif isinstance(action, RememberPending):
            assert check_id is not None
            pending.remember(_pending(job, check_id, action.queue, action.suites, margin_minutes))
        elif isinstance(action, HandOverToGpu):
            return _Started(
                check_id,
                L1JobResult("needs_gpu", check_id, message="GPU suites: the job goes to the l1-gpu queue"),
            )
        elif isinstance(action, RunSuites):
            return _Started(check_id, None, action)
    raise AssertionError("plan_start ends with a skip, a hand-over or the run")


def _report(
    github: GitHubPort,
    job: L1Job,
    actions: Sequence[Action],
    run: L1Run,
    pending: PendingChecks,
    config: RepoConfig,
) -> None:
    """Apply :func:`plan_report`'s actions through the GitHub roles and the store, in order."""
    from datetime import UTC, datetime

    from workers.testing.tracking import report_from_suite, track

    at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    outcomes = {s.name: s for s in run.suites}
    for action in actions:
        if isinstance(action, FileIssue):
            github.ensure_issue(
                job.repo, marker=action.marker, title=action.title, body=action.body, labels=[INFRA_LABEL]
            )
        elif isinstance(action, UpdateIssue):
            github.update_issue(job.repo, action.number, body=action.body)
        elif isinstance(action, CloseIssue):
            github.close_issue(job.repo, action.number, comment=action.comment)
        elif isinstance(action, TrackTrunk):
            track(
                github,
                job.repo,
                report_from_suite(outcomes[action.suite], run.sha, at),
                config.l2.recover_after,
            )
        elif isinstance(action, PublishRetest):
            assert job.pr_number is not None
            upsert_check(github, job.repo, action.head_sha, action.output, external_id=action.external_id)
            pull = github.get_pull_request(job.repo, job.pr_number)
            github.edit_pull_request(
                job.repo, job.pr_number, body=render.with_split_section(pull.body, action.note)
            )
        elif isinstance(action, Comment):
            github.create_comment(job.repo, action.number, action.body)
        elif isinstance(action, UpdateCheck):
            out = action.output
            github.update_check_run(
                job.repo,
                action.check_run_id,
                status=out.status,
                conclusion=out.conclusion if out.status == "completed" else None,
                output=check_output(out),
            )
        elif isinstance(action, ForgetPending):
            pending.forget(job.repo, action.check_run_id)
        elif isinstance(action, RememberPending):
            pending.remember(
                _pending(
                    job, action.check_run_id, action.queue, action.suites, config.l1.stale_margin_minutes
                )
            )
        elif isinstance(action, PublishCoverage):
            publish_coverage(github, job.repo, job.head_sha, action.required)
        else:
            raise AssertionError(f"plan_report has no executor for {type(action).__name__}")


# --------------------------------------------------------------------------- pools


def _dispatch_pools(
    github: GitHubPort,
    job: L1Job,
    actions: Sequence[UpsertCheck | RememberPending | DispatchPool],
    pending: PendingChecks,
    margin_minutes: int,
    dispatch: Callable[[L1Job], None] | None,
) -> tuple[L1Job, ...]:
    """The executor of ``plan_pools``: the pools check upserted, the watchdog told, one job sent per pool."""
    check_id: int | None = None
    jobs: list[L1Job] = []
    for action in actions:
        if isinstance(action, UpsertCheck):
            check_id = upsert_check(
                github, job.repo, job.head_sha, action.output, external_id=action.external_id
            ).id
        elif isinstance(action, RememberPending):
            assert check_id is not None
            pending.remember(_pending(job, check_id, action.queue, action.suites, margin_minutes))
        else:
            pool_job = replace(job, pool=action.pool, pool_run=action.run_id, suite_names=(), attempt=0)
            jobs.append(pool_job)
            if dispatch is not None:
                dispatch(pool_job)
    return tuple(jobs)


def _run_pool(
    github: GitHubPort,
    cache: Repository,
    job: L1Job,
    config: RepoConfig,
    store: Store,
    data_dir: Path,
    canary: Callable[[], CanaryResult] | None,
    host_canary: Callable[[], CanaryResult] | None,
    state: StateStore,
    retries: int,
) -> L1JobResult:
    """One pool's job: run the suites ``plan_pool_suites`` names, report per ``plan_pool_results``
    and, under the repository's lock, record and upsert per ``plan_pool_report``."""
    assert job.pool is not None
    suites = plan_pool_suites(config, job.pool, job.head_sha)
    if isinstance(suites, Skip):
        return L1JobResult(suites.status, message=suites.message)
    run = run_l1_for_ref(
        cache.path,
        job.head_sha,
        config,
        data_dir=data_dir,
        base_ref=config.fork.branch,
        canary=canary,
        host_canary=host_canary,
        infra_retries=0,
        suite_names=list(suites.names),
        results=TrunkResults(store, job.repo),
    )
    observe_suites(run)
    pending = PendingChecks(store)
    _report(github, job, infra_issue_actions(run, socket.gethostname()), run, pending, config)
    mine = plan_pool_results(run, job.pool, job.attempt, retries)
    if isinstance(mine, RetryPool):
        return L1JobResult("done", None, run, message="retrying", max_infra_retries=retries)
    series = SeriesStore(store)
    name = pool_series(job.repo, job.head_sha, job.pool_run)
    with state.lock(f"l1-pools:{job.repo}:{job.head_sha}", ttl_s=300, wait_s=120):
        facts = PoolReportFacts(
            job.head_sha,
            job.pool_run,
            github.list_check_runs(job.repo, job.head_sha, name=render.POOLS_CHECK),
            suites.pooled,
            [from_point(p) for p in series.series(name)],
            mine,
        )
        planned = plan_pool_report(facts)
        if isinstance(planned, StalePoolRun):
            return L1JobResult(
                "stale", None, run, message="a newer L1 run on this commit dispatched its own pools"
            )
        check_id = _record_pools(github, job, planned.actions, series, name, pending)
    return L1JobResult("done", check_id, run, message=planned.conclusion, max_infra_retries=retries)


def _record_pools(
    github: GitHubPort,
    job: L1Job,
    actions: Sequence[RecordPoolResults | UpsertCheck | ForgetPending],
    series: SeriesStore,
    name: str,
    pending: PendingChecks,
) -> int:
    """The executor of ``plan_pool_report``: the results appended, the pools check upserted (its
    id returned), the watchdog told once it concluded."""
    check_id: int | None = None
    for action in actions:
        if isinstance(action, RecordPoolResults):
            for result in action.results:
                series.append(name, as_point(result))
        elif isinstance(action, UpsertCheck):
            check_id = upsert_check(
                github, job.repo, job.head_sha, action.output, external_id=action.external_id
            ).id
        else:
            assert check_id is not None
            pending.forget(job.repo, check_id)
    assert check_id is not None
    return check_id


def _pending(
    job: L1Job, check_id: int, queue: str, suites: Sequence[Suite], margin_minutes: int
) -> PendingCheck:
    now = time.time()
    return PendingCheck(
        job.repo,
        check_id,
        job.head_sha,
        job.installation_id,
        queue,
        now,
        deadline_for([s.timeout for s in suites], margin_minutes, now=now),
    )


def _split_step(
    github: GitHubPort,
    cache: Repository,
    job: L1Job,
    run: L1Run,
    pull: PullRequestInfo | None,
    suites: Suites,
    eject: Eject | None,
    rebuild: Callable[[], None] | None,
) -> tuple[SplitOutcome | None, L1Run | None]:
    """The executor of ``plan_split_step`` and ``plan_after_split``: a red bundle bisected, its
    culprits ejected, the bundle rebuilt and force-pushed, its approvers asked again, the rebuilt
    head re-tested here. (None, None) when nothing was split."""
    passing = suites.results().passing_suites_at(run.merge_base) if run.merge_base else frozenset()
    steps = plan_split_step(job.trunk, job.pr_number, pull.head_ref if pull else "", run, passing)
    split: SplitOutcome | None = None
    retest: L1Run | None = None
    for step in steps:
        approved = approvers(
            [(r.user, r.state, r.commit_id) for r in github.list_reviews(job.repo, step.number)], job.head_sha
        )
        assert run.merge_base is not None  # planned only with one
        split = split_bundle(
            cache,
            job.repo,
            job.head_sha,
            run.merge_base,
            suites.config,
            step.chase,
            pr=step.number,
            data_dir=suites.data_dir,
            results=suites.results(),
            eject=eject,
            rebuild=rebuild,
            max_runs=DEFAULT_MAX_RUNS,
            push=_pusher(github, job.repo, cache, step.branch),
        )
        for after in plan_after_split(step.number, split.rebuilt_head, approved):
            if isinstance(after, RequestReviews):
                try:
                    github.request_reviewers(job.repo, after.number, users=after.users)
                except GitHubValidationError as exc:  # an approver who lost access: the note still names them
                    log.warning(
                        "L1 split %s#%d: could not re-request review from %s: %s",
                        job.repo,
                        after.number,
                        after.users,
                        exc,
                    )
                split = replace(split, overrun_approvals=after.users)
            else:
                retest = suites.run(after.head_sha)
    return split, retest


def _split_note(split: SplitOutcome, retest: L1Run | None) -> str:
    return render.split_note(
        commits=split.commits,
        runs=len(split.result.runs),
        complete=split.result.complete,
        rebuilt=split.rebuilt,
        culprits=[(c.fork_sha, c.subject, c.upstream_sha, c.chain, c.tests) for c in split.culprits],
        rebuilt_head=split.rebuilt_head,
        retest_conclusion=retest.conclusion if retest is not None else None,
        not_rebuilt=split.not_rebuilt,
        overrun_approvals=split.overrun_approvals,
    )


def _refuse(
    github: GitHubPort,
    job: L1Job,
    status: str,
    title: str,
    summary: str,
    conclusion: str = "action_required",
    details_url: str | None = None,
) -> L1JobResult:
    """Complete ``forksync / L1`` without running anything, saying why and what to do."""
    check = upsert_check(
        github,
        job.repo,
        job.head_sha,
        render.CheckRunOutput(
            name=render.L1_CHECK,
            head_sha=job.head_sha,
            status="completed",
            conclusion=conclusion,
            title=title,
            summary=f"{marker('l1', job.head_sha)}\n{summary}",
            details_url=details_url,
        ),
        external_id=_external_id(job),
    )
    return L1JobResult(status, check.id, message=title)


def _gate(
    github: GitHubPort,
    caches: GitCache,
    cache: Repository,
    job: L1Job,
    clone_url: str,
    token: str | None,
    clone_url_for: Callable[[str], str] | None,
    own_login: str | None = None,
) -> L1JobResult | None:
    """Read what ``plan_gate`` decides from (the PR, its approval, the cache), then act: refuse,
    or fetch a PR head that is on no branch of ours and gate again. None when the head may run."""
    from workers.commands.approval import is_approved, needs_approval

    if job.trunk or job.pr_number is None:
        facts = GateFacts(job.head_sha, job.repo, None, on_branch=_on_branch(cache, job.head_sha))
    else:
        pull = github.get_pull_request(job.repo, job.pr_number)
        needs = needs_approval(job.repo, pull.head_repo, pull.author_association)
        stacked = is_stacked(job.repo, pull.head_ref, pull.head_repo, pull.base_ref)
        approved = (
            needs
            and pull.head_sha == job.head_sha
            and is_approved(github, job.repo, job.pr_number, job.head_sha, own_login=own_login)
        )
        facts = GateFacts(
            job.head_sha,
            job.repo,
            job.pr_number,
            pull.head_sha,
            pull.head_repo,
            pull.head_ref,
            pull.author,
            pull.author_association,
            pull.html_url,
            needs,
            approved,
            cache.rev_parse(job.head_sha) is not None,
            base_ref=pull.base_ref,
            stacked=stacked,
            base_number=_base_pull(github, job.repo, pull.base_ref) if stacked else None,
        )
    return _apply_gate(caches, cache, github, job, plan_gate(facts), clone_url, token, clone_url_for)


def is_stacked(repo: str, head_ref: str, head_repo: str | None, base_ref: str) -> bool:
    """A forksync bundle PR based on another bundle's branch (a stacked bundle, docs/bundling.md).
    A human's PR into a bundle branch (a fix to the bundle) is not: it runs as usual."""
    return (
        (head_repo or "").lower() == repo.lower()
        and head_ref.startswith(BUNDLE_BRANCH)
        and base_ref.startswith(BUNDLE_BRANCH)
    )


def _base_pull(github: GitHubPort, repo: str, base_ref: str) -> int | None:
    found = github.find_pull_request(repo, head=base_ref)
    return found.number if found is not None and found.state == "open" else None


def _apply_gate(
    caches: GitCache,
    cache: Repository,
    github: GitHubPort,
    job: L1Job,
    actions: Sequence[Refuse | FetchPullHead],
    clone_url: str,
    token: str | None,
    clone_url_for: Callable[[str], str] | None,
) -> L1JobResult | None:
    for action in actions:
        if isinstance(action, Refuse):
            return _refuse(
                github,
                job,
                action.status,
                action.title,
                action.summary,
                conclusion=action.conclusion,
                details_url=action.details_url,
            )
        local = f"{TMP_REF_PREFIX}l1-pull/{action.number}"
        try:
            # GitHub keeps every PR head in the base repository as refs/pull/N/head.
            caches.fetch(cache, clone_url, [f"+refs/pull/{action.number}/head:{local}"], token)
        except GitError:
            if not (action.head_repo and clone_url_for):
                raise
            caches.fetch(
                cache, clone_url_for(action.head_repo), [f"+refs/heads/{action.head_ref}:{local}"], token
            )
        found = cache.rev_parse(job.head_sha) is not None
        return _apply_gate(
            caches,
            cache,
            github,
            job,
            plan_fetched(job.head_sha, action.number, found),
            clone_url,
            token,
            clone_url_for,
        )
    return None


def _on_branch(cache: Repository, sha: str) -> bool:
    """True when ``sha`` is reachable from a branch of the repository (pushed by someone who may):
    a commit merely present in the cache (an earlier PR's fetch) does not count."""
    if cache.rev_parse(sha) is None:
        return False
    return bool(
        cache.text("for-each-ref", "--count=1", "--contains", sha, "--format=%(refname)", "refs/heads/")
    )


PR_EXTERNAL_ID = "pr:"


def _external_id(job: L1Job) -> str | None:
    # Our L1 check run names its PR, so its "Re-run" button (which carries no PR for a fork's
    # head) can find the PR and its approval again.
    return None if job.pr_number is None else f"{PR_EXTERNAL_ID}{job.pr_number}"


def _pr_of_check(github: GitHubPort, job: L1Job) -> int | None:
    """The PR our ``forksync / L1`` check run on ``job.head_sha`` was made for, if it says."""
    runs = [
        r
        for r in github.list_check_runs(job.repo, job.head_sha, name=render.L1_CHECK)
        if r.head_sha == job.head_sha
    ]
    for run in sorted(runs, key=lambda r: r.id, reverse=True):
        ext = run.external_id or ""
        if ext.startswith(PR_EXTERNAL_ID) and ext[len(PR_EXTERNAL_ID) :].isdigit():
            return int(ext[len(PR_EXTERNAL_ID) :])
    return None


# --------------------------------------------------------------------------- /retest SUITE …

_SUITES_MARK = re.compile(r"<!-- forksync:l1-suites (?P<json>\{.*?\}) -->")


def observe_suites(run: L1Run) -> None:
    """Each suite's run time, for ``forksync_l1_suite_duration_seconds`` (core/telemetry.py)."""
    from core import telemetry

    for suite in run.suites:
        telemetry.L1_SUITE_DURATION.labels(suite=suite.name, status=suite.status).observe(suite.duration_s)


def _pusher(github: GitHubPort, repo: str, cache: Repository, branch: str) -> Callable[[str], None]:
    """Force-push a rebuilt head over the PR's branch."""

    def push(sha: str) -> None:
        github.push_branch(repo, cache, sha, branch, force=True)

    return push


def _previous_suites(github: GitHubPort, job: L1Job) -> dict[str, str]:
    """Each suite's conclusion as the newest ``forksync / L1`` check on this head recorded it."""
    runs = [
        r
        for r in github.list_check_runs(job.repo, job.head_sha, name=render.L1_CHECK)
        if r.head_sha == job.head_sha
    ]
    if not runs:
        return {}
    found = _SUITES_MARK.search(max(runs, key=lambda r: r.id).summary or "")
    if found:
        with contextlib.suppress(ValueError):
            loaded = json.loads(found.group("json"))
            if isinstance(loaded, dict):
                return {str(k): str(v) for k, v in loaded.items()}
    return {}


def _drop_approval(github: GitHubPort, job: L1Job, own_login: str | None) -> str | None:
    """The maintainer whose ``/approve`` names this very head (what a PR dropping a suite needs)."""
    if job.pr_number is None or job.trunk:
        return None
    from workers.commands.approval import read_approval

    approval = read_approval(github, job.repo, job.pr_number, own_login)
    return approval.by if approval is not None and approval.head_sha == job.head_sha else None


def _config_at(cache: Repository, sha: str) -> RepoConfig:
    spec = f"{sha}:{CONFIG_PATH}"
    if not cache.ok("cat-file", "-e", spec):
        return RepoConfig()
    return load_repo_config(
        cache.git("show", spec).decode("utf-8", "replace"), f"{CONFIG_PATH} at {sha[:12]}"
    )
