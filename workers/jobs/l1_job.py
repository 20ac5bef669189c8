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
from core.github.errors import GitHubPermissionError, GitHubValidationError
from core.github.records import Annotation, CheckOutput, CheckRunInfo
from core.github.roles import GitHubPort
from core.render import l1 as render
from core.render import marker
from core.store import Store, open_store
from workers.adapters.gitcache import TMP_REF_PREFIX, GitCache
from workers.adapters.state import LocalState, SeriesStore, StateStore
from workers.engine.git import GitError, Repository
from workers.jobs.ingest_plan import approvers
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
    StartFacts,
    TrackTrunk,
    UpdateCheck,
    UpdateIssue,
    UpsertCheck,
    infra_issue_actions,
    plan_fetched,
    plan_gate,
    plan_pools,
    plan_report,
    plan_start,
    suite_conclusions,
)
from workers.testing.pools import PoolResult, as_point, compare, from_point, pool_series
from workers.testing.red_bundle import DEFAULT_MAX_RUNS, plan_split
from workers.testing.staleness import PendingCheck, PendingChecks, deadline_for
from workers.testing.suite_plan import plan_suites
from workers.testing.triage import TrunkResults
from workers.testing.watchdog import CheckRunState, RequiredChecks, coverage, cross_check

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
    also listed in the result); ``state``: whose repository lock serialises the pool reports."""
    store = store or open_store(None, data_dir)
    if job.after_push and not job.trunk and not job.suite_names and job.pool is None:
        tested = _retested_by_split(github, job)
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
        config_error = not_trunk = None
        try:
            head_config = _config_at(cache, job.head_sha)
            trunk_ref = None if job.trunk else _trunk_ref(github, cache, job, head_config)
            trunk_config = head_config if trunk_ref is None else _config_at(cache, trunk_ref)
        except ConfigError as exc:
            config_error, head_config, trunk_ref, trunk_config = (
                exc.one_line(),
                RepoConfig(),
                None,
                RepoConfig(),
            )
        if config_error is None and job.trunk and job.push_ref != f"refs/heads/{head_config.fork.branch}":
            not_trunk = f"{job.push_ref} is not the trunk branch {head_config.fork.branch}"
        if config_error is not None or not_trunk is not None:
            stopped = _start(
                github,
                job,
                plan_start(
                    StartFacts(job.head_sha, job.trunk, job.gpu_runner, (), {}, None, config_error, not_trunk)
                ),
                PendingChecks(store),
                0,
            )
            assert stopped.result is not None
            return stopped.result
        plan = plan_suites(trunk_config, head_config, drop_approved_by=_drop_approval(github, job, own_login))
        trunk_branch = (trunk_ref or f"refs/heads/{head_config.fork.branch}").removeprefix("refs/heads/")
        config = plan.apply(trunk_config)
        pooled = [s for s in config.l1.suites if s.pools]
        if job.pool is not None:
            if job.trunk or not job.pool_run:
                return L1JobResult(
                    "skipped", message="a pool job tests the head its L1 job dispatched it for"
                )
            retries = config.l1.max_infra_retries if max_infra_retries is None else max_infra_retries
            return _run_pool(
                github,
                cache,
                job,
                config,
                store,
                data_dir,
                canary,
                host_canary,
                state or LocalState(data_dir, SeriesStore(store)),
                retries,
            )
        if pooled and not job.trunk:  # trunk runs each suite once, as ever: that is its baseline
            config = replace(
                config, l1=replace(config.l1, suites=tuple(s for s in config.l1.suites if not s.pools))
            )
        names = [s.name for s in config.l1.suites]
        kept: dict[str, str] = {}
        chosen = names
        if job.suite_names and not job.trunk:
            kept, chosen = _partial(github, job, names)
        suites = tuple(s for s in config.l1.suites if s.name in chosen)
        pending = PendingChecks(store)
        started = _start(
            github,
            job,
            plan_start(StartFacts(job.head_sha, job.trunk, job.gpu_runner, suites, kept, _external_id(job))),
            pending,
            config.l1.stale_margin_minutes,
        )
        check_id = started.check_id
        if started.result is not None or started.run is None:
            assert started.result is not None
            return started.result
        to_run = list(started.run.names) if started.run.partial else None
        # Once per L1 run: an infrastructure retry of this job (attempt > 0) leaves its pools be.
        pools = plan_pools(
            job.head_sha,
            pooled,
            uuid.uuid4().hex[:16],
            trunk=job.trunk,
            attempt=job.attempt,
            external_id=_external_id(job),
        )
        pool_jobs = _dispatch_pools(
            github, job, pools, pending, config.l1.stale_margin_minutes, dispatch_pool
        )
        try:
            run = run_l1_for_ref(
                cache.path,
                job.head_sha,
                config,
                data_dir=data_dir,
                base_ref=config.fork.branch,
                trunk=job.trunk,
                canary=canary,
                host_canary=host_canary,
                infra_retries=0,
                suite_names=to_run,
                results=TrunkResults(store, job.repo),
            )
            split = _split_if_red_bundle(github, cache, job, run, config, store, data_dir, eject, rebuild)
            retest = None
            if split is not None and split.rebuilt_head is not None:
                # Re-tested in the same PR, here: the runner and cache are ours already.
                retest = run_l1_for_ref(
                    cache.path,
                    split.rebuilt_head,
                    config,
                    data_dir=data_dir,
                    base_ref=config.fork.branch,
                    canary=canary,
                    host_canary=host_canary,
                    infra_retries=0,
                    results=TrunkResults(store, job.repo),
                )
        except Exception as exc:
            if check_id is not None:
                github.update_check_run(
                    job.repo,
                    check_id,
                    conclusion="failure",
                    output=CheckOutput(
                        "L1 could not run (forksync error)", f"{type(exc).__name__}: {exc}"[:2000]
                    ),
                )
                pending.forget(job.repo, check_id)
            raise
    retries = config.l1.max_infra_retries if max_infra_retries is None else max_infra_retries
    observe_suites(run)
    clean = bool(run.suites) and not any(s.status == "infrastructure" for s in run.suites)
    report = ReportFacts(
        repo=job.repo,
        head_sha=job.head_sha,
        trunk=job.trunk,
        pr_number=job.pr_number,
        attempt=job.attempt,
        retries=retries,
        check_run_id=check_id,
        run=run,
        suite_plan=plan,
        runner=socket.gethostname(),
        # Read only when a clean run may count against them (as before: no listing otherwise).
        infra_issues=tuple(github.list_issues(job.repo, labels=[INFRA_LABEL])) if clean else (),
        recover_after=config.l2.recover_after,
        required=(
            required_checks_for(github, job.repo, trunk_branch, config.l1.required_checks)
            if check_id is not None
            else RequiredChecks(())
        ),
        retry_queue=tasknames.Q_L1_GPU if job.gpu_runner else tasknames.Q_L1_CPU,
        suites=suites,
        kept=kept,
        pooled=tuple(s.name for s in pooled) if pool_jobs else (),
        split_note=None if split is None else _split_note(split, retest),
        retest=retest,
        rebuilt_head=None if split is None else split.rebuilt_head,
        external_id=_external_id(job),
        log_url=log_url,
    )
    _report(github, job, plan_report(report), run, pending, config)
    return L1JobResult("done", check_id, run, max_infra_retries=retries, pool_jobs=pool_jobs)


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
            check_id = _upsert_check(
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
            _upsert_check(github, job.repo, action.head_sha, action.output, external_id=action.external_id)
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
                output=_output(out),
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

_POOL_RUN_MARK = re.compile(r"<!-- forksync:l1-pools-run:(?P<id>[0-9a-f]+) -->")


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
            check_id = _upsert_check(
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
    """One pool's job: run its suites, record each result in the store and, under the
    repository's lock, compare every pool's stored results; the job that sees them all concludes."""
    assert job.pool is not None
    pooled = [s for s in config.l1.suites if s.pools]
    mine = [s.name for s in pooled if job.pool in s.pools]
    if not mine:
        return L1JobResult("skipped", message=f"no L1 suite runs on pool {job.pool} at {job.head_sha[:12]}")
    run = run_l1_for_ref(
        cache.path,
        job.head_sha,
        config,
        data_dir=data_dir,
        base_ref=config.fork.branch,
        canary=canary,
        host_canary=host_canary,
        infra_retries=0,
        suite_names=mine,
        results=TrunkResults(store, job.repo),
    )
    observe_suites(run)
    _report(github, job, infra_issue_actions(run, socket.gethostname()), run, PendingChecks(store), config)
    if run.conclusion == CANCELLED and job.attempt < retries:
        # Only the runner failed: the task retries on the pool's queue; nothing is reported yet.
        return L1JobResult("done", None, run, message="retrying", max_infra_retries=retries)
    own = suite_conclusions(run)
    reports = [PoolResult(s.name, job.pool, s.passed + s.failed, own[s.name]) for s in run.suites]
    series = SeriesStore(store)
    name = pool_series(job.repo, job.head_sha, job.pool_run)
    with state.lock(f"l1-pools:{job.repo}:{job.head_sha}", ttl_s=300, wait_s=120):
        current = [
            r
            for r in github.list_check_runs(job.repo, job.head_sha, name=render.POOLS_CHECK)
            if r.head_sha == job.head_sha
        ]
        newest_check = max(current, key=lambda r: r.id) if current else None
        found = _POOL_RUN_MARK.search(newest_check.summary or "") if newest_check is not None else None
        if found is None or found.group("id") != job.pool_run:
            return L1JobResult(
                "stale", None, run, message="a newer L1 run on this commit dispatched its own pools"
            )
        for report in reports:
            series.append(name, as_point(report))
        comparison = compare(
            {s.name: s.pools for s in pooled},
            [from_point(p) for p in series.series(name)],
            {s.name: s.pool_tolerance for s in pooled},
        )
        out = render.pools_check_run(job.head_sha, comparison)
        out = replace(out, summary=render.pool_run_mark(job.pool_run) + out.summary)
        check = _upsert_check(github, job.repo, job.head_sha, out)
        if out.status == "completed":
            PendingChecks(store).forget(job.repo, check.id)
    return L1JobResult("done", check.id, run, message=comparison.conclusion, max_infra_retries=retries)


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


def _split_if_red_bundle(
    github: GitHubPort,
    cache: Repository,
    job: L1Job,
    run: L1Run,
    config: RepoConfig,
    store: Store,
    data_dir: Path,
    eject: Eject | None,
    rebuild: Callable[[], None] | None,
) -> SplitOutcome | None:
    """Bisect a bundle PR whose L1 fails on suites trunk passes (None: nothing to split)."""
    if job.trunk or job.pr_number is None or run.merge_base is None:
        return None
    pull = github.get_pull_request(job.repo, job.pr_number)
    passing = TrunkResults(store, job.repo).passing_suites_at(run.merge_base)
    chase = plan_split(pull.head_ref, run, passing)
    if chase is None:
        return None
    branch, number = pull.head_ref, job.pr_number
    approved = approvers(
        [(r.user, r.state, r.commit_id) for r in github.list_reviews(job.repo, number)], job.head_sha
    )
    outcome = split_bundle(
        cache,
        job.repo,
        job.head_sha,
        run.merge_base,
        config,
        chase,
        pr=number,
        data_dir=data_dir,
        results=TrunkResults(store, job.repo),
        eject=eject,
        rebuild=rebuild,
        max_runs=DEFAULT_MAX_RUNS,
        push=lambda sha: github.push_branch(job.repo, cache, sha, branch, force=True),
    )
    if outcome.rebuilt_head is not None and approved:
        try:
            github.request_reviewers(job.repo, number, users=approved)
        except GitHubValidationError as exc:  # an approver who lost access: the note still names them
            log.warning(
                "L1 split %s#%d: could not re-request review from %s: %s", job.repo, number, approved, exc
            )
        outcome = replace(outcome, overrun_approvals=approved)
    return outcome


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


def _retested_by_split(github: GitHubPort, job: L1Job) -> int | None:
    """Our completed check on this head when the split that rebuilt it re-tested it already (the
    id; None: run as usual)."""
    mark = render.retested_mark(job.head_sha)
    for run in github.list_check_runs(job.repo, job.head_sha, name=render.L1_CHECK):
        if run.head_sha == job.head_sha and run.status == "completed" and mark in (run.summary or ""):
            return run.id
    return None


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
    check = _upsert_check(
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
        )
    return _apply_gate(caches, cache, github, job, plan_gate(facts), clone_url, token, clone_url_for)


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


def _partial(github: GitHubPort, job: L1Job, names: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """(results kept from the last run on this commit, suites to run) for ``/retest SUITE …``.

    A suite with no result on this commit runs too (nothing to keep), so the check never
    concludes over suites that did not run; names not configured at this commit are dropped.
    """
    previous: dict[str, str] = {}
    runs = [
        r
        for r in github.list_check_runs(job.repo, job.head_sha, name=render.L1_CHECK)
        if r.head_sha == job.head_sha
    ]
    if runs:
        found = _SUITES_MARK.search(max(runs, key=lambda r: r.id).summary or "")
        if found:
            with contextlib.suppress(ValueError):
                loaded = json.loads(found.group("json"))
                previous = {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}
    dropped = [n for n in job.suite_names if n not in names]
    if dropped:
        log.info(
            "L1 %s@%s: /retest names suites not configured here: %s", job.repo, job.head_sha[:12], dropped
        )
    chosen = [n for n in names if n in job.suite_names or n not in previous]
    kept = {n: previous[n] for n in names if n not in chosen}
    return kept, chosen


def _trunk_ref(github: GitHubPort, cache: Repository, job: L1Job, head_config: RepoConfig) -> str | None:
    """The ref whose config decides what L1 runs on ``job``: the PR's base branch, else the trunk
    branch the commit's own config names (None: no such branch here, the commit's config decides)."""
    branch = head_config.fork.branch
    if job.pr_number is not None:
        branch = github.get_pull_request(job.repo, job.pr_number).base_ref
    ref = f"refs/heads/{branch}"
    return ref if cache.rev_parse(ref) is not None else None


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


def _upsert_check(
    github: GitHubPort, repo: str, sha: str, out: render.CheckRunOutput, external_id: str | None = None
) -> CheckRunInfo:
    """Update our check run of this name on this commit in place (reruns), or create it."""
    existing = [r for r in github.list_check_runs(repo, sha, name=out.name) if r.head_sha == sha]
    conclusion = out.conclusion if out.status == "completed" else None
    if existing:
        newest = max(existing, key=lambda r: r.id)
        return github.update_check_run(
            repo, newest.id, status=out.status, conclusion=conclusion, output=_output(out)
        )
    return github.create_check_run(
        repo,
        name=out.name,
        head_sha=sha,
        status=out.status,
        conclusion=conclusion,
        output=_output(out),
        details_url=out.details_url,
        external_id=external_id,
    )


def _output(out: render.CheckRunOutput) -> CheckOutput:
    notes = tuple(
        Annotation(a.path, a.start_line, a.end_line, a.annotation_level, a.message, a.title or None)
        for a in out.annotations
    )
    return CheckOutput(out.title, out.summary, out.text or None, notes)


OWN_CHECKS = (render.L1_CHECK, render.COVERAGE_CHECK)


def coverage_from_github(github: GitHubPort, repo: str, sha: str) -> CheckRunInfo | None:
    """``forksync / coverage`` with the required checks of the trunk (the default branch's config)
    and of the config at ``sha`` together, cross-checked against the trunk branch's protection: a
    PR cannot drop a required check by editing its own config (None: none required anywhere)."""
    required: list[str] = []
    branch = "main"
    for ref in (None, sha):
        text = github.read_file(repo, CONFIG_PATH, ref=ref)
        where = f"{CONFIG_PATH} at {(ref or 'the default branch')[:12]}"
        config = load_repo_config(text, where) if text else RepoConfig()
        if ref is None:
            branch = config.fork.branch
        required += [c for c in config.l1.required_checks if c.lower() not in {r.lower() for r in required}]
    checks = required_checks_for(github, repo, branch, required)
    if not checks.checks and not checks.only_in_config:
        return None
    return publish_coverage(github, repo, sha, checks)


def required_checks_for(
    github: GitHubPort, repo: str, branch: str, configured: Sequence[str]
) -> RequiredChecks:
    """``configured`` cross-checked against ``branch``'s protection rules (read from GitHub); when
    GitHub refuses to show them (403: no ``Administration: read``), the configured checks alone,
    with the refusal kept for the check runs to say."""
    try:
        protection = github.required_status_checks(repo, branch)
    except GitHubPermissionError as exc:
        log.warning("%s: cannot read %s's branch protection: %s", repo, branch, exc)
        return replace(
            cross_check(configured, None, branch=branch, own=OWN_CHECKS),
            unreadable=f"GitHub answered {exc.status or 403}: the App lacks Administration: read",
        )
    return cross_check(configured, protection, branch=branch, own=OWN_CHECKS)


def publish_coverage(
    github: GitHubPort, repo: str, sha: str, required: Sequence[str] | RequiredChecks
) -> CheckRunInfo:
    """Compute ``forksync / coverage`` from the check runs on ``sha`` and create or update it;
    with :class:`RequiredChecks`, the summary says where config and branch protection disagree."""
    checks = required if isinstance(required, RequiredChecks) else RequiredChecks(tuple(required))
    runs = [
        CheckRunState(r.name, r.status, r.conclusion)
        for r in github.list_check_runs(repo, sha)
        if r.name not in OWN_CHECKS
    ]
    result = coverage(checks.checks, runs)
    out = render.coverage_check_run(sha, result)
    note = render.protection_note(
        checks.branch, checks.only_in_protection, checks.only_in_config, checks.unreadable
    )
    return _upsert_check(github, repo, sha, replace(out, summary=out.summary + note) if note else out)
