"""The store's tables as SQLAlchemy 2.0 typed models (one place; the migrations create them).

Every row is keyed by repository (``owner/name``): one database serves every installation.
Times are seconds since the epoch (float), written by the worker that recorded the row.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class SuiteRunRow(Base):
    """One L1 suite run on a trunk commit: its status and how many tests it executed (the baseline)."""

    __tablename__ = "l1_suite_runs"
    __table_args__ = (
        Index("l1_suite_runs_by_suite", "repo", "suite", "seq"),
        Index("l1_suite_runs_by_commit", "repo", "commit_sha", "suite"),
    )

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    repo: Mapped[str] = mapped_column(String(200))
    commit_sha: Mapped[str] = mapped_column(String(64))
    suite: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(32))
    total: Mapped[int] = mapped_column(Integer)  # test cases reported (skipped included)
    executed: Mapped[int] = mapped_column(Integer)  # passed + failed: what actually ran
    pool: Mapped[str] = mapped_column(String(64), default="")
    recorded_at: Mapped[float] = mapped_column(Float)


class TestResultRow(Base):
    """One test's outcome in the newest trunk run of its suite at a commit."""

    __tablename__ = "l1_test_results"

    repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    commit_sha: Mapped[str] = mapped_column(String(64), primary_key=True)
    suite: Mapped[str] = mapped_column(String(200), primary_key=True)
    test_id: Mapped[str] = mapped_column(String(1000), primary_key=True)
    outcome: Mapped[str] = mapped_column(String(32))


class L2RunRow(Base):
    """One L2 benchmark run on a trunk commit."""

    __tablename__ = "l2_runs"
    __table_args__ = (
        Index("l2_runs_by_benchmark", "repo", "benchmark", "id"),
        Index("l2_runs_by_sha", "repo", "sha"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    repo: Mapped[str] = mapped_column(String(200))
    benchmark: Mapped[str] = mapped_column(String(200))
    sha: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(32))
    verdict: Mapped[str] = mapped_column(String(32))
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    duration_s: Mapped[float] = mapped_column(Float)
    reason: Mapped[str] = mapped_column(Text)
    output_tail: Mapped[str] = mapped_column(Text)
    failures: Mapped[str] = mapped_column(Text)  # JSON list of {test_id, text}
    recorded_at: Mapped[str] = mapped_column(String(40))


class L2MetricRow(Base):
    """One metric value of an L2 run (the metric series are these, joined to their runs)."""

    __tablename__ = "l2_metrics"

    run_id: Mapped[int] = mapped_column(ForeignKey("l2_runs.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    value: Mapped[float] = mapped_column(Float)


class SeriesPointRow(Base):
    """One point of a named time series (ingestion metrics, snapshots): a JSON object."""

    __tablename__ = "series_points"
    __table_args__ = (Index("series_points_by_name", "name", "seq"),)

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(300))
    point: Mapped[str] = mapped_column(Text)


class PendingCheckRow(Base):
    """An L1 check run we left queued or in progress, until it completes: what the staleness
    watchdog (beat) reads to find checks that a dead queue will never finish."""

    __tablename__ = "l1_pending_checks"

    repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    check_run_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    head_sha: Mapped[str] = mapped_column(String(64))
    installation_id: Mapped[int] = mapped_column(BigInteger)
    queue: Mapped[str] = mapped_column(String(64))
    started_at: Mapped[float] = mapped_column(Float)
    deadline: Mapped[float] = mapped_column(Float)  # started_at + the suites' timeouts + margin


class AcceptedDeliveryRow(Base):
    """A webhook delivery the web process accepted (answered 2xx and enqueued): the durable dedup
    record (the primary key decides duplicates, so a Redis flush cannot make an old delivery run
    again) and the log of what was accepted, by repository and installation (what recovery scans)."""

    __tablename__ = "accepted_deliveries"
    __table_args__ = (
        Index("accepted_deliveries_by_time", "accepted_at"),
        Index("accepted_deliveries_unfinished", "finished_at", "touched_at"),
    )

    delivery: Mapped[str] = mapped_column(String(100), primary_key=True)
    event: Mapped[str] = mapped_column(String(64))
    repo: Mapped[str] = mapped_column(String(200), default="")  # "" for installation events
    installation_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    accepted_at: Mapped[float] = mapped_column(Float)
    # What the delivery runs (a task by name and its JSON kwargs), so that a delivery whose queued
    # message was lost is sent again; and how far it got (core/store/deliveries.py).
    task: Mapped[str] = mapped_column(String(100), default="")
    kwargs: Mapped[str] = mapped_column(Text, default="")
    touched_at: Mapped[float | None] = mapped_column(
        Float, nullable=True
    )  # accepted, started, retried, replayed
    started_at: Mapped[float | None] = mapped_column(Float, nullable=True)  # a worker holds it (its lease)
    started_by: Mapped[str] = mapped_column(String(300), default="")  # "host:pid" of that worker process
    finished_at: Mapped[float | None] = mapped_column(Float, nullable=True)  # ran to the end: never again
    outcome: Mapped[str] = mapped_column(String(16), default="")  # done, failed, abandoned
    replays: Mapped[int] = mapped_column(Integer, default=0)


class CommentAnswerRow(Base):
    """A comment whose commands the bot ran: ``replying`` (ran, reply being posted: the body is kept
    so a retry posts it alone) or ``answered`` (the reply is on GitHub). How the comment handler
    knows "already answered" without reading the thread."""

    __tablename__ = "comment_answers"

    repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    comment_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    issue_number: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16))
    body: Mapped[str] = mapped_column(Text)
    reactions: Mapped[str] = mapped_column(String(200))  # comma-separated reaction contents
    reply_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    updated_at: Mapped[float] = mapped_column(Float)


