"""The workers' half of the dashboard: ledger facts and stored points become a feed (pure parts)."""

from __future__ import annotations

from types import SimpleNamespace

from core.config import load_repo_config
from core.dashboard.feed import ForkFeed, InFlight
from workers.jobs.dashboard_feed import ForkCommit, assemble, classify_pick, engine_facts, series_points

CONFIG = load_repo_config(
    "upstream: {url: https://github.com/triton-lang/triton.git}\n"
    "owners:\n  lib/Dialect/: [layout-team]\n  cmake/llvm-hash.txt: ['@llvm-owner']\n"
    "dashboard: {days_behind_bad: 3, backlog_bad: 10, public: false}\n"
)


def test_pick_kinds_follow_the_fork_conventions() -> None:
    assert classify_pick("[Cherry-pick][BUNDLE] Cherry-pick 3 upstream(#1 #2 #3)", "", 3) == (
        "bundle",
        False,
        None,
    )
    assert classify_pick("[Cherry-pick] 'x (#4)'", "", 1) == ("single", False, None)
    assert classify_pick("[Cherry-pick][RESOLVED] 'x (#4)'", "", 1) == ("single", True, "human")
    body = "subject\n\nConflict Resolution:\n- File: a.cpp\n  Action: keep both\n"
    assert classify_pick("[Cherry-pick] 'y'", body, 1) == ("single", True, "human")
    assert classify_pick("[Cherry-pick] 'y'", "s\n\nResolved-By: memory\n", 1) == ("single", True, "memory")


def _ledger() -> SimpleNamespace:
    entry = SimpleNamespace
    deferred = SimpleNamespace(value="deferred")
    picked = SimpleNamespace(value="picked")
    entries = [
        entry(
            sha="u1", subject="one (#1)", disposition=picked, reason="", pr_number=1, committer_time=1_000_000
        ),
        entry(
            sha="u2",
            subject="two (#2)",
            disposition=deferred,
            reason="needs the LLVM bump",
            pr_number=2,
            committer_time=1_000_000 + 86400,
        ),
        entry(
            sha="u3",
            subject="three (#3)",
            disposition=picked,
            reason="",
            pr_number=3,
            committer_time=1_000_000 + 3 * 86400,
        ),
    ]
    by = {e.sha: e for e in entries}
    metrics = SimpleNamespace(upstream_tip="u3", frontier="u3", contiguous_pin="u1", urgent=())
    picks = [
        SimpleNamespace(sha="f1", subject="[Cherry-pick] 'one (#1)'", upstream=("u1",), reverted_by=None),
        SimpleNamespace(
            sha="f2", subject="[Cherry-pick][RESOLVED] 'three (#3)'", upstream=("u3",), reverted_by="f9"
        ),
    ]
    return SimpleNamespace(entries=entries, picks=picks, metrics=metrics, entry=by.get)


def test_engine_facts_carry_picks_decisions_and_the_contiguous_pin_age() -> None:
    facts = engine_facts(
        _ledger(), {"f1": ForkCommit("f1", 2_000_000, "m"), "f2": ForkCommit("f2", 2_100_000, "m")}
    )
    assert [(p["sha"], p["way"], p["resolved"], p["reverted"], p["t"]) for p in facts["picks"]] == [
        ("f1", "single", False, False, 2_000_000.0),
        ("f2", "single", True, True, 2_100_000.0),
    ]
    assert facts["decisions"] == [
        {
            "sha": "u2",
            "subject": "two (#2)",
            "disposition": "deferred",
            "reason": "needs the LLVM bump",
            "pr": 2,
        }
    ]
    assert facts["point"]["pin_days_behind"] == 3.0 and facts["point"]["contiguous_pin"] == "u1"


def test_series_keeps_one_point_per_moment_in_time_order_and_skips_failed_ingests() -> None:
    points = [
        {"t": 3, "days_behind": 1.0, "backlog": 2},
        {"t": 1, "days_behind": 4.0, "backlog": 5},
        {"t": 2},
        {"t": 3, "days_behind": 1.5, "backlog": 2},
    ]
    assert [(p.t, p.days_behind) for p in series_points(points)] == [(1.0, 4.0), (3.0, 1.5)]


