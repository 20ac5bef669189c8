"""The pin-update digest of one fork: plan from plain data, then act (the context-sharing loop).

:func:`period_of` says which period ``now`` is in (``digest.every_days``, weekly from
``digest.weekday``); :func:`build_view` groups what landed in it by owned area (``owners:`` of the
config, else the fork's CODEOWNERS); :func:`plan` decides the actions against the issue as it
is (one issue per period, found by its hidden marker and edited in place; owners mentioned at
most once per digest: in the body when it is opened, in one comment when their area is first
touched later; the previous period's issue closed with a link; the outgoing webhook told once
per new digest); :func:`execute` applies them through a narrow port.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from core.config import WEEKDAYS, RepoConfig
from core.dashboard.feed import ForkFeed
from core.render.digest import (
    Area,
    Change,
    DigestView,
    L2Change,
    Stuck,
    digest_body,
    digest_marker,
    digest_title,
    mention_comment,
    notified_in,
    slack_text,
)

log = logging.getLogger(__name__)

CODEOWNERS_PATHS = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")
DAY_S = 86400


# --------------------------------------------------------------------------- periods and owners


@dataclass(frozen=True)
class Period:
    start: float
    end: float

    @property
    def key(self) -> str:
        return datetime.fromtimestamp(self.start, UTC).strftime("%Y-%m-%d")

    def previous(self) -> Period:
        length = self.end - self.start
        return Period(self.start - length, self.start)


def period_of(now: float, every_days: int, weekday: str = "monday") -> Period:
    """The period holding ``now``: weeks start on ``weekday`` (UTC); other lengths count from
    that weekday of the first week of 2024, so every worker computes the same boundaries."""
    day = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    anchor = datetime(2024, 1, 1, tzinfo=UTC)  # a Monday
    anchor += timedelta(days=WEEKDAYS.index(weekday))
    n = (day - anchor).days // every_days
    start = anchor + timedelta(days=n * every_days)
    return Period(start.timestamp(), (start + timedelta(days=every_days)).timestamp())


def parse_codeowners(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """CODEOWNERS lines as (our glob, owners), in file order (the last match wins, as on GitHub)."""
    rules = []
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        pattern, owners = parts[0], tuple(p.lstrip("@") for p in parts[1:] if p.startswith("@") or "@" in p)
        rules.append((codeowners_glob(pattern), owners))
    return rules


def codeowners_glob(pattern: str) -> str:
    """A CODEOWNERS (gitignore-style) pattern as a config glob: ``/a/b`` anchored, ``b`` anywhere."""
    anchored = pattern.startswith("/")
    body = pattern.lstrip("/")
    if body in ("*", "**"):
        return "**"
    inner = body.rstrip("/")
    if not anchored and "/" not in inner:
        body = "**/" + body
    return body if body.endswith("/") or "*" in body or "." in body.rsplit("/", 1)[-1] else body + "/"


def owners_of(
    path: str, owners: Mapping[str, tuple[str, ...]], codeowners: Sequence[tuple[str, tuple[str, ...]]]
) -> list[tuple[str, tuple[str, ...]]]:
    """The (area pattern, owners) a path belongs to: every matching ``owners:`` entry, else the
    last matching CODEOWNERS rule; none when unowned."""
    from workers.engine.paths import path_matches

    if owners:
        return [(pattern, who) for pattern, who in owners.items() if path_matches(path, pattern)]
    last = None
    for pattern, who in codeowners:
        if path_matches(path, pattern):
            last = (pattern, who)
    return [last] if last is not None and last[1] else []


# --------------------------------------------------------------------------- the view


def build_view(
    repo: str,
    period: Period,
    *,
    landed: Sequence[Mapping[str, Any]],
    feed: ForkFeed | None,
    owners: Mapping[str, tuple[str, ...]],
    codeowners: Sequence[tuple[str, tuple[str, ...]]] = (),
    upstream_url: str | None = None,
    fork_url: str = "",
) -> DigestView:
    """The digest of ``period`` from the ingest's landed changes and the dashboard feed (pure)."""
    areas: dict[str, tuple[tuple[str, ...], dict[str, Change]]] = {}
    for item in sorted(landed, key=lambda x: (x.get("t", 0), x["sha"])):
        if not (period.start <= float(item.get("t", 0)) < period.end):
            continue
        change = Change(
            item["sha"],
            item.get("subject", ""),
            item.get("pr"),
            bool(item.get("resolved")),
            item.get("resolver"),
            item.get("fork_sha", ""),
        )
        matched = {m for path in item.get("paths", ()) for m in owners_of(path, owners, codeowners)}
        for pattern, who in sorted(matched) or [("", ())]:
            areas.setdefault(pattern, (who, {}))[1].setdefault(change.sha, change)
    area_list = tuple(
        Area(p, who, tuple(ch.values()))
        for p, (who, ch) in sorted(areas.items(), key=lambda kv: (kv[0] == "", kv[0]))
    )
    stuck: list[Stuck] = []
    deferred: tuple[tuple[str, str, int | None, str], ...] = ()
    l2: list[L2Change] = []
    figures: list[tuple[str, str, str]] = []
    if feed is not None:
        for open_item in feed.in_flight:
            if open_item.conflicts:
                stuck.append(
                    Stuck(
                        open_item.kind,
                        open_item.title,
                        open_item.number,
                        "waits on conflicts in " + ", ".join(open_item.conflicts),
                    )
                )
            elif open_item.l1 == "failure":
                stuck.append(Stuck(open_item.kind, open_item.title, open_item.number, "its L1 check fails"))
        deferred = tuple(
            (d.sha, d.subject, d.pr, d.reason) for d in feed.decisions if d.disposition == "deferred"
        )
        failed: set[tuple[str, str]] = set()  # a failed run is listed once, not under each metric
        for metric in feed.l2:
            for r in metric.regressions:
                if period.start <= r.t < period.end and (metric.benchmark, r.sha) not in failed:
                    if r.kind == "failed":
                        failed.add((metric.benchmark, r.sha))
                    url = r.bisection_url or (
                        f"{feed.fork_url}/issues/{r.tracking}" if r.tracking and feed.fork_url else None
                    )
                    l2.append(
                        L2Change(
                            metric.benchmark,
                            "" if r.kind == "failed" else metric.metric,
                            r.delta_pct,
                            r.sha,
                            r.culprit,
                            url,
                        )
                    )
        inside = [p for p in feed.series if p.t < period.end]
        first = next((p for p in inside if p.t >= period.start), None)
        before = [p for p in inside if p.t < period.start]
        start_point = before[-1] if before else first
        if inside and start_point is not None:
            now_point = inside[-1]
            figures = [
                ("days behind upstream", f"{start_point.days_behind:.1f}", f"{now_point.days_behind:.1f}"),
                ("backlog commits", str(start_point.backlog), str(now_point.backlog)),
            ]
    everyone = tuple(dict.fromkeys(o for a in area_list for o in a.owners))
    return DigestView(
        repo,
        period.key,
        period.start,
        period.end,
        upstream_url,
        fork_url,
        area_list,
        tuple(stuck),
        deferred,
        tuple(l2),
        tuple(figures),
        everyone,
    )


