"""Line-mode links (risk.link: line, the default): what really depends joins a chain, a shared file does not."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.config import BundleConfig, RepoConfig, RiskConfig
from workers.engine.lines import LineDep
from workers.engine.partition import Change, Plan, Reason, partition
from workers.engine.symbols import Hunk, file_definitions

CONFIG = RepoConfig(bundle=BundleConfig(max_commits=10, max_lines=100), risk=RiskConfig(max_lines=50))


class ChainFakeTrial:
    """Conflicts onto the running bundle as given; ``with_chain`` names the chains a commit picks on."""

    def __init__(
        self, conflicts: Mapping[str, tuple[str, ...]], with_chain: Mapping[str, str] | None = None
    ) -> None:
        self.conflicts = dict(conflicts)
        self.with_chain = dict(with_chain or {})
        self.chains: dict[str, list[str]] = {}
        self.asked: list[tuple[str, str]] = []

    def try_pick(self, sha: str) -> tuple[str, ...]:
        return self.conflicts.get(sha, ())

    def chain_add(self, chain_id: str, sha: str) -> None:
        self.chains.setdefault(chain_id, []).append(sha)

    def chain_merge(self, keep: str, other: str, members: Sequence[str]) -> None:
        self.chains.setdefault(keep, []).extend(members)

    def picks_with(self, chain_id: str, sha: str) -> bool:
        self.asked.append((chain_id, sha))
        return self.with_chain.get(sha) == chain_id


def sha(n: int) -> str:
    return f"{n:040x}"


def change(
    n: int,
    *paths: str,
    depends: Sequence[tuple[int, str, int, int]] = (),
    lines: int = 5,
    defined: Sequence[str] = (),
    introduced: Sequence[str] = (),
    used: Sequence[str] = (),
) -> Change:
    return Change(
        sha(n),
        tuple(paths),
        frozenset(),
        lines,
        depends=tuple(LineDep(sha(d), p, a, b) for d, p, a, b in depends),
        defined=frozenset(defined),
        introduced=frozenset(introduced),
        used=frozenset(used),
    )


def reasons(plan: Plan) -> dict[str, Reason]:
    return {r.commit: r for c in plan.chains for r in c.reasons}


def test_overlapping_lines_join_the_chain_naming_lines() -> None:
    """A commit whose hunks overlap lines a chain member changed joins it; the reason names the lines."""
    trial = ChainFakeTrial({sha(1): ("lib/A.cpp",)})
    plan = partition(
        [change(1, "lib/A.cpp"), change(2, "lib/A.cpp", depends=[(1, "lib/A.cpp", 40, 42)])], CONFIG, trial
    )
    assert plan.chains[0].commits == (sha(1), sha(2))
    assert reasons(plan)[sha(2)] == Reason(
        sha(2), "line", f"lines 40-42 of lib/A.cpp last changed by {sha(1)[:7]} of chain-{sha(1)[:7]}"
    )


def test_sharing_a_file_is_not_a_dependency() -> None:
    """A clean commit in the same file as a chain, on other lines, is bundled (with risk.link: file it would join)."""
    trial = ChainFakeTrial({sha(1): ("python/test/unit/language/test_core.py",)})
    commits = [
        change(1, "python/test/unit/language/test_core.py"),
        change(2, "python/test/unit/language/test_core.py"),
    ]
    plan = partition(commits, CONFIG, trial)
    assert plan.chains[0].commits == (sha(1),)
    assert plan.bundle_of(sha(2)) is not None
    file_mode = RepoConfig(bundle=CONFIG.bundle, risk=RiskConfig(link="file"))
    assert partition(commits, file_mode, ChainFakeTrial({sha(1): ("x",)})).chains[0].commits == (
        sha(1),
        sha(2),
    )


def test_dependency_on_a_bundled_or_picked_commit_links_nothing() -> None:
    """Lines last changed by a bundled commit (or one the fork carries) are no chain dependency."""
    trial = ChainFakeTrial({sha(1): ("a.cpp",)})
    commits = [
        change(1, "a.cpp"),
        change(2, "b.cpp"),
        change(3, "b.cpp", depends=[(2, "b.cpp", 1, 3), (99, "b.cpp", 9, 9)]),
    ]
    plan = partition(commits, CONFIG, trial)
    assert plan.bundle_of(sha(3)) is not None and plan.chains[0].commits == (sha(1),)


def test_changing_a_definition_the_chain_changes_joins_it() -> None:
    """Changing the definition of a name a chain member also defines is a symbol link, naming the symbol."""
    trial = ChainFakeTrial({sha(1): ("lib/A.cpp",)})
    commits = [
        change(1, "lib/A.cpp", defined=["LayoutPropagation::rewriteRegion"]),
        change(2, "include/A.h", defined=["LayoutPropagation::rewriteRegion"]),
    ]
    reason = reasons(partition(commits, CONFIG, trial))[sha(2)]
    assert (
        reason.kind == "symbol"
        and "changes the definition of LayoutPropagation::rewriteRegion" in reason.detail
    )


def test_using_a_name_the_chain_introduces_joins_it_a_mere_mention_does_not() -> None:
    """Using a function a chain member introduces links; using one it only changes does not."""
    trial = ChainFakeTrial({sha(1): ("lib/A.cpp",)})
    commits = [
        change(
            1,
            "lib/A.cpp",
            defined=["mlir::getNumWarpsAttr", "getOrder"],
            introduced=["mlir::getNumWarpsAttr"],
        ),
        change(2, "lib/B.cpp", used=["getNumWarpsAttr"]),
        change(3, "lib/C.cpp", used=["getOrder"]),
    ]
    plan = partition(commits, CONFIG, trial)
    assert (
        reasons(plan)[sha(2)].detail
        == f"uses mlir::getNumWarpsAttr, introduced by {sha(1)[:7]} of chain-{sha(1)[:7]}"
    )
    assert plan.bundle_of(sha(3)) is not None


def test_definitions_not_contexts_and_the_stoplist_holds() -> None:
    """The hunk's enclosing function is not a definition; a stop-listed name never is; a new function is."""
    hunk = Hunk(
        "LogicalResult Foo::matchAndRewrite(Op op) {", ("int helperWidth(int x) {", "  return bar(x);"), ()
    )
    syms = file_definitions("lib/X.cpp", [hunk])
    assert syms.introduced == {"helperWidth"} and syms.defined == {"helperWidth"}
    assert "bar" in syms.used and "return" not in syms.used
    assert file_definitions("lib/X.cpp", [Hunk("", ("void runOnOperation() {",), ())]).defined == frozenset()


