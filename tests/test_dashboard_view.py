"""The dashboard's page model and plots, from plain data (no Flask, no store)."""

from __future__ import annotations

from dataclasses import replace

from bot.dashboard import plot, view
from core.dashboard.feed import ForkFeed, InFlight, LandedPick, SeriesPoint
from tests.fixtures.dashboard import DAY, FORK_URL, NOW, UPSTREAM_URL, bad_feed, recorded_feed, sha


def test_feed_round_trips_through_json_with_the_same_version() -> None:
    """A feed read back from its JSON is equal to the one written, and so is its version."""
    feed = recorded_feed()
    again = ForkFeed.from_json(feed.as_json())
    assert again == feed and again.version() == feed.version()
    assert replace(feed, updated_at=feed.updated_at + 1).version() != feed.version()


def test_feed_reads_documents_from_newer_writers() -> None:
    """Unknown keys (a newer worker) are ignored, missing ones take their defaults."""
    data = recorded_feed().as_json()
    data["series"][0]["new_figure"] = 3
    data["something_new"] = {"x": 1}
    del data["l2"]
    feed = ForkFeed.from_json(data)
    assert feed.l2 == () and feed.series[0].days_behind == recorded_feed().series[0].days_behind


def test_headline_shows_current_values_linked_to_the_pins() -> None:
    """The big numbers are the last point's, each linking the upstream commit of its pin."""
    feed = recorded_feed()
    behind, backlog, pending, urgent = view.headline(feed)
    last = feed.series[-1]
    assert (
        behind.value == f"{last.days_behind:.1f}" and behind.url == f"{UPSTREAM_URL}/commit/{last.frontier}"
    )
    assert (
        backlog.value == str(last.backlog) and backlog.url == f"{UPSTREAM_URL}/commit/{last.contiguous_pin}"
    )
    assert not behind.bad and not backlog.bad
    assert pending.value == str(last.pending) and urgent.value == "1"


def test_values_at_or_over_the_config_threshold_are_bad() -> None:
    """A figure at or over its configured bad value is marked; under it is not."""
    behind, backlog, *_ = view.headline(bad_feed())
    assert behind.bad and backlog.bad
    edge = replace(recorded_feed(), series=(SeriesPoint(NOW, 7.0, 49),))
    behind, backlog, *_ = view.headline(edge)
    assert behind.bad and not backlog.bad


def test_no_data_yet_shows_dashes_not_zeroes() -> None:
    """A fork without a recorded ingest shows '–' (0 days behind would be a lie)."""
    feed = ForkFeed("acme/new", NOW)
    behind, backlog = view.headline(feed)
    assert behind.value == backlog.value == "–"
    assert "no data yet" in view.behind_chart(feed, NOW)


def test_in_flight_lists_urgent_then_chains_then_bundles_with_age_and_who_was_asked() -> None:
    """Rows carry size, age, L1 state (linked to its check run), the conflicted files and the owners asked."""
    table = view.in_flight_table(recorded_feed(), NOW)
    kinds = [row[0].text for row in table.rows]
    assert kinds == ["urgent", "chain", "bundle"]
    chain = table.rows[1]
    assert chain[1].url == f"{FORK_URL}/issues/407" and chain[2].text == "3"
    assert chain[3].text == "5 d 3 h" and chain[4].text == "failure"
    assert chain[5].text == "lib/Dialect/TritonGPU/IR/LinearLayoutConversions.cpp"
    assert chain[6].text == "@layout-team, @alice"
    bundle = table.rows[2]
    assert bundle[4].url == f"{FORK_URL}/runs/9001" and bundle[2].url == f"{FORK_URL}/pull/412"


def test_decisions_show_reasons_and_link_upstream() -> None:
    rows = view.decisions_table(recorded_feed()).rows
    assert [r[0].text for r in rows] == ["deferred", "won't port"]
    assert (
        rows[1][2].url == f"{UPSTREAM_URL}/pull/7990"
        and rows[1][4].text == "the fork keeps its own AMD backend"
    )


def test_weekly_throughput_counts_upstream_commits_by_how_they_came_in() -> None:
    """A bundle of 14 counts 14 commits; resolved picks count as resolved whatever their way."""
    monday = view.week_start(NOW)
    picks = [
        LandedPick("a", monday + 3600, 14, "bundle", False),
        LandedPick("b", monday + 7200, 1, "single", False),
        LandedPick("c", monday + 9000, 1, "single", True, "agent"),
        LandedPick("d", monday - 3600, 5, "bundle", False),
    ]
    weeks = view.weekly(picks, 2, NOW)
    assert weeks == [
        (monday - 7 * DAY, {"bundled": 5}),
        (monday, {"bundled": 14, "single pick": 1, "resolved": 1}),
    ]


def test_shares_resolvers_and_revert_rates() -> None:
    feed = recorded_feed()
    shares = {f.label: f for f in view.shares(feed)}
    total = sum(p.upstream for p in feed.picks)
    bundled = sum(p.upstream for p in feed.picks if p.way == "bundle" and not p.resolved)
    assert shares["bundled"].hint == f"{bundled} of {total} upstream commits"
    assert shares["resolved"].url and "RESOLVED" in shares["resolved"].url
    resolvers = {row[0].text: row for row in view.resolvers_table(feed).rows}
    assert set(resolvers) == {"deterministic", "memory", "agent", "human"}
    assert resolvers["human"][3].text == "1"  # week 3's resolved pick was reverted
    resolved_rate, clean_rate = view.reverts(feed)
    assert resolved_rate.value == "17%" and clean_rate.value == "8%"  # 1 of 6, 1 of 12


