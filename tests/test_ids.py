"""Every id a plan hands out is unique: bundles, stacked parts, chains, urgent picks and holes whose
first commits share seven hex digits get distinct ids (and so distinct branches), deterministically."""

from __future__ import annotations

import json

from core.config import BundleConfig, RepoConfig, RiskConfig
from tests.test_partition_lines import ChainFakeTrial
from workers.engine.bundle import bundle_branch
from workers.engine.ids import fresh_id, fresh_ids
from workers.engine.lines import LineDep
from workers.engine.partition.records import Change, Plan
from workers.engine.partition.walk import partition
from workers.engine.parts import PartRecord, keep_ids

SMALL = RepoConfig(bundle=BundleConfig(max_commits=2, max_lines=100), risk=RiskConfig(max_lines=50))


def twin(n: int, head: str = "c0ffee1") -> str:
    """The ``n``-th sha starting with ``head``: twins share the seven digits a short id shows."""
    return head + f"{n:033x}"


def other(n: int) -> str:
    """A sha whose seven first digits no twin (and no other ``other``) has."""
    return f"{n:07x}" + "f" * 33


def change(sha: str, path: str, needs: str | None = None, at: int = 1) -> Change:
    deps = (LineDep(needs, path, at, at),) if needs is not None else ()
    return Change(sha, (path,), frozenset(), 5, depends=deps)


def test_fresh_id_is_short_then_full_then_counted() -> None:
    sha = twin(1)
    assert fresh_id("bundle", sha, set()) == "bundle-c0ffee1"
    assert fresh_id("bundle", sha, {"bundle-c0ffee1"}) == f"bundle-{sha}"
    assert fresh_id("bundle", sha, {"bundle-c0ffee1", f"bundle-{sha}"}) == f"bundle-{sha}-2"
    assert (
        fresh_id("bundle", sha, {"bundle-c0ffee1", f"bundle-{sha}", f"bundle-{sha}-2"}) == f"bundle-{sha}-3"
    )
    assert fresh_ids("urgent", [twin(1), twin(2), other(1)]) == [
        "urgent-c0ffee1",
        f"urgent-{twin(2)}",
        f"urgent-{other(1)[:7]}",
    ]


def test_two_bundles_whose_first_commits_share_seven_digits_get_two_branches() -> None:
    """The bound closes a bundle at twin(2); the next opens at twin(3), same seven digits. The
    earlier keeps the short id (existing branches keep their names), the later names its full sha."""
    commits = [
        change(twin(1), "a.py"),
        change(twin(2), "b.py"),
        change(twin(3), "c.py"),
        change(other(4), "d.py"),
    ]
    plan = partition(commits, SMALL, ChainFakeTrial({}))
    assert [b.commits for b in plan.bundles] == [(twin(1), twin(2)), (twin(3), other(4))]
    assert [b.id for b in plan.bundles] == ["bundle-c0ffee1", f"bundle-{twin(3)}"]
    assert [bundle_branch(b) for b in plan.bundles] == [
        "forksync/bundle/c0ffee1",
        f"forksync/bundle/{twin(3)}",
    ]


def test_stacked_parts_whose_first_commits_share_seven_digits_are_told_apart() -> None:
    """twin(3) needs twin(1)'s lines: it joins that bundle past the bound and the split stacks its
    part on the first. Both parts start with c0ffee1: the stacked one names its full sha, its base and
    its needs name the first part's id (before, both were ``bundle-c0ffee1``, stacked on itself)."""
    commits = [change(twin(1), "a.py"), change(twin(2), "b.py"), change(twin(3), "a.py", needs=twin(1))]
    plan = partition(commits, SMALL, ChainFakeTrial({}))
    first, stacked = plan.bundles
    assert (first.commits, stacked.commits) == ((twin(1), twin(2)), (twin(3),))
    assert (first.id, stacked.id) == ("bundle-c0ffee1", f"bundle-{twin(3)}")
    assert stacked.stacked_on == first.id
    assert stacked.needs and stacked.needs[0].detail.endswith(f" of {first.id}")
    # A second group, stacked too: twin(7) needs twin(5), bundled after other(4). Five bundles, five
    # ids, five branches; every base is another bundle of the plan.
    commits += [
        change(other(4), "z.py"),
        change(twin(5), "e.py"),
        change(twin(6), "f.py"),
        change(twin(7), "e.py", needs=twin(5)),
    ]
    plan = partition(commits, SMALL, ChainFakeTrial({}))
    assert [(b.id, b.stacked_on) for b in plan.bundles] == [
        ("bundle-c0ffee1", None),
        (f"bundle-{twin(3)}", "bundle-c0ffee1"),
        (f"bundle-{other(4)[:7]}", None),
        (f"bundle-{twin(6)}", None),
        (f"bundle-{twin(7)}", f"bundle-{other(4)[:7]}"),
    ]
    assert len({bundle_branch(b) for b in plan.bundles}) == 5


