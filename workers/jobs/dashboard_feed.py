"""The dashboard feed of one fork, assembled by the workers (see bot/dashboard/feed.py).

Two halves, as everywhere: :func:`engine_facts` and :func:`assemble` are pure (ledger facts,
what was posted, the series and the test results in; a ``ForkFeed`` out); :func:`refresh`
gathers those inputs from the stores (and, when it has the full adapter, from GitHub: the L1
check on each open PR's head, the open tracking issues) and writes the feed.

Sources: the ingest's points in the worker state store (``metrics:<repo>``, ``snapshots:<repo>``),
the last ingest's facts (kept beside the feed, ``FeedStore.facts``), and the shared SQL store (``core/store``: trunk L1
suite runs and L2 runs of this repository).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from core.config import RepoConfig
from core.dashboard.feed import (
    Decision,
    ForkFeed,
    InFlight,
    L2Metric,
    L2Point,
    LandedPick,
    Regression,
    SeriesPoint,
    Thresholds,
    TrackingIssue,
    TrunkRun,
)
from core.dashboard.store import FeedStore

log = logging.getLogger(__name__)

RESOLVED_TAGS = ("[RESOLVED]", "[CONFLICTS]")
_RESOLVER = re.compile(r"(?im)^(?:forksync-)?resolved-by:\s*(deterministic|memory|agent|human)\b")
_CONFLICT_SECTION = re.compile(r"(?im)^\s*(?:#+\s*)?Conflict Resolution:?\s*$")
SERIES_POINTS = 2000


@dataclass(frozen=True)
class ForkCommit:
    sha: str
    committer_time: int
    message: str


def classify_pick(subject: str, message: str, upstream: int) -> tuple[str, bool, str | None]:
    """(way, resolved, resolver) of a pick from its message.

    A pick carrying several upstream commits, or titled ``[BUNDLE]``, came in a bundle. It was
    resolved when its title says ``[RESOLVED]`` / ``[CONFLICTS]`` or its body has a ``Conflict
    Resolution:`` section; the resolver is the ``Resolved-By:`` trailer forksync writes
    (deterministic, memory, agent), and a human when there is none.
    """
    way = "bundle" if upstream > 1 or "[BUNDLE]" in subject else "single"
    resolved = any(tag in subject for tag in RESOLVED_TAGS) or bool(_CONFLICT_SECTION.search(message))
    match = _RESOLVER.search(message)
    resolver = match.group(1).lower() if match else ("human" if resolved else None)
    if match:
        resolved = True
    return way, resolved, resolver


def engine_facts(ledger: Any, commits: Mapping[str, ForkCommit]) -> dict[str, Any]:
    """The ledger facts the dashboard needs, as JSON: picks landed, decisions, both pins' ages."""
    picks = []
    for pick in ledger.picks:
        commit = commits.get(pick.sha)
        way, resolved, resolver = classify_pick(
            pick.subject, commit.message if commit else "", len(pick.upstream)
        )
        picks.append(
            LandedPick(
                sha=pick.sha,
                t=float(commit.committer_time if commit else 0),
                upstream=len(pick.upstream),
                way=way,
                resolved=resolved,
                resolver=resolver,
                reverted=pick.reverted_by is not None,
                subject=pick.subject[:120],
            )
        )
    decisions = [
        Decision(e.sha, e.subject[:120], e.disposition.value, e.reason, e.pr_number)
        for e in ledger.entries
        if e.disposition.value in ("deferred", "wont_port")
    ]
    m = ledger.metrics
    tip = ledger.entry(m.upstream_tip)
    pin = ledger.entry(m.contiguous_pin)
    pin_days = 0.0
    if tip is not None and m.contiguous_pin != m.upstream_tip:
        pin_time = (
            pin.committer_time
            if pin is not None
            else min((e.committer_time for e in ledger.entries), default=tip.committer_time)
        )
        pin_days = max(0, tip.committer_time - pin_time) / 86400.0
    return {
        "picks": [p.__dict__ for p in picks],
        "decisions": [d.__dict__ for d in decisions],
        "point": {
            "frontier": m.frontier,
            "contiguous_pin": m.contiguous_pin,
            "pin_days_behind": round(pin_days, 3),
            "urgent_carried": len(m.urgent),
        },
    }


