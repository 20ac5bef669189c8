"""The L2 jobs a worker runs: nightly trunk benchmarks with tracking issues, on-demand bisection, L3 runs.

Each job fetches the fork into the worker's own git cache (``l2:owner/name``, locked for the
job), reads ``.github/forksync.yml`` at the commit it tests, runs the engine in
``workers/testing`` and publishes through the GitHub adapter; what the nightly files, stores and
proposes is planned by ``workers/testing/l2_plan.py`` and executed here (``_apply_outcome``). The Celery tasks in
``workers/tasks/l2.py`` are thin shells around these functions, which tests call directly.
``store``: the shared SQL store (``WorkerSettings.store()``); default the embedded one in ``data_dir``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.config import CONFIG_PATH, ConfigError, RepoConfig, load_repo_config
from core.github.roles import GitHubPort
from core.render.l3 import head_not_on_branch
from core.store import Store, open_store
from workers.adapters.gitcache import GitCache
from workers.engine.git import Repository
from workers.jobs.revert import propose_revert
from workers.testing.l2 import bisect_benchmark, regression_records, run_trunk
from workers.testing.l2_plan import Action as L2Action
from workers.testing.l2_plan import Answer as BisectAnswer
from workers.testing.l2_plan import (
    Bisect,
    BisectFacts,
    StoreRegressions,
    Track,
    plan_bisect,
    plan_bisect_answer,
    plan_outcome,
)
from workers.testing.l3 import Reply
from workers.testing.l3_run import run_l3_workload
from workers.testing.results import ResultStore
from workers.testing.tracking import execute as execute_tracking
from workers.testing.tracking import known_issues


def cache_key(repo: str) -> str:
    # Its own cache: an L2 job holds the lock for as long as its benchmarks (and bisection) run.
    return f"l2:{repo}"


@dataclass(frozen=True)
class L2JobResult:
    status: str  # done | config_error | no_benchmarks | no_trunk
    sha: str | None = None
    benchmarks: dict[str, str] = field(default_factory=dict)  # name -> verdict
    culprits: dict[str, str] = field(default_factory=dict)  # name -> culprit sha
    issues: tuple[int, ...] = ()
    message: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "sha": self.sha,
            "benchmarks": self.benchmarks,
            "culprits": self.culprits,
            "issues": list(self.issues),
            "message": self.message,
        }


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def config_at(cache: Repository, rev: str) -> RepoConfig:
    """The repository config at ``rev`` (defaults when the file is absent); ConfigError when invalid."""
    spec = f"{rev}:{CONFIG_PATH}"
    if not cache.ok("cat-file", "-e", spec):
        return RepoConfig()
    return load_repo_config(
        cache.git("show", spec).decode("utf-8", "replace"), f"{CONFIG_PATH} at {rev[:12]}"
    )


def _trunk(cache: Repository, sha: str | None) -> tuple[str | None, RepoConfig]:
    """The commit to test and the config there: ``sha``, or the tip of the configured trunk branch."""
    if sha:
        return sha, config_at(cache, sha)
    for guess in ("HEAD", "refs/heads/main", "refs/heads/master"):
        tip = cache.rev_parse(guess)
        if tip:
            config = config_at(cache, tip)
            trunk = cache.rev_parse(f"refs/heads/{config.fork.branch}")
            return (trunk, config_at(cache, trunk)) if trunk else (None, config)
    return None, RepoConfig()


def run_l2_job(
    github: GitHubPort,
    caches: GitCache,
    data_dir: Path,
    repo: str,
    *,
    clone_url: str,
    token: str | None,
    sha: str | None = None,
    only: tuple[str, ...] = (),
    now: str | None = None,
    store: Store | None = None,
) -> L2JobResult:
    """Run the L2 benchmarks at trunk (or ``sha``), record them, bisect new breaks, file/update issues."""
    at = now or _now()
    with caches.open(cache_key(repo)) as cache:
        caches.fetch(cache, clone_url, ["+refs/heads/*:refs/heads/*"], token)
        try:
            target, config = _trunk(cache, sha)
        except ConfigError as exc:
            return L2JobResult("config_error", sha, message=exc.one_line())
        if target is None or cache.rev_parse(target) is None:
            return L2JobResult("no_trunk", sha, message=f"no trunk branch {config.fork.branch!r} in {repo}")
        if not config.l2.benchmarks:
            return L2JobResult("no_benchmarks", target, message="no l2.benchmarks in the config")
        results = ResultStore(store or open_store(None, data_dir))
        outcomes = run_trunk(cache, repo, target, config, results, recorded_at=at, only=only)
    issues: list[int] = []
    benches = {b.name: b for b in config.l2.benchmarks}
    proposals: list[
        tuple[str, str, int]
    ] = []  # (culprit, subject, tracking issue), proposed once the cache is free
    for outcome in outcomes:
        # Known issues are read again for each outcome: an earlier one may have filed an issue
        # this one updates (the same infrastructure failure).
        planned = plan_outcome(
            outcome, benches[outcome.run.benchmark], known_issues(github, repo), at, config.l2.recover_after
        )
        issues += _apply_outcome(github, repo, results, planned, proposals)
    if proposals:
        # A regression with a culprit gets a real proposed fix: its revert PR (never merged by us).
        with caches.open(cache_key(repo)) as cache:
            tip = cache.rev_parse(f"refs/heads/{config.fork.branch}") or target
            for culprit, subject, number in proposals:
                propose_revert(
                    github,
                    cache,
                    repo,
                    culprit=culprit,
                    subject=subject,
                    trunk_branch=config.fork.branch,
                    trunk_sha=tip,
                    issue=number,
                )
    return L2JobResult(
        "done",
        target,
        benchmarks={o.run.benchmark: o.verdict.status for o in outcomes},
        culprits={o.run.benchmark: o.bisect.culprit for o in outcomes if o.bisect and o.bisect.culprit},
        issues=tuple(issues),
    )


def _apply_outcome(
    github: GitHubPort,
    repo: str,
    results: ResultStore,
    actions: list[L2Action],
    proposals: list[tuple[str, str, int]],
) -> list[int]:
    """The executor of ``plan_outcome``: the issues touched (in order); revert PRs queued in ``proposals``."""
    touched: list[int] = []
    for action in actions:
        if isinstance(action, Track):
            touched = execute_tracking(github, repo, action.actions)
        elif isinstance(action, StoreRegressions):
            filed = touched[action.issue_of] if action.issue_of is not None else None
            results.record_regressions(repo, regression_records(action.outcome, filed, time.time()))
        else:
            proposals.append((action.culprit, action.subject, touched[action.issue_of]))
    return touched


def run_bisect_job(
    github: GitHubPort,
    caches: GitCache,
    data_dir: Path,
    repo: str,
    benchmark: str,
    *,
    clone_url: str,
    token: str | None,
    good: str | None = None,
    bad: str | None = None,
    issue_number: int | None = None,
    store: Store | None = None,
) -> str:
    """On-demand bisection of one benchmark (``/bisect``); answers on ``issue_number`` and returns the text.

    ``good`` defaults to the newest good run in the result store and ``bad`` to the newest run;
    a metric regression is judged against the stored baseline as the nightly would. Read
    :class:`BisectFacts`, plan (``l2_plan.plan_bisect``, ``plan_bisect_answer``), act.
    """
    results = ResultStore(store or open_store(None, data_dir))
    with caches.open(cache_key(repo)) as cache:
        caches.fetch(cache, clone_url, ["+refs/heads/*:refs/heads/*"], token)
        facts = _bisect_facts(cache, results, repo, benchmark, good, bad, issue_number)
        answer = ""
        for action in plan_bisect(facts):
            if isinstance(action, Bisect):
                report = bisect_benchmark(
                    cache, action.bench, action.good, action.bad, action.config, action.verdict
                )
                answer = _answer(github, repo, plan_bisect_answer(benchmark, report, issue_number))
            else:
                answer = _answer(github, repo, [action])
    return answer


def _bisect_facts(
    cache: Repository,
    results: ResultStore,
    repo: str,
    benchmark: str,
    good: str | None,
    bad: str | None,
    issue_number: int | None,
) -> BisectFacts:
    history = tuple(results.history(repo, benchmark))
    last_good = results.last_good(repo, benchmark)
    good_sha = good or (last_good.sha if last_good else None)
    bad_sha = bad or (history[-1].sha if history else None)
    facts = BisectFacts(benchmark, good_sha, bad_sha, None, history=history, issue_number=issue_number)
    try:
        config = config_at(cache, bad_sha) if bad_sha and cache.rev_parse(bad_sha) else None
    except ConfigError as exc:
        return replace(facts, config_error=exc.one_line())
    return replace(facts, config=config)


def _answer(github: GitHubPort, repo: str, answers: list[BisectAnswer]) -> str:
    """The executor of an :class:`l2_plan.Answer`: commented on its issue (when there is one), returned."""
    text = ""
    for answer in answers:
        if answer.issue_number is not None:
            github.create_comment(repo, answer.issue_number, answer.text)
        text = answer.text
    return text


def run_l3_job(
    github: GitHubPort,
    caches: GitCache,
    repo: str,
    head_sha: str,
    workload: str,
    *,
    clone_url: str,
    token: str | None,
) -> Reply:
    """The l2-queue half of ``/l3``: fetch, read the config at the PR head, then plan and run the
    workload (``workers/testing/l3_run.py``); a head it cannot run is said on the workload's check."""
    with caches.open(cache_key(repo)) as cache:
        # Branches of this repository only: an outside fork's PR code never runs on our runners
        # until a maintainer pushes it here (the same rule as L1).
        caches.fetch(cache, clone_url, ["+refs/heads/*:refs/heads/*"], token)
        cannot_run = None
        if cache.rev_parse(head_sha) is None:
            cannot_run = head_not_on_branch(head_sha, repo, workload)
        else:
            try:
                config = config_at(cache, head_sha)
            except ConfigError as exc:
                cannot_run = exc.one_line()
        if cannot_run is not None:
            config = _any_config(cache)
        return run_l3_workload(github, repo, head_sha, workload, config, cache.path, cannot_run=cannot_run)


def _any_config(cache: Repository) -> RepoConfig:
    """The trunk's config, to name a workload when the commit's own cannot be read."""
    try:
        return _trunk(cache, None)[1]
    except ConfigError:
        return RepoConfig()
