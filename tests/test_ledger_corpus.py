"""The ledger on fbtriton's real messages: what each of 660 real fork commits carries.

The fork's messages (``tests/data/fbtriton-picks``, verbatim, MIT) are replayed as one fork
history against a synthetic upstream holding the upstream commits they name (real shas and
subjects) and upstream PRs numbered like the fork's own PRs. Each message's carried upstream
PRs are compared with ``expected.jsonl``, a parse seeded from upstream's real history and
checked by hand (``annotate.py`` there; it does not use the recognisers under test).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from benchmarks.bench_fbtriton_corpus import fake_sha, histories
from workers.engine.decisions import Decisions, Disposition
from workers.engine.history import Commit
from workers.engine.ledger.compute import compute_ledger
from workers.engine.ledger.records import Ledger
from workers.engine.recognise.rules import Rules

DATA = Path(__file__).parent / "data" / "fbtriton-picks"
ROWS = [json.loads(line) for line in (DATA / "fbtriton-picks.jsonl").read_text().splitlines()]
EXPECTED = [json.loads(line) for line in (DATA / "expected.jsonl").read_text().splitlines()]
UPSTREAM = [json.loads(line) for line in (DATA / "upstream.jsonl").read_text().splitlines()]
RULES = Rules.build(
    upstream_url="https://github.com/triton-lang/triton",
    fork_url="https://github.com/facebookexperimental/triton",
)


def replay(rows: list[dict[str, Any]] = ROWS) -> tuple[Ledger, dict[str, int]]:
    up, fork, base = histories(rows, UPSTREAM)
    ledger = compute_ledger(
        up,
        fork,
        Decisions({}),
        RULES,
        base=base,
        base_time=0,
        upstream_tip=up[-1].sha,
        fork_tip=fork[-1].sha,
        patch_id=lambda shas: {},
    )
    return ledger, {c.sha: u["pr"] for c, u in zip(up, UPSTREAM, strict=True)}


LEDGER, PR_OF = replay()
CARRIED = {p.sha: sorted(PR_OF[u] for u in p.upstream) for p in LEDGER.picks}
BY_PR = {PR_OF[e.sha]: e for e in LEDGER.entries}


def test_the_vendored_corpus_is_the_shared_one() -> None:
    assert len(ROWS) == len(EXPECTED) == 660
    assert [r["sha"] for r in ROWS] == [e["sha"] for e in EXPECTED]
    assert sum(len(e["carries"]) for e in EXPECTED) == 787


@pytest.mark.parametrize("fmt", sorted({e["format"] for e in EXPECTED}))
def test_every_message_carries_what_the_hand_checked_parse_says(fmt: str) -> None:
    """Per format, every message's carried upstream PRs equal the expected ones (none invented)."""
    wrong = [
        f"{row['sha'][:10]} {row['subject'][:80]!r}: expected {sorted(exp['carries'])}, got {CARRIED.get(row['sha'], [])}"
        for row, exp in zip(ROWS, EXPECTED, strict=True)
        if exp["format"] == fmt and sorted(exp["carries"]) != CARRIED.get(row["sha"], [])
    ]
    assert not wrong, "\n".join(wrong)


def test_fork_pr_numbers_are_never_read_as_upstream() -> None:
    """Every fork PR number (#M) is also an upstream PR here; none of them is carried."""
    collides = {u["pr"] for u in UPSTREAM if u["collides"]}
    expected = {n for e in EXPECTED for n in e["carries"]}
    read = {n for prs in CARRIED.values() for n in prs if n in collides and n not in expected}
    assert len(collides) > 300 and not read


def test_decisions_recorded_in_the_messages_are_read() -> None:
    """`Reactor Defer|WontPort Revision` trailers and a bundle's Deferred / Won't-port items make
    the commit deferred / wont_port (unless a later message carries it)."""
    for exp in EXPECTED:
        for n in exp["deferred"]:
            if not any(n in e["carries"] for e in EXPECTED):
                assert BY_PR[n].disposition is Disposition.DEFERRED, (n, BY_PR[n].reason)
                assert BY_PR[n].decided_by == "message" and "deferred by fork commit" in BY_PR[n].reason
        for n in exp["wont_port"]:
            assert BY_PR[n].disposition is Disposition.WONT_PORT, (n, BY_PR[n].reason)
    # #10054 is won't-port by a trailer; #10261 is deferred by #2276's Deferred (6, backlog) list.
    assert "won't-port trailer" in BY_PR[10054].reason
    assert "Deferred section" in BY_PR[10261].reason