def test_trunk_suites_count_statuses_and_link_each_run() -> None:
    rows = {r.suite: r for r in view.suite_rows(recorded_feed())}
    lit = rows["lit"]
    assert [c.text for c in lit.counts] == ["18", "2", "0", "0"]
    assert lit.strip[6].css == "st-broken" and lit.strip[6].url == f"{FORK_URL}/runs/7006"
    unit = rows["python-unit"]
    assert [c.text for c in unit.counts] == ["15", "0", "4", "1"]


def test_l2_rows_show_baseline_change_and_regressions_with_bisection_links() -> None:
    rows = {(r.benchmark, r.metric): r for r in view.l2_rows(recorded_feed())}
    matmul = rows[("matmul", "tflops")]
    assert matmul.baseline == "612" and matmul.change.css == "bad" and matmul.change.text.startswith("-")
    first_bad, delta, culprit, bisection, issue = matmul.regressions[0]
    assert first_bad.url == f"{FORK_URL}/commit/{sha('trunk10')}" and delta.text == "-7.9%"
    assert (
        culprit.url == f"{FORK_URL}/commit/{sha('culprit')}"
        and culprit.text == f"culprit {sha('culprit')[:10]}"
    )
    assert bisection.url == f"{FORK_URL}/compare/{sha('trunk9')}...{sha('trunk10')}"
    assert bisection.text == f"bisected {sha('trunk9')[:7]}..{sha('trunk10')[:7]} over 6 commits, 3 steps"
    assert issue.url == f"{FORK_URL}/issues/409" and issue.text == "issue #409"
    softmax = rows[("softmax", "latency_ms")]
    assert softmax.change.css == "" and softmax.regressions == ()


def test_regressions_without_a_culprit_say_why_and_a_failure_has_no_change() -> None:
    """A regression whose bisection found nothing says why; one with nothing recorded yet is
    "bisecting…"; a failed run shows "failed" instead of a change, and no range without a good end."""
    from core.dashboard.feed import Regression

    over = view.regression_cells(
        FORK_URL,
        Regression(
            sha("bad"),
            -9.0,
            good=sha("good"),
            steps=8,
            candidates=40,
            status="over-budget",
            note="budget of 8 runs spent",
            tracking=7,
        ),
    )
    assert over[2].text == "no culprit: budget of 8 runs spent" and over[2].url is None
    assert over[3].url == f"{FORK_URL}/compare/{sha('good')}...{sha('bad')}" and over[4].text == "issue #7"
    pending = view.regression_cells(FORK_URL, Regression(sha("bad"), -6.0))
    assert [c.text for c in pending[2:]] == ["bisecting…", "–", "no issue"]
    failed = view.regression_cells(
        FORK_URL,
        Regression(
            sha("bad"), None, kind="failed", status="none", note="no good run recorded to bisect from"
        ),
    )
    assert failed[1].text == "failed" and failed[3].text == "not bisected" and failed[3].url is None


def test_urgent_picks_are_marked_on_the_charts() -> None:
    """An urgent pick in flight is a linked marker on the days-behind chart."""
    svg = view.behind_chart(recorded_feed(), NOW)
    assert f'href="{FORK_URL}/pull/415"' in svg and "urgent:" in svg
    assert 'class="threshold"' in svg and svg.count('class="series"') == 2  # frontier and contiguous pin


def test_index_rows_sort_forks_and_show_the_worst_trunk_state() -> None:
    feeds = [recorded_feed("zeta/fork"), bad_feed("Acme/behind")]
    rows = view.index_rows(feeds)
    assert [r.repo for r in rows] == ["Acme/behind", "zeta/fork"]
    assert rows[0].days_behind.bad and rows[1].trunk == "passed" and rows[0].in_flight == 3


def test_ages_read_at_a_glance() -> None:
    assert [view.age_text(s) for s in (59, 600, 7200, DAY, DAY + 4 * 3600)] == [
        "0 min",
        "10 min",
        "2 h",
        "1 d",
        "1 d 4 h",
    ]


def test_plots_escape_labels_and_are_deterministic() -> None:
    """A label with markup is escaped; the same input gives the same bytes."""
    line = plot.Line("<script>alert(1)</script>", ((NOW, 1.0), (NOW + DAY, 2.0)))
    svg = plot.time_chart("t & <b>", [line], threshold=1.5, now=NOW + 2 * DAY)
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "t &amp; &lt;b&gt;" in svg
    assert svg == plot.time_chart("t & <b>", [line], threshold=1.5, now=NOW + 2 * DAY)
    assert plot.nice_max(7.3) == 10 and plot.nice_max(0) == 1 and plot.nice_max(212) == 250


def test_in_flight_ages_use_the_first_time_seen() -> None:
    item = InFlight("bundle", "k", "t", 1, None, 2, NOW - 3 * 3600)
    feed = replace(recorded_feed(), in_flight=(item,))
    assert view.in_flight_table(feed, NOW).rows[0][3].text == "3 h"