def test_assemble_keeps_first_seen_times_asks_area_owners_and_reads_thresholds() -> None:
    facts = {
        "in_flight": [
            {
                "kind": "chain",
                "key": "c1",
                "title": "chain",
                "number": 7,
                "url": "dry://x/7",
                "size": 2,
                "conflicts": ["lib/Dialect/TritonGPU/a.cpp", "cmake/llvm-hash.txt"],
                "pull": False,
                "head_sha": None,
            },
            {
                "kind": "bundle",
                "key": "b1",
                "title": "bundle",
                "number": 8,
                "url": None,
                "size": 5,
                "conflicts": [],
                "pull": True,
                "head_sha": "h1",
            },
            {
                "kind": "chain",
                "key": "c2",
                "title": "built chain",
                "number": 9,
                "url": None,
                "size": 3,
                "conflicts": [],
                "pull": True,
                "head_sha": "h2",
            },
        ]
    }
    previous = ForkFeed("acme/fork", 0.0, in_flight=(InFlight("chain", "c1", "chain", 7, None, 2, 100.0),))
    feed = assemble(
        "acme/fork",
        CONFIG,
        now=500.0,
        points=[],
        facts=facts,
        previous=previous,
        private=False,
        l1={"h1": ("success", "https://github.com/acme/fork/runs/3")},
    )
    chain, bundle, built = feed.in_flight
    assert built.pull and built.url == "https://github.com/acme/fork/pull/9" and not chain.pull
    assert chain.opened_at == 100.0 and bundle.opened_at == 500.0
    assert (
        chain.asked == ("layout-team", "llvm-owner") and chain.url == "https://github.com/acme/fork/issues/7"
    )
    assert bundle.url == "https://github.com/acme/fork/pull/8" and bundle.l1 == "success"
    assert feed.thresholds.days_behind == 3.0 and feed.thresholds.backlog == 10 and not feed.public_dashboard
    assert feed.upstream_url == "https://github.com/triton-lang/triton"