def test_conflicting_commit_that_picks_on_a_chain_joins_it() -> None:
    """A conflicting commit that picks cleanly on top of a chain touching its files joins it (reason pick)."""
    trial = ChainFakeTrial(
        {sha(1): ("a.cpp",), sha(2): ("a.cpp",)}, with_chain={sha(2): f"chain-{sha(1)[:7]}"}
    )
    plan = partition([change(1, "a.cpp"), change(2, "a.cpp")], CONFIG, trial)
    assert plan.chains[0].commits == (sha(1), sha(2))
    assert reasons(plan)[sha(2)].kind == "pick" and "a.cpp" in reasons(plan)[sha(2)].detail
    alone = ChainFakeTrial({sha(1): ("a.cpp",), sha(2): ("a.cpp",)})
    split = partition([change(1, "a.cpp"), change(2, "a.cpp")], CONFIG, alone)
    assert [c.commits for c in split.chains] == [(sha(1),), (sha(2),)]
    assert alone.asked == [(f"chain-{sha(1)[:7]}", sha(2))]


def test_large_clean_commit_is_bundled_alone_unless_size_seeds() -> None:
    """Size is risk only with another signal: a large clean commit goes to a bundle of its own."""
    commits = [change(1, "a.py", lines=10), change(2, "big.py", lines=400), change(3, "c.py", lines=10)]
    plan = partition(commits, CONFIG, ChainFakeTrial({}))
    assert [b.commits for b in plan.bundles] == [(sha(1),), (sha(2),), (sha(3),)]
    assert plan.chains == ()
    seeding = RepoConfig(bundle=CONFIG.bundle, risk=RiskConfig(max_lines=50, size_seeds=True))
    assert reasons(partition(commits, seeding, ChainFakeTrial({})))[sha(2)].kind == "size"