class L2RegressionRow(Base):
    """A regression (or new failure) an L2 run found, stored with that run: the metric and how much
    worse, the bisection's range, steps and culprit, and the tracking issue it was filed in."""

    __tablename__ = "l2_regressions"
    __table_args__ = (Index("l2_regressions_by_benchmark", "repo", "benchmark", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("l2_runs.id", ondelete="CASCADE"))
    repo: Mapped[str] = mapped_column(String(200))
    benchmark: Mapped[str] = mapped_column(String(200))
    metric: Mapped[str] = mapped_column(String(200))  # "" for a failure (exit status or tests)
    kind: Mapped[str] = mapped_column(String(32))  # regressed | failed
    first_bad: Mapped[str] = mapped_column(String(64))  # the run's commit: the first bad trunk commit seen
    delta_pct: Mapped[float | None] = mapped_column(Float, nullable=True)  # change vs the baseline median
    good: Mapped[str | None] = mapped_column(String(64), nullable=True)  # the bisection's good end
    culprit: Mapped[str | None] = mapped_column(String(64), nullable=True)
    culprit_subject: Mapped[str] = mapped_column(Text, default="")
    bisect_status: Mapped[str] = mapped_column(String(32))  # found | ambiguous | over-budget | no-good | none
    bisect_steps: Mapped[int] = mapped_column(Integer, default=0)  # benchmark runs the bisection made
    candidates: Mapped[int] = mapped_column(Integer, default=0)  # commits in good..bad
    note: Mapped[str] = mapped_column(Text, default="")  # why there is no culprit, when there is none
    tracking_issue: Mapped[int | None] = mapped_column(Integer, nullable=True)
    recorded_at: Mapped[float] = mapped_column(Float)


class DashboardFeedRow(Base):
    """One fork's dashboard feed (``core.dashboard.feed.ForkFeed`` as JSON) and its version."""

    __tablename__ = "dashboard_feeds"

    repo: Mapped[str] = mapped_column(String(200), primary_key=True)  # lower-cased owner/name
    name: Mapped[str] = mapped_column(String(200))  # owner/name as the feed spells it
    version: Mapped[str] = mapped_column(String(64))
    doc: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[float] = mapped_column(Float)


class DashboardFactsRow(Base):
    """The last ingest's facts of one fork (what the feed is rebuilt from between ingests)."""

    __tablename__ = "dashboard_facts"

    repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    doc: Mapped[str] = mapped_column(Text)