LANDED_WINDOW_S = 62 * 86400  # how far back landed changes are kept for digests (two monthly periods)


def landed_changes(
    ledger: Any, commits: Mapping[str, ForkCommit], paths: Mapping[str, tuple[str, ...]], since: float
) -> list[dict[str, Any]]:
    """Upstream commits carried by fork commits made since ``since``: what a digest reports."""
    out = []
    for pick in ledger.picks:
        commit = commits.get(pick.sha)
        if commit is None or commit.committer_time < since or pick.reverted_by is not None:
            continue
        way, resolved, resolver = classify_pick(pick.subject, commit.message, len(pick.upstream))
        for sha in pick.upstream:
            entry = ledger.entry(sha)
            out.append(
                {
                    "sha": sha,
                    "pr": entry.pr_number if entry else None,
                    "subject": (entry.subject if entry else pick.subject)[:120],
                    "fork_sha": pick.sha,
                    "t": float(commit.committer_time),
                    "way": way,
                    "resolved": resolved,
                    "resolver": resolver,
                    "paths": list(paths.get(sha, ())),
                }
            )
    return out


def read_paths(repo: Any, shas: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The files each commit changes (one ``git log --no-walk --name-only`` over stdin)."""
    if not shas:
        return {}
    out = repo.git(
        "log",
        "--no-walk=unsorted",
        "--stdin",
        "--name-only",
        "--format=%x1e%H",
        input=("\n".join(dict.fromkeys(shas)) + "\n").encode(),
    ).decode("utf-8", "replace")
    result: dict[str, tuple[str, ...]] = {}
    for record in out.split("\x1e"):
        lines = [line for line in record.splitlines() if line.strip()]
        if lines:
            result[lines[0]] = tuple(lines[1:])
    return result


def read_fork_commits(fork: Any, shas: Sequence[str]) -> dict[str, ForkCommit]:
    """Committer time and message of each fork commit (one ``git log --no-walk`` over stdin)."""
    if not shas:
        return {}
    out = fork.git(
        "log",
        "--no-walk=unsorted",
        "--stdin",
        "--format=%H%x1f%ct%x1f%B%x1e",
        input=("\n".join(shas) + "\n").encode(),
    ).decode("utf-8", "replace")
    commits = {}
    for record in out.split("\x1e"):
        parts = record.strip("\n").split("\x1f")
        if len(parts) == 3 and parts[0]:
            commits[parts[0]] = ForkCommit(parts[0], int(parts[1]), parts[2])
    return commits


def series_points(points: Sequence[Mapping[str, Any]]) -> tuple[SeriesPoint, ...]:
    """Ingest and snapshot points (``t`` + figures) as series, in time order, one per moment."""
    out: dict[float, SeriesPoint] = {}
    for p in points:
        if "days_behind" not in p or "t" not in p:
            continue  # an ingest that failed records no figures
        t = float(p["t"])
        out[t] = SeriesPoint(
            t=t,
            days_behind=float(p["days_behind"]),
            backlog=int(p.get("backlog", 0)),
            pending=int(p.get("pending", 0)),
            frontier=str(p.get("frontier") or ""),
            contiguous_pin=str(p.get("contiguous_pin") or ""),
            urgent=int(p.get("urgent", 0)) + int(p.get("urgent_carried", 0)),
            pin_days_behind=float(p.get("pin_days_behind", p["days_behind"])),
        )
    return tuple(out[t] for t in sorted(out))[-SERIES_POINTS:]


def in_flight(
    facts: Mapping[str, Any],
    previous: ForkFeed | None,
    now: float,
    l1: Mapping[str, tuple[str, str | None]],
    owners: Mapping[str, tuple[str, ...]],
    fork_url: str = "",
) -> tuple[InFlight, ...]:
    """The open PRs and issues of the last ingest; ``opened_at`` kept from the previous feed."""
    seen = {i.key: i.opened_at for i in (previous.in_flight if previous else ())}
    items = []
    for raw in facts.get("in_flight", ()):
        head = raw.get("head_sha")
        state, l1_url = l1.get(head, ("none", None)) if head else ("none", None)
        conflicts = tuple(raw.get("conflicts", ()))
        asked = tuple(dict.fromkeys(o for path in conflicts for o in owners_of(path, owners)))
        url, number = raw.get("url"), raw.get("number")
        pull = bool(raw.get("pull", raw["kind"] != "chain"))
        if not (isinstance(url, str) and url.startswith(("https://", "http://"))):
            url = f"{fork_url}/{'pull' if pull else 'issues'}/{number}" if fork_url and number else None
        items.append(
            InFlight(
                kind=raw["kind"],
                key=raw["key"],
                title=raw["title"],
                number=number,
                url=url,
                size=int(raw.get("size", 0)),
                opened_at=seen.get(raw["key"], now),
                l1=state,
                l1_url=l1_url,
                head_sha=head,
                conflicts=conflicts,
                asked=asked,
                pull=pull,
            )
        )
    return tuple(items)


def owners_of(path: str, owners: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    """Owners whose pattern covers ``path`` (``owners:`` map of the config; a trailing / is a subtree)."""
    from workers.engine.paths import path_matches

    out: list[str] = []
    for pattern, who in owners.items():
        if path_matches(path, pattern):
            out.extend(w for w in who if w not in out)
    return tuple(out)


def l2_metrics(results: Any, repo: str, config: RepoConfig) -> tuple[L2Metric, ...]:
    """Each configured benchmark metric's history, baseline and regressions, from the L2 store.

    Regressions are those the L2 job stored with its runs (culprit, bisection range and steps,
    tracking issue); a failed run's is shown on each metric of its benchmark. A regressed run that
    starts a streak with nothing stored (recorded before regressions were kept) is still listed,
    with no culprit.
    """
    from workers.testing.regression import baseline, good_values

    out = []
    names = {b.name for b in config.l2.benchmarks} | set(results.benchmarks(repo))
    stored = results.regressions(repo)
    for bench_name in sorted(names):
        bench = next((b for b in config.l2.benchmarks if b.name == bench_name), None)
        history = results.history(repo, bench_name, limit=200)
        metric_names = (
            [m.name for m in bench.metrics] if bench else sorted({k for r in history for k in r.metrics})
        )
        mine = [r for r in stored if r.benchmark == bench_name]
        if not metric_names and mine:
            metric_names = ["exit status"]  # a benchmark without metrics still shows its failures
        for name in metric_names:
            rule = next((m for m in bench.metrics if m.name == name), None) if bench else None
            points = tuple(
                L2Point(_epoch(r.recorded_at), r.sha, float(r.metrics[name]), r.verdict)
                for r in history
                if name in r.metrics
            )
            base = baseline(good_values(history, name, config.l2.baseline_runs))
            times = {r.sha: _epoch(r.recorded_at) for r in history}  # a failed run has no point, but a time
            regressions = [
                Regression(
                    r.first_bad,
                    r.delta_pct,
                    culprit=r.culprit,
                    t=times.get(r.first_bad) or r.recorded_at,
                    kind=r.kind,
                    good=r.good,
                    steps=r.bisect_steps,
                    candidates=r.candidates,
                    status=r.bisect_status,
                    tracking=r.tracking_issue,
                    culprit_subject=r.culprit_subject[:120],
                    note=r.note[:300],
                )
                for r in mine
                if r.metric in (name, "")
            ]
            known = {r.sha for r in regressions}
            prev = "ok"
            threshold = rule.threshold if rule else 5.0
            lower = rule is not None and rule.direction == "lower"
            for p in points:
                if (
                    p.verdict == "regressed"
                    and prev != "regressed"
                    and p.sha not in known
                    and base is not None
                    and base.median
                ):
                    delta = 100.0 * (p.value - base.median) / abs(base.median)
                    if (
                        (delta > threshold) if lower else (delta < -threshold)
                    ):  # this metric is the one that regressed
                        regressions.append(Regression(p.sha, delta, t=p.t))
                prev = p.verdict
            regressions.sort(key=lambda r: r.t)
            out.append(
                L2Metric(
                    bench_name,
                    name,
                    rule.direction if rule else "higher",
                    rule.threshold if rule else 5.0,
                    base.median if base else None,
                    points,
                    tuple(regressions),
                )
            )
    return tuple(out)


def _epoch(stamp: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def trunk_runs(store: Any, repo: str, limit: int = 400) -> tuple[TrunkRun, ...]:
    """Recent trunk L1 suite runs of ``repo`` from the shared store (the L1 workers write them)."""
    from sqlalchemy import func, select

    from core.store.models import SuiteRunRow, TestResultRow

    with store.session() as db:
        runs = list(
            db.execute(
                select(SuiteRunRow.recorded_at, SuiteRunRow.suite, SuiteRunRow.commit_sha, SuiteRunRow.status)
                .where(SuiteRunRow.repo == repo)
                .order_by(SuiteRunRow.seq.desc())
                .limit(limit)
            ).all()
        )
        failing = {
            (sha, suite): int(n)
            for sha, suite, n in db.execute(
                select(TestResultRow.commit_sha, TestResultRow.suite, func.count())
                .where(TestResultRow.repo == repo, TestResultRow.outcome.in_(("failed", "error")))
                .group_by(TestResultRow.commit_sha, TestResultRow.suite)
            ).all()
        }
    return tuple(
        TrunkRun(
            float(t), suite, sha, TRUNK_STATUS.get(status, "infra"), failures=failing.get((sha, suite), 0)
        )
        for t, suite, sha, status in reversed(runs)
    )


# Suite statuses of the L1 engine (workers/testing/suites.py) as the dashboard's four classes.
TRUNK_STATUS = {
    "passed": "passed",
    "failed": "broken",
    "error": "broken",
    "flaky": "flaky",
    "infra": "infra",
    "cancelled": "infra",
    "timeout": "infra",
    "timed_out": "infra",
    "omitted": "infra",
    "skipped": "infra",
}


def assemble(
    repo: str,
    config: RepoConfig,
    *,
    now: float,
    points: Sequence[Mapping[str, Any]],
    facts: Mapping[str, Any],
    previous: ForkFeed | None,
    private: bool,
    web_url: str = "https://github.com",
    l1: Mapping[str, tuple[str, str | None]] | None = None,
    trunk: Sequence[TrunkRun] = (),
    tracking: Sequence[TrackingIssue] = (),
    l2: Sequence[L2Metric] = (),
) -> ForkFeed:
    """The feed from its parts (pure)."""
    from workers.engine.pair import normalise_web_url

    upstream = normalise_web_url(config.upstream.url) if config.upstream.url else ""
    return ForkFeed(
        repo=repo,
        updated_at=now,
        private=private,
        public_dashboard=config.dashboard.public,
        fork_url=f"{web_url.rstrip('/')}/{repo}",
        upstream_url=upstream or "",
        thresholds=Thresholds(config.dashboard.days_behind_bad, config.dashboard.backlog_bad),
        series=series_points(points),
        in_flight=in_flight(facts, previous, now, l1 or {}, config.owners, f"{web_url.rstrip('/')}/{repo}"),
        decisions=tuple(Decision(**d) for d in facts.get("decisions", ())),
        picks=tuple(LandedPick(**p) for p in facts.get("picks", ())),
        trunk=tuple(replace(r, url=r.url or f"{web_url.rstrip('/')}/{repo}/commit/{r.sha}") for r in trunk),
        tracking=tuple(tracking),
        l2=tuple(l2),
    )


def new_regressions(previous: ForkFeed | None, feed: ForkFeed) -> list[str]:
    """One message per L2 regression the new feed has and the previous did not (for the notify webhook)."""
    seen = {(m.benchmark, m.metric, r.sha) for m in (previous.l2 if previous else ()) for r in m.regressions}
    out = []
    for m in feed.l2:
        for r in m.regressions:
            if (m.benchmark, m.metric, r.sha) not in seen:
                culprit = f", culprit {r.culprit[:10]}" if r.culprit else ""
                url = r.bisection_url or (
                    f"{feed.fork_url}/issues/{r.tracking}" if r.tracking and feed.fork_url else None
                )
                link = f" <{url}|tracking issue>" if url else ""
                change = f"{r.delta_pct:+.1f}%" if r.delta_pct is not None else "failed"
                out.append(
                    f"*{feed.repo}* L2 regression: {m.benchmark} {m.metric} {change} at {r.sha[:10]}{culprit}.{link}"
                )
    return out


def refresh(
    settings: Any,
    state: Any,
    feeds: FeedStore,
    repo: str,
    config: RepoConfig,
    *,
    github: Any = None,
    private: bool | None = None,
    now: float | None = None,
    notifier: Any = None,
) -> ForkFeed:
    """Gather the inputs of ``repo``'s feed, assemble it and store it; returns it."""
    from core.store import open_store
    from workers.testing.results import ResultStore

    now = time.time() if now is None else now
    store = open_store(settings.bot.database_url, settings.data_dir)
    previous = feeds.get(repo)
    facts = feeds.facts(repo)
    points = [
        *state.series(f"metrics:{repo}", limit=SERIES_POINTS),
        *state.series(f"snapshots:{repo}", limit=SERIES_POINTS),
    ]
    l1_states: dict[str, tuple[str, str | None]] = {}
    tracking: list[TrackingIssue] = []
    adapter = getattr(github, "adapter", github)
    if adapter is not None and hasattr(adapter, "list_check_runs"):
        l1_states = _l1_states(
            adapter, repo, [i.get("head_sha") for i in facts.get("in_flight", ()) if i.get("head_sha")]
        )
        tracking = _tracking(adapter, repo)
    if private is None:
        if "private" in facts:
            private = bool(facts["private"])
        else:  # not known from this run: keep what was known, else private (never shown without login)
            private = previous.private if previous is not None else True
    feed = assemble(
        repo,
        config,
        now=now,
        points=points,
        facts=facts,
        previous=previous,
        private=private,
        web_url=settings.bot.web_url,
        l1=l1_states,
        trunk=trunk_runs(store, repo),
        tracking=tracking,
        l2=l2_metrics(ResultStore(store), repo, config),
    )
    feeds.put(feed)
    if adapter is not None and hasattr(adapter, "request_reviewers"):
        heads_up(adapter, repo, config, feed, facts)
    if notifier is not None and previous is not None:  # the first feed is history, not news
        for text in new_regressions(previous, feed):
            notifier(text)
    return feed


def heads_up(adapter: Any, repo: str, config: RepoConfig, feed: ForkFeed, facts: Mapping[str, Any]) -> int:
    """Ask area owners to review the ready PRs touching their areas (workers/jobs/heads_up.py)."""
    from workers.jobs import heads_up as planner
    from workers.jobs.digest import codeowners

    commits = {i["key"]: i.get("commits", []) for i in facts.get("in_flight", ())}
    if not any(i.l1 == "success" and commits.get(i.key) for i in feed.in_flight):
        return 0
    try:
        rules = [] if config.owners else codeowners(adapter, repo)
        actions = planner.plan(feed.in_flight, commits, config.owners, rules, feed.upstream_url or None)
        return planner.execute(adapter, repo, actions)
    except Exception as exc:  # never fail the ingest for a heads-up
        log.warning("heads-up on %s not posted: %s", repo, exc)
        return 0


def _l1_states(adapter: Any, repo: str, heads: Sequence[str]) -> dict[str, tuple[str, str | None]]:
    from core.render.l1 import L1_CHECK

    out: dict[str, tuple[str, str | None]] = {}
    for sha in heads:
        try:
            runs = [r for r in adapter.list_check_runs(repo, sha, name=L1_CHECK) if r.head_sha == sha]
        except Exception as exc:  # the dashboard must not fail the ingest: say so and show "none"
            log.warning("dashboard: L1 state of %s@%s unknown: %s", repo, sha[:12], exc)
            continue
        if runs:
            run = max(runs, key=lambda r: r.id)
            state = run.conclusion if run.status == "completed" and run.conclusion else "pending"
            out[sha] = (
                "success" if state == "success" else "pending" if state == "pending" else "failure",
                getattr(run, "html_url", None),
            )
    return out


def _tracking(adapter: Any, repo: str) -> list[TrackingIssue]:
    from core.render.tracking import LABEL

    try:
        issues = adapter.list_issues(repo, labels=[LABEL], state="open")
    except Exception as exc:
        log.warning("dashboard: tracking issues of %s unknown: %s", repo, exc)
        return []
    return [
        TrackingIssue(i.number, i.title, getattr(i, "html_url", None), "l2" if "[L2]" in i.title else "trunk")
        for i in issues
    ]
