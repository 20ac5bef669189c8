"""Bundle identity across re-cuts on plain data: keep_ids, the partition with a record, whereabouts,
the record in chains.json, and the closing comment of a bundle left with no successor."""

from __future__ import annotations

import json

import pytest

from core.config import BundleConfig, RepoConfig, RiskConfig
from core.render.ingest import fill_pull_marks
from workers.engine.chains import decode, decode_store, encode
from workers.engine.lines import LineDep
from workers.engine.partition.records import ChainRecord, Change, Plan, Reason
from workers.engine.partition.walk import partition
from workers.engine.parts import PartRecord, keep_ids, keeps, whereabouts
from workers.jobs.ingest_plan import ClosePull, IngestFacts, Moved, PullFacts, Wanted, plan

SMALL = RepoConfig(bundle=BundleConfig(max_commits=2, max_lines=100), risk=RiskConfig(max_lines=50))


def far(n: int) -> str:
    """A sha whose first seven digits differ from the others' (bundle ids name seven digits)."""
    return f"{n:07x}" + "0" * 33


def bid(n: int) -> str:
    return f"bundle-{far(n)[:7]}"


def position(*ns: int) -> dict[str, int]:
    return {far(n): i for i, n in enumerate(ns)}


# ---- keep_ids


def test_a_cut_shifted_by_one_commit_keeps_every_id() -> None:
    """A member gone from the middle moves each later boundary by one: each new part still holds most
    of one recorded part, and keeps its id (its natural id would name another commit)."""
    recorded = [PartRecord(bid(1), (far(1), far(2), far(3))), PartRecord(bid(4), (far(4), far(5), far(6)))]
    cut = [[far(1), far(3), far(4)], [far(5), far(6), far(7)]]
    ids = keep_ids(cut, recorded, position(1, 3, 4, 5, 6, 7))
    assert ids == [bid(1), bid(4)]


def test_largest_overlap_wins_then_upstream_order() -> None:
    """Greedy by the largest overlap; a tie goes to the earlier new part, then the earlier record."""
    recorded = [PartRecord(bid(1), (far(1), far(2))), PartRecord(bid(3), (far(3), far(4)))]
    # [2, 3, 4] shares 2 with bid(3) and 1 with bid(1): bid(3). [1] then takes bid(1).
    ids = keep_ids([[far(1)], [far(2), far(3), far(4)]], recorded, position(1, 2, 3, 4))
    assert ids == [bid(1), bid(3)]
    # Two new parts sharing one commit each with bid(1): the earlier one gets it.
    ids = keep_ids([[far(1)], [far(2)]], recorded[:1], position(1, 2))
    assert ids == [bid(1), bid(2)]


def test_a_small_overlap_is_a_new_bundle() -> None:
    """Sharing less than half of the smaller bundle is not the same bundle: the natural id stays."""
    assert keeps(1, 2, 2) and keeps(2, 4, 30) and not keeps(1, 3, 30) and not keeps(0, 1, 1)
    recorded = [PartRecord(bid(1), tuple(far(n) for n in range(1, 7)))]
    ids = keep_ids([[far(6), far(7), far(8)]], recorded, position(6, 7, 8))
    assert ids == [bid(6)]


def test_a_natural_id_a_kept_bundle_took_is_not_given_twice() -> None:
    """A new bundle whose first commit names a recorded id that another bundle kept gets its full sha."""
    recorded = [PartRecord(bid(2), (far(2), far(3)))]
    ids = keep_ids([[far(1), far(3)], [far(2)]], recorded, position(1, 2, 3))
    assert ids == [bid(2), f"bundle-{far(2)}"]  # the tie goes to the earlier new part


def test_nothing_recorded_gives_the_natural_ids() -> None:
    assert keep_ids([[far(1)], [far(2)]], [], position(1, 2)) == [bid(1), bid(2)]


# ---- the partition with a record


def ch(n: int, path: str, *needs: tuple[int, str, int]) -> Change:
    return Change(
        far(n), (path,), frozenset(), 5, depends=tuple(LineDep(far(d), p, a, a) for d, p, a in needs)
    )


