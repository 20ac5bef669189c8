"""The partition rules on plain data: each reason kind, merging, bounds, records, determinism.

Most rules are the same in both link modes; the tests of links by shared file or symbol run
with ``risk.link: file`` (the earlier rule, kept to compare); the line-mode rules are in
test_partition_lines.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.config import BundleConfig, RepoConfig, RiskConfig
from workers.engine.partition.records import ChainRecord, Change, Plan, Reason
from workers.engine.partition.walk import partition
from workers.engine.paths import path_matches

CONFIG = RepoConfig(
    bundle=BundleConfig(max_commits=3, max_lines=100),
    risk=RiskConfig(
        diverged_zones=("lib/Dialect/TritonGPU/Transforms/WarpSpecialization/**",),
        risky_paths=("cmake/llvm-hash.txt",),
        max_lines=500,
        link="file",
        size_seeds=True,
    ),
)


class FakeTrial:
    """Conflicts as given; records every trial so tests can assert which commits were tried."""

    def __init__(self, conflicts: Mapping[str, tuple[str, ...]] | None = None) -> None:
        self.conflicts = dict(conflicts or {})
        self.tried: list[str] = []

    def try_pick(self, sha: str) -> tuple[str, ...]:
        self.tried.append(sha)
        return self.conflicts.get(sha, ())


def sha(n: int) -> str:
    return f"{n:040x}"


def change(n: int, *paths: str, symbols: Sequence[str] = (), lines: int = 10) -> Change:
    return Change(sha(n), tuple(paths), frozenset(symbols), lines)


def reasons(plan: Plan) -> dict[str, Reason]:
    return {r.commit: r for c in plan.chains for r in c.reasons}


def placed(plan: Plan) -> list[str]:
    return [s for b in plan.bundles for s in b.commits] + [s for c in plan.chains for s in c.commits]


def test_low_risk_commits_fill_bundles_closed_at_commit_bound() -> None:
    """Unrelated clean commits go to bundles of at most bundle.max_commits, in upstream order.

    These synthetic shas all start ``0000000``: the first bundle keeps the short id, the others are
    named by their first commit's full sha. (This test once expected three ``bundle-0000000``: three
    bundles on one branch, each push overwriting the last; ids are unique within a plan now.)"""
    commits = [change(i, f"python/f{i}.py") for i in range(1, 8)]
    plan = partition(commits, CONFIG, FakeTrial())
    assert [b.commits for b in plan.bundles] == [
        (sha(1), sha(2), sha(3)),
        (sha(4), sha(5), sha(6)),
        (sha(7),),
    ]
    assert [b.id for b in plan.bundles] == [
        f"bundle-{sha(1)[:7]}",
        f"bundle-{sha(4)}",
        f"bundle-{sha(7)}",
    ]
    assert plan.chains == ()


def test_bundle_closes_at_line_bound() -> None:
    """A bundle closes before a commit that would take it over bundle.max_lines."""
    commits = [change(1, "a.py", lines=60), change(2, "b.py", lines=60), change(3, "c.py", lines=30)]
    plan = partition(commits, CONFIG, FakeTrial())
    assert [b.commits for b in plan.bundles] == [(sha(1),), (sha(2), sha(3))]
    assert [b.lines for b in plan.bundles] == [60, 90]


def test_conflicting_trial_pick_seeds_chain_naming_files() -> None:
    """A commit whose trial pick conflicts starts a chain; the reason names the conflicting files."""
    trial = FakeTrial({sha(2): ("lib/Analysis/Allocation.cpp", "lib/Analysis/Utility.cpp")})
    plan = partition([change(1, "a.py"), change(2, "lib/Analysis/Allocation.cpp")], CONFIG, trial)
    reason = reasons(plan)[sha(2)]
    assert reason.kind == "conflict"
    assert "lib/Analysis/Allocation.cpp, lib/Analysis/Utility.cpp" in reason.detail
    assert "1 planned" in reason.detail
    assert plan.chains[0].id == f"chain-{sha(2)[:7]}"
    assert plan.bundles[0].commits == (sha(1),)


def test_diverged_zone_seeds_chain_without_trial_pick() -> None:
    """A path under a diverged zone (``**`` glob) seeds a chain; no trial pick is spent on it."""
    trial = FakeTrial()
    path = "lib/Dialect/TritonGPU/Transforms/WarpSpecialization/Partition/Schedule.cpp"
    plan = partition([change(1, path)], CONFIG, trial)
    assert reasons(plan)[sha(1)].kind == "diverged_zone"
    assert path in reasons(plan)[sha(1)].detail
    assert trial.tried == []


def test_risky_path_seeds_chain() -> None:
    """Touching a configured risky path (the LLVM pin) seeds a chain."""
    plan = partition([change(1, "cmake/llvm-hash.txt", lines=1)], CONFIG, FakeTrial())
    assert reasons(plan)[sha(1)] == Reason(
        sha(1), "risky_path", "touches risky path cmake/llvm-hash.txt (cmake/llvm-hash.txt)"
    )


def test_oversized_commit_seeds_chain() -> None:
    """A commit over risk.max_lines seeds a chain; one at the bound does not."""
    plan = partition([change(1, "a.cpp", lines=501), change(2, "b.cpp", lines=500)], CONFIG, FakeTrial())
    assert reasons(plan)[sha(1)].kind == "size" and "501" in reasons(plan)[sha(1)].detail
    assert plan.bundle_of(sha(2)) is not None


def test_commit_touching_chain_file_joins_chain() -> None:
    """A later commit touching a file of an open chain joins it (reason file), even if it would pick cleanly."""
    trial = FakeTrial({sha(1): ("lib/A.cpp",)})
    plan = partition(
        [change(1, "lib/A.cpp"), change(2, "docs/x.md"), change(3, "lib/A.cpp", "lib/B.cpp")], CONFIG, trial
    )
    assert plan.chains[0].commits == (sha(1), sha(3))
    assert reasons(plan)[sha(3)] == Reason(sha(3), "file", f"touches lib/A.cpp of chain-{sha(1)[:7]}")
    assert sha(3) not in trial.tried
    assert plan.bundles[0].commits == (sha(2),)


def test_commit_touching_chain_symbol_joins_chain() -> None:
    """A commit in another file that changes a symbol of an open chain joins it (reason symbol)."""
    trial = FakeTrial({sha(1): ("lib/A.cpp",)})
    commits = [
        change(1, "lib/A.cpp", symbols=["LayoutPropagation::rewrite"]),
        change(2, "include/A.h", symbols=["LayoutPropagation::rewrite", "Other"]),
    ]
    plan = partition(commits, CONFIG, trial)
    assert reasons(plan)[sha(2)].kind == "symbol"
    assert "LayoutPropagation::rewrite" in reasons(plan)[sha(2)].detail


def test_commit_linking_two_chains_merges_them_in_upstream_order() -> None:
    """A commit linking two chains merges them into the older one; members stay in upstream order."""
    trial = FakeTrial({sha(1): ("a.cpp",), sha(3): ("b.cpp",)})
    commits = [
        change(1, "a.cpp"),
        change(2, "x.py"),
        change(3, "b.cpp"),
        change(4, "a.cpp"),
        change(5, "b.cpp"),
        change(6, "a.cpp", "b.cpp"),
        change(7, "b.cpp"),
    ]
    plan = partition(commits, CONFIG, trial)
    assert len(plan.chains) == 1
    chain = plan.chains[0]
    assert chain.id == f"chain-{sha(1)[:7]}"
    assert chain.commits == (sha(1), sha(3), sha(4), sha(5), sha(6), sha(7))
    assert "merges" in reasons(plan)[sha(6)].detail


def test_every_commit_placed_exactly_once() -> None:
    """Every commit of the walk is in exactly one bundle or chain; none is invented."""
    trial = FakeTrial({sha(i): ("x",) for i in range(0, 40, 7)})
    commits = [change(i, f"f{i % 9}.cpp", symbols=[f"S{i % 5}"], lines=i * 7) for i in range(40)]
    plan = partition(commits, CONFIG, trial)
    assert sorted(placed(plan)) == sorted(c.sha for c in commits)
    assert len(placed(plan)) == len(commits)


def test_recorded_chain_keeps_member_and_pulls_dependents() -> None:
    """A recorded chain keeps its member even when it now picks cleanly, and dependents still join."""
    record = ChainRecord("chain-old", (sha(1),), (Reason(sha(1), "conflict", "was conflicting"),))
    plan = partition([change(1, "lib/A.cpp"), change(2, "lib/A.cpp")], CONFIG, FakeTrial(), [record])
    assert plan.chains[0].id == "chain-old"
    assert plan.chains[0].commits == (sha(1), sha(2))
    assert plan.chains[0].reasons[0].detail == "was conflicting"


def test_picked_members_link_until_chain_closes() -> None:
    """Files of already-picked members keep linking; a chain whose members are all picked closes."""
    record = ChainRecord(
        "chain-old", (sha(1), sha(2)), (Reason(sha(1), "conflict", "c"), Reason(sha(2), "file", "f"))
    )
    history = {sha(1): change(1, "lib/A.cpp")}
    plan = partition([change(2, "x.py"), change(3, "lib/A.cpp")], CONFIG, FakeTrial(), [record], history)
    assert plan.chains[0].commits == (sha(2), sha(3))
    assert [r.commit for r in plan.chains[0].picked] == [sha(1)]
    closed = partition(
        [change(3, "lib/A.cpp")], CONFIG, FakeTrial(), [record], {sha(1): change(1, "lib/A.cpp")}
    )
    assert closed.chains == () and closed.bundles[0].commits == (sha(3),)


def test_removed_commit_is_not_linked_back_but_may_seed_its_own_chain() -> None:
    """A commit removed by hand never rejoins that chain by links; if risky by itself it seeds another."""
    record = ChainRecord(
        "chain-old", (sha(1),), (Reason(sha(1), "conflict", "c"),), excluded=(sha(2), sha(3))
    )
    trial = FakeTrial({sha(3): ("lib/A.cpp",)})
    plan = partition(
        [change(1, "lib/A.cpp"), change(2, "lib/A.cpp"), change(3, "lib/A.cpp")], CONFIG, trial, [record]
    )
    assert plan.chain_of(sha(1)).commits == (sha(1),)  # type: ignore[union-attr]
    assert plan.bundle_of(sha(2)) is not None
    assert plan.chain_of(sha(3)).id == f"chain-{sha(3)[:7]}"  # type: ignore[union-attr]


def test_replanning_with_own_record_is_a_fixpoint() -> None:
    """Planning again with the chains a plan recorded gives the same plan, byte for byte."""
    trial_conflicts = {sha(3): ("a.cpp",), sha(8): ("z.cpp",)}
    commits = [
        change(i, "a.cpp" if i in (3, 5, 9) else f"f{i}.py", symbols=["K"] if i in (8, 11) else [])
        for i in range(1, 13)
    ]
    commits[7] = change(8, "z.cpp", symbols=["K"])
    first = partition(commits, CONFIG, FakeTrial(trial_conflicts))
    again = partition(commits, CONFIG, FakeTrial(trial_conflicts), [c.record() for c in first.chains])
    assert first.to_json() == again.to_json()
    assert len(first.chains) == 2


def test_same_inputs_same_json_bytes() -> None:
    """The plan JSON is byte-identical for the same inputs."""
    commits = [change(i, f"f{i % 4}.cpp", lines=20) for i in range(20)]
    one = partition(commits, CONFIG, FakeTrial({sha(4): ("f0.cpp",)})).to_json()
    two = partition(commits, CONFIG, FakeTrial({sha(4): ("f0.cpp",)})).to_json()
    assert one == two and one.endswith("\n")


def test_duplicate_commit_in_walk_is_refused() -> None:
    """A walk listing a commit twice is a bug upstream of the partition: refuse it loudly."""
    with pytest.raises(ValueError):
        partition([change(1, "a"), change(1, "a")], CONFIG, FakeTrial())


def test_commits_made_as_they_are_placed_give_the_same_plan() -> None:
    """A walk given as a generator with its order (the plan's analyses made as they are read)
    places the same; each commit is made only once the ones before it are placed; a commit out
    of the given order is refused."""
    commits = [change(i, f"f{i % 4}.cpp", lines=20) for i in range(20)]
    whole = partition(commits, CONFIG, FakeTrial({sha(4): ("f0.cpp",)})).to_json()
    made: list[str] = []

    class Watching(FakeTrial):
        def try_pick(self, sha: str) -> tuple[str, ...]:
            assert made[-1] == sha  # made just before it is placed, not all at once
            return super().try_pick(sha)

    trial = Watching({sha(4): ("f0.cpp",)})

    def lazily() -> Iterator[Change]:
        for c in commits:
            made.append(c.sha)
            yield c

    order = [c.sha for c in commits]
    assert partition(lazily(), CONFIG, trial, order=order).to_json() == whole
    with pytest.raises(ValueError, match="order"):
        partition(iter(commits[::-1]), CONFIG, FakeTrial(), order=order)


@pytest.mark.parametrize(
    ("path", "pattern", "hit"),
    [
        ("lib/WS/a/b.cpp", "lib/WS/**", True),
        ("lib/WS", "lib/WS/**", False),
        ("lib/WSX/a.cpp", "lib/WS/**", False),
        ("include/x/Ops.td", "**/*.td", True),
        ("Ops.td", "**/*.td", True),
        ("lib/a/b.cpp", "lib/*.cpp", False),
        ("cmake/llvm-hash.txt", "cmake/llvm-hash.txt", True),
        ("third_party/amd/x", "third_party/amd/", True),
    ],
)
def test_path_globs(path: str, pattern: str, hit: bool) -> None:
    """``**`` spans directories, ``*`` stays inside one component, a trailing / means the subtree."""
    assert path_matches(path, pattern) is hit


@given(
    st.lists(
        st.tuples(
            st.lists(
                st.sampled_from(["a.cpp", "b.cpp", "c.py", "d.td", "e.h", "lib/WS/x.cpp"]),
                min_size=1,
                max_size=3,
            ),
            st.lists(st.sampled_from(["Alpha", "Beta::run", "Gamma"]), max_size=2),
            st.integers(min_value=0, max_value=700),
            st.booleans(),
        ),
        max_size=30,
    )
)
@settings(max_examples=150, deadline=None)
@pytest.mark.parametrize("link", ["file", "line"])
def test_partition_properties(link: str, spec: list[tuple[list[str], list[str], int, bool]]) -> None:
    """Any walk: each commit placed once, chains and bundles in upstream order, bounds kept, and
    planning again with the recorded chains is a fixpoint."""
    config = RepoConfig(
        bundle=BundleConfig(max_commits=4, max_lines=900),
        risk=RiskConfig(diverged_zones=("lib/WS/**",), max_lines=600, link=link, size_seeds=link == "file"),
    )
    commits = [change(i, *paths, symbols=syms, lines=lines) for i, (paths, syms, lines, _) in enumerate(spec)]
    conflicts = {sha(i): ("x",) for i, (_, _, _, conflict) in enumerate(spec) if conflict}
    plan = partition(commits, config, FakeTrial(conflicts))
    order = [c.sha for c in commits]
    assert sorted(placed(plan)) == sorted(order)
    for group in [b.commits for b in plan.bundles] + [c.commits for c in plan.chains]:
        assert list(group) == sorted(group, key=order.index)
    for b in plan.bundles:
        assert len(b.commits) <= 4
        assert b.lines <= 900 or len(b.commits) == 1
    for chain in plan.chains:
        assert [r.commit for r in chain.reasons] == list(chain.commits)
        assert chain.reasons[0].kind in ("conflict", "diverged_zone", "size", "risky_path")
    again = partition(commits, config, FakeTrial(conflicts), [c.record() for c in plan.chains])
    assert again.to_json() == plan.to_json()
