"""L1 tasks: ``forksync.run_l1`` per commit, ``forksync.l1_coverage``, and the webhook handlers
that start them (a PR opened or pushed, a push to trunk, a Re-run button on forksync's checks or
suite, another CI system's check suite completing). ``/retest`` sends ``forksync.run_l1`` with the PR head, its
number and the suites it names.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from core import tasknames
from workers.adapters.gitcache import GitCache
from workers.adapters.state import open_state
from workers.app import celery_app, runtime
from workers.app.handlers import handles
from workers.jobs.l1_checks import coverage_from_github
from workers.jobs.l1_job import L1Job, run_l1_job
from workers.jobs.rerun import (
    ExplainNoRerun,
    Ingest,
    RecheckCoverage,
    RerunAction,
    RunL1,
    apply_explain,
    plan_check_run_rerun,
    suite_rerun,
)

log = logging.getLogger(__name__)

L1_COVERAGE = tasknames.L1_COVERAGE
ZERO_SHA = "0" * 40
# An infrastructure failure is retried after this long, giving the queue a chance to hand the
# job to another runner.
INFRA_RETRY_S = 60
# Above any suite timeout we accept (l1 suites default to 30 min; the job runs several).
L1_TIME_LIMIT_S = tasknames.QUEUE_TIME_LIMIT_S[tasknames.Q_L1_CPU]


def _adapter(task: Any, installation_id: int) -> tuple[Any, Any]:
    settings = celery_app.settings_of(task.app)
    return runtime.app_for(settings), settings


@shared_task(
    name=tasknames.RUN_L1,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,  # type: ignore[untyped-decorator]
    time_limit=L1_TIME_LIMIT_S,
)
def run_l1(
    self: Any,
    installation_id: int,
    repo: str,
    head_sha: str,
    trunk: bool = False,
    push_ref: str | None = None,
    number: int | None = None,
    delivery: str | None = None,
    suites: list[str] | None = None,
    pool: str | None = None,
    pool_run: str = "",
    after_push: bool = False,
    **_: Any,
) -> dict[str, Any]:
    """Run L1 on ``head_sha`` of ``repo`` and publish its check runs (see ``workers/jobs/l1_job.py``).

    ``number``: the PR (an outside PR runs only with a maintainer's ``/approve`` of its head);
    ``suites``: ``/retest SUITE …``, only those run and the others keep their results.
    ``pool``, ``pool_run``: a pool job (``l1.suites[].pools``), sent by the L1 job of that head to
    the pool's queue (``tasknames.l1_pool_queue``); it reports into ``forksync / L1 pools``.
    ``after_push``: sent for a push to a PR; a bundle head the red-bundle split rebuilt and
    re-tested already is not run twice.
    Idempotent: the check run is updated in place. An infrastructure failure is retried (bounded
    by ``l1.max_infra_retries``) so another runner can take it; the PR is never blamed for it.
    """
    app, settings = _adapter(self, installation_id)
    github = app.adapter(installation_id)
    queue = (self.request.delivery_info or {}).get("routing_key")
    job = L1Job(
        repo=repo,
        head_sha=head_sha,
        trunk=trunk,
        push_ref=push_ref,
        attempt=self.request.retries,
        gpu_runner=queue == tasknames.Q_L1_GPU,
        pr_number=number,
        suite_names=tuple(suites or ()),
        installation_id=installation_id,
        pool=pool,
        pool_run=pool_run,
        after_push=after_push,
    )
    eject, rebuild = _split_wiring(settings, app, installation_id, repo)
    result = run_l1_job(
        github,
        GitCache.for_installation(settings.data_dir / "git", installation_id),
        settings.data_dir,
        job,
        clone_url=settings.map_url(app.push_url_template.format(repo=repo)),
        token=app.installation_token(installation_id),
        clone_url_for=lambda other: settings.map_url(app.push_url_template.format(repo=other)),
        own_login=app.bot_login(),
        store=settings.store(),
        eject=eject,
        rebuild=rebuild,
        dispatch_pool=lambda pool_job: run_l1.apply_async(
            kwargs={
                "installation_id": installation_id,
                "repo": repo,
                "head_sha": head_sha,
                "number": number,
                "delivery": delivery,
                "pool": pool_job.pool,
                "pool_run": pool_job.pool_run,
            },
            queue=tasknames.l1_pool_queue(pool_job.pool or ""),
        ),
        state=open_state(settings),
    )
    log.info(
        "L1 %s@%s: %s %s", repo, head_sha[:12], result.status, result.run.conclusion if result.run else ""
    )
    if result.status == "needs_gpu":
        run_l1.apply_async(
            kwargs={
                "installation_id": installation_id,
                "repo": repo,
                "head_sha": head_sha,
                "trunk": trunk,
                "push_ref": push_ref,
                "number": number,
                "delivery": delivery,
                "suites": suites,
            },
            queue=tasknames.Q_L1_GPU,
        )
    if result.infrastructure and self.request.retries < result.max_infra_retries:
        raise self.retry(countdown=INFRA_RETRY_S, max_retries=result.max_infra_retries)
    return result.as_json()


@shared_task(
    name=L1_COVERAGE,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=tasknames.time_limit_for(L1_COVERAGE),
    soft_time_limit=tasknames.time_limit_for(L1_COVERAGE) - 5,
)  # type: ignore[untyped-decorator]
def l1_coverage(self: Any, installation_id: int, repo: str, head_sha: str, **_: Any) -> str:
    """Recompute ``forksync / coverage`` on a commit (another CI system's checks finished)."""
    app, _settings = _adapter(self, installation_id)
    info = coverage_from_github(app.adapter(installation_id), repo, head_sha)
    return "no required checks" if info is None else str(info.conclusion or info.status)


@handles(tasknames.ON_PULL_REQUEST)
def l1_on_pull_request(
    installation_id: int,
    repo: str,
    number: int,
    action: str,
    head_sha: str,
    delivery: str | None = None,
    base_changed: bool = False,
    **_: Any,
) -> None:
    """A PR opened, pushed to or reopened: test its head (an outside PR's once approved). A PR
    re-targeted (a stacked bundle whose base landed, now on the trunk) is gated and tested again."""
    pushed = action in ("opened", "synchronize", "reopened", "ready_for_review")
    if pushed or (action == "edited" and base_changed):
        run_l1.delay(
            installation_id=installation_id,
            repo=repo,
            head_sha=head_sha,
            number=number,
            delivery=delivery,
            after_push=pushed,
        )


@handles(tasknames.ON_PUSH)
def l1_on_trunk_push(
    installation_id: int, repo: str, ref: str, after: str, delivery: str | None = None, **_: Any
) -> None:
    """A push to a branch: the job records trunk results if it is the fork's trunk (from its config)."""
    if ref.startswith("refs/heads/") and not ref.startswith("refs/heads/forksync/") and after != ZERO_SHA:
        run_l1.delay(
            installation_id=installation_id,
            repo=repo,
            head_sha=after,
            trunk=True,
            push_ref=ref,
            delivery=delivery,
        )
        _record_push(installation_id, repo, ref, after)


def _split_wiring(settings: Any, app: Any, installation_id: int, repo: str) -> tuple[Any, Any]:
    """How a red bundle's split ejects culprits (the fork's chains ref, like /chain) and has the
    bundle rebuilt in its PR (an ingest); (None, None) without an upstream in the trunk's config."""
    from workers.jobs.l1_split import chain_ejector

    try:
        config = settings.process_config
        text = app.adapter(installation_id).read_file(repo, ".github/forksync.yml")
        if text:
            from core.config import load_repo_config

            config = load_repo_config(text, ".github/forksync.yml on the default branch")
    except Exception as exc:  # the split still reports its culprits; it just cannot eject them
        log.warning("L1 %s: no split wiring (%s)", repo, exc)
        return None, None
    if not config.upstream.url:
        return None, None
    fork = settings.map_url(app.push_url_template.format(repo=repo))
    eject = chain_ejector(
        config, settings.map_url(config.upstream.url), fork, app.installation_token(installation_id)
    )

    def rebuild() -> None:
        run_l1.app.send_task(
            tasknames.INGEST, kwargs={"installation_id": installation_id, "repo": repo, "reason": "l1-split"}
        )

    return eject, rebuild


def _record_push(installation_id: int, repo: str, ref: str, sha: str) -> None:
    """Remember the push in the store: the staleness watchdog reports trunk runs that never came."""
    import time

    from workers.adapters.state import SeriesStore
    from workers.testing.staleness import trunk_push_series

    try:
        settings = celery_app.settings_of(run_l1.app)
    except RuntimeError:  # not in a worker made by create_celery (a unit test calling the handler)
        return
    SeriesStore(settings.store()).append(
        trunk_push_series(repo),
        {"sha": sha, "ref": ref, "t": round(time.time(), 3), "installation_id": installation_id},
    )


@shared_task(
    name=tasknames.L1_WATCHDOG,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,  # type: ignore[untyped-decorator]
    time_limit=tasknames.time_limit_for(tasknames.L1_WATCHDOG),
)
def l1_watchdog(self: Any, **_: Any) -> dict[str, int]:
    """Beat: conclude L1 checks that a dead queue never finished, report trunk runs that stopped."""
    from workers.jobs.l1_watchdog import run_l1_watchdog

    settings = celery_app.settings_of(self.app)
    app = runtime.app_for(settings)
    trunk_silent_s = settings.process_config.schedule.trunk_silent_minutes * 60
    actions = run_l1_watchdog(settings.store(), app.adapter, trunk_silent_s=trunk_silent_s)
    counts: dict[str, int] = {}
    for action in actions:
        counts[type(action).__name__] = counts.get(type(action).__name__, 0) + 1
    log.info("L1 watchdog: %s", counts or "nothing stale")
    return counts


@shared_task(
    name=tasknames.EXPLAIN_NO_RERUN,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,  # type: ignore[untyped-decorator]
    time_limit=tasknames.time_limit_for(tasknames.EXPLAIN_NO_RERUN),
)
def explain_no_rerun(
    self: Any,
    installation_id: int,
    repo: str,
    check_run_id: int,
    head_sha: str,
    name: str,
    note: str,
    **_: Any,
) -> bool:
    """A Re-run forksync cannot honour: the check run's summary says why and what to do instead."""
    app, _settings = _adapter(self, installation_id)
    action = ExplainNoRerun(check_run_id, head_sha, name, note)
    return apply_explain(app.adapter(installation_id), repo, action)


@shared_task(
    name=tasknames.RERUN_SUITE,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,  # type: ignore[untyped-decorator]
    time_limit=tasknames.time_limit_for(tasknames.RERUN_SUITE),
)
def rerun_suite(
    self: Any, installation_id: int, repo: str, head_sha: str, delivery: str | None = None, **_: Any
) -> list[str]:
    """Re-run all checks on forksync's suite: the jobs of forksync's check runs on the head, each
    started as its own Re-run starts it (``workers/jobs/rerun.py``); returns their kinds."""
    app, settings = _adapter(self, installation_id)
    planned = suite_rerun(app.adapter(installation_id), repo, head_sha, settings.bot.numeric_app_id)
    for action in planned:
        _start_rerun(installation_id, repo, action, delivery)
    kinds = [type(a).__name__ for a in planned]
    log.info("Re-run all checks on %s@%s: %s", repo, head_sha[:12], kinds)
    return kinds


def _start_rerun(installation_id: int, repo: str, action: RerunAction, delivery: str | None) -> None:
    """Enqueue the job a Re-run button planned (workers/jobs/rerun.py)."""
    if isinstance(action, RunL1):
        run_l1.delay(installation_id=installation_id, repo=repo, head_sha=action.head_sha, delivery=delivery)
    elif isinstance(action, RecheckCoverage):
        l1_coverage.delay(installation_id=installation_id, repo=repo, head_sha=action.head_sha)
    elif isinstance(action, Ingest):
        run_l1.app.send_task(
            tasknames.INGEST,
            kwargs={
                "installation_id": installation_id,
                "repo": repo,
                "reason": "rerun",
                "delivery": delivery,
            },
        )
    else:
        explain_no_rerun.delay(
            installation_id=installation_id,
            repo=repo,
            check_run_id=action.check_run_id,
            head_sha=action.head_sha,
            name=action.name,
            note=action.note,
        )


@handles(tasknames.ON_CHECK_RUN)
def l1_on_rerequest(
    installation_id: int,
    repo: str,
    check_run_id: int,
    name: str,
    head_sha: str,
    action: str,
    delivery: str | None = None,
    **_: Any,
) -> None:
    """``Re-run`` on one of forksync's check runs: its job again (``forksync / L1`` updated in
    place; the job reads the PR from the check run, so an outside PR still needs its ``/approve``),
    or the check run says why it has none (see ``workers/jobs/rerun.py``)."""
    if action != "rerequested":
        return
    planned = plan_check_run_rerun(name, check_run_id, head_sha)
    if planned is not None:
        _start_rerun(installation_id, repo, planned, delivery)


@handles(tasknames.ON_CHECK_SUITE)
def l1_on_check_suite(
    installation_id: int, repo: str, head_sha: str, action: str, delivery: str | None = None, **_: Any
) -> None:
    """``Re-run all checks`` on forksync's suite (the intake drops other Apps' suites): the jobs of
    forksync's check runs on its head (``forksync.rerun_suite`` lists them: L1 on a PR head, the
    ingestion on a trunk commit). ``completed``: another CI system finished a suite, so the required
    checks may be complete now (``forksync / coverage``)."""
    if action == "rerequested":
        rerun_suite.delay(installation_id=installation_id, repo=repo, head_sha=head_sha, delivery=delivery)
    elif action == "completed":
        l1_coverage.delay(installation_id=installation_id, repo=repo, head_sha=head_sha)