def message(prefix: str) -> dict[str, Any]:
    return next(r for r in ROWS if r["subject"].startswith(prefix))


def test_ambiguous_no_op_items_of_a_bundle_are_not_carried() -> None:
    """Decision (docs/bundling.md): a bundle item marked NO-OP ("reverted to beta") is not
    carried although the title lists it; a later bundle picks five of them for real."""
    row = message("[triton][beta] [Cherry-pick][BUNDLE] Cherry-pick 10 upstream commits (#9219")
    assert CARRIED[row["sha"]] == [9361, 9392, 9396]
    later = message("[triton][beta] Cherry-pick upstream reduction/layout bundle")
    assert CARRIED[later["sha"]] == [9220, 9221, 9317, 9318, 9327]
    assert BY_PR[9219].disposition is Disposition.PENDING and not BY_PR[9219].carriers


def test_ambiguous_bundle_link_lists_do_not_add_to_what_the_bundle_names() -> None:
    """Decision: a bundle body's bare link list that names a PR nothing else in the message
    names (not its title, stated list or trailers) is not read: those links name earlier picks."""
    row = message("[triton][beta] [Cherry-pick][BUNDLE] Cherry-pick 39 upstream(#9548")
    assert "https://github.com/triton-lang/triton/pull/8494" in row["message"]
    assert 8494 not in CARRIED[row["sha"]] and 9517 not in CARRIED[row["sha"]]
    assert len(CARRIED[row["sha"]]) == 39  # the stated list of 39, though only 35 trailers


def test_a_bundle_title_cut_by_github_is_continued_by_the_body() -> None:
    row = message("[triton][beta] [Cherry-pick][BUNDLE] Cherry-pick 56 upstream(#9890")
    assert len(CARRIED[row["sha"]]) == 56 and 8779 in CARRIED[row["sha"]]


def test_links_in_the_quoted_upstream_message_are_not_picks() -> None:
    """ "Upstream commit message: ```> ... #7929 ...```" names another PR: not carried."""
    row = message(
        "[triton][beta] [Cherry-pick] '[AMD][BACKEND] Coalesce direct-to-lds loads with padded enco"
    )
    assert "7929" in row["message"] and CARRIED[row["sha"]] == [8185]


def test_ambiguous_a_revert_of_a_revert_whose_pick_is_unknown_carries_it_again() -> None:
    """Decision: `Revert D1: Revert D2: <pick subject>` when neither the pick nor the first revert
    can be found re-carries what the pick subject names; `Revert D<n>: <pick subject>` alone
    carries nothing."""
    again = message("Revert D96429269: Revert D96094194:")
    assert CARRIED[again["sha"]] == [8275]
    assert next(p for p in LEDGER.picks if p.sha == again["sha"]).recogniser == "reapply"
    once = message("Revert D96197084:")
    assert once["sha"] not in CARRIED


def test_ambiguous_a_pick_of_a_commit_older_than_the_base_carries_nothing_in_range() -> None:
    """Two legacy picks re-picked commits the fork already had from its base (after a rebase)."""
    row = message("[Cherry-pick][RESOLVED] [GLUON][TEST] Complete remaining convert layout tests (#7962)")
    assert row["sha"] not in CARRIED


PREFIX = re.compile(r"^\[triton\]\[beta\] ")


@pytest.mark.parametrize("prefix", ["[ROCm] ", "[fork] ", "[release/3.4] ", "[fork][v2] ", ""])
def test_the_fork_prefix_is_general(prefix: str) -> None:
    """The same messages under another fork's prefix (or none) carry the same upstream commits."""
    rows = [
        {**r, "subject": PREFIX.sub(prefix, r["subject"]), "message": PREFIX.sub(prefix, r["message"])}
        for r in ROWS
    ]
    ledger, pr_of = replay(rows)
    renamed = {p.sha: sorted(pr_of[u] for u in p.upstream) for p in ledger.picks}
    assert renamed == CARRIED


def test_fork_pins_are_read_from_bundle_bodies() -> None:
    """ "`UPSTREAM_FRONTIER_HASH` advanced to #10059 (`ca6bd0c`)" is read; "UPSTREAM_HASH
    unchanged" keeps the previous (none here)."""
    pins = LEDGER.fork_pins
    assert pins.frontier_hash is not None and PR_OF[pins.frontier_hash] == 10059
    assert pins.upstream_hash is None


def test_recognition_needs_no_git() -> None:
    """The replay is the pure core: commit records in, nothing run."""
    assert isinstance(histories(ROWS[:1], UPSTREAM[:1])[1][0], Commit)
    assert fake_sha("x") == fake_sha("x")
