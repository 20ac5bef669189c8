"""The executor of the L1 staleness watchdog (beat, ``forksync.l1_watchdog``): read the store and
GitHub once (pending checks, trunk pushes, and the open PRs of every repository that sent
webhooks lately), let ``workers.testing.staleness.plan`` decide, then act through the GitHub adapter."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from core.config import CONFIG_PATH, ConfigError, RepoConfig, load_repo_config
from core.github.records import CheckOutput
from core.github.roles import GitHubPort
from core.render import l1 as render
from core.render import marker
from core.store import Store, deliveries
from workers.adapters.state import SeriesStore
from workers.jobs.l1_job import PR_EXTERNAL_ID
from workers.testing.staleness import (
    TRUNK_PUSH_SERIES,
    Action,
    ConcludeNeverStarted,
    ConcludeTimedOut,
    PendingChecks,
    ReportQueue,
    ReportTrunkSilent,
    TrunkPush,
    UncheckedHead,
    plan,
)
from workers.testing.triage import TrunkResults

log = logging.getLogger(__name__)

INFRA_LABEL = "infrastructure"


# Repositories whose webhooks arrived this recently are searched for PR heads with no L1 check
# (the delivery log keeps a week: workers/jobs/recover_commands.py).
RECENT_S = 7 * 24 * 3600
# GitHub sets a PR's updated_at before it sends the webhook that says so: a PR counts as changed
# while its webhooks reach us when it changed at most this long before the first delivery logged.
WEBHOOK_LAG_S = 300


def run_l1_watchdog(
    store: Store, github_for: Callable[[int], GitHubPort], *, trunk_silent_s: float, now: float | None = None
) -> list[Action]:
    """One watchdog pass; returns the actions it took (checks already completed are just forgotten)."""
    now = time.time() if now is None else now
    pending = PendingChecks(store)
    waiting = pending.all()
    series = SeriesStore(store)
    repos: dict[str, int] = {c.repo: c.installation_id for c in waiting}
    for repo, installation_id in deliveries.recent_repositories(store, now - RECENT_S):
        repos[repo] = installation_id
    pushes: list[TrunkPush] = []
    last: dict[str, float | None] = {}
    points_of: dict[str, list[dict[str, Any]]] = {}
    for name in series.names(TRUNK_PUSH_SERIES):
        points = series.series(name, limit=200)
        if points:
            repo = name[len(TRUNK_PUSH_SERIES) :]
            points_of[repo] = points
            repos.setdefault(repo, int(points[-1].get("installation_id") or 0))
    unchecked: list[UncheckedHead] = []
    for repo, installation_id in sorted(repos.items()):
        github = github_for(installation_id)
        config = _trunk_config(github, repo)
        points = points_of.get(repo, [])
        trunk_ref = f"refs/heads/{config.fork.branch}"
        on_trunk = [p for p in points if p.get("ref") == trunk_ref]
        if on_trunk:
            p = on_trunk[-1]
            pushes.append(TrunkPush(repo, str(p["sha"]), float(p["t"]), int(p.get("installation_id") or 0)))
            last[repo] = TrunkResults(store, repo).last_recorded_at()
        since = deliveries.first_accepted(store, repo)
        if since is not None:  # only while its webhooks reach us: a PR older than that never had a job
            unchecked += _unchecked_heads(github, repo, installation_id, config, now, since - WEBHOOK_LAG_S)
    actions = plan(waiting, pushes, last, now=now, trunk_silent_s=trunk_silent_s, unchecked=unchecked)
    done: list[Action] = []
    concluded: dict[tuple[str, str], int] = {}  # (repo, head sha) -> the check run concluded there
    for action in actions:
        if isinstance(action, ConcludeTimedOut):
            if _conclude(github_for(action.check.installation_id), action):
                concluded[(action.check.repo, action.check.head_sha)] = action.check.check_run_id
                done.append(action)
            pending.forget(action.check.repo, action.check.check_run_id)
        elif isinstance(action, ConcludeNeverStarted):
            created = _create_timed_out(github_for(action.head.installation_id), action)
            if created is not None:
                concluded[(action.head.repo, action.head.head_sha)] = created
                done.append(action)
        elif isinstance(action, ReportQueue):
            checks = [
                (c, concluded[(c.repo, c.head_sha)])
                for c in action.checks
                if (c.repo, c.head_sha) in concluded
            ]
            if checks:
                title, body = render.stale_queue_issue(
                    action.queue, [(c.repo, cid, c.head_sha, (now - c.started_at) / 60) for c, cid in checks]
                )
                github_for(action.installation_id).ensure_issue(
                    action.repo,
                    marker=marker("infra-queue", action.queue),
                    title=title,
                    body=body,
                    labels=[INFRA_LABEL],
                )
                done.append(action)
        elif isinstance(action, ReportTrunkSilent):
            recorded = (
                datetime.fromtimestamp(action.last_recorded_at, UTC).strftime("%Y-%m-%d %H:%M UTC")
                if action.last_recorded_at
                else None
            )
            title, body = render.trunk_silent_issue(
                action.push.repo, action.push.sha, action.waited_s / 60, recorded
            )
            github_for(action.push.installation_id).ensure_issue(
                action.push.repo,
                marker=marker("infra-trunk-silent", action.push.repo),
                title=title,
                body=body,
                labels=[INFRA_LABEL],
            )
            done.append(action)
    return done


def _unchecked_heads(
    github: GitHubPort, repo: str, installation_id: int, config: RepoConfig, now: float, since: float
) -> list[UncheckedHead]:
    """The open PR heads of ``repo`` changed since ``since`` and past their deadline with no
    ``forksync / L1`` check run (one listing of the open PRs, then one check-run read per PR
    past its deadline)."""
    wait_s = sum(s.timeout for s in config.l1.suites) + config.l1.stale_margin_minutes * 60
    found = []
    for pull in github.open_pull_requests(repo):
        if not pull.updated_at or pull.updated_at + wait_s > now:
            continue  # unknown, or recent: its job may still be on its way
        if pull.updated_at < since:
            continue  # last changed before its webhooks reached us (installed since): no job was ever due
        if any(
            r.head_sha == pull.head_sha
            for r in github.list_check_runs(repo, pull.head_sha, name=render.L1_CHECK)
        ):
            continue
        found.append(
            UncheckedHead(
                repo, pull.number, pull.head_sha, installation_id, pull.updated_at, pull.updated_at + wait_s
            )
        )
    return found


def _create_timed_out(github: GitHubPort, action: ConcludeNeverStarted) -> int | None:
    """Create the missing check concluded ``timed_out`` (None: one appeared meanwhile)."""
    head = action.head
    if any(
        r.head_sha == head.head_sha
        for r in github.list_check_runs(head.repo, head.head_sha, name=render.L1_CHECK)
    ):
        return None
    check = github.create_check_run(
        head.repo,
        name=render.L1_CHECK,
        head_sha=head.head_sha,
        status="completed",
        conclusion="timed_out",
        output=CheckOutput(
            render.never_started_title(action.queue), f"{marker('l1', head.head_sha)}\n{action.reason}"
        ),
        external_id=f"{PR_EXTERNAL_ID}{head.number}",
    )
    log.warning(
        "L1 watchdog: %s#%d head %s never got an L1 check; concluded timed_out",
        head.repo,
        head.number,
        head.head_sha[:12],
    )
    return check.id


def _conclude(github: GitHubPort, action: ConcludeTimedOut) -> bool:
    """Conclude the check ``timed_out`` unless it completed meanwhile (then False: nothing to do)."""
    check = action.check
    runs = [
        r
        for r in github.list_check_runs(check.repo, check.head_sha, name=render.L1_CHECK)
        if r.id == check.check_run_id
    ]
    if not runs or runs[0].status == "completed":
        return False
    github.update_check_run(
        check.repo,
        check.check_run_id,
        status="completed",
        conclusion="timed_out",
        output=CheckOutput(
            render.stale_check_title(check.queue), f"{marker('l1', check.head_sha)}\n{action.reason}"
        ),
    )
    log.warning(
        "L1 watchdog: %s check %s on %s timed out waiting on %s",
        check.repo,
        check.check_run_id,
        check.head_sha[:12],
        check.queue,
    )
    return True


def _trunk_config(github: GitHubPort, repo: str) -> RepoConfig:
    """The config on the default branch (its ``fork.branch``, suites and margin); the defaults
    without one, or when it does not load (the L1 job says why on its own check)."""
    try:
        text = github.read_file(repo, CONFIG_PATH)
        return load_repo_config(text, f"{CONFIG_PATH} on the default branch") if text else RepoConfig()
    except ConfigError:
        return RepoConfig()