class Trial:
    def try_pick(self, sha: str) -> tuple[str, ...]:
        return ()


def _record(plan: Plan) -> list[PartRecord]:
    return [PartRecord(b.id, b.commits) for b in plan.bundles]


def _week() -> list[Change]:
    """[1, 2] full when 3 needs 1 (3 joins past the bound); 4 and 5 a bundle of their own."""
    return [ch(1, "a.py"), ch(2, "b.py"), ch(3, "a.py", (1, "a.py", 3)), ch(4, "c.py"), ch(5, "d.py")]


def test_upstream_merging_two_groups_re_cuts_them_and_the_bundles_keep_their_ids() -> None:
    """A new upstream commit that needs both groups merges them; the merged group is cut again at the
    bound. Without the record the bundle of 4 and 5 disappears (its PR closed) and a new one appears;
    with it every recorded bundle keeps its id, and the stacking rule still holds on the new ids."""
    first = partition(_week(), SMALL, Trial())
    assert [(b.id, b.commits, b.stacked_on) for b in first.bundles] == [
        (bid(1), (far(1), far(2)), None),
        (bid(3), (far(3),), bid(1)),
        (bid(4), (far(4), far(5)), None),
    ]
    grown = [*_week(), ch(6, "a.py", (3, "a.py", 3), (4, "c.py", 1))]
    fresh = partition(grown, SMALL, Trial())
    assert [b.id for b in fresh.bundles] == [bid(1), bid(3), bid(5)]  # bid(4) gone, bid(5) new: churn
    kept = partition(grown, SMALL, Trial(), parts=_record(first))
    assert [(b.id, b.commits, b.stacked_on) for b in kept.bundles] == [
        (bid(1), (far(1), far(2)), None),
        (bid(3), (far(3), far(4)), bid(1)),
        (bid(4), (far(5), far(6)), bid(3)),  # 6 needs 3 and 4, both in bid(3) now
    ]
    (need,) = kept.bundles[2].needs
    assert need.commit == far(6) and need.detail.endswith(f"of {bid(3)}")
    assert kept.as_json()["bundles"][2]["stacked_on"] == bid(3)
    # Deterministic, and planning again with its own record changes nothing.
    assert partition(grown, SMALL, Trial(), parts=_record(first)).to_json() == kept.to_json()
    assert partition(grown, SMALL, Trial(), parts=_record(kept)).to_json() == kept.to_json()


def test_a_recorded_bundle_matched_by_nothing_says_where_its_commits_went() -> None:
    """Members land out of order and the group shrinks: fewer bundles than recorded; the one left
    without a successor is gone from the plan, and whereabouts names the bundle that holds its
    commit now and counts the landed one."""
    grown = [*_week(), ch(6, "a.py", (3, "a.py", 3), (4, "c.py", 1))]
    before = partition(grown, SMALL, Trial(), parts=_record(partition(_week(), SMALL, Trial())))
    left = [c for c in grown if c.sha not in (far(2), far(5))]  # the fork took 2 and 5 by hand
    after = partition(left, SMALL, Trial(), parts=_record(before))
    assert [(b.id, b.commits) for b in after.bundles] == [
        (bid(1), (far(1), far(3))),
        (bid(3), (far(4), far(6))),
    ]
    (gone,) = [p for p in _record(before) if p.id not in {b.id for b in after.bundles}]
    assert gone == PartRecord(bid(4), (far(5), far(6)))
    placed = {sha: b.id for b in after.bundles for sha in b.commits}
    where = whereabouts(gone, placed, [b.id for b in after.bundles], frozenset({far(2), far(5)}))
    assert (where.into, where.landed, where.out) == (((bid(3), 1),), 1, 0)


