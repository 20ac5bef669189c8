"""Line-mode links (risk.link: line, the default): what really depends joins a chain, a shared file does not."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.config import BundleConfig, RepoConfig, RiskConfig
from workers.engine.lines import LineDep
from workers.engine.partition.records import Change, Plan, Reason
from workers.engine.partition.walk import partition
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


def test_commit_depending_on_an_earlier_bundle_is_stacked_on_it_within_the_bound() -> None:
    """Bundle 2 never needs bundle 1: a commit over bundle 1's lines, with bundle 1 full, goes into a
    bundle of its own stacked on bundle 1 (it lands after it), saying which lines; the bound holds."""
    commits = [
        change(1, "a.py"),
        change(2, "b.py"),
        change(3, "c.py"),
        change(4, "a.py", depends=[(1, "a.py", 3, 4)]),
        change(5, "d.py"),
    ]
    plan = partition(commits, SMALL, ChainFakeTrial({}))
    assert [b.commits for b in plan.bundles] == [(sha(1), sha(2)), (sha(3), sha(5)), (sha(4),)]
    first, second, stacked = plan.bundles
    assert first.stacked_on is None and second.stacked_on is None  # independent: on the trunk
    assert stacked.stacked_on == f"bundle-{sha(1)[:7]}"
    detail = f"lines 3-4 of a.py last changed by {sha(1)[:7]} of bundle-{sha(1)[:7]}"
    assert stacked.joined == (Reason(sha(4), "line", detail),)
    assert stacked.needs == (Reason(sha(4), "line", detail),)
    assert plan.chains == ()
    out = plan.as_json()["bundles"]
    assert out[2]["stacked_on"] == f"bundle-{sha(1)[:7]}" and out[2]["needs"] == [stacked.needs[0].as_json()]
    assert "stacked_on" not in out[0] and "joined" not in out[1]


def test_commit_depending_on_two_bundles_merges_them_and_the_split_stacks_the_part() -> None:
    """Depending on two bundles (lines of one, a name the other introduces) ties them into one group;
    split at the bound, the part holding the commit is stacked on the part it needs last, whose stack
    holds the other."""
    commits = [
        change(1, "a.py"),
        change(2, "b.py"),
        change(3, "c.py", introduced=["make_widget"]),
        change(4, "e.py"),
        change(5, "f.py"),
        change(6, "a.py", depends=[(1, "a.py", 1, 1)], used=["make_widget"]),
    ]
    plan = partition(commits, SMALL, ChainFakeTrial({}))
    assert [b.commits for b in plan.bundles] == [(sha(1), sha(2)), (sha(3), sha(4)), (sha(5),), (sha(6),)]
    # sha(6) needs parts 1 and 2, and part 2 needs nothing: no single stack holds both, so in line.
    # These shas share their seven first digits: part 2 is named by its full first sha (ids are unique).
    assert [b.stacked_on for b in plan.bundles] == [
        None,
        f"bundle-{sha(1)[:7]}",
        None,
        f"bundle-{sha(3)}",
    ]
    assert "links and merges" in plan.bundles[3].joined[-1].detail
    assert all(len(b.commits) <= 2 for b in plan.bundles)


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
    assert [b.commits for b in plan.bundles] == [(sha(1), sha(2)), (sha(3), sha(4)), (sha(5),)]
    assert plan.bundles[2].stacked_on == f"bundle-{sha(1)[:7]}" and plan.bundles[1].stacked_on is None
    assert [r.commit for r in plan.bundles[2].joined] == [sha(5)] and plan.bundles[1].joined == ()
    assert trial.current == [sha(3), sha(4)] and trial.closed == 1


# ---- stacks: a bundle dependencies carry past the bound is split; each part on the one it needs


def _dense() -> list[Change]:
    """Seven commits, each after the first over lines of an earlier one: one group of 7 (bound 2)."""
    return [
        change(1, "a.py"),
        change(2, "a.py", depends=[(1, "a.py", 1, 2)]),
        change(3, "b.py", depends=[(1, "a.py", 5, 5)]),
        change(4, "c.py", depends=[(2, "a.py", 7, 8)]),
        change(5, "d.py", depends=[(1, "a.py", 9, 9)]),
        change(6, "e.py", depends=[(5, "d.py", 1, 3)]),
        change(7, "f.py", depends=[(1, "a.py", 12, 12)]),
    ]


def test_a_group_past_the_bound_is_split_in_upstream_order_into_a_tree_of_stacks() -> None:
    """Split at bundle.max_commits in upstream order; each part is stacked on the latest part it needs
    (not simply the one before), and says which member needs which lines of which bundle."""
    plan = partition(_dense(), SMALL, ChainFakeTrial({}))
    assert [b.commits for b in plan.bundles] == [
        (sha(1), sha(2)),
        (sha(3), sha(4)),
        (sha(5), sha(6)),
        (sha(7),),
    ]
    first = f"bundle-{sha(1)[:7]}"
    assert [b.stacked_on for b in plan.bundles] == [None, first, first, first]
    third = plan.bundles[2]
    # sha(6) needs sha(5), in its own part: only sha(5) names what the stack gives it.
    assert third.needs == (Reason(sha(5), "line", f"line 9 of a.py last changed by {sha(1)[:7]} of {first}"),)
    assert all(len(b.commits) <= SMALL.bundle.max_commits for b in plan.bundles)
    assert sorted(s for b in plan.bundles for s in b.commits) == [sha(n) for n in range(1, 8)]


def test_a_part_that_needs_no_earlier_part_stays_on_the_trunk() -> None:
    """A part of a split group whose members depend only on each other is independent: no base."""
    commits = [
        change(1, "a.py"),
        change(2, "b.py"),
        change(3, "a.py", depends=[(1, "a.py", 1, 1)]),  # joins bundle 1 (3 > bound 2)
        change(4, "c.py", depends=[(3, "a.py", 4, 4)]),  # needs sha(3) only
    ]
    plan = partition(commits, SMALL, ChainFakeTrial({}))
    assert [b.commits for b in plan.bundles] == [(sha(1), sha(2)), (sha(3), sha(4))]
    assert plan.bundles[1].stacked_on == f"bundle-{sha(1)[:7]}"  # sha(3) needs sha(1)
    commits[2] = change(3, "a.py", depends=[(2, "b.py", 1, 1)])
    commits[3] = change(4, "c.py", depends=[(3, "a.py", 4, 4)])
    commits.insert(2, change(9, "z.py", depends=[(1, "a.py", 1, 1)]))
    plan = partition(commits, SMALL, ChainFakeTrial({}))
    # Group [1, 2, 9, 3, 4]: parts [1, 2], [9, 3], [4]; [4] needs sha(3) of part 2 only.
    assert [b.commits for b in plan.bundles] == [(sha(1), sha(2)), (sha(9), sha(3)), (sha(4),)]
    # sha(9) shares sha(1)'s seven first digits: its part is named by the full sha (ids are unique).
    assert [b.stacked_on for b in plan.bundles] == [None, f"bundle-{sha(1)[:7]}", f"bundle-{sha(9)}"]


def _far(n: int) -> str:
    """A sha whose first seven digits differ from the others' (bundle ids name seven digits)."""
    return f"{n:07x}" + "0" * 33


