"""Forms found by reading fbtriton's whole history, not only the 660-message corpus.

``benchmarks/bench_fbtriton_history.py`` runs the ledger's recognition over every fork-side
commit of facebookexperimental/triton (all branches and PR heads); the messages it read wrongly
are vendored verbatim in ``tests/data/fbtriton-history`` (MIT, see ``LICENSE`` and ``vendor.py``
there) with the real upstream commits they name. Each test is one form, decided by reading the
message (the expected PR numbers are written here by hand, not derived from the parse).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from workers.engine import reverts
from workers.engine.decisions import Decisions, Disposition
from workers.engine.history import Commit
from workers.engine.ledger.compute import compute_ledger
from workers.engine.recognise import recognise
from workers.engine.recognise.index import UpstreamIndex
from workers.engine.recognise.model import BODY_LINK, SUBJECT, Recognition
from workers.engine.recognise.rules import Rules

DATA = Path(__file__).parent / "data" / "fbtriton-history"
MESSAGES = {
    row["sha"][:10]: row for row in map(json.loads, (DATA / "messages.jsonl").read_text().splitlines())
}
UPSTREAM = [
    Commit(u["sha"], (), "Upstream", "up@example.com", 1_000_000 + i, 1_000_000 + i, u["subject"], ())
    for i, u in enumerate(map(json.loads, (DATA / "upstream.jsonl").read_text().splitlines()))
]
INDEX = UpstreamIndex(UPSTREAM)
PR = {c.sha: c.pr_number for c in UPSTREAM}
RULES = Rules.build(
    upstream_url="https://github.com/triton-lang/triton",
    fork_url="https://github.com/facebookexperimental/triton",
)


def read(short: str) -> Recognition:
    row = MESSAGES[short]
    commit = Commit(
        row["sha"], ("0" * 40,), "Fork", "fork@example.com", 2, 2, row["subject"], (), row["message"]
    )
    return recognise(commit, INDEX, RULES)


def carried(short: str) -> set[int | None]:
    return {PR[s] for s in read(short).upstream}


def decided(short: str, kind: str) -> set[int | None]:
    return {PR[s] for s, k, _ in read(short).decided if k == kind}


def test_the_vendored_messages_are_verbatim_real_ones() -> None:
    assert len(MESSAGES) == 26
    for short, row in MESSAGES.items():
        assert row["sha"].startswith(short) and re.fullmatch(r"[0-9a-f]{40}", row["sha"])
        assert row["message"].split("\n", 1)[0] == row["subject"]
    assert all(c.pr_number for c in UPSTREAM)


def test_an_upstream_subject_whose_number_names_the_upstream_repository_is_still_upstreams() -> None:
    """`[BACKEND] Don't flush denorms for precise div/sqrt (triton-lang/triton#8557) (#870)`:
    upstream's squash suffix `(#8557)` arrived qualified with upstream's slug."""
    assert "(triton-lang/triton#8557) (#870)" in MESSAGES["995ec89f9d"]["subject"]
    assert carried("995ec89f9d") == {8557}
    assert read("995ec89f9d").recogniser == SUBJECT


def test_other_repositories_numbers_in_a_subject_are_not_upstreams() -> None:
    other = Commit(
        "f" * 40,
        (),
        "F",
        "f@x",
        2,
        2,
        "[BACKEND] Don't flush denorms for precise div/sqrt (pytorch/pytorch#8557)",
        (),
    )
    assert recognise(other, INDEX, RULES).upstream == ()


@pytest.mark.parametrize(
    ("short", "pr"),
    [
        (
            "eff8c521b9",
            8036,
        ),  # [release/3.5.x][AMD] Refactor llStore and llLoad to use proper ops (#8036) (#8118)
        (
            "fc15d21079",
            10523,
        ),  # [TLX][AMD][Backend] Use latest build for llvm/llvm-project@62b7cf9623fc (#10523) (#1652)
    ],
)
def test_a_fork_prefix_before_an_upstream_subject_verbatim_is_a_pick(short: str, pr: int) -> None:
    """A release or side branch takes upstream's commit with its whole title, number included,
    and adds its own leading tags (no pick tag): the rest is upstream's subject."""
    assert carried(short) == {pr}
    assert read(short).recogniser == SUBJECT


