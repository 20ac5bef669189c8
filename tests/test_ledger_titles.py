"""Title parsing: the pick tag after any fork prefix, process tags, bundle lists (cut or not)."""

from __future__ import annotations

import pytest

from workers.engine.titles import bundle_numbers, parse_title


@pytest.mark.parametrize(
    "prefix", ["[triton][beta] ", "[ROCm] ", "[fork]", "[release/3.4] ", "[a][b][c] ", ""]
)
def test_the_pick_tag_is_found_after_any_fork_prefix(prefix: str) -> None:
    t = parse_title(f"{prefix}[Cherry-pick][RESOLVED][URGENT] '[AMD][Hotfix] Fix loads (#8036)' (#846)")
    assert t.is_pick and t.pick == "Cherry-pick" and t.process == ("RESOLVED", "URGENT") and t.urgent
    assert t.rest == "'[AMD][Hotfix] Fix loads (#8036)' (#846)" and t.fork_pr == 846
    assert (
        t.prefix == tuple(x.strip("[]") for x in prefix.replace("][", "] [").split())
        if prefix
        else t.prefix == ()
    )


@pytest.mark.parametrize(
    ("subject", "pick", "rest"),
    [
        ("[triton][beta] Backport '[AMD] Fix (#8302)'", "Backport", "'[AMD] Fix (#8302)'"),
        ("Backport (release/3.8.x) '[AMD] Fix (#8302)' (#9)", "Backport", "'[AMD] Fix (#8302)' (#9)"),
        (
            "[triton][beta] [Cherry-pick] Backport '[Gluon] Fences (#9076)' (#1214)",
            "Cherry-pick",
            "'[Gluon] Fences (#9076)' (#1214)",
        ),
        (
            "[triton][Cherry-pick][AMD] Optimize loops (#8464) (#1805)",
            "Cherry-pick",
            "[AMD] Optimize loops (#8464) (#1805)",
        ),
        (
            "[pick] [BACKEND][NVIDIA] Update knobs (#8121) (#735)",
            "pick",
            "[BACKEND][NVIDIA] Update knobs (#8121) (#735)",
        ),
    ],
)
def test_pick_tags_and_words(subject: str, pick: str, rest: str) -> None:
    t = parse_title(subject)
    assert (t.pick, t.rest, t.bundle) == (pick, rest, False)


def test_no_pick_tag_is_no_pick() -> None:
    for subject in (
        "[TLX] Fix after upstream refactor (#9133) (#1380)",
        "[triton][backport-needed] Report (#2844)",
        "[Cherry-pick by TLX-rebase][TLX] pick memdesc (#208)",
    ):
        assert not parse_title(subject).is_pick, subject


@pytest.mark.parametrize(
    ("subject", "continuation", "numbers"),
    [
        (
            "[triton][beta] [Cherry-pick][BUNDLE] Cherry-pick 2 upstream(#6514 #6515) (#1211)",
            "",
            [6514, 6515],
        ),
        ("[Cherry-pick][BUNDLE] #9336 #9342 #9356 (#1698)", "", [9336, 9342, 9356]),
        ("[Cherry-pick][BUNDLE] Cherry-pick 4 upstream(#1 #2)#3 #4 (#9)", "", [1, 2, 3, 4]),
        ("[Cherry-pick][BUNDLE] Cherry-pick 8 upstream commits (#1, #2, #3) (#9)", "", [1, 2, 3]),
        ("[Cherry-pick][BUNDLE] tensordesc + dependents (#11 #12 #13 ...) (#9)", "", [11, 12, 13]),
        (
            "[triton][beta][BUNDLE] Backport 56 upstream PRs with #10855/#10169 repairs (#2276)",
            "",
            [10855, 10169],
        ),
        ("[Reactor-Bundle] Cherry-pick upstream (#9709 and 13 more) (#9)", "", [9709]),
        ("[Cherry-pick][BUNDLE] Cherry-pick 3 upstream PRs (#1732)", "", []),
        # GitHub cut the title: the number at the cut is dropped, or joined with the body's line.
        ("[Cherry-pick][BUNDLE] Cherry-pick 9 upstream(#101 #102 #10… (#9)", "", [101, 102]),
        (
            "[Cherry-pick][BUNDLE] Cherry-pick 9 upstream(#101 #102 #10… (#9)",
            "…3 #104)",
            [101, 102, 103, 104],
        ),
        ("[Cherry-pick][BUNDLE] Cherry-pick 9 upstream(#101 #102 #", "", [101, 102]),
        ("[Cherry-pick][BUNDLE] Cherry-pick 9 upstream(#101 #102 #103) (#17…", "", [101, 102, 103]),
    ],
)
def test_bundle_title_lists(subject: str, continuation: str, numbers: list[int]) -> None:
    t = parse_title(subject)
    assert t.is_pick and t.bundle
    assert bundle_numbers(t.rest, continuation) == numbers


def test_a_bundle_word_after_the_pick_word() -> None:
    t = parse_title("[triton][beta] Cherry-pick upstream reduction/layout bundle (#1877)")
    assert t.is_pick and t.bundle and bundle_numbers(t.rest) == []