def test_joins_name_the_bundle_by_its_kept_id() -> None:
    """A member that joined the walk's bundle (named after its first commit) names the id the bundle
    kept, not a branch that is gone."""
    commits = [ch(2, "a.py"), ch(3, "b.py"), ch(9, "a.py", (2, "a.py", 1))]
    recorded = [PartRecord(bid(1), (far(1), far(2), far(3)))]  # 1 has landed
    plan = partition(commits, SMALL, Trial(), parts=recorded)
    assert [(b.id, b.commits, b.stacked_on) for b in plan.bundles] == [
        (bid(1), (far(2), far(3)), None),
        (bid(9), (far(9),), bid(1)),
    ]
    (joined,) = plan.bundles[1].joined
    (need,) = plan.bundles[1].needs
    assert joined.detail.endswith(f"of {bid(1)}") and need.detail.endswith(f"of {bid(1)}")
    assert all(bid(2) not in r.detail for b in plan.bundles for r in (*b.joined, *b.needs))


# ---- the record


def test_the_record_keeps_bundles_beside_chains_and_reads_records_without_them() -> None:
    chains = [ChainRecord("chain-1", (far(7),), (Reason(far(7), "conflict", "x"),))]
    parts = [PartRecord(bid(3), (far(3), far(4))), PartRecord(bid(1), (far(1),))]
    data = encode(chains, parts)
    assert decode_store(data, "t") == (tuple(chains), (parts[1], parts[0]))  # sorted by id
    assert decode(data, "t") == tuple(chains)
    assert "bundles" not in json.loads(encode(chains))  # no bundles: the bytes of before
    assert decode_store(encode(chains), "t") == (tuple(chains), ())
    from core.errors import ForksyncError

    with pytest.raises(ForksyncError, match="bundles\\[0\\] needs an id"):
        decode_store(b'{"version": 1, "chains": [], "bundles": [{"id": 3}]}', "t")


# ---- the closing comment


def test_a_bundle_left_without_successor_is_closed_naming_where_its_commits_went() -> None:
    """Its comment names the open PR holding some commits, the PR opened this run (filled in by the
    executor), and the landed ones; a stale branch without whereabouts keeps the plain text."""
    gone, kept, new = "forksync/bundle/0000004", "forksync/bundle/0000003", "forksync/bundle/0000007"
    wanted = (
        Wanted("bundle", bid(3), "t", "b", 2, kept, "main", "h1"),
        Wanted("bundle", bid(7), "t", "b", 1, new, kept, "h2", stacked_on=kept),
    )
    pulls = {
        kept: PullFacts(12, kept, "main", "u/12", "t", "b"),
        gone: PullFacts(13, gone, "main", "u", "t", "b"),
    }
    facts = IngestFacts(
        "o/fork",
        "main",
        "c" * 40,
        "plan1",
        wanted,
        pulls,
        {gone: "x", kept: "y", "forksync/bundle/0000009": "z"},
        (kept, new),
        "t",
        "s",
        moved={gone: Moved(((kept, 3), (new, 1)), landed=1)},
    )
    closes = {a.head: a.comment for a in plan(facts) if isinstance(a, ClosePull)}
    text = fill_pull_marks(closes[gone], {new: 14})
    assert (
        "Its 5 commit(s) are now: 3 in #12 (`forksync/bundle/0000003`); 1 in #14 (`forksync/bundle/0000007`)"
        in text
    )
    assert "1 landed on the trunk" in text and "re-cut" in text and "<!--" not in text
    assert "re-planned into another bundle" in closes["forksync/bundle/0000009"]
    assert fill_pull_marks(closes[gone], {}).count("`forksync/bundle/0000007`") == 1  # no PR: the branch


def test_the_recut_benchmark_counts_each_pr_once() -> None:
    """benchmarks.replay_recut's tally: each earlier bundle is kept (changed or not), landed or
    superseded; each later id the earlier plan lacked is new."""
    from benchmarks.replay_recut import _transition
    from workers.engine.partition.records import Bundle

    earlier = Plan((Bundle(bid(1), (far(1),)), Bundle(bid(2), (far(2),)), Bundle(bid(3), (far(3),))), ())
    later = Plan((Bundle(bid(2), (far(2), far(4))), Bundle(bid(5), (far(5),))), ())
    tally = dict.fromkeys(("kept", "kept_changed", "superseded", "new", "landed"), 0)
    _transition(earlier, later, {bid(1)}, tally)
    assert tally == {"kept": 1, "kept_changed": 1, "superseded": 1, "new": 1, "landed": 1}