def _fchange(n: int, path: str, needs: int | None = None, at: int = 1) -> Change:
    deps = (LineDep(_far(needs), "a.py", at, at),) if needs is not None else ()
    return Change(_far(n), (path,), frozenset(), 5, depends=deps)


def test_nothing_stays_stacked_on_a_declined_bundle() -> None:
    """A bundle whose PR was closed unmerged is no base: the members stacked on it that need it
    (directly or through another member) move to it, the rest of the part is re-based without it,
    and both are said (unstacked_from, left_behind)."""
    commits = [
        _fchange(1, "a.py"),
        _fchange(2, "b.py"),
        _fchange(3, "a.py", needs=1),
        _fchange(4, "c.py"),
        _fchange(5, "c.py", needs=3, at=2),
        _fchange(6, "e.py", needs=3, at=3),
        _fchange(7, "f.py", needs=6, at=4),
    ]
    # The walk: [1, 2] is full when 3 needs 1, so 3 joins it; 4 opens a bundle; 5 and 6 need 3.
    plan = partition(commits, SMALL, ChainFakeTrial({}))
    first = f"bundle-{_far(1)[:7]}"
    assert [b.commits for b in plan.bundles] == [
        (_far(1), _far(2)),
        (_far(3), _far(5)),
        (_far(4), _far(7)),
        (_far(6),),
    ] or [b.stacked_on for b in plan.bundles]
    by_first = {b.commits[0]: b for b in plan.bundles}
    assert by_first[_far(3)].stacked_on == first
    plan = partition(commits, SMALL, ChainFakeTrial({}), declined={first})
    by_first = {b.commits[0]: b for b in plan.bundles}
    # 3 needs 1, and 5, 6 need 3, 7 needs 6: all move to the declined bundle; nothing is stacked on it.
    assert by_first[_far(1)].commits == (_far(1), _far(2), _far(3), _far(5), _far(6), _far(7))
    assert all(b.stacked_on != first for b in plan.bundles)
    assert sorted(s for b in plan.bundles for s in b.commits) == sorted(c.sha for c in commits)


def test_a_part_re_based_off_a_declined_bundle_keeps_what_does_not_need_it() -> None:
    """Members of a part stacked on a declined bundle that do not need it stay, re-based on the
    trunk under the same id (same branch, same PR); the part names the declined bundle and the
    members that left for it."""
    commits = [
        _fchange(1, "a.py"),
        _fchange(2, "b.py"),
        _fchange(3, "a.py", needs=1),  # [1, 2] is full: joins it past the bound
        _fchange(4, "c.py"),
        _fchange(5, "d.py"),
        Change(
            _far(6),
            ("a.py",),
            frozenset(),
            5,
            depends=(LineDep(_far(1), "a.py", 3, 3), LineDep(_far(4), "c.py", 1, 1)),
        ),
    ]
    plan = partition(commits, SMALL, ChainFakeTrial({}))
    first, third = f"bundle-{_far(1)[:7]}", f"bundle-{_far(3)[:7]}"
    assert [b.commits for b in plan.bundles] == [(_far(1), _far(2)), (_far(3), _far(4)), (_far(5), _far(6))]
    assert [b.stacked_on for b in plan.bundles] == [None, first, third]
    plan = partition(commits, SMALL, ChainFakeTrial({}), declined={first})
    assert [(b.id, b.commits) for b in plan.bundles] == [
        (first, (_far(1), _far(2), _far(3), _far(6))),
        (third, (_far(4),)),
        (f"bundle-{_far(5)[:7]}", (_far(5),)),
    ]
    assert [b.stacked_on for b in plan.bundles] == [None, None, None]
    rebased = plan.bundles[1]
    assert rebased.unstacked_from == first
    (left,) = rebased.left_behind
    assert left.commit == _far(3) and f"of {first}" in left.detail and "closed unmerged" in left.detail
    assert plan.as_json()["bundles"][1]["unstacked_from"] == first
