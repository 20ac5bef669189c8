"""Replies to comment commands: statuses, reactions, safe text, /help, /status and plan tables."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from core.commands import NAMES, parse
from core.render import commands as r

URL = "https://github.com/up/stream"


def test_reply_lists_each_outcome_with_its_emoji_and_remedy() -> None:
    """One reply: the marker, the author, then each command with 👍/🚀/😕 and, for failures, what to do."""
    skip, bundle, bad = parse("/skip abcd reason\n/bundle\n/urgent abc")
    body = r.reply(
        "alice",
        77,
        [r.done(skip, "marked"), r.started(bundle, "planning"), r.bad_command(bad)],
    )
    assert body.startswith(r.reply_marker(77))
    assert "@alice" in body
    assert "👍 `/skip abcd reason` — marked" in body
    assert "🚀 `/bundle` — planning" in body
    assert "😕 `/urgent abc` — `abc` is too short" in body
    assert body.count("**What to do:**") == 1
    assert "Traceback" not in body


def test_reactions_one_per_distinct_status() -> None:
    """Mixed outcomes give 👍 and 😕 once each; all-OK gives only 👍; nothing gives nothing."""
    (status,) = parse("/status")
    ok, fail = r.done(status, "x"), r.failed(status, "y", "z")
    assert r.reactions([ok, fail, ok]) == ["+1", "confused"]
    assert r.reactions([ok]) == ["+1"]
    assert r.reactions([r.started(status, "go")]) == ["rocket"]
    assert r.reactions([]) == []


def test_unknown_command_reply_names_closest_and_help() -> None:
    """An unknown command's reply suggests the closest command and /help."""
    outcome = r.bad_command(parse("/retset")[0])
    assert outcome.status == r.FAILED
    assert "`/retest`" in outcome.remedy and "/help" in outcome.remedy


def test_denied_names_the_permission_needed() -> None:
    """A denial says which permission is needed and what the user has."""
    outcome = r.denied(parse("/skip abcd x")[0], "bob", "o/fork", "read")
    assert "**write**, **maintain** or **admin**" in outcome.message and "you have read" in outcome.message
    assert r.denied(parse("/bundle")[0], "eve", "o/fork", None).message.endswith(
        "(you are not a collaborator)"
    )


def test_signoff_denial_names_the_owners() -> None:
    """Only owners may sign off; the reply names them."""
    outcome = r.denied_signoff(parse("/signoff llama")[0], "llama", ["ann", "ben"])
    assert "@ann, @ben" in outcome.message and "/signoff llama" in outcome.remedy


def test_ambiguous_ref_lists_candidates() -> None:
    """An ambiguous prefix lists every candidate with its link and subject."""
    outcome = r.ambiguous_ref(
        parse("/urgent abcd")[0],
        "abcd",
        [r.CommitLine("abcd1111" * 5, "one"), r.CommitLine("abcd2222" * 5, "two")],
        URL,
    )
    assert "matches 2 upstream commits" in outcome.message
    assert f"({URL}/commit/{'abcd1111' * 5})" in outcome.details and "two" in outcome.details


def test_rate_limited_says_when_to_retry() -> None:
    """The rate-limit reply says the limit, and when to retry in minutes and UTC time."""
    now = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
    outcome = r.rate_limited("/status", "bob", 5, 600, 240, now)
    assert "ran 5 commands in the last 10 min" in outcome.message
    assert "retry in 4 min (after 10:04 UTC)" in outcome.remedy


def test_internal_error_has_id_and_no_trace() -> None:
    """An unexpected failure is reported with an id, never with exception text."""
    outcome = r.internal_error("/bundle", "e-123")
    assert outcome.message == "internal error, id `e-123`, logged"
    assert "open an issue" in outcome.remedy


def test_outside_text_cannot_ping_or_link_fork_issues() -> None:
    """Subjects with @name, #N, |, and <tags> are neutralised; #N links to the upstream PR."""
    text = r.inline("Fix @someone's bug | <b>bold</b> (#123)", URL)
    assert "@someone" not in text and "@\u200dsomeone" in text
    assert f"[#123]({URL}/pull/123)" in text
    assert "\\|" in text and "<b>" not in text
    assert "#\u200d5" in r.inline("see #5")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_code_span_always_holds_the_text(text: str) -> None:
    """code() wraps any text (backticks included) in a span that no backtick inside can close."""
    span = r.code(text)
    inner = " ".join(text.split())
    fence = span[: len(span) - len(span.lstrip("`"))]
    assert fence and fence not in inner
    assert span.endswith(fence)


def test_help_table_lists_every_command() -> None:
    """/help lists every command with its usage; /help skip just that one."""
    table = r.help_table()
    for name in NAMES:
        assert f"`/{name}" in table
    one = r.help_table("skip")
    assert "/skip REF REASON" in one and "/bundle" not in one


def test_status_details_show_metrics_links_and_open_items() -> None:
    """/status shows days behind, backlog with upstream links, pins, bundles and chains."""
    view = r.StatusView(
        upstream_url=URL,
        upstream_tip="f" * 40,
        frontier="e" * 40,
        contiguous_pin="d" * 40,
        days_behind=2.54,
        backlog=(r.CommitLine("a" * 40, "Old thing (#9)"),),
        pending=12,
        picked=30,
        wont_port=1,
        bundles=(r.OpenItem("bundle-1", 5, "https://github.com/o/f/pull/4"),),
        chains=(),
    )
    text = r.status_details(view)
    assert "| days behind upstream | **2.5** |" in text
    assert "| backlog commits | **1** |" in text
    assert f"[`aaaaaaaaaa`]({URL}/commit/{'a' * 40}) Old thing ([#9]({URL}/pull/9))" in text
    assert "[bundle-1](https://github.com/o/f/pull/4) (5 commits)" in text
    assert "**Open chains:** none" in text


def test_plan_table_rows_and_reasons() -> None:
    """The dry-run table has one row per bundle or chain, with counts and chain reasons."""
    table = r.plan_table(
        [
            r.PlannedGroup("bundle", "b-1", (r.CommitLine("1" * 40, "a"), r.CommitLine("2" * 40, "b"))),
            r.PlannedGroup("chain", "c-1", (r.CommitLine("3" * 40, "c"),), ("conflict: lib/x.cpp",)),
        ],
        URL,
    )
    lines = table.splitlines()
    assert len(lines) == 4
    assert lines[2].startswith("| bundle | `b-1` | 2 |") and lines[2].endswith("| low risk |")
    assert "conflict: lib/x.cpp" in lines[3]
    assert r.plan_table([], URL) == "The plan is empty: nothing is pending."


def test_long_replies_are_cut_within_githubs_limit() -> None:
    """A reply never exceeds what a GitHub comment can hold."""
    (status,) = parse("/status")
    body = r.reply("a", 1, [r.done(status, "x", details="line\n" * 20_000)])
    assert len(body) <= r.MAX_BODY and body.endswith("too long for a comment)")
