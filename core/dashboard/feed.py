"""The dashboard's input: one plain-data document per fork (``ForkFeed``), written by the workers.

The workers know the ledger, the plan, what was posted and the test stores; the web process
knows none of that (it reaches workers only by task name). So after each ingest, trunk test run
or metrics snapshot a worker rebuilds this document and puts it in the feed store
(``bot/dashboard/store.py``); the dashboard reads it back and renders it. Everything here is
JSON-round-trippable records: no I/O, no GitHub, no Flask.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, TypeVar

FEED_VERSION = 1

T = TypeVar("T")


@dataclass(frozen=True)
class SeriesPoint:
    """The ingestion figures at one moment (an ingest or a periodic snapshot)."""

    t: float  # epoch seconds, UTC
    days_behind: float
    backlog: int
    pending: int = 0
    frontier: str = ""  # upstream sha
    contiguous_pin: str = ""  # upstream sha
    urgent: int = 0  # urgent picks carried or in flight at that moment
    pin_days_behind: float = 0.0  # upstream tip time - contiguous pin time, in days


@dataclass(frozen=True)
class InFlight:
    """An open bundle PR, risky chain (its tracking issue) or urgent pick."""

    kind: str  # bundle | chain | urgent
    key: str
    title: str
    number: int | None  # the PR (bundle, urgent) or tracking issue (chain)
    url: str | None
    size: int  # upstream commits
    opened_at: float  # first seen open by forksync
    l1: str = "none"  # none | pending | success | failure (the L1 check on its head)
    l1_url: str | None = None
    head_sha: str | None = None
    conflicts: tuple[str, ...] = ()  # files it waits on
    asked: tuple[str, ...] = ()  # logins / teams asked to resolve or review
    pull: bool = False  # ``number`` is a pull request (bundles, urgent picks, built chains), else an issue


@dataclass(frozen=True)
class Decision:
    """An upstream commit a maintainer deferred or decided not to port, with the reason."""

    sha: str
    subject: str
    disposition: str  # deferred | wont_port
    reason: str
    pr: int | None = None


@dataclass(frozen=True)
class LandedPick:
    """A fork commit that carries upstream commits."""

    sha: str  # the fork commit
    t: float  # its committer time
    upstream: int  # upstream commits it carries
    way: str  # bundle | single
    resolved: bool  # it needed a conflict resolution
    resolver: str | None = None  # deterministic | memory | agent | human (resolved picks)
    reverted: bool = False  # a later fork commit reverted it
    subject: str = ""


@dataclass(frozen=True)
class TrunkRun:
    """One L1 suite run on a trunk commit."""

    t: float
    suite: str
    sha: str
    status: str  # passed | broken | flaky | infra
    duration_s: float = 0.0
    url: str | None = None  # the check run
    failures: int = 0


@dataclass(frozen=True)
class TrackingIssue:
    number: int
    title: str
    url: str | None = None
    kind: str = "trunk"  # trunk | l2 | chain


@dataclass(frozen=True)
class L2Point:
    t: float
    sha: str
    value: float
    verdict: str  # ok | regressed | failed | skipped


@dataclass(frozen=True)
class Regression:
    """A regression (or failure) an L2 run found, with the bisection stored with that run."""

    sha: str  # first bad trunk commit seen
    delta_pct: float | None  # against the baseline median; None for a failed run
    culprit: str | None = None  # the bisection's verdict
    bisection_url: str | None = None  # the tracking issue / bisection report (else built from ``tracking``)
    t: float = 0.0
    kind: str = "regressed"  # regressed | failed
    good: str | None = None  # the bisection's good end (its range is good..sha)
    steps: int = 0  # benchmark runs the bisection made
    candidates: int = 0  # commits in good..sha
    status: str = ""  # found | ambiguous | over-budget | no-good | none; "" when nothing was recorded
    tracking: int | None = None  # the tracking issue it was filed in (the bisection report is there)
    culprit_subject: str = ""
    note: str = ""  # why there is no culprit


@dataclass(frozen=True)
class L2Metric:
    benchmark: str
    metric: str
    direction: str = "higher"  # higher | lower is better
    threshold_pct: float = 5.0
    baseline: float | None = None
    points: tuple[L2Point, ...] = ()
    regressions: tuple[Regression, ...] = ()


@dataclass(frozen=True)
class Thresholds:
    """Values at or above which a figure is shown as bad (config ``dashboard:``)."""

    days_behind: float = 7.0
    backlog: int = 50


@dataclass(frozen=True)
class ForkFeed:
    """Everything the dashboard shows for one fork."""

    repo: str
    updated_at: float
    private: bool = True  # unknown visibility is private: never shown without a login
    public_dashboard: bool = True  # config: may a public fork's dashboard be seen without login
    fork_url: str = ""  # web URL of the fork (https://github.com/owner/name)
    upstream_url: str = ""  # web URL of upstream
    thresholds: Thresholds = field(default_factory=Thresholds)
    series: tuple[SeriesPoint, ...] = ()
    in_flight: tuple[InFlight, ...] = ()
    decisions: tuple[Decision, ...] = ()
    picks: tuple[LandedPick, ...] = ()
    trunk: tuple[TrunkRun, ...] = ()
    tracking: tuple[TrackingIssue, ...] = ()
    l2: tuple[L2Metric, ...] = ()

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(json.dumps(asdict(self)))  # tuples become lists, as stored
        data["feed_version"] = FEED_VERSION
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ForkFeed:
        return _build(cls, data)

    def version(self) -> str:
        """A digest of the content: the page cache is rebuilt when it changes."""
        text = json.dumps(self.as_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


_NESTED: dict[tuple[type, str], type] = {}


def _build(cls: type[T], data: dict[str, Any]) -> T:
    """A record from its JSON, tolerant of unknown keys (a newer writer) and missing ones (defaults)."""
    kwargs: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        if f.name not in data:
            continue
        value = data[f.name]
        inner = _NESTED.get((cls, f.name))
        if inner is not None and isinstance(value, list | tuple):
            value = tuple(_build(inner, v) for v in value)
        elif inner is not None and isinstance(value, dict):
            value = _build(inner, value)
        elif isinstance(value, list | tuple):
            value = tuple(tuple(v) if isinstance(v, list) else v for v in value)
        kwargs[f.name] = value
    return cls(**kwargs)


_NESTED.update(
    {
        (ForkFeed, "thresholds"): Thresholds,
        (ForkFeed, "series"): SeriesPoint,
        (ForkFeed, "in_flight"): InFlight,
        (ForkFeed, "decisions"): Decision,
        (ForkFeed, "picks"): LandedPick,
        (ForkFeed, "trunk"): TrunkRun,
        (ForkFeed, "tracking"): TrackingIssue,
        (ForkFeed, "l2"): L2Metric,
        (L2Metric, "points"): L2Point,
        (L2Metric, "regressions"): Regression,
    }
)
