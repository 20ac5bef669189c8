"""The dashboard's view model: what each page shows, computed from a ``ForkFeed`` (pure).

Templates only lay out what is built here: every figure arrives with the link to the PR,
issue, commit or check run behind it, and every time as a UTC epoch the page shows in the
viewer's zone. No Flask, no I/O: the tests build pages from plain data.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bot.dashboard import plot
from core.dashboard.feed import ForkFeed, InFlight, LandedPick, Regression, TrunkRun

WEEK_S = 7 * 86400
TRUNK_STATUSES = ("passed", "broken", "flaky", "infra")
RESOLVERS = ("deterministic", "memory", "agent", "human")


@dataclass(frozen=True)
class Figure:
    """A number shown on the page, with what it means and where it comes from."""

    label: str
    value: str
    url: str | None = None
    bad: bool = False
    hint: str = ""


@dataclass(frozen=True)
class Cell:
    text: str
    url: str | None = None
    t: float | None = None  # a moment: rendered in <time>, converted to the viewer's zone
    css: str = ""


@dataclass(frozen=True)
class Table:
    title: str
    head: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    empty: str = "none"


@dataclass(frozen=True)
class SuiteRow:
    suite: str
    latest: Cell
    counts: tuple[Cell, ...]  # passed, broken, flaky, infra over the window
    strip: tuple[Cell, ...]  # oldest first: one cell per run, colored by status, linking its check run
    mean_s: str


@dataclass(frozen=True)
class L2Row:
    benchmark: str
    metric: str
    latest: Cell
    baseline: str
    change: Cell
    svg: str
    regressions: tuple[tuple[Cell, ...], ...]


@dataclass(frozen=True)
class ForkView:
    repo: str
    updated_at: float
    fork_url: str
    upstream_url: str
    headline: tuple[Figure, ...]
    behind_svg: str
    backlog_svg: str
    in_flight: Table
    decisions: Table
    throughput_svg: str
    shares: tuple[Figure, ...]
    resolvers: Table
    reverts: tuple[Figure, ...]
    suites: tuple[SuiteRow, ...]
    tracking: Table
    l2: tuple[L2Row, ...]


@dataclass(frozen=True)
class IndexRow:
    repo: str
    url: str
    days_behind: Figure
    backlog: Figure
    in_flight: int
    trunk: str  # worst latest trunk status across suites
    updated_at: float


# --------------------------------------------------------------------------- links


def commit_url(web: str, sha: str) -> str | None:
    return f"{web}/commit/{sha}" if web and sha else None


def pull_url(web: str, number: int | None) -> str | None:
    return f"{web}/pull/{number}" if web and number else None


def compare_url(web: str, base: str, head: str) -> str | None:
    return f"{web}/compare/{base}...{head}" if web and base and head else None


def issue_url(web: str, number: int | None) -> str | None:
    return f"{web}/issues/{number}" if web and number else None


def _days(value: float) -> str:
    return f"{value:.1f}"


def age_text(seconds: float) -> str:
    """``3 d 4 h``, ``5 h``, ``12 min``: an age a maintainer reads at a glance."""
    seconds = max(0.0, seconds)
    if seconds >= 86400:
        days, rest = divmod(int(seconds), 86400)
        return f"{days} d {rest // 3600} h" if rest >= 3600 else f"{days} d"
    if seconds >= 3600:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 60)} min"


def pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.0f}%" if whole else "–"


# --------------------------------------------------------------------------- sections


def headline(feed: ForkFeed) -> tuple[Figure, ...]:
    last = feed.series[-1] if feed.series else None
    th = feed.thresholds
    if last is None:
        return (Figure("days behind upstream", "–", hint="no ingest yet"), Figure("backlog commits", "–"))
    return (
        Figure(
            "days behind upstream",
            _days(last.days_behind),
            commit_url(feed.upstream_url, last.frontier),
            bad=last.days_behind >= th.days_behind,
            hint=f"frontier {last.frontier[:10]}; bad at {th.days_behind:g}",
        ),
        Figure(
            "backlog commits",
            str(last.backlog),
            commit_url(feed.upstream_url, last.contiguous_pin),
            bad=last.backlog >= th.backlog,
            hint=f"contiguous pin {last.contiguous_pin[:10]}; bad at {th.backlog}",
        ),
        Figure("pending after the frontier", str(last.pending)),
        Figure("urgent picks", str(last.urgent)),
    )


def behind_chart(feed: ForkFeed, now: float) -> str:
    pts = tuple((p.t, p.days_behind) for p in feed.series)
    pin = tuple((p.t, p.pin_days_behind) for p in feed.series)
    markers = _urgent_markers(feed)
    return plot.time_chart(
        "days behind upstream: the frontier and the contiguous pin",
        [plot.Line("frontier", pts), plot.Line("contiguous pin", pin, plot.PALETTE[4], dashed=True)],
        threshold=feed.thresholds.days_behind,
        markers=markers,
        now=now,
    )


def backlog_chart(feed: ForkFeed, now: float) -> str:
    backlog = tuple((p.t, float(p.backlog)) for p in feed.series)
    pending = tuple((p.t, float(p.pending)) for p in feed.series)
    return plot.time_chart(
        "backlog commits (holes behind the frontier) and pending",
        [
            plot.Line("backlog", backlog, plot.PALETTE[1]),
            plot.Line("pending", pending, plot.PALETTE[5], dashed=True),
        ],
        threshold=float(feed.thresholds.backlog),
        markers=_urgent_markers(feed),
        now=now,
    )


def _urgent_markers(feed: ForkFeed) -> list[plot.Marker]:
    """A marker where the urgent count rose: an urgent pick was taken out of order."""
    out = []
    prev = 0
    for p in feed.series:
        if p.urgent > prev:
            out.append(plot.Marker(p.t, f"urgent pick ({p.urgent} in flight or carried)"))
        prev = p.urgent
    for item in feed.in_flight:
        if item.kind == "urgent":
            out.append(plot.Marker(item.opened_at, f"urgent: {item.title}", item.url))
    return out


def in_flight_table(feed: ForkFeed, now: float) -> Table:
    order = {"urgent": 0, "chain": 1, "bundle": 2}
    items: Sequence[InFlight] = sorted(
        feed.in_flight, key=lambda i: (order.get(i.kind, 3), i.opened_at, i.key)
    )
    rows = []
    for item in items:
        ref = f"#{item.number}" if item.number else item.key
        rows.append(
            (
                Cell(item.kind),
                Cell(f"{ref} {item.title}", item.url),
                Cell(str(item.size), item.url),
                Cell(age_text(now - item.opened_at), t=item.opened_at),
                Cell(item.l1, item.l1_url, css=f"l1-{item.l1}"),
                Cell(", ".join(item.conflicts) or "–"),
                Cell(", ".join(f"@{a.lstrip('@')}" for a in item.asked) or "–"),
            )
        )
    return Table(
        "In flight",
        ("kind", "PR / issue", "commits", "age", "L1", "waits on conflicts in", "asked"),
        tuple(rows),
        "nothing in flight",
    )


def decisions_table(feed: ForkFeed) -> Table:
    rows = tuple(
        (
            Cell("won't port" if d.disposition == "wont_port" else d.disposition),
            Cell(d.sha[:10], commit_url(feed.upstream_url, d.sha)),
            Cell(f"#{d.pr}" if d.pr else "–", pull_url(feed.upstream_url, d.pr)),
            Cell(d.subject),
            Cell(d.reason or "(no reason recorded)"),
        )
        for d in sorted(feed.decisions, key=lambda d: (d.disposition, d.sha))
    )
    return Table(
        "Deferred and won't port",
        ("decision", "upstream commit", "upstream PR", "subject", "reason"),
        rows,
        "no deferred or won't-port commits",
    )


def week_start(t: float) -> float:
    """Monday 00:00 UTC of the week holding ``t``."""
    day = datetime.fromtimestamp(t, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return (day - timedelta(days=day.weekday())).timestamp()


def weekly(picks: Sequence[LandedPick], weeks: int, now: float) -> list[tuple[float, dict[str, int]]]:
    """Upstream commits ingested per week (oldest first), split into bundled / single / resolved."""
    end = week_start(now)
    starts = [end - WEEK_S * i for i in range(weeks - 1, -1, -1)]
    counts: dict[float, Counter[str]] = {s: Counter() for s in starts}
    for pick in picks:
        start = week_start(pick.t)
        if start in counts:
            counts[start][_kind(pick)] += pick.upstream
    return [(s, dict(counts[s])) for s in starts]


def _kind(pick: LandedPick) -> str:
    return "resolved" if pick.resolved else "bundled" if pick.way == "bundle" else "single pick"


def throughput_chart(feed: ForkFeed, now: float, weeks: int = 12) -> str:
    colors = {"bundled": plot.PALETTE[0], "single pick": plot.PALETTE[3], "resolved": plot.PALETTE[2]}
    bars = [
        plot.Stack(
            datetime.fromtimestamp(start, UTC).strftime("%m-%d"),
            tuple((name, float(parts.get(name, 0)), color) for name, color in colors.items()),
            f"{feed.fork_url}/commits?since={datetime.fromtimestamp(start, UTC).date().isoformat()}"
            f"&until={datetime.fromtimestamp(start + WEEK_S, UTC).date().isoformat()}"
            if feed.fork_url
            else None,
        )
        for start, parts in weekly(feed.picks, weeks, now)
    ]
    return plot.stacked_bars("upstream commits ingested per week", bars)


# GitHub searches of the fork's merged PRs behind each share (titles follow the fork convention).
_SEARCH = {
    "bundled": "is:pr is:merged in:title BUNDLE",
    "single pick": "is:pr is:merged in:title Cherry-pick -BUNDLE -RESOLVED",
    "resolved": "is:pr is:merged in:title RESOLVED",
    "reverted": "is:pr is:merged in:title Revert",
}


def search_url(web: str, what: str) -> str | None:
    from urllib.parse import quote

    return f"{web}/pulls?q={quote(_SEARCH[what])}" if web else None


def shares(feed: ForkFeed) -> tuple[Figure, ...]:
    total = sum(p.upstream for p in feed.picks)
    by_kind: Counter[str] = Counter()
    for p in feed.picks:
        by_kind[_kind(p)] += p.upstream
    return tuple(
        Figure(
            name,
            pct(by_kind[name], total),
            search_url(feed.fork_url, name),
            hint=f"{by_kind[name]} of {total} upstream commits",
        )
        for name in ("bundled", "single pick", "resolved")
    )


def resolvers_table(feed: ForkFeed) -> Table:
    resolved = [p for p in feed.picks if p.resolved]
    groups: dict[str, list[LandedPick]] = defaultdict(list)
    for p in resolved:
        groups[p.resolver or "human"].append(p)
    rows = []
    for name in [*RESOLVERS, *sorted(set(groups) - set(RESOLVERS))]:
        picks = sorted(groups.get(name, []), key=lambda p: -p.t)
        if not picks:
            continue
        latest = picks[0]
        rows.append(
            (
                Cell(name),
                Cell(str(len(picks))),
                Cell(str(sum(p.upstream for p in picks))),
                Cell(str(sum(p.reverted for p in picks))),
                Cell(f"{latest.sha[:10]} {latest.subject}"[:90], commit_url(feed.fork_url, latest.sha)),
            )
        )
    return Table(
        "Who resolved what",
        ("resolver", "resolved picks", "upstream commits", "reverted", "latest"),
        tuple(rows),
        "no resolved picks yet",
    )


def reverts(feed: ForkFeed) -> tuple[Figure, ...]:
    resolved = [p for p in feed.picks if p.resolved]
    clean = [p for p in feed.picks if not p.resolved]
    r_rev, c_rev = sum(p.reverted for p in resolved), sum(p.reverted for p in clean)
    return (
        Figure(
            "revert rate, resolved picks",
            pct(r_rev, len(resolved)),
            search_url(feed.fork_url, "reverted"),
            hint=f"{r_rev} of {len(resolved)} reverted",
        ),
        Figure(
            "revert rate, clean picks",
            pct(c_rev, len(clean)),
            search_url(feed.fork_url, "reverted"),
            hint=f"{c_rev} of {len(clean)} reverted",
        ),
    )


def suite_rows(feed: ForkFeed, window: int = 30) -> tuple[SuiteRow, ...]:
    by_suite: dict[str, list[TrunkRun]] = defaultdict(list)
    for run in sorted(feed.trunk, key=lambda r: r.t):
        by_suite[run.suite].append(run)
    rows = []
    for suite in sorted(by_suite):
        runs = by_suite[suite][-window:]
        last = runs[-1]
        counts = Counter(r.status for r in runs)
        rows.append(
            SuiteRow(
                suite=suite,
                latest=Cell(last.status, last.url, css=f"st-{last.status}"),
                counts=tuple(Cell(str(counts.get(s, 0)), css=f"st-{s}") for s in TRUNK_STATUSES),
                strip=tuple(
                    Cell(
                        f"{r.status} at {r.sha[:10]}",
                        r.url or commit_url(feed.fork_url, r.sha),
                        t=r.t,
                        css=f"st-{r.status}",
                    )
                    for r in runs
                ),
                mean_s=f"{sum(r.duration_s for r in runs) / len(runs):.0f} s",
            )
        )
    return tuple(rows)


def tracking_table(feed: ForkFeed) -> Table:
    rows = tuple(
        (Cell(t.kind), Cell(f"#{t.number}", t.url or issue_url(feed.fork_url, t.number)), Cell(t.title))
        for t in sorted(feed.tracking, key=lambda t: (t.kind, t.number))
    )
    return Table("Open tracking issues", ("kind", "issue", "title"), rows, "no open tracking issues")


def regression_cells(fork_url: str, r: Regression) -> tuple[Cell, ...]:
    """One regression as cells: first bad commit, change, culprit commit, the bisection's range
    (good..first bad, compared on GitHub) with its steps, and the tracking issue holding its report."""
    change = Cell(f"{r.delta_pct:+.1f}%" if r.delta_pct is not None else r.kind, css="bad")
    if r.culprit:
        culprit = Cell(f"culprit {r.culprit[:10]}", commit_url(fork_url, r.culprit), css="culprit")
    elif r.status in ("", "none") and not r.note:
        culprit = Cell("bisecting…", css="muted")
    else:
        culprit = Cell(f"no culprit: {r.note or r.status}"[:140], css="muted")
    if r.good:
        steps = f", {r.steps} step{'s' if r.steps != 1 else ''}" if r.steps else ""
        over = f" over {r.candidates} commits" if r.candidates else ""
        bisection = Cell(
            f"bisected {r.good[:7]}..{r.sha[:7]}{over}{steps}",
            compare_url(fork_url, r.good, r.sha),
            css="bisection",
        )
    else:
        bisection = Cell("not bisected" if r.status else "–", css="muted")
    url = r.bisection_url or issue_url(fork_url, r.tracking)
    issue = Cell(
        f"issue #{r.tracking}" if r.tracking else ("tracking issue" if url else "no issue"),
        url,
        css="tracking" if url else "muted",
    )
    return (Cell(r.sha[:10], commit_url(fork_url, r.sha), t=r.t or None), change, culprit, bisection, issue)


def l2_rows(feed: ForkFeed) -> tuple[L2Row, ...]:
    out = []
    for m in sorted(feed.l2, key=lambda m: (m.benchmark, m.metric)):
        points = m.points[-40:]
        bad = [i for i, p in enumerate(points) if p.verdict == "regressed"]
        svg = plot.sparkline(
            f"{m.benchmark} {m.metric}",
            [(p.value, commit_url(feed.fork_url, p.sha)) for p in points],
            baseline=m.baseline,
            bad=bad,
        )
        last = points[-1] if points else None
        change = "–"
        css = ""
        if last is not None and m.baseline:
            delta = 100.0 * (last.value - m.baseline) / abs(m.baseline)
            worse = delta < -m.threshold_pct if m.direction == "higher" else delta > m.threshold_pct
            change, css = f"{delta:+.1f}%", "bad" if worse else ""
        regs = tuple(regression_cells(feed.fork_url, r) for r in m.regressions)
        out.append(
            L2Row(
                benchmark=m.benchmark,
                metric=m.metric,
                latest=Cell(
                    f"{last.value:g}" if last else "–", commit_url(feed.fork_url, last.sha) if last else None
                ),
                baseline=f"{m.baseline:g}" if m.baseline is not None else "–",
                change=Cell(change, css=css),
                svg=svg,
                regressions=regs,
            )
        )
    return tuple(out)


def fork_view(feed: ForkFeed, now: float) -> ForkView:
    """The whole ``/<owner>/<repo>`` page."""
    return ForkView(
        repo=feed.repo,
        updated_at=feed.updated_at,
        fork_url=feed.fork_url,
        upstream_url=feed.upstream_url,
        headline=headline(feed),
        behind_svg=behind_chart(feed, now),
        backlog_svg=backlog_chart(feed, now),
        in_flight=in_flight_table(feed, now),
        decisions=decisions_table(feed),
        throughput_svg=throughput_chart(feed, now),
        shares=shares(feed),
        resolvers=resolvers_table(feed),
        reverts=reverts(feed),
        suites=suite_rows(feed),
        tracking=tracking_table(feed),
        l2=l2_rows(feed),
    )


def _worst(feed: ForkFeed) -> str:
    latest: dict[str, TrunkRun] = {}
    for run in sorted(feed.trunk, key=lambda r: r.t):
        latest[run.suite] = run
    statuses = {r.status for r in latest.values()}
    for status in ("broken", "infra", "flaky", "passed"):
        if status in statuses:
            return status
    return "–"


def index_rows(feeds: Sequence[ForkFeed]) -> tuple[IndexRow, ...]:
    """The ``/`` page: one row per fork the viewer may see."""
    rows = []
    for feed in sorted(feeds, key=lambda f: f.repo.lower()):
        head = headline(feed)
        rows.append(
            IndexRow(
                repo=feed.repo,
                url=f"/{feed.repo}",
                days_behind=head[0],
                backlog=head[1],
                in_flight=len(feed.in_flight),
                trunk=_worst(feed),
                updated_at=feed.updated_at,
            )
        )
    return tuple(rows)