def test_trunk_runs_come_from_the_shared_store_per_repository(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Suite runs recorded by the L1 workers for this fork (not another's) with their failure counts."""
    from core.store import open_store
    from workers.jobs.dashboard_feed import trunk_runs
    from workers.testing.triage import TrunkResults

    store = open_store(None, tmp_path)
    TrunkResults(store, "acme/fork").record("c1", "lit", "passed", [("t1", "passed")], at=100.0)
    TrunkResults(store, "acme/fork").record(
        "c2", "lit", "failed", [("t1", "failed"), ("t2", "error")], at=200.0
    )
    TrunkResults(store, "other/fork").record("c9", "lit", "failed", [("t1", "failed")], at=300.0)
    runs = trunk_runs(store, "acme/fork")
    assert [(r.sha, r.status, r.failures, r.t) for r in runs] == [
        ("c1", "passed", 0, 100.0),
        ("c2", "broken", 2, 200.0),
    ]


def test_only_new_regressions_are_announced() -> None:
    from core.dashboard.feed import L2Metric, Regression
    from workers.jobs.dashboard_feed import new_regressions

    old = ForkFeed(
        "acme/fork", 0.0, l2=(L2Metric("matmul", "tflops", regressions=(Regression("a" * 40, -6.0),)),)
    )
    new = ForkFeed(
        "acme/fork",
        1.0,
        l2=(
            L2Metric(
                "matmul",
                "tflops",
                regressions=(
                    Regression("a" * 40, -6.0),
                    Regression("b" * 40, -9.5, "c" * 40, "https://x/issues/4"),
                ),
            ),
        ),
    )
    (text,) = new_regressions(old, new)
    assert (
        "matmul tflops -9.5% at bbbbbbbbbb" in text
        and "culprit cccccccccc" in text
        and "<https://x/issues/4|" in text
    )
    assert new_regressions(new, new) == []


def test_picks_are_dated_by_when_the_fork_first_had_them() -> None:
    """First ingest: history keeps its commit dates (not news); later, new picks are dated now,
    whatever committer time the built commit carries; reverted picks are forgotten."""
    from workers.jobs.ingestion import landing_times

    def facts(*shas: str) -> dict:  # type: ignore[type-arg]
        return {
            "picks": [{"sha": s, "t": 1000.0} for s in shas],
            "landed": [{"sha": "u" + s, "fork_sha": s, "t": 1000.0} for s in shas],
        }

    now = 100 * 86400.0
    first = landing_times(facts("a"), {}, now)
    assert first["landed_at"] == {"a": 1000.0} and first["landed"] == []  # 1000 s is long before the window
    second = landing_times(facts("a", "b"), first, now)
    assert second["landed_at"] == {"a": 1000.0, "b": now}
    assert [i["fork_sha"] for i in second["landed"]] == ["b"] and second["picks"][1]["t"] == now
    assert landing_times(facts("b"), second, now + 5)["landed_at"] == {"b": now}


def test_the_snapshot_clock_rebuilds_the_feed_with_githubs_state(tmp_path, loopback_github) -> None:  # type: ignore[no-untyped-def]
    """The beat's snapshot refreshes the feed: open tracking issues and the L1 check on an open
    bundle's head come from GitHub, the figures from the recorded points."""
    from core.dashboard.store import SqlFeedStore
    from core.render.tracking import LABEL
    from core.settings import WorkerSettings
    from workers.adapters.state import open_state
    from workers.tasks.ingest import refresh_feed

    gh = loopback_github
    settings = WorkerSettings.from_mapping({**gh.settings(), "FORKSYNC_DATA_DIR": str(tmp_path)})
    state = open_state(settings)
    state.append("metrics:acme/fork", {"t": 100.0, "days_behind": 2.5, "backlog": 3, "pending": 1})
    head = gh.head("acme/fork", "main")
    feeds = SqlFeedStore(None, tmp_path)
    feeds.put_facts(
        "acme/fork",
        {
            "private": False,
            "in_flight": [
                {
                    "kind": "bundle",
                    "key": "b1",
                    "title": "bundle",
                    "number": 5,
                    "url": None,
                    "size": 2,
                    "head_sha": head,
                }
            ],
        },
    )
    gh.add_issue("acme/fork", "[trunk] lit: test_x fails", labels=[LABEL])
    port = gh.adapter(gh.installation)
    port.create_check_run(
        "acme/fork", name="forksync / L1", head_sha=head, status="completed", conclusion="success"
    )
    refresh_feed(settings, state, gh.app(), gh.installation, "acme/fork")
    feed = feeds.get("acme/fork")
    assert feed is not None and feed.series[-1].days_behind == 2.5 and not feed.private
    assert [t.title for t in feed.tracking] == ["[trunk] lit: test_x fails"]
    assert feed.in_flight[0].l1 == "success" and feed.in_flight[0].l1_url


def test_the_feed_shows_regressions_stored_with_their_runs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The trunk-health feed takes each regression from the L2 store with its culprit, bisection
    range and tracking issue; a failed run's appears on each metric of its benchmark; a regressed
    run recorded with nothing stored is still listed, with no culprit."""
    from core.store import open_store
    from workers.jobs.dashboard_feed import l2_metrics
    from workers.testing.regression import L2Run
    from workers.testing.results import RegressionRecord, ResultStore

    config = load_repo_config(
        "l2:\n  benchmarks:\n    - name: mm\n      run: [python, b.py]\n"
        "      metrics: [{name: tflops}, {name: gbps}]\n"
    )
    results = ResultStore(open_store(None, tmp_path))
    runs = [
        results.record(
            "acme/fork",
            L2Run(
                "mm",
                f"s{i}",
                "pass",
                {"tflops": v, "gbps": 5.0},
                verdict=verdict,
                recorded_at=f"2026-11-0{i + 1}T00:00:00Z",
            ),
        )
        for i, (v, verdict) in enumerate(
            ((100.0, "ok"), (101.0, "ok"), (70.0, "regressed"), (100.0, "ok"), (60.0, "regressed"))
        )
    ]
    failing = results.record(
        "acme/fork", L2Run("mm", "s5", "fail", verdict="failed", recorded_at="2026-11-06T00:00:00Z")
    )
    results.record_regressions(
        "acme/fork",
        [
            RegressionRecord(
                "mm",
                "tflops",
                "regressed",
                "s2",
                runs[2].run_id or 0,
                delta_pct=-30.2,
                good="s1",
                culprit="c1",
                bisect_status="found",
                bisect_steps=2,
                candidates=3,
                tracking_issue=12,
            ),
            RegressionRecord(
                "mm",
                "",
                "failed",
                "s5",
                failing.run_id or 0,
                good="s3",
                bisect_status="found",
                culprit="c5",
                tracking_issue=13,
            ),
        ],
    )
    metrics = {m.metric: m for m in l2_metrics(results, "acme/fork", config)}
    tflops = metrics["tflops"].regressions
    assert [(r.sha, r.culprit, r.good, r.steps, r.tracking, r.kind) for r in tflops] == [
        ("s2", "c1", "s1", 2, 12, "regressed"),
        ("s4", None, None, 0, None, "regressed"),
        ("s5", "c5", "s3", 0, 13, "failed"),
    ]
    assert tflops[0].delta_pct == -30.2 and tflops[2].delta_pct is None
    assert [(r.sha, r.kind) for r in metrics["gbps"].regressions] == [("s5", "failed")]
