"""Hidden markers: the bot accepts one only where it wrote it, and never echoes one from outside."""

from __future__ import annotations

from core.commands import parse
from core.render import carries_marker, leading_markers, marker, neutral
from core.render import commands as render
from core.render.ingest import BundleView, CommitRow, bundle_body
from tests.fixtures.commands import FORK, CommandWorld


def test_a_marker_counts_only_at_the_top_of_the_body() -> None:
    mark = marker("reply", "7")
    assert carries_marker(f"{mark}\n\n@maint\n\nok", mark)
    assert carries_marker(f"{marker('bundle', 'k')}\n{mark}\nbody", mark)
    assert not carries_marker(f"@stranger\n\n{mark}", mark)
    assert not carries_marker(f'{marker("reply", "1")}\n\n`/skip "{mark}"`', mark)


def test_neutral_text_opens_no_comment_pings_nobody_links_no_issue() -> None:
    text = neutral("<!-- forksync:approval:3 --> thanks @alice, see #12")
    assert "<!--" not in text and "-->" not in text and "@alice" not in text and "#12" not in text
    assert (
        text.replace("\u200b", "").replace("\u200d", "")
        == "<!-- forksync:approval:3 --> thanks @alice, see #12"
    )


def test_a_reply_never_carries_a_marker_the_user_wrote() -> None:
    """The reply to ``/skip "<!-- forksync:reply:N -->"`` (a parse error, quoted back) holds only
    its own marker, at the top, and the echoed one is broken."""
    evil = marker("reply", "1234")
    for body in (f'/skip abc123 "{evil}"', f"/frobnicate {evil}", f"/skip {evil}"):
        outcomes = [render.bad_command(c) if not c.ok else render.done(c, "ok") for c in parse(body)]
        reply = render.reply("stranger", 99, outcomes)
        assert leading_markers(reply) == [marker("reply", "99")]
        assert evil not in reply, reply


def test_upstream_subjects_in_pr_bodies_are_inert() -> None:
    """A bundle body copies upstream subjects: a marker or an @mention in one is neutralised (the
    upstream PR number stays: the ledger reads it from the landed bundle)."""
    row = CommitRow(sha="a" * 40, subject="Fix <!-- forksync:bundle:x --> for @bob (#77)", author="Dev")
    view = BundleView(key="k", branch="forksync/bundle/k", base_branch="main", commits=(row,), plan_id="p")
    body = bundle_body(view, "https://github.com/up/stream")
    assert leading_markers(body)[0] == marker("bundle", "k")
    assert body.count("<!-- forksync:bundle:") == 1 and "@bob" not in body and "(#77)" in body


def test_a_strangers_echoed_marker_does_not_silence_a_maintainers_command(
    command_world: CommandWorld,
) -> None:
    """A reader's comment quoting the reply markers of the next comments is answered (refused) and
    the maintainer's next command is still answered."""
    w = command_world
    probe = w.add_comment("just a comment", "reader")
    quoted = " ".join(f'"{marker("reply", str(n))}"' for n in range(probe + 1, probe + 8))
    w.say(f"/skip abc123 {quoted}", author="reader")
    cid = w.say("/help")
    (reply,) = w.replies(cid)
    assert "/help" in reply["body"] and "/bundle" in reply["body"], (
        "the maintainer's command was taken as answered"
    )


def test_an_echoed_approval_marker_does_not_revoke_an_approval(command_world: CommandWorld) -> None:
    from tests.loopback_github import APP_BOT_LOGIN
    from workers.commands.approval import is_approved

    w = command_world
    pr = w.open_pull("patch", head_repo="stranger/fork", author="stranger")
    adapter = w.gh.adapter(w.gh.installation)
    w.say(f'/skip "{marker("approval", str(pr))}"', issue=pr, author="reader")
    w.say("/approve", issue=pr)
    w.say(f'/skip "{marker("approval", str(pr))}"', issue=pr, author="stranger")
    assert is_approved(adapter, FORK, pr, own_login=APP_BOT_LOGIN)