def test_a_pick_retitled_without_upstreams_tags_keeps_its_number_and_is_a_pick() -> None:
    """`Update ptxas_options knobs default value (#8121)`, upstream's `[BACKEND][NVIDIA] Update
    ptxas_options knobs default value (#8121)` with upstream's body, cherry-picked onto a side
    branch without upstream's tags; with a fork prefix and the fork's (#M) too."""
    assert carried("01f3f2cbc2") == {8121}
    for subject, want in (
        ("[TLX] Update ptxas_options knobs default value (#8121) (#735)", (8121,)),
        ("Update ptxas_options knobs default value (#8122)", ()),  # another number: no match
        ("Update ptxas_options knobs default value (#735)", ()),  # the fork's own number only
        ("[TLX] Update ptxas_options knobs default (#8121)", ()),  # another text
    ):
        commit = Commit("e" * 40, (), "F", "f@x", 2, 2, subject, ())
        assert tuple(PR[s] for s in recognise(commit, INDEX, RULES).upstream) == want, subject


PICKED_37 = {
    *(10066, 10060, 10083, 9936, 10062, 10055, 10082, 10074, 10076, 10091, 10077, 10030, 10093),
    *(10095, 10097, 10090, 10004, 10101, 10098, 9865, 10110, 10111, 10114, 10112, 9850, 10109),
    *(10119, 10117, 10116, 9922, 10088, 9847, 10108, 9613, 10118, 10139, 10138),
}


def test_a_bundles_inline_lists_separated_by_semicolons_and_joined_by_plus() -> None:
    """`Picked (37): #10066 `maskSpanAffineOffset` ...; #10060 small MMAv2 FP64 8x8x4; ...` on
    one line (the title, cut by GitHub, lists 28); `Deferred (7, backlog): #10078 + #10113 +
    #10115 AMD ... (needs deferred #9717 module-split); #9765 + #10122 ...`;
    `Won't-port (3): #10071, #10085, #10092 — ...`."""
    assert len(PICKED_37) == 37
    assert carried("4e02fa892b") == PICKED_37
    assert decided("4e02fa892b", "deferred") == {10078, 10113, 10115, 9765, 10122, 10089, 9988}
    assert decided("4e02fa892b", "wont_port") == {10071, 10085, 10092}


def _bundle(body: str) -> Recognition:
    """A bundle message written here (not vendored): the title of 4e02fa892b's kind, ``body``."""
    subject = "[triton][beta][BUNDLE] Backport 3 upstream PRs with #10066 repairs (#7924)"
    commit = Commit(
        "d" * 40, ("0" * 40,), "Fork", "fork@example.com", 2, 2, subject, (), f"{subject}\n\nSummary:\n{body}"
    )
    return recognise(commit, INDEX, RULES)


def _decided_in(found: Recognition, kind: str) -> set[int | None]:
    return {PR[s] for s, k, _ in found.decided if k == kind}


def test_a_bundles_inline_items_separated_by_commas_each_with_a_reason() -> None:
    """`Won't-port (3): #10071 CI only, #10085 CI only, #10092 CI only` names all three (the
    replay's generated bundles write it so; only the first was read before). A comma inside one
    item's reason does not start an item when the label's count says so."""
    found = _bundle(
        "Picked (2): #10066 adds a fix, #10060 small MMAv2 FP64\n\n"
        "Deferred (1): #10078 needs #10113, #10115 first\n\n"
        "Won't-port (3): #10071 CI only, #10085 CI only, #10092 CI only\n"
    )
    assert {PR[s] for s in found.upstream} == {10066, 10060}
    assert _decided_in(found, "deferred") == {10078}
    assert _decided_in(found, "wont_port") == {10071, 10085, 10092}
    uncounted = _bundle("Picked: #10066 fix\n\nWon't-port: #10071 CI only, #10085 docs only\n")
    assert _decided_in(uncounted, "wont_port") == {10071, 10085}


APPLIED_94 = {
    *(9720, 9725, 9605, 9733, 9731, 9727, 9742, 9734, 9716, 9721, 9744, 9741, 9730, 9722, 9747, 9750),
    *(9755, 9691, 9751, 9759, 9758, 9763, 9761, 9753, 9770, 9769, 9773, 9772, 9774, 9478, 9764, 9762),
    *(9713, 9780, 9767, 9752, 9729, 9788, 9736, 9388, 9790, 9777, 9782, 9804, 9803, 9740, 9813, 9811),
    *(9781, 9828, 9796, 9783, 9807, 9825, 9831, 9833, 9805, 9787, 9814, 9837, 9841, 9785, 9835, 9846),
    *(9848, 9849, 9820, 9732, 9863, 9866, 9806, 9876, 9874, 9875, 9878, 9775, 9873, 9879, 9844, 9882),
    *(9867, 9885, 9568, 9699, 9832, 9786, 9818, 9829, 9337, 9714, 9743, 9858, 9869, 9739),
}
SKIPPED_14 = {9689, 9746, 9823, 9778, 9709, 9812, 9626, 9748, 9864, 9745, 9845, 9692, 9856, 9724}