def test_python_definitions_link_only_within_their_module() -> None:
    """Two modules that each define their own ``is_hopper`` change two functions (no link); a change
    of the same module's ``is_hopper`` is a link, and names the module (real Triton history: a
    tutorial's own helper was linked to ``triton._internal_testing.is_hopper``)."""
    own = Hunk("", ("def is_hopper():", "    return torch.cuda.get_device_capability()[0] == 9"), ())
    first = file_definitions("python/tutorials/09-persistent-matmul.py", [own])
    other = file_definitions("python/tutorials/06-fused-attention.py", [own])
    assert first.defined == {"is_hopper in python/tutorials/09-persistent-matmul.py"}
    assert first.introduced == {"is_hopper"}  # uses elsewhere still link by the bare name
    assert first.defined.isdisjoint(other.defined)
    header = Hunk("", ("LogicalResult rewriteRegion(Region &r);",), ())
    assert file_definitions("include/A.h", [header]).defined == {"rewriteRegion"}  # C++ stays bare
    trial = ChainFakeTrial({sha(1): ("python/tutorials/09-persistent-matmul.py",)})
    commits = [
        change(1, "python/tutorials/09-persistent-matmul.py", defined=sorted(first.defined)),
        change(2, "python/tutorials/06-fused-attention.py", defined=sorted(other.defined)),
        change(3, "python/tutorials/09-persistent-matmul.py", defined=sorted(first.defined)),
    ]
    plan = partition(commits, CONFIG, trial)
    assert plan.bundle_of(sha(2)) is not None
    assert reasons(plan)[sha(3)].detail.startswith(
        "changes the definition of is_hopper in python/tutorials/09-persistent-matmul.py, also changed by"
    )


def test_a_cpp_member_call_is_no_use_of_a_new_free_function() -> None:
    """``createTokenOp.getNumBuffers()`` calls a member: it does not use the free function
    ``getNumBuffers`` a chain member introduces in a .cpp (real Triton history), while a bare call
    does, and a member call still uses a new method ``Cls::getNumBuffers``."""
    call = file_definitions(
        "lib/WS.cpp", [Hunk("", ("  for (unsigned i = 0; i < createTokenOp.getNumBuffers(); i++) {",), ())]
    )
    assert ".getNumBuffers" in call.used and "getNumBuffers" not in call.used
    bare = file_definitions("lib/WS.cpp", [Hunk("", ("  unsigned n = getNumBuffers(op);",), ())])
    trial = ChainFakeTrial({sha(1): ("lib/San.cpp",), sha(3): ("lib/Op.cpp",)})
    commits = [
        change(1, "lib/San.cpp", introduced=["getNumBuffers"]),
        change(2, "lib/WS.cpp", used=sorted(call.used)),
        change(3, "lib/Op.cpp", introduced=["TokenOpAdaptor::getNumBuffers"]),
        change(4, "lib/WS.cpp", used=sorted(call.used)),
        change(5, "lib/Other.cpp", used=sorted(bare.used)),
    ]
    plan = partition(commits, CONFIG, trial)
    assert plan.bundle_of(sha(2)) is not None
    assert reasons(plan)[sha(4)].detail.startswith("uses TokenOpAdaptor::getNumBuffers, introduced by")
    assert reasons(plan)[sha(5)].detail.startswith("uses getNumBuffers, introduced by")


# ---- independent bundles: each lands on the trunk alone, so a dependency keeps commits together