# --------------------------------------------------------------------------- plan and execute


@dataclass(frozen=True)
class IssueState:
    number: int
    body: str
    state: str
    url: str = ""


@dataclass(frozen=True)
class UpsertDigest:
    marker: str
    title: str
    body: str


@dataclass(frozen=True)
class MentionOwners:
    owners: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class ClosePrevious:
    number: int
    comment: str


@dataclass(frozen=True)
class Notify:
    text: str  # Slack-compatible message text; the executor adds the issue's URL


Action = UpsertDigest | MentionOwners | ClosePrevious | Notify


def plan(
    view: DigestView, current: IssueState | None, previous: IssueState | None, *, notify: bool
) -> list[Action]:
    """What to do so that the period's issue says ``view`` (see the module docstring)."""
    already = notified_in(current.body) if current is not None else frozenset()
    actions: list[Action] = [
        UpsertDigest(digest_marker(view.key), digest_title(view), digest_body(view, sorted(already)))
    ]
    if current is not None:
        late = tuple(o for o in view.owners if o not in already)
        if late:
            actions.append(MentionOwners(late, mention_comment(view, late)))
    else:
        if previous is not None and previous.state == "open":
            actions.append(
                ClosePrevious(previous.number, f"The next period's digest is open: it starts {view.key}.")
            )
        if notify:
            actions.append(Notify(slack_text(view, None)))
    return actions


