"""The ledger on real repositories written the way fbtriton writes: reverts inside bundles,
Phabricator revert forms, decisions in the fork's own messages, the fork's pins in ``status``,
and ``forksync ledger``.

Fork commits are GitHub squash merges (``<title> (#M)``), with fork PR numbers that are also
upstream PR numbers, as on fbtriton.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from tests.fixtures.ledger import ForkedPair, run_cli
from tests.test_ledger_fbtriton import carriers, merge_fork_pr
from workers.engine.decisions import Disposition

Forked = Callable[[], ForkedPair]
BETA = "[triton][beta]"


def three(p: ForkedPair) -> tuple[str, str, str]:
    return (
        p.up(7001, "[AMD] Fix buffer load lowering for i8 pointers"),
        p.up(7002, "[BACKEND] Hoist loads out of loops"),
        p.up(7003, "[FRONTEND] Allow constexpr step"),
    )


def bundle_of_three(p: ForkedPair, body: str = "") -> str:
    return merge_fork_pr(
        p,
        f"{BETA} [Cherry-pick][BUNDLE] Cherry-pick 3 upstream(#7001 #7002 #7003)",
        7002,
        {f"src/pr{n}.py": f"# change {n}\n" for n in (7001, 7002, 7003)},
        body,
    )


def test_git_revert_of_one_upstream_commit_inside_a_bundle_unpicks_only_it(forked: Forked) -> None:
    """`git revert <upstream sha>` in the fork (after a bundle carried it) un-picks that commit;
    the bundle's others stay carried; the reason names the bundle and the revert."""
    p = forked()
    a, b, c = three(p)
    bundle = bundle_of_three(p)
    revert = merge_fork_pr(
        p,
        'Revert "[BACKEND] Hoist loads out of loops (#7002)"',
        7010,
        {"src/pr7002.py": None},
        f"This reverts commit {b}.",
    )
    ledger = p.ledger()
    assert carriers(ledger, a) == carriers(ledger, c) == (bundle,)
    assert carriers(ledger, b) == ()
    entry = ledger.entry(b)
    assert entry is not None and entry.disposition is Disposition.PENDING
    assert f"pick {bundle[:12]} (bundle) reverted by {revert[:12]}" in entry.reason
    assert ledger.metrics.backlog_commits == (b,)


def test_revert_by_subject_inside_a_bundle_and_its_reapply(forked: Forked) -> None:
    """`Revert "<upstream subject>"` without a sha un-picks that commit; reverting the revert
    (a reapply) carries it again."""
    p = forked()
    a, _, c = three(p)
    bundle = bundle_of_three(p)
    revert = merge_fork_pr(
        p, 'Revert "[FRONTEND] Allow constexpr step (#7003)"', 7011, {"src/pr7003.py": None}
    )
    assert carriers(p.ledger(), c) == () and carriers(p.ledger(), a) == (bundle,)
    merge_fork_pr(
        p,
        'Revert "Revert "[FRONTEND] Allow constexpr step (#7003)""',
        7012,
        {"src/pr7003.py": "# change 7003\n"},
        f"This reverts commit {revert}.",
    )
    assert carriers(p.ledger(), c) == (bundle,)


def test_github_revert_button_on_a_bundle_pr_unpicks_all_of_it(forked: Forked) -> None:
    p = forked()
    a, b, c = three(p)
    bundle_of_three(p)
    merge_fork_pr(
        p,
        f'Revert "{BETA} [Cherry-pick][BUNDLE] Cherry-pick 3 upstream(#7001 #7002 #7003)"',
        7013,
        {f"src/pr{n}.py": None for n in (7001, 7002, 7003)},
        "Reverts facebookexperimental/triton#7002",
    )
    ledger = p.ledger()
    assert carriers(ledger, a) == carriers(ledger, b) == carriers(ledger, c) == ()
    assert ledger.metrics.picked == 0