def test_a_bundles_applied_list_of_bare_numbers() -> None:
    """`Applied (94): 9720 9725 9605 ... 9739.`: 88 trailers name most of them; four (the FpSan
    cluster, named elsewhere only in prose) only this list names. `Skipped (14)` items are not
    carried. (#8463, in an "Earlier resolutions (...)" list item, is also read: left as is.)"""
    assert len(APPLIED_94) == 94 and not APPLIED_94 & SKIPPED_14
    got = carried("a37952a204")
    assert got >= APPLIED_94
    assert not got & SKIPPED_14
    assert got - APPLIED_94 == {8463}


@pytest.mark.parametrize(
    ("short", "named"),
    [
        ("6496304b51", 7987),  # "Issue introduced by\n<pull/7987>/"
        ("25678e7df8", 8136),  # "PR#913 cherry-picked upstream commit <pull/8136> which changed ..."
        ("b0490dc4b0", 8766),  # "... to match the new MLIR API from the LLVM bump in <pull/8766>."
        ("422bcde23e", 9119),  # "This used to be default ... but has been removed in\nWith <pull/9119>."
        ("5efe85cf52", 10503),  # "This was previously disabled for sm80 in\n<commit/94c6b6e13...>"
        (
            "be526cb4a0",
            10571,
        ),  # "Upstream applies the same ... rule ... (triton-lang/triton#10571); the Meta ..."
        (
            "da0e296130",
            8480,
        ),  # "If follows the gluon implementation in the upstream triton PR: triton-lang/triton#8480"
    ],
)
def test_a_plain_fork_commit_that_names_an_upstream_pr_in_prose_carries_nothing(
    short: str, named: int
) -> None:
    """No pick title, no trailer, and the sentence around the link says something else than
    that this commit picks it (wrapped over lines, as bodies are)."""
    assert named in {PR[c.sha] for c in UPSTREAM}
    assert carried(short) == set()


@pytest.mark.parametrize(
    ("short", "pr", "how"),
    [
        # "[Triton][Frontend] Promote `_aggregate` to public (#10095) (#1822)": the subject, a
        # fork prefix before upstream's, says it first; the body's "Cherry-pick of upstream <link>."
        ("3b806e685b", 10095, SUBJECT),
        (
            "f673b3d738",
            8480,
            BODY_LINK,
        ),  # "- cherry-pick of the upstream triton [PR#8480](<pull/8480>) to add ..."
        # "This PR ports two ... fixes ...:" then "- `b45acd4b5` / [Triton #10194: ...](<pull/10194>)"
        ("744a5de206", 10194, BODY_LINK),
        (
            "8a1cdc2c52",
            8698,
            BODY_LINK,
        ),  # "[triton] Backport ..." + "Original commit is\n<commit/c44b870bd...>."
        # "Add extension hook (port of <pull/8137>) (#992)" + "Backport of upstream commit <pull/8137>"
        ("90a4bb12eb", 8137, BODY_LINK),
        ("e5e3a6b009", 10194, BODY_LINK),  # "Port b45acd4b5 / Triton #10194.": a bare upstream sha
    ],
)
def test_a_body_link_whose_sentence_or_title_says_it_is_picked_is_still_a_pick(
    short: str, pr: int, how: str
) -> None:
    assert carried(short) == {pr}
    assert read(short).recogniser == how


def test_a_body_link_without_the_commits_own_words_for_a_pick_is_read_only_under_a_pick_label() -> None:
    """The same link: in prose that does not say "pick", nothing; under `Upstream:`, a pick."""
    link = "https://github.com/triton-lang/triton/pull/10095"
    for body, want in (
        (f"The old spelling broke in\n{link} for us.", ()),
        (f"Upstream:\n{link}", (10095,)),
        (f"Upstream: {link}", (10095,)),
        (f"We now match\n{link}; cherry-picked by PR #1234 already.", ()),
        (f"Adopt upstream's fix {UPSTREAM[0].sha[:10]} for the launcher.", ()),  # a bare sha, no pick word
        (f"This PR ports two fixes:\n\n- the launcher\n- the aggregates, {link}", (10095,)),  # led by a pick
        (
            f"This PR ports two fixes:\n\n- the launcher\n\n## Testing\n\n- compared with {link}",
            (),
        ),  # a later list
    ):
        commit = Commit(
            "d" * 40, (), "F", "f@x", 2, 2, "Fix aggregates (#12)", (), f"Fix aggregates (#12)\n\n{body}"
        )
        assert tuple(PR[s] for s in recognise(commit, INDEX, RULES).upstream) == want, body