class DigestPort(Protocol):
    def find_issue(self, repo: str, marker: str, *, labels: Sequence[str] = ()) -> Any: ...

    def ensure_issue(
        self,
        repo: str,
        *,
        marker: str,
        title: str,
        body: str,
        labels: Sequence[str] = (),
        reopen: bool = True,
    ) -> tuple[Any, bool]: ...

    def create_comment(self, repo: str, issue_number: int, body: str) -> Any: ...

    def close_issue(self, repo: str, number: int, *, comment: str | None = None) -> Any: ...


DIGEST_LABEL = "forksync:digest"


def execute(
    port: DigestPort, repo: str, actions: Sequence[Action], notifier: Callable[[str], None] | None = None
) -> int | None:
    """Apply the actions in order; returns the digest issue's number."""
    number: int | None = None
    url = ""
    for action in actions:
        if isinstance(action, UpsertDigest):
            info, _created = port.ensure_issue(
                repo, marker=action.marker, title=action.title, body=action.body, labels=[DIGEST_LABEL]
            )
            number, url = info.number, getattr(info, "html_url", "")
            log.info("digest issue #%d of %s: %s", number, repo, "opened" if _created else "edited")
        elif isinstance(action, MentionOwners) and number is not None:
            port.create_comment(repo, number, action.text)
        elif isinstance(action, ClosePrevious):
            port.close_issue(
                repo, action.number, comment=action.comment + (f" See #{number}." if number else "")
            )
        elif isinstance(action, Notify) and notifier is not None:
            notifier(action.text + (f" <{url}|#{number}>" if url else ""))
    return number


def current_issues(
    port: DigestPort, repo: str, period: Period
) -> tuple[IssueState | None, IssueState | None]:
    def state(key: str) -> IssueState | None:
        info = port.find_issue(repo, digest_marker(key), labels=[DIGEST_LABEL])
        return (
            IssueState(info.number, info.body or "", info.state, getattr(info, "html_url", ""))
            if info
            else None
        )

    return state(period.key), state(period.previous().key)


def codeowners(port: Any, repo: str) -> list[tuple[str, tuple[str, ...]]]:
    for path in CODEOWNERS_PATHS:
        text = port.read_file(repo, path)
        if text:
            return parse_codeowners(text)
    return []


def run_digest(
    port: Any,
    repo: str,
    config: RepoConfig,
    *,
    landed: Sequence[Mapping[str, Any]],
    feed: ForkFeed | None,
    now: float,
    web_url: str = "https://github.com",
    notifier: Callable[[str], None] | None = None,
) -> int | None:
    """Plan and apply this period's digest of ``repo``; returns the issue number."""
    from workers.engine.pair import normalise_web_url

    period = period_of(now, config.digest.every_days, config.digest.weekday)
    rules = [] if config.owners else codeowners(port, repo)
    view = build_view(
        repo,
        period,
        landed=landed,
        feed=feed,
        owners=config.owners,
        codeowners=rules,
        upstream_url=normalise_web_url(config.upstream.url) if config.upstream.url else None,
        fork_url=f"{web_url.rstrip('/')}/{repo}",
    )
    current, previous = current_issues(port, repo, period)
    return execute(port, repo, plan(view, current, previous, notify=notifier is not None), notifier)
