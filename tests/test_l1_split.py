"""Bundle splitting: find the culprit commit(s) of a failing bundle in O(log N) oracle runs."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


def test_split_a_real_bundle_with_l1_as_the_oracle(make_repo, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Real bundle of 4 commits over a passing base, one breaks a test: L1 runs on trial branches
    (base + subset, cherry-picked) find it in 3 runs; an unrelated failure does not mislead it."""
    from core.config import L1Config, RepoConfig
    from tests.fixtures.l1 import FAILING_TEST, passing_tests, pytest_suite
    from workers.testing.l1 import failing_test_ids, run_l1_for_ref
    from workers.testing.split import failing_tests_oracle

    repo = make_repo("r")
    base = repo.commit(
        "base", {"tests/test_a.py": FAILING_TEST.replace("== 3", "== 2"), "tests/test_b.py": passing_tests(1)}
    )
    bundle = []
    for i in range(4):
        files = {f"src/f{i}.txt": f"{i}\n"}
        if i == 2:
            files["tests/test_a.py"] = FAILING_TEST  # the culprit: helper(1) == 3 fails
        if i == 1:
            files["tests/test_c.py"] = "def test_unrelated():\n    assert False\n"  # another failure
        bundle.append(repo.commit(f"upstream {i}", files))
    config = RepoConfig(l1=L1Config(suites=(pytest_suite(),), flaky_reruns=0))
    data = tmp_path / "data"
    whole = failing_test_ids(run_l1_for_ref(repo.path, "main", config, data_dir=data))
    target = frozenset({"unit/tests.test_a::test_adds_one"})
    assert target <= whole

    def run_subset(commits):  # type: ignore[no-untyped-def]
        repo.git("checkout", "-q", "-B", "trial", base)
        for sha in commits:
            repo.cherry_pick(sha)
        return failing_test_ids(run_l1_for_ref(repo.path, "trial", config, data_dir=data))

    result = find_culprits(bundle, failing_tests_oracle(run_subset, target))
    assert result.culprits == (bundle[2],)
    assert len(result.runs) <= 3  # log2(4) + 1


@given(
    st.integers(1, 64).flatmap(
        lambda n: st.tuples(st.just(n), st.sets(st.integers(0, n - 1), min_size=1, max_size=3))
    )
)
def test_independent_culprits_are_all_found_within_the_log_bound(case: tuple[int, set[int]]) -> None:
    """Property: any 1-3 independent culprits among n commits are found exactly, in at most
    k·(ceil(log2 n) + 1) oracle runs, and the remaining bundle passes without them."""
    n, planted = case
    commits = tuple(f"c{i:02d}" for i in range(n))
    culprits = {commits[i] for i in planted}
    calls: list[tuple[str, ...]] = []
    result = find_culprits(commits, oracle(culprits, calls))
    assert set(result.culprits) == culprits and result.complete
    assert len(calls) <= len(culprits) * (math.ceil(math.log2(n)) + 1)
