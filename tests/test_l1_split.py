"""Bundle splitting: find the culprit commit(s) of a failing bundle in O(log N) oracle runs."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from workers.testing.split import find_culprits

COMMITS = tuple(f"c{i:02d}" for i in range(32))


def oracle(culprits: set[str], calls: list[tuple[str, ...]]):  # type: ignore[no-untyped-def]
    def fails(subset: Sequence[str]) -> bool:
        calls.append(tuple(subset))
        return any(c in culprits for c in subset)

    return fails


@pytest.mark.parametrize("index", range(32))
def test_single_culprit_among_32_in_at_most_6_runs(index: int) -> None:
    """Wherever the culprit sits among 32 commits, it is found, alone, in at most 6 oracle runs."""
    calls: list[tuple[str, ...]] = []
    result = find_culprits(COMMITS, oracle({COMMITS[index]}, calls))
    assert result.culprits == (COMMITS[index],) and result.complete
    assert len(calls) == len(result.runs) <= 6


def test_two_culprits_are_both_found_in_bundle_order() -> None:
    """Two independent culprits are both found, listed in bundle order, in about 2·(log2 N + 1) runs."""
    calls: list[tuple[str, ...]] = []
    result = find_culprits(COMMITS, oracle({"c25", "c07"}, calls))
    assert result.culprits == ("c07", "c25")
    assert len(calls) <= 12
    # The final confirmation is a run without both culprits, and it passes.
    assert result.runs[-1].failed is False and "c07" not in result.runs[-1].commits


def test_interaction_culprit_needs_its_partner() -> None:
    """A commit that fails only on top of an earlier one is reported (the later commit breaks it)."""
    calls: list[tuple[str, ...]] = []

    def fails(subset: Sequence[str]) -> bool:
        calls.append(tuple(subset))
        return "c03" in subset and "c20" in subset

    result = find_culprits(COMMITS, fails)
    assert result.culprits == ("c20",)
    assert len(calls) <= 6


def test_subsets_keep_bundle_order_and_never_include_found_culprits() -> None:
    """Every subset the oracle sees is in bundle order; after c07 is found it is never tried again."""
    calls: list[tuple[str, ...]] = []
    find_culprits(COMMITS, oracle({"c07", "c25"}, calls))
    for subset in calls:
        assert list(subset) == sorted(subset)
    first_found = next(i for i, s in enumerate(calls) if s and s[-1] == "c07" and len(s) == 8)
    assert all("c07" not in s for s in calls[first_found + 1 :])


def test_flaky_bundle_has_no_culprit_when_verified() -> None:
    """With verify_whole, a bundle that passes on rerun reports no culprit after one run."""
    calls: list[tuple[str, ...]] = []
    result = find_culprits(COMMITS, oracle(set(), calls), verify_whole=True)
    assert result.culprits == () and len(calls) == 1 and "flaky" in result.note


def test_budget_stops_the_search_and_says_so() -> None:
    """A run budget stops the search; the result is marked incomplete, never silently partial."""
    result = find_culprits(COMMITS, oracle({"c09"}, []), max_runs=3)
    assert not result.complete and result.culprits == () and len(result.runs) == 3
    assert "budget" in result.note


def test_single_commit_bundle_needs_no_run() -> None:
    """A failing bundle of one commit: that commit is the culprit, no oracle run needed."""
    calls: list[tuple[str, ...]] = []
    assert find_culprits(("only",), oracle({"only"}, calls)).culprits == ("only",)
    assert calls == []
