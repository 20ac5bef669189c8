"""The Conflict Resolution renderer: fbtriton's File/Action/Reason form, who resolved it, details collapsed."""

from __future__ import annotations

from core.render.resolution import (
    conflict_resolution_section,
    fenced,
    pick_body,
    produced_by,
    resolved_title,
    show_file,
)
from workers.engine.resolve.model import FileEntry, RailFailure, ResolveOutcome, Waiting

ENTRY = FileEntry(
    "include/triton/Analysis/Utility.h",
    "list-union",
    "Merged both sides' additions additively (hunk 1)",
    "Both sides add independent methods to ReduceOpHelper",
    diff3="<<<<<<< ours\nint a();\n||||||| base\n=======\nint b();\n>>>>>>> theirs\n",
    resolution_diff="--- a\n+++ b\n-<<<<<<< ours\n int a();\n",
)
WAIT = Waiting(
    "lib/x.cpp",
    "the agent resolution broke the markers rail(s)",
    rails=(RailFailure("markers", "marker left"),),
    diff3="<<<<<<< ours\nx\n",
)


def test_section_is_fbtriton_form_with_who_resolved_it() -> None:
    """Conflict Resolution:, then - File: / Action: / Reason:, plus the strategy that produced it."""
    text = conflict_resolution_section(ResolveOutcome("a" * 40, "b" * 40, True, "t", (ENTRY,)))
    lines = text.splitlines()
    i = lines.index("Conflict Resolution:")
    assert lines[i + 1 : i + 5] == [
        "- File: include/triton/Analysis/Utility.h",
        "  Action: Merged both sides' additions additively (hunk 1)",
        "  Reason: Both sides add independent methods to ReduceOpHelper",
        "  Resolved by: forksync `list-union` (deterministic)",
    ]
    assert (
        "<details><summary>Raw conflict and resolution diff: <code>include/triton/Analysis/Utility.h</code>"
        in text
    )
    assert text.startswith("<!-- forksync:resolution:aaaaaaaaaaaa -->")


def test_waiting_files_name_the_rail() -> None:
    """A file that waits says why and which rail refused it."""
    text = conflict_resolution_section(ResolveOutcome("a" * 40, "b", False, None, (), (WAIT,)))
    assert "Waiting for a human:" in text and "Rail `markers`: marker left" in text
    assert "Conflict Resolution:" not in text


def test_producers_are_named() -> None:
    """Agent, memory and deterministic strategies read differently."""
    assert produced_by("agent:claude") == "the agent `claude` (checked by the rails)"
    assert "resolution memory" in produced_by("memory")
    assert produced_by("token-merge+list-union") == "forksync `token-merge`, `list-union` (deterministic)"


def test_fence_outgrows_backticks_in_the_content() -> None:
    """A conflict containing ``` cannot close the fence early."""
    assert fenced("a ``` b\n").startswith("````diff\n")


def test_text_from_elsewhere_never_pings_or_links() -> None:
    """An Action written by an agent with @user and #12 is neutralised."""
    entry = FileEntry("a.py", "agent:x", "asked @alice", "see #12")
    text = conflict_resolution_section(ResolveOutcome("c" * 40, "d", True, "t", (entry,)), with_details=False)
    assert "@alice" not in text and "#12" not in text


def test_title_body_and_trailer() -> None:
    """Title in fbtriton's form; body with the upstream link, quoted message, section, approval, trailer last."""
    assert (
        resolved_title("Fix (#8172)", "[triton][beta]")
        == "[triton][beta] [Cherry-pick][RESOLVED] 'Fix (#8172)'"
    )
    body = pick_body(
        ResolveOutcome("e" * 40, "f", True, "t", (ENTRY,)),
        upstream_link="https://github.com/u/r/pull/8172",
        message="Fix (#8172)\n\nlong text",
        trailer="Reactor Cherry-pick Revision: " + "e" * 40,
    )
    assert body.startswith("This is a cherry-pick of an upstream commit: https://github.com/u/r/pull/8172")
    assert "> long text" in body and "approval is required" in body
    assert body.rstrip().endswith("Reactor Cherry-pick Revision: " + "e" * 40)


def test_show_file_opens_one_file_or_says_none() -> None:
    """/resolve show FILE: the file's entry with its details open; None for a file not in the pick."""
    outcome = ResolveOutcome("a" * 40, "b", False, None, (ENTRY,), (WAIT,))
    shown = show_file(outcome, ENTRY.path)
    assert shown is not None and "<details open>" in shown
    waiting = show_file(outcome, "lib/x.cpp")
    assert waiting is not None and "Rail `markers`" in waiting
    assert show_file(outcome, "nope.c") is None


def test_section_is_replaced_in_place_and_title_retitled() -> None:
    """A second rendering replaces the first between its markers; text around it is kept."""
    from core.render.resolution import replace_section, retitle_resolved

    first = conflict_resolution_section(
        ResolveOutcome("a" * 40, "b", False, None, (), (WAIT,)), with_details=False
    )
    body = replace_section("Intro\n\ntrailer", first, "a" * 40)
    assert body.startswith("Intro\n\ntrailer\n\n<!-- forksync:resolution:aaaaaaaaaaaa -->")
    second = conflict_resolution_section(
        ResolveOutcome("a" * 40, "b", True, "t", (ENTRY,)), with_details=False
    )
    again = replace_section(body, second, "a" * 40)
    assert again.count("forksync:resolution:aaaaaaaaaaaa") == 2  # one start, one end marker
    assert (
        "Waiting for a human" not in again and "Conflict Resolution:" in again and again.startswith("Intro")
    )
    assert retitle_resolved("[x] [Cherry-pick][CONFLICTS] 'A (#1)'") == "[x] [Cherry-pick][RESOLVED] 'A (#1)'"