def test_phabricator_back_out_and_revert_d_forms_undo_the_pick(forked: Forked) -> None:
    """`Back out "<pick subject>"` and `Revert D<n>: <pick subject>` (the diff the pick's
    "Differential Revision: D<n>" names) undo the pick; `Revert D<n>: Revert D<m>: ...` redoes it."""
    p = forked()
    a, b, _ = three(p)
    pick_a = merge_fork_pr(
        p,
        f"{BETA} [Cherry-pick] '[AMD] Fix buffer load lowering for i8 pointers (#7001)'",
        7020,
        {"src/pr7001.py": "# change 7001\n"},
        "Differential Revision: D100",
    )
    pick_b = merge_fork_pr(
        p,
        f"{BETA} [Cherry-pick] '[BACKEND] Hoist loads out of loops (#7002)'",
        7021,
        {"src/pr7002.py": "# change 7002\n"},
        "Differential Revision: D101",
    )
    merge_fork_pr(
        p,
        f"Back out \"{BETA} [Cherry-pick] '[AMD] Fix buffer load lowering for i8 pointers (#7001)'\"",
        7022,
        {"src/pr7001.py": None},
        "Differential Revision: D102",
    )
    merge_fork_pr(
        p,
        "Revert D101: something the title does not repeat",
        7023,
        {"src/pr7002.py": None},
        "Differential Revision:\nD101\n\nOriginal Phabricator Diff: D101",
    )
    ledger = p.ledger()
    assert carriers(ledger, a) == () and carriers(ledger, b) == ()
    assert "reverted by" in (ledger.entry(a) or ledger.entries[0]).reason
    merge_fork_pr(p, 'Revert D102: Back out "..."', 7024, {"src/pr7001.py": "# change 7001\n"})
    assert carriers(p.ledger(), a) == (pick_a,) and pick_b


def test_defer_and_wont_port_trailers_are_decisions_and_notes_win(forked: Forked) -> None:
    """`Reactor Defer Revision` makes the commit deferred (a known hole: backlog counts it, not
    pending), `Reactor WontPort Revision` wont_port; a note from `forksync mark` wins, and the
    reason says which source decided."""
    p = forked()
    a, b, c = three(p)
    d = p.up(7004, "[NVIDIA] Use TMA stores")
    body = (
        "Picked (2):\n- #7001 fix\n- #7004 tma\n\n"
        "***Do not remove the following lines from this commit***\n"
        f"Reactor Backport Revision: {a}\nReactor Backport Revision: {d}\n"
        f"Reactor Defer Revision: {b}\nReactor WontPort Revision: {c}\n"
    )
    merge_fork_pr(
        p,
        f"{BETA} [Cherry-pick][BUNDLE] Cherry-pick 2 upstream(#7001 #7004)",
        7030,
        {"src/pr7001.py": "# change 7001\n", "src/pr7004.py": "# change 7004\n"},
        body,
    )
    ledger = p.ledger()
    eb, ec = ledger.entry(b), ledger.entry(c)
    assert eb is not None and eb.disposition is Disposition.DEFERRED and eb.decided_by == "message"
    assert "defer trailer" in eb.reason
    assert ec is not None and ec.disposition is Disposition.WONT_PORT and "won't-port trailer" in ec.reason
    assert ledger.metrics.frontier == d and ledger.metrics.contiguous_pin == a
    assert ledger.metrics.deferred == 1 and ledger.metrics.wont_port == 1
    assert b not in {e.sha for e in ledger.pending_commits}
    assert p.mark(b[:10], "wont_port", "--reason", "not for beta").code == 0
    again = p.ledger()
    e = again.entry(b)
    assert e is not None and e.disposition is Disposition.WONT_PORT and e.decided_by == "notes"
    assert (
        "in the decisions notes: not for beta" in e.reason
        and "wins over: deferred by fork commit" in e.reason
    )


