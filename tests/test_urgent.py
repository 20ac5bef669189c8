"""Urgent commits: planned into a single-commit urgent bundle of their own, built alone on the fork
tip ahead of everything else, and counted as urgent picks (the frontier stays) once merged."""

from __future__ import annotations

import json
from typing import Any

from tests.fixtures.bundling import COALESCE, TritonPair


def _json(pair: TritonPair, *argv: str) -> dict[str, Any]:
    rc, out, err = pair.cli(*argv, *pair.args, "--json")
    assert rc == 0, err
    return dict(json.loads(out))


def _mark_urgent(pair: TritonPair, name: str) -> str:
    sha = pair.shas[name]
    rc, _, err = pair.cli("mark", *pair.args, sha, "urgent", "--reason", "production miscompile")
    assert rc == 0, err
    return sha


def _placed(plan: dict[str, Any]) -> list[str]:
    return [c for b in plan["bundles"] for c in b["commits"]] + [
        c for ch in plan["chains"] for c in ch["commits"]
    ]


def test_plan_puts_an_urgent_commit_in_its_own_urgent_bundle_only(triton_pair: TritonPair) -> None:
    """An urgent commit is in its own single-commit bundle (id urgent-<sha7>, clean, ``urgent``),
    listed in plan["urgent"] too, in no other bundle or chain; every pending commit is placed exactly
    once, and the keys of the contract stay."""
    s = triton_pair.shas
    td = _mark_urgent(triton_pair, "td")
    plan = _json(triton_pair, "plan")
    assert list(plan) == ["bundles", "chains", "deferred", "urgent"]
    assert plan["urgent"] == [{"id": f"urgent-{td[:7]}", "commits": [td], "conflicts": []}]
    placed = _placed(plan)
    others = [s[k] for k in ("docs", "conflict", "python", "dependent", "header", "ws", "llvm", "big")]
    assert placed.count(td) == 1
    assert plan["bundles"][0] == {
        "id": f"urgent-{td[:7]}",
        "commits": [td],
        "lines": 0,
        "urgent": True,
        "conflicts": [],
    }
    assert sorted(placed) == sorted([*others, td]) and len(placed) == len(others) + 1
    assert plan["bundles"][1]["commits"] == [s["docs"], s["python"]]
    rc, text, _ = triton_pair.cli("plan", *triton_pair.args)
    summary, details = text.split("\nDetails\n")
    assert rc == 0 and f"  urgent-{td[:7]}: urgent, alone on the fork tip, picks cleanly\n" in summary
    assert details.startswith(f"urgent-{td[:7]}  urgent\n")
    assert text.rstrip().endswith("9 commit(s): 1 bundle(s), 4 chain(s), 1 urgent")


def test_no_urgent_mark_gives_an_empty_urgent_list(triton_pair: TritonPair) -> None:
    """Without urgent marks, plan["urgent"] is empty and bundle --json builds no urgent branch."""
    assert _json(triton_pair, "plan")["urgent"] == []
    built = _json(triton_pair, "bundle")
    assert built["urgent"] == []
    assert not [r for r in triton_pair.fork_refs() if r.startswith("refs/heads/forksync/urgent/")]


def test_bundle_builds_the_urgent_pick_alone_on_the_fork_tip(triton_pair: TritonPair) -> None:
    """The urgent branch has exactly one commit, on the fork tip (not stacked on a bundle), with the
    upstream author and the trailer; the first bundle is still built on the fork tip without it."""
    td = _mark_urgent(triton_pair, "td")
    tip = triton_pair.fork.head()
    built = _json(triton_pair, "bundle")
    (urgent,) = built["urgent"]
    assert urgent["branch"] == f"forksync/urgent/{td[:7]}" and urgent["commits"] == [td]
    assert urgent["base"] == tip and urgent["base_branch"] == "main"
    assert urgent["stopped_at"] is None and urgent["conflicts"] == []
    fork = triton_pair.fork
    assert fork.head(f"refs/heads/{urgent['branch']}") == urgent["head"]
    assert fork.git("rev-list", "--count", f"{tip}..{urgent['head']}").strip() == "1"
    message = fork.git("log", "-1", "--format=%an|%B", urgent["head"])
    assert message.startswith("Ada Author|[IR] Document tt.load (#109)")
    assert f"(cherry picked from commit {td})" in message
    assert built["bundles"][0]["base"] == tip
    for bundle in built["bundles"]:
        assert td not in bundle["commits"]
        log = fork.git("log", "--format=%B", f"{tip}..{bundle['head']}")
        assert f"(cherry picked from commit {td})" not in log


def test_merged_urgent_pick_is_urgent_and_the_frontier_stays(triton_pair: TritonPair) -> None:
    """Once the urgent branch is merged into the trunk, status counts the commit urgent (not picked),
    the frontier and days behind do not move, and the next plan no longer offers it anywhere."""
    td = _mark_urgent(triton_pair, "td")
    before = _json(triton_pair, "status")
    built = _json(triton_pair, "bundle")
    triton_pair.fork.git("merge", "-q", "--ff-only", built["urgent"][0]["branch"])
    after = _json(triton_pair, "status")
    assert after["urgent"] == [td] and after["picked"] == before["picked"]
    assert after["frontier"] == before["frontier"] and after["days_behind"] == before["days_behind"]
    assert after["pending"] == before["pending"] - 1
    plan = _json(triton_pair, "plan")
    assert plan["urgent"] == [] and td not in _placed(plan)


def test_conflicting_urgent_pick_names_its_files_and_builds_no_branch(triton_pair: TritonPair) -> None:
    """An urgent commit whose pick onto the fork tip conflicts stays in plan["urgent"] with the
    conflicting files (never dropped, never built with markers); no urgent branch is written."""
    conflict = _mark_urgent(triton_pair, "conflict")
    plan = _json(triton_pair, "plan")
    assert plan["urgent"] == [
        {"id": f"urgent-{conflict[:7]}", "commits": [conflict], "conflicts": [COALESCE]}
    ]
    assert _placed(plan).count(conflict) == 1 and plan["bundles"][0]["conflicts"] == [COALESCE]
    built = _json(triton_pair, "bundle")
    (urgent,) = built["urgent"]
    assert urgent["commits"] == [] and urgent["stopped_at"] == conflict and urgent["conflicts"] == [COALESCE]
    assert urgent["head"] == urgent["base"] == triton_pair.fork.head()
    assert not [r for r in triton_pair.fork_refs() if r.startswith("refs/heads/forksync/urgent/")]
    rc, text, _ = triton_pair.cli("bundle", *triton_pair.args)
    assert (
        rc == 0
        and f"urgent-{conflict[:7]}  urgent {conflict[:12]} not built: conflicts in {COALESCE}" in text
    )