def test_a_recut_never_gives_a_kept_id_twice() -> None:
    """A recorded id a re-cut bundle keeps is no one else's: a new bundle whose natural id it is
    names its full sha, and where a kept id is that full sha too, the full sha with a counter."""
    recorded = [
        PartRecord("bundle-c0ffee1", (other(1), other(2))),
        PartRecord(f"bundle-{twin(9)}", (other(3), other(4))),
    ]
    cut = [[twin(9)], [other(1), other(2)], [other(3), other(4)]]
    position = {sha: i for i, sha in enumerate([twin(9), other(1), other(2), other(3), other(4)])}
    assert keep_ids(cut, recorded, position) == [f"bundle-{twin(9)}-2", "bundle-c0ffee1", f"bundle-{twin(9)}"]
    # A record written before ids were unique may hold one id twice: only one bundle keeps it.
    twice = [PartRecord("bundle-c0ffee1", (other(1),)), PartRecord("bundle-c0ffee1", (other(3),))]
    assert keep_ids([[other(1)], [other(3)]], twice, position) == ["bundle-c0ffee1", f"bundle-{other(3)[:7]}"]


def test_a_recut_in_the_partition_keeps_its_id_and_the_twin_moves_aside() -> None:
    """The walk: a recorded bundle kept by a part that no longer starts at its named commit, and a new
    bundle that starts at a twin of it. The kept id stays; the new bundle takes its full sha."""
    commits = [change(other(1), "a.py"), change(twin(2), "b.py"), change(twin(3), "c.py")]
    recorded = [PartRecord("bundle-c0ffee1", (other(1), twin(2)))]
    plan = partition(commits, SMALL, ChainFakeTrial({}), parts=recorded)
    assert [(b.id, b.commits) for b in plan.bundles] == [
        ("bundle-c0ffee1", (other(1), twin(2))),
        (f"bundle-{twin(3)}", (twin(3),)),
    ]


def test_same_input_same_ids() -> None:
    """Twins everywhere, a record, declined ids: two runs (and the record in another order) give the
    same bytes."""
    commits = [
        change(twin(1), "a.py"),
        change(twin(2), "b.py"),
        change(twin(3), "a.py", needs=twin(1)),
        change(twin(4), "c.py"),
        change(twin(5), "d.py"),
    ]
    recorded = [PartRecord("bundle-c0ffee1", (twin(4), twin(5))), PartRecord(f"bundle-{twin(2)}", (twin(2),))]
    runs = [
        partition(commits, SMALL, ChainFakeTrial({}), parts=parts).to_json()
        for parts in (recorded, recorded, recorded[::-1])
    ]
    assert runs[0] == runs[1] == runs[2]
    ids = [b["id"] for b in json.loads(runs[0])["bundles"]]
    assert len(ids) == len(set(ids)) and "bundle-c0ffee1" in ids


def test_chains_and_holes_whose_commits_share_seven_digits_get_distinct_ids() -> None:
    """Two conflicting commits seed two chains; two deferred holes are two manual chains in the JSON."""
    commits = [change(twin(1), "a.py"), change(twin(2), "b.py")]
    plan = partition(commits, SMALL, ChainFakeTrial({twin(1): ("a.py",), twin(2): ("b.py",)}))
    assert [c.id for c in plan.chains] == ["chain-c0ffee1", f"chain-{twin(2)}"]
    holes = Plan((), (), deferred=(twin(3), twin(4))).as_json()["chains"]
    assert [c["id"] for c in holes] == ["deferred-c0ffee1", f"deferred-{twin(4)}"]
