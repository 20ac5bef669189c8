"""Healing recorded chains before the walk: release what no longer depends, split, dissolve; with notes."""

from __future__ import annotations

from workers.engine.healing import heal
from workers.engine.lines import LineDep
from workers.engine.partition.records import ChainRecord, Change, Reason


def sha(n: int) -> str:
    return f"{n:040x}"


def change(n: int, *paths: str, on: tuple[int, ...] = ()) -> Change:
    return Change(sha(n), paths, depends=tuple(LineDep(sha(d), paths[0], 10, 12) for d in on))


def record(chain_id: str, *members: tuple[int, str]) -> ChainRecord:
    return ChainRecord(
        chain_id, tuple(sha(n) for n, _ in members), tuple(Reason(sha(n), k, "was") for n, k in members)
    )


def test_members_linked_only_by_file_are_released_under_line_links() -> None:
    """A chain recorded under file links keeps only members that depend by lines; the rest are released."""
    rec = record("chain-a", (1, "conflict"), (2, "file"), (3, "file"))
    changes = {c.sha: c for c in (change(1, "t.py"), change(2, "t.py", on=(1,)), change(3, "t.py"))}
    records, notes = heal([rec], changes, [sha(1), sha(2), sha(3)], "line")
    assert [r.commits for r in records] == [(sha(1), sha(2))]
    assert [n.action for n in notes] == ["released"]
    assert sha(3)[:7] in notes[0].text and "risk.link: line" in notes[0].text


def test_independent_parts_are_split_first_keeps_the_id() -> None:
    """Two seeds that do not depend on each other split the chain; each keeps its own dependents."""
    rec = record("chain-a", (1, "conflict"), (2, "line"), (3, "conflict"), (4, "line"))
    changes = {
        c.sha: c
        for c in (
            change(1, "a.cpp"),
            change(2, "a.cpp", on=(1,)),
            change(3, "b.cpp"),
            change(4, "b.cpp", on=(3,)),
        )
    }
    records, notes = heal([rec], changes, [sha(i) for i in range(1, 5)], "line")
    assert {r.id: r.commits for r in records} == {
        "chain-a": (sha(1), sha(2)),
        f"chain-{sha(3)[:7]}": (sha(3), sha(4)),
    }
    assert [n.action for n in notes] == ["split"]


def test_chain_whose_carried_seed_held_it_together_is_dissolved() -> None:
    """The seed is carried by the fork now; its dependents no longer depend on a pending member: dissolved."""
    rec = record("chain-a", (1, "conflict"), (2, "line"), (3, "symbol"))
    changes = {c.sha: c for c in (change(2, "a.cpp", on=(1,)), change(3, "a.h"))}
    records, notes = heal([rec], changes, [sha(2), sha(3)], "line", carried=frozenset({sha(1)}))
    assert records == ()
    assert notes[0].action == "dissolved" and "carried by the fork" in notes[0].text


def test_hand_placed_and_risky_members_stay_and_nothing_changes_for_a_sound_chain() -> None:
    """manual and seed members stay; a chain that still holds is returned as it was, without a note."""
    rec = record("chain-a", (1, "diverged_zone"), (2, "line"), (3, "manual"))
    changes = {c.sha: c for c in (change(1, "ws.cpp"), change(2, "ws.cpp", on=(1,)), change(3, "z.py"))}
    records, notes = heal([rec], changes, [sha(1), sha(2), sha(3)], "line")
    assert [r.commits for r in records] == [(sha(1), sha(2), sha(3))] and notes == ()
    healed, quiet = heal([record("chain-b", (1, "conflict"), (2, "line"))], changes, [sha(1), sha(2)], "line")
    assert healed == (record("chain-b", (1, "conflict"), (2, "line")),) and quiet == ()
