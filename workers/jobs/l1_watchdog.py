"""The executor of the L1 staleness watchdog (beat, ``forksync.l1_watchdog``): read the store and
GitHub once, let ``workers.testing.staleness.plan`` decide, then act through the GitHub adapter."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime

from core.config import CONFIG_PATH, ConfigError, load_repo_config
from core.github.records import CheckOutput
from core.github.roles import GitHubPort
from core.render import l1 as render
from core.render import marker
from core.store import Store
from workers.adapters.state import SeriesStore
from workers.testing.staleness import (
    TRUNK_PUSH_SERIES,
    Action,
    ConcludeTimedOut,
    PendingChecks,
    ReportQueue,
    ReportTrunkSilent,
    TrunkPush,
    plan,
)
from workers.testing.triage import TrunkResults

log = logging.getLogger(__name__)

INFRA_LABEL = "infrastructure"


def run_l1_watchdog(store: Store, github_for: Callable[[int], GitHubPort], *, trunk_silent_s: float,
                    now: float | None = None) -> list[Action]:
    """One watchdog pass; returns the actions it took (checks already completed are just forgotten)."""
    now = time.time() if now is None else now
    pending = PendingChecks(store)
    series = SeriesStore(store)
    pushes: list[TrunkPush] = []
    last: dict[str, float | None] = {}
    for name in series.names(TRUNK_PUSH_SERIES):
        repo = name[len(TRUNK_PUSH_SERIES):]
        points = series.series(name, limit=200)
        if not points:
            continue
        github = github_for(int(points[-1].get("installation_id") or 0))
        trunk_ref = f"refs/heads/{_trunk_branch(github, repo)}"
        on_trunk = [p for p in points if p.get("ref") == trunk_ref]
        if on_trunk:
            p = on_trunk[-1]
            pushes.append(TrunkPush(repo, str(p["sha"]), float(p["t"]), int(p.get("installation_id") or 0)))
            last[repo] = TrunkResults(store, repo).last_recorded_at()
    actions = plan(pending.all(), pushes, last, now=now, trunk_silent_s=trunk_silent_s)
    done: list[Action] = []
    concluded: set[tuple[str, int]] = set()
    for action in actions:
        if isinstance(action, ConcludeTimedOut):
            if _conclude(github_for(action.check.installation_id), action):
                concluded.add((action.check.repo, action.check.check_run_id))
                done.append(action)
            pending.forget(action.check.repo, action.check.check_run_id)
        elif isinstance(action, ReportQueue):
            checks = [c for c in action.checks if (c.repo, c.check_run_id) in concluded]
            if checks:
                title, body = render.stale_queue_issue(
                    action.queue, [(c.repo, c.check_run_id, c.head_sha, (now - c.started_at) / 60) for c in checks])
                github_for(action.installation_id).ensure_issue(
                    action.repo, marker=marker("infra-queue", action.queue), title=title, body=body,
                    labels=[INFRA_LABEL])
                done.append(action)
        elif isinstance(action, ReportTrunkSilent):
            recorded = (datetime.fromtimestamp(action.last_recorded_at, UTC).strftime("%Y-%m-%d %H:%M UTC")
                        if action.last_recorded_at else None)
            title, body = render.trunk_silent_issue(action.push.repo, action.push.sha, action.waited_s / 60, recorded)
            github_for(action.push.installation_id).ensure_issue(
                action.push.repo, marker=marker("infra-trunk-silent", action.push.repo), title=title, body=body,
                labels=[INFRA_LABEL])
            done.append(action)
    return done


def _conclude(github: GitHubPort, action: ConcludeTimedOut) -> bool:
    """Conclude the check ``timed_out`` unless it completed meanwhile (then False: nothing to do)."""
    check = action.check
    runs = [r for r in github.list_check_runs(check.repo, check.head_sha, name=render.L1_CHECK)
            if r.id == check.check_run_id]
    if not runs or runs[0].status == "completed":
        return False
    github.update_check_run(check.repo, check.check_run_id, status="completed", conclusion="timed_out",
                            output=CheckOutput(render.stale_check_title(check.queue),
                                               f"{marker('l1', check.head_sha)}\n{action.reason}"))
    log.warning("L1 watchdog: %s check %s on %s timed out waiting on %s", check.repo, check.check_run_id,
                check.head_sha[:12], check.queue)
    return True


def _trunk_branch(github: GitHubPort, repo: str) -> str:
    """The trunk branch the default branch's config names (``fork.branch``; ``main`` without one)."""
    try:
        text = github.read_file(repo, CONFIG_PATH)
        return load_repo_config(text, f"{CONFIG_PATH} on the default branch").fork.branch if text else "main"
    except ConfigError:
        return "main"