def test_bundle_sections_decide_and_status_reports_the_fork_pins(forked: Forked) -> None:
    """A bundle's "Deferred (1) — ...:" and "Won't-port (1): #N" items are decisions; its pin
    lines are read and `status` shows them beside forksync's, saying when they disagree."""
    p = forked()
    a, b, c = three(p)
    d = p.up(7004, "[NVIDIA] Use TMA stores")
    body = (
        "Picked (2):\n- #7001 [AMD] fix\n- #7004 [NVIDIA] tma\n\n"
        "Deferred (1) — recorded in the backlog:\n- #7002 [BACKEND] needs the layouts owner\n\n"
        "Won't-port (1): #7003 [FRONTEND] CI only\n\n"
        f"Two-pin state: `UPSTREAM_HASH` advanced to #7001 (`{a[:7]}`); "
        f"`UPSTREAM_FRONTIER_HASH` advanced to #7003 (`{c[:7]}`).\n"
    )
    merge_fork_pr(
        p,
        f"{BETA} [Cherry-pick][BUNDLE] Cherry-pick 2 upstream(#7001 #7004)",
        7040,
        {"src/pr7001.py": "# change 7001\n", "src/pr7004.py": "# change 7004\n"},
        body,
    )
    ledger = p.ledger()
    assert (ledger.entry(b) or ledger.entries[0]).disposition is Disposition.DEFERRED
    assert (ledger.entry(c) or ledger.entries[0]).disposition is Disposition.WONT_PORT
    assert ledger.fork_pins.upstream_hash == a and ledger.fork_pins.frontier_hash == c
    status = p.status()
    assert status.code == 0, status.err
    pins = status.json()["fork_pins"]
    assert pins["upstream_hash"] == a and pins["upstream_frontier_hash"] == c
    assert pins["disagreements"] == [
        f"the fork's UPSTREAM_FRONTIER_HASH is {c[:12]} but forksync's frontier is {d[:12]}"
    ]
    text = run_cli("status", "--upstream", str(p.upstream.path), "--fork", str(p.fork.path)).out
    assert "UPSTREAM_HASH; agrees with the contiguous pin" in text
    assert f"UPSTREAM_FRONTIER_HASH; DISAGREES: forksync's frontier is {d[:12]}" in text


def test_status_without_stated_pins_prints_no_pin_rows(forked: Forked) -> None:
    p = forked()
    a = p.up(7001)
    p.pick(a)
    text = run_cli("status", "--upstream", str(p.upstream.path), "--fork", str(p.fork.path)).out
    assert "UPSTREAM_HASH" not in text and "fork's" not in text
    assert p.status().json()["fork_pins"]["disagreements"] == []


def ledger_cli(p: ForkedPair, *args: str) -> tuple[int, str, str]:
    r = run_cli("ledger", "--upstream", str(p.upstream.path), "--fork", str(p.fork.path), *args)
    return r.code, r.out, r.err


def test_forksync_ledger_says_why_each_commit_has_its_disposition(forked: Forked) -> None:
    p = forked()
    a, b, c = three(p)
    bundle = merge_fork_pr(
        p,
        f"{BETA} [Cherry-pick][BUNDLE] Cherry-pick 2 upstream(#7001 #7003)",
        7002,
        {"src/pr7001.py": "# change 7001\n", "src/pr7003.py": "# change 7003\n"},
        f"Reactor Backport Revision: {c}\n",
    )
    code, out, _ = ledger_cli(p, "--json")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["sha"] for r in rows] == [a, b, c]
    assert set(rows[0]) == {
        "sha",
        "pr_number",
        "subject",
        "disposition",
        "backlog",
        "carriers",
        "decided_by",
        "reason",
    }
    assert rows[0]["carriers"] == [{"sha": bundle, "recogniser": "bundle"}]
    assert rows[2]["carriers"] == [{"sha": bundle, "recogniser": "trailer"}]
    assert rows[1]["disposition"] == "pending" and rows[1]["backlog"] is True and rows[1]["carriers"] == []
    assert "hole behind the frontier" in rows[1]["reason"]
    # "why is #7002 in my backlog?": by PR number, readable; #7002 is also the fork's PR number.
    code, out, _ = ledger_cli(p, "#7002")
    assert code == 0 and out.startswith(b[:12]) and "pending (backlog)" in out and "why: hole behind" in out
    code, out, _ = ledger_cli(p, a[:8], "--disposition", "picked")
    assert code == 0 and f"carried by {bundle[:12]} (bundle)" in out
    code, out, _ = ledger_cli(p, "--disposition", "backlog", "--json")
    assert [json.loads(line)["sha"] for line in out.splitlines()] == [b]


def test_forksync_ledger_errors_are_one_line_with_exit_2(forked: Forked) -> None:
    p = forked()
    p.up(7001)
    for args in (("#9999",), ("zz",), ("--disposition", "nope")):
        code, out, err = ledger_cli(p, *args)
        assert code == 2 and out == "", args
        assert len(err.strip().splitlines()) == 1, err
    code, _, err = ledger_cli(p, "#9999")
    assert "no commit of upstream" in err