SMALL = RepoConfig(bundle=BundleConfig(max_commits=2, max_lines=100), risk=RiskConfig(max_lines=50))


def test_commit_depending_on_an_earlier_bundle_joins_it_past_the_bound() -> None:
    """Bundle 2 never needs bundle 1: a commit over bundle 1's lines joins bundle 1, saying which lines."""
    commits = [
        change(1, "a.py"),
        change(2, "b.py"),
        change(3, "c.py"),
        change(4, "a.py", depends=[(1, "a.py", 3, 4)]),
        change(5, "d.py"),
    ]
    plan = partition(commits, SMALL, ChainFakeTrial({}))
    assert [b.commits for b in plan.bundles] == [(sha(1), sha(2), sha(4)), (sha(3), sha(5))]
    (joined,) = plan.bundles[0].joined
    assert joined == Reason(
        sha(4), "line", f"lines 3-4 of a.py last changed by {sha(1)[:7]} of bundle-{sha(1)[:7]}"
    )
    assert plan.chains == ()
    assert plan.as_json()["bundles"][0]["joined"] == [joined.as_json()]
    assert "joined" not in plan.as_json()["bundles"][1]


def test_commit_depending_on_two_bundles_merges_them() -> None:
    """Depending on two bundles (lines of one, a name the other introduces) merges them into the oldest."""
    commits = [
        change(1, "a.py"),
        change(2, "b.py"),
        change(3, "c.py", introduced=["make_widget"]),
        change(4, "e.py"),
        change(5, "f.py"),
        change(6, "a.py", depends=[(1, "a.py", 1, 1)], used=["make_widget"]),
    ]
    plan = partition(commits, SMALL, ChainFakeTrial({}))
    assert [b.commits for b in plan.bundles] == [(sha(1), sha(2), sha(3), sha(4), sha(6)), (sha(5),)]
    assert "links and merges" in plan.bundles[0].joined[-1].detail


def test_a_shared_file_alone_does_not_tie_bundles() -> None:
    """Touching a file an earlier bundle touches, on other lines, is no dependency: the bound holds."""
    commits = [change(1, "a.py"), change(2, "b.py"), change(3, "a.py")]
    plan = partition(commits, SMALL, ChainFakeTrial({}))
    assert [b.commits for b in plan.bundles] == [(sha(1), sha(2)), (sha(3),)]
    assert all(not b.joined for b in plan.bundles)


class AloneTrial(ChainFakeTrial):
    """Also answers whether a commit applies on the trunk with its own bundle alone (BundleTrial)."""

    def __init__(self, alone_fails: set[str]) -> None:
        super().__init__({})
        self.alone_fails = alone_fails
        self.current: list[str] = []
        self.closed = 0

    def picks_alone(self, sha: str, fresh: bool) -> bool:
        return sha not in self.alone_fails

    def bundle_add(self, sha: str) -> None:
        self.current.append(sha)

    def bundle_close(self) -> None:
        self.current, self.closed = [], self.closed + 1


def test_near_lines_that_apply_without_the_earlier_bundle_do_not_tie_it() -> None:
    """With the trunk-plus-own-bundle trial, a line dependency on an earlier bundle ties only when the
    commit does not apply without it: the bounds hold otherwise."""
    commits = [
        change(1, "a.py"),
        change(2, "b.py"),
        change(3, "c.py"),
        change(4, "a.py", depends=[(1, "a.py", 3, 4)]),
        change(5, "a.py", depends=[(1, "a.py", 9, 9)]),
    ]
    trial = AloneTrial(alone_fails={sha(5)})
    plan = partition(commits, SMALL, trial)
    assert [b.commits for b in plan.bundles] == [(sha(1), sha(2), sha(5)), (sha(3), sha(4))]
    assert [r.commit for r in plan.bundles[0].joined] == [sha(5)] and plan.bundles[1].joined == ()
    assert trial.current == [sha(3), sha(4)] and trial.closed == 1
