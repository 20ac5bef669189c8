"""L2/L3 tasks: ``forksync.run_l2`` (beat: nightly trunk benchmarks), ``forksync.bisect`` (``/bisect``),
``forksync.run_l3`` (an L3 workload's command), and the push handler that resets L3 sign-offs."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from core import tasknames
from core.config import CONFIG_PATH, ConfigError, load_repo_config
from workers.adapters.gitcache import GitCache
from workers.app import celery_app, runtime
from workers.app.handlers import handles
from workers.jobs.l2_job import run_bisect_job, run_l2_job, run_l3_job
from workers.testing.l3 import reset_l3_on_push

log = logging.getLogger(__name__)

ZERO_SHA = "0" * 40
L3_RESET = tasknames.L3_RESET
# Benchmarks default to 2 h each and bisection runs a dozen of them: a whole night at most.
L2_TIME_LIMIT_S = tasknames.QUEUE_TIME_LIMIT_S[tasknames.Q_L2]


def _github(task: Any, installation_id: int) -> tuple[Any, Any, Any]:
    settings = celery_app.settings_of(task.app)
    app = runtime.app_for(settings)
    return app, app.adapter(installation_id), settings


@shared_task(
    name=tasknames.RUN_L2,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,  # type: ignore[untyped-decorator]
    time_limit=L2_TIME_LIMIT_S,
)
def run_l2(
    self: Any,
    installation_id: int | None = None,
    repo: str | None = None,
    sha: str | None = None,
    benchmarks: list[str] | None = None,
    **_: Any,
) -> Any:
    """Beat (no arguments): one run per installed repository. With ``repo``: run its L2 benchmarks
    at trunk (or ``sha``), record them, bisect new breaks and file or update tracking issues."""
    if installation_id is None or repo is None:
        count = 0
        for inst, name in runtime.app_for(celery_app.settings_of(self.app)).installed_repositories():
            run_l2.delay(installation_id=inst, repo=name)
            count += 1
        return count
    app, github, settings = _github(self, installation_id)
    result = run_l2_job(
        github,
        GitCache.for_installation(settings.data_dir / "git", installation_id),
        settings.data_dir,
        repo,
        clone_url=settings.map_url(app.push_url_template.format(repo=repo)),
        token=app.installation_token(installation_id),
        sha=sha,
        only=tuple(benchmarks or ()),
        store=settings.store(),
    )
    log.info("L2 %s@%s: %s %s", repo, (result.sha or "")[:12], result.status, result.benchmarks)
    return result.as_json()


@shared_task(
    name=tasknames.BISECT,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,  # type: ignore[untyped-decorator]
    time_limit=L2_TIME_LIMIT_S,
)
def bisect(
    self: Any,
    installation_id: int,
    repo: str,
    benchmark: str,
    good: str | None = None,
    bad: str | None = None,
    issue_number: int | None = None,
    **_: Any,
) -> str:
    """``/bisect BENCHMARK [GOOD BAD]``: bisect on the l2 queue and answer on ``issue_number``."""
    app, github, settings = _github(self, installation_id)
    return run_bisect_job(
        github,
        GitCache.for_installation(settings.data_dir / "git", installation_id),
        settings.data_dir,
        repo,
        benchmark,
        clone_url=settings.map_url(app.push_url_template.format(repo=repo)),
        token=app.installation_token(installation_id),
        good=good,
        bad=bad,
        issue_number=issue_number,
        store=settings.store(),
    )


@shared_task(
    name=tasknames.RUN_L3,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,  # type: ignore[untyped-decorator]
    time_limit=L2_TIME_LIMIT_S,
)
def run_l3(self: Any, installation_id: int, repo: str, head_sha: str, workload: str, **_: Any) -> str:
    """Run an L3 workload's command at the PR head and attach its metrics to the sign-off check."""
    app, github, settings = _github(self, installation_id)
    reply = run_l3_job(
        github,
        GitCache.for_installation(settings.data_dir / "git", installation_id),
        repo,
        head_sha,
        workload,
        clone_url=settings.map_url(app.push_url_template.format(repo=repo)),
        token=app.installation_token(installation_id),
    )
    return reply.text


@shared_task(
    name=L3_RESET,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=tasknames.time_limit_for(L3_RESET),
    soft_time_limit=tasknames.time_limit_for(L3_RESET) - 5,
)  # type: ignore[untyped-decorator]
def l3_reset(self: Any, installation_id: int, repo: str, before: str, after: str, **_: Any) -> list[str]:
    """Give each L3 check on the old head its successor on the new head (reset, or carried)."""
    _app, github, _settings = _github(self, installation_id)
    text = github.read_file(repo, CONFIG_PATH, ref=after)
    try:
        config = load_repo_config(text or "", f"{CONFIG_PATH} at {after[:12]}")
    except ConfigError as exc:
        log.warning("L3 reset skipped for %s@%s: %s", repo, after[:12], exc.one_line())
        return [exc.one_line()]
    if not config.l3.workloads:
        return []

    def enqueue(name: str, kwargs: Any) -> None:
        run_l3.apply_async(kwargs=dict(kwargs))

    replies = reset_l3_on_push(
        github, repo, before, after, config, enqueue=enqueue, installation_id=installation_id
    )
    return [r.text for r in replies]


@handles(tasknames.ON_PUSH)
def l3_reset_on_push(installation_id: int, repo: str, ref: str, before: str, after: str, **_: Any) -> None:
    """A push to a branch moves its PR's head: L3 sign-offs on the old head are reset (or carried)."""
    if (
        ref.startswith("refs/heads/")
        and not ref.startswith("refs/heads/forksync/")
        and ZERO_SHA not in (before, after)
    ):
        l3_reset.delay(installation_id=installation_id, repo=repo, before=before, after=after)