def fork_history(*shorts: str) -> list[Commit]:
    out: list[Commit] = []
    parent = "0" * 40
    for i, short in enumerate(shorts):
        row = MESSAGES[short]
        out.append(
            Commit(row["sha"], (parent,), "Fork", "f@x", 10 + i, 10 + i, row["subject"], (), row["message"])
        )
        parent = row["sha"]
    return out


def test_a_back_out_whose_quoted_title_lost_a_tag_is_found_by_its_original_phabricator_diff() -> None:
    """`Back out "[triton][beta] [RESOLVED] '[Frontend] Avoid using find_paths_if (#8846)'"` quotes
    the pick without its `[Cherry-pick]` tag; its body's `Original Phabricator Diff: D99796020`
    is the pick's `Differential Revision`. The pick is undone: #8846 is no longer carried."""
    pick, back_out = fork_history("b1ea7ccddf", "11ae943bb0")
    assert "[Cherry-pick][RESOLVED]" in pick.subject and "[Cherry-pick]" not in back_out.subject
    undo = reverts.revert_of(back_out, reverts.ForkIndex([pick, back_out]), INDEX, RULES)
    assert undo == reverts.Revert(fork=pick.sha, how="original-diff")
    ledger = compute_ledger(
        UPSTREAM,
        [pick, back_out],
        Decisions({}),
        RULES,
        base="0" * 40,
        base_time=0,
        upstream_tip=UPSTREAM[-1].sha,
        fork_tip=back_out.sha,
        patch_id=lambda shas: {},
    )
    [entry] = [e for e in ledger.entries if e.pr_number == 8846]
    assert entry.carriers == () and entry.disposition is Disposition.PENDING
    assert f"reverted by {back_out.sha[:12]}" in entry.reason


def test_a_back_out_of_an_imported_pr_quotes_its_title_behind_the_import_tags() -> None:
    """`Back out "[triton][PR] [Triton beta] Do not use different ptxas for blackwell"`: the
    Phabricator import titled the fork PR `[triton][PR] <PR title>`; the commit is the PR's."""
    original, back_out = fork_history("6e1bafc22c", "253d2b0e67")
    undo = reverts.revert_of(back_out, reverts.ForkIndex([original, back_out]), INDEX, RULES)
    assert undo == reverts.Revert(fork=original.sha, how="subject")


@pytest.mark.parametrize(
    ("short", "pr"),
    [
        (
            "f81f19a7f6",
            7343,
        ),  # [release/3.4] "[BACKEND] support tt::TransOp in comesFromLoadOrBlockArg (#7343)" (#7346)
        ("4972f45a57", 7219),  # [release 3.4] "[NVIDIA] L2 cache hints only for sm >= 80 (#7219)" (#7316)
    ],
)
def test_a_release_branch_pick_quotes_upstreams_subject_after_its_prefix_with_no_pick_tag(
    short: str, pr: int
) -> None:
    """Upstream's own release branches (which forks of a release carry) title a pick
    `[release/3.4] "<upstream subject (#N)>" (#M)`, without trailer or pick tag."""
    assert "cherry picked from" not in MESSAGES[short]["message"]
    assert carried(short) == {pr}
    assert read(short).recogniser == SUBJECT


PICKED_42 = {
    *(10124, 10144, 10151, 10149, 10064, 10147, 10162, 10156, 10150, 10126, 10120, 10099, 9641, 10132),
    *(10175, 10081, 10179, 10128, 10100, 10178, 10125, 10186, 10180, 10193, 9093, 10191, 10185, 10199),
    *(10177, 10190, 10207, 10208, 10163, 10219, 10222, 10223, 10227, 10228, 10197, 10183, 10226, 10194),
}
DEFERRED_15 = {
    9666,
    10157,
    10159,
    10168,
    10145,
    10169,
    10072,
    10172,
    10148,
    10192,
    10215,
    10217,
    10167,
    10171,
    10196,
}


def test_a_section_heading_then_one_line_of_items_that_starts_with_a_number() -> None:
    """`### Won't-port (2) — CI-only, no beta equivalent` then `#10161 [AMD][CI] Allow
    continue-on-error for all targets; #10146 [AMD][CI] Switch gfx942 ...`: not a list item,
    but a line of items under the heading (the two were pending before)."""
    assert len(PICKED_42) == 42 and len(DEFERRED_15) == 15
    assert carried("98ddb93f88") == PICKED_42
    assert decided("98ddb93f88", "wont_port") == {10161, 10146}
    assert decided("98ddb93f88", "deferred") == DEFERRED_15
