"""``forksync plan``/``bundle``/``chain`` on real repositories: the contract others depend on."""

from __future__ import annotations

import json
from typing import Any

import pygit2
import pytest

from core.errors import ForksyncError
from tests.fixtures.bundling import COALESCE, JIT, TritonPair
from workers.engine.chains import CHAINS_REF
from workers.engine.pair import open_configured
from workers.engine.planning import build_and_record, make_plan


def plan_json(pair: TritonPair) -> dict[str, Any]:
    rc, out, err = pair.cli("plan", *pair.args, "--json")
    assert rc == 0, err
    return dict(json.loads(out))


def reasons_by_commit(plan: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {r["commit"]: r for c in plan["chains"] for r in c["reasons"]}


def test_plan_json_places_every_pending_commit_once_with_each_reason_kind(triton_pair: TritonPair) -> None:
    """Every pending commit is in exactly one bundle or chain, with the rule that put it there."""
    s = triton_pair.shas
    plan = plan_json(triton_pair)
    placed = [c for b in plan["bundles"] for c in b["commits"]] + [
        c for ch in plan["chains"] for c in ch["commits"]
    ]
    pending = [s[k] for k in ("docs", "conflict", "python", "dependent", "header", "ws", "llvm", "big", "td")]
    assert sorted(placed) == sorted(pending) and len(placed) == len(pending)
    assert plan["bundles"][0]["commits"] == [s["docs"], s["python"], s["td"]]
    kinds = {sha: r["kind"] for sha, r in reasons_by_commit(plan).items()}
    assert kinds == {
        s["conflict"]: "conflict",
        s["dependent"]: "line",
        s["header"]: "symbol",
        s["ws"]: "diverged_zone",
        s["llvm"]: "risky_path",
        s["big"]: "size",
    }
    assert COALESCE in reasons_by_commit(plan)[s["conflict"]]["detail"]
    assert "getMemAccessPtr" in reasons_by_commit(plan)[s["header"]]["detail"]
    chain = plan["chains"][0]
    assert chain["id"] == f"chain-{s['conflict'][:7]}"
    assert chain["commits"] == [s["conflict"], s["dependent"], s["header"]]


def test_plan_text_lists_bundles_and_chain_reasons(triton_pair: TritonPair) -> None:
    """Without --json, plan prints each bundle and chain with subjects, and each chain commit's reason."""
    s = triton_pair.shas
    rc, out, err = triton_pair.cli("plan", *triton_pair.args)
    assert rc == 0, err
    assert f"bundle-{s['docs'][:7]}  3 commit(s)" in out
    assert "[Coalesce] Cap vector width by dtype (#102)" in out
    assert "risky_path: touches risky path cmake/llvm-hash.txt" in out
    assert out.rstrip().endswith("9 commit(s): 1 bundle(s), 4 chain(s)")


def test_plan_is_byte_identical_and_writes_nothing(triton_pair: TritonPair) -> None:
    """Two plans of the same pair print the same bytes; plan writes no ref into the fork."""
    refs = triton_pair.fork_refs()
    one = triton_pair.cli("plan", *triton_pair.args, "--json")
    two = triton_pair.cli("plan", *triton_pair.args, "--json")
    assert one == two and one[0] == 0
    assert triton_pair.fork_refs() == refs


def test_wont_port_in_nothing_and_deferred_listed_apart(triton_pair: TritonPair) -> None:
    """A wont_port commit is in no bundle or chain; a deferred one is in no bundle, in one unbuilt
    ``manual`` chain of its own, and listed in ``deferred``."""
    s = triton_pair.shas
    assert (
        triton_pair.cli("mark", *triton_pair.args, s["python"], "wont_port", "--reason", "AMD only")[0] == 0
    )
    assert triton_pair.cli("mark", *triton_pair.args, s["docs"], "deferred")[0] == 0
    plan = plan_json(triton_pair)
    assert s["python"] not in json.dumps(plan)
    assert plan["deferred"] == [s["docs"]]
    # The deferred hole is out of every bundle, and in exactly one chain: its own, never built.
    assert s["docs"] not in json.dumps(plan["bundles"])
    (held,) = [c for c in plan["chains"] if s["docs"] in c["commits"]]
    assert (
        held["id"] == f"deferred-{s['docs'][:7]}"
        and held["commits"] == [s["docs"]]
        and held["deferred"] is True
    )
    assert held["reasons"] == [
        {"commit": s["docs"], "kind": "manual", "detail": held["reasons"][0]["detail"]}
    ]
    assert "deferred by a maintainer" in held["reasons"][0]["detail"]
    built = json.loads(triton_pair.cli("bundle", *triton_pair.args, "--json")[1])
    assert s["docs"] not in json.dumps(built["bundles"]) + json.dumps(built["chains"])


def test_bundle_builds_branches_keeping_author_and_trailer(triton_pair: TritonPair) -> None:
    """Bundle branches carry upstream author and date, the PR link and the trailer; reruns change nothing."""
    s = triton_pair.shas
    rc, out, err = triton_pair.cli("bundle", *triton_pair.args, "--json")
    assert rc == 0, err
    built = json.loads(out)
    bundle = built["bundles"][0]
    assert bundle["branch"] == f"forksync/bundle/{s['docs'][:7]}"
    assert bundle["commits"] == [s["docs"], s["python"], s["td"]] and bundle["ejected"] == []
    fork = triton_pair.fork
    assert fork.head(f"refs/heads/{bundle['branch']}") == bundle["head"]
    log = fork.git("log", "--format=%an <%ae> %at|%cn|%B%x00", f"{bundle['base']}..{bundle['head']}")
    entries = [e.strip() for e in log.split("\x00") if e.strip()]
    assert len(entries) == 3
    assert entries[0].startswith("Ada Author <ada@triton.example>")
    assert "|forksync|[IR] Document tt.load (#109)" in entries[0]
    assert "https://github.com/triton-lang/triton/pull/109" in entries[0]
    assert f"(cherry picked from commit {s['td']})" in entries[0]
    # The same inputs give the same commits: a rerun updates nothing and creates no new branch.
    refs = triton_pair.fork_refs()
    rc2, out2, _ = triton_pair.cli("bundle", *triton_pair.args, "--json")
    assert rc2 == 0 and out2 == out
    assert triton_pair.fork_refs() == refs


def test_chain_branch_built_up_to_first_conflict(triton_pair: TritonPair) -> None:
    """A risky chain's branch stops before its first conflicting commit and says where and why."""
    s = triton_pair.shas
    built = json.loads(triton_pair.cli("bundle", *triton_pair.args, "--json")[1])
    chains = {c["id"]: c for c in built["chains"]}
    conflict = chains[f"chain-{s['conflict'][:7]}"]
    assert conflict["stopped_at"] == s["conflict"] and conflict["conflicts"] == [COALESCE]
    assert conflict["commits"] == [] and conflict["head"] == conflict["base"]
    llvm = chains[f"chain-{s['llvm'][:7]}"]
    assert llvm["stopped_at"] is None and llvm["commits"] == [s["llvm"]]
    # Built on the fork trunk like every branch: its PR lands on its own, in any order.
    assert llvm["base_branch"] == "main" and llvm["base"] == triton_pair.fork.head()
    assert {b["base_branch"] for b in built["bundles"]} == {"main"}


def test_work_tree_index_and_head_untouched(triton_pair: TritonPair) -> None:
    """bundle never touches the fork's work tree, index or HEAD: a dirty tree stays dirty and identical."""
    fork = triton_pair.fork
    (fork.path / COALESCE).write_text("dirty edit\n")
    (fork.path / "untracked.txt").write_text("mine\n")
    fork.git("add", "untracked.txt")
    before = (
        fork.git("status", "--porcelain"),
        fork.head(),
        fork.git("symbolic-ref", "HEAD"),
        (fork.path / ".git" / "index").read_bytes(),
        (fork.path / COALESCE).read_text(),
    )
    assert triton_pair.cli("bundle", *triton_pair.args)[0] == 0
    after = (
        fork.git("status", "--porcelain"),
        fork.head(),
        fork.git("symbolic-ref", "HEAD"),
        (fork.path / ".git" / "index").read_bytes(),
        (fork.path / COALESCE).read_text(),
    )
    assert after == before


def test_built_bundle_is_recognised_as_picked_once_merged(triton_pair: TritonPair) -> None:
    """Once a bundle branch is merged into the fork trunk, the ledger counts its commits as picked."""
    s = triton_pair.shas
    built = json.loads(triton_pair.cli("bundle", *triton_pair.args, "--json")[1])
    triton_pair.fork.git("merge", "-q", "--ff-only", built["bundles"][0]["branch"])
    plan = plan_json(triton_pair)
    placed = {c for b in plan["bundles"] for c in b["commits"]} | {
        c for ch in plan["chains"] for c in ch["commits"]
    }
    assert not placed & {s["docs"], s["python"], s["td"]}
    assert s["conflict"] in placed
    rc, out, _ = triton_pair.cli("status", *triton_pair.args, "--json")
    assert rc == 0 and json.loads(out)["picked"] == 3


def test_recorded_chain_survives_when_its_seed_no_longer_conflicts(triton_pair: TritonPair) -> None:
    """After bundle records the chains, a dependent keeps joining even once the seed would pick cleanly."""
    s = triton_pair.shas
    assert triton_pair.cli("bundle", *triton_pair.args)[0] == 0
    assert CHAINS_REF in triton_pair.fork_refs()
    # The fork drops its divergence: the conflicting commit would now pick cleanly.
    fork = triton_pair.fork
    fork.commit(
        "Drop our vector width change", {COALESCE: fork.git("show", f"{s['base']}:{COALESCE}") + "\n"}
    )
    plan = plan_json(triton_pair)
    chain = next(c for c in plan["chains"] if c["id"] == f"chain-{s['conflict'][:7]}")
    assert chain["commits"] == [s["conflict"], s["dependent"], s["header"]]
    # Without the record the same pair bundles it: the record is what kept the chain.
    fork.git("update-ref", "-d", CHAINS_REF)
    assert s["conflict"] in plan_json(triton_pair)["bundles"][0]["commits"]


def test_chain_remove_is_durable_and_not_linked_back(triton_pair: TritonPair) -> None:
    """A commit removed from its chain stays out of it on later runs despite its line link; it still
    conflicts by itself (it edits the line next to the fork's), so it seeds a chain of its own."""
    s = triton_pair.shas
    chain_id = f"chain-{s['conflict'][:7]}"
    rc, out, err = triton_pair.cli("chain", *triton_pair.args, s["dependent"][:10], "remove")
    assert rc == 0, err
    assert out.startswith("removed")
    for _ in range(2):
        plan = plan_json(triton_pair)
        chain = next(c for c in plan["chains"] if c["id"] == chain_id)
        assert s["dependent"] not in chain["commits"]
        own = next(c for c in plan["chains"] if s["dependent"] in c["commits"])
        assert own["id"] == f"chain-{s['dependent'][:7]}" and own["reasons"][0]["kind"] == "conflict"
        # header was recorded there for its symbol link to dependent; with dependent gone that link
        # is gone too, so healing releases it and the rules put it beside dependent again.
        assert s["header"] in own["commits"] and s["header"] not in chain["commits"]


def test_chain_add_into_existing_chain_is_manual_and_durable(triton_pair: TritonPair) -> None:
    """``chain add --into`` moves a bundled commit into a chain with reason manual, across runs."""
    s = triton_pair.shas
    chain_id = f"chain-{s['llvm'][:7]}"
    rc, out, err = triton_pair.cli("chain", *triton_pair.args, s["python"], "add", "--into", chain_id)
    assert rc == 0, err
    assert chain_id in out
    for _ in range(2):
        plan = plan_json(triton_pair)
        chain = next(c for c in plan["chains"] if c["id"] == chain_id)
        assert chain["commits"] == [s["python"], s["llvm"]]
        assert reasons_by_commit(plan)[s["python"]]["kind"] == "manual"
        assert all(s["python"] not in b["commits"] for b in plan["bundles"])


def test_chain_add_without_into_seeds_own_chain(triton_pair: TritonPair) -> None:
    """``chain add`` without --into gives the commit a chain of its own."""
    s = triton_pair.shas
    assert triton_pair.cli("chain", *triton_pair.args, s["td"], "add")[0] == 0
    plan = plan_json(triton_pair)
    assert {"id": f"chain-{s['td'][:7]}", "commits": [s["td"]]}.items() <= next(
        c for c in plan["chains"] if s["td"] in c["commits"]
    ).items()


def test_chain_takes_an_upstream_pr_number_as_ref(triton_pair: TritonPair) -> None:
    """``chain #N add`` names the upstream commit by its PR, as ``mark`` and the comment commands do;
    an unknown #N is a one-line error that writes nothing."""
    s = triton_pair.shas
    assert triton_pair.cli("chain", *triton_pair.args, "#101", "add")[0] == 0
    plan = plan_json(triton_pair)
    assert next(c for c in plan["chains"] if s["docs"] in c["commits"])["id"] == f"chain-{s['docs'][:7]}"
    refs = triton_pair.fork_refs()
    rc, _out, err = triton_pair.cli("chain", *triton_pair.args, "#999", "add")
    assert rc == 2 and "#999 names 0 upstream commits" in err and len(err.strip().splitlines()) == 1
    assert triton_pair.fork_refs() == refs


def test_ejection_at_build_time(triton_pair: TritonPair) -> None:
    """A bundle commit that no longer picks (the fork moved since planning) is ejected to a new chain."""
    s = triton_pair.shas
    pair, config = open_configured(*triton_pair.args[1::2])
    planned = make_plan(pair, config)
    fork = triton_pair.fork
    fork.commit(
        "[fbtriton] our warp cap", {JIT: fork.git("show", f"HEAD:{JIT}").replace("= 8", "= 32") + "\n"}
    )
    moved, _ = open_configured(*triton_pair.args[1::2])
    result = build_and_record(moved, config, planned)
    bundle = result.bundles[0]
    assert bundle.ejected == (s["python"],)
    assert bundle.commits == (s["docs"], s["td"])  # the build went on after the ejection
    ejected = next(c for c in result.chains if c.id == f"chain-{s['python'][:7]}")
    assert ejected.stopped_at == s["python"] and ejected.conflicts == (JIT,)
    # The ejection is recorded: the next plan keeps the commit in that chain.
    plan = plan_json(triton_pair)
    reason = reasons_by_commit(plan)[s["python"]]
    assert reason["kind"] == "conflict" and "ejected from forksync/bundle/" in reason["detail"]


def test_stale_chain_record_writes_nothing(triton_pair: TritonPair) -> None:
    """When the chain record moved since planning, bundle writes no branch at all (atomic push)."""
    s = triton_pair.shas
    pair, config = open_configured(*triton_pair.args[1::2])
    planned = make_plan(pair, config)
    assert triton_pair.cli("chain", *triton_pair.args, s["td"], "add")[0] == 0
    refs = triton_pair.fork_refs()
    with pytest.raises(ForksyncError, match="run the command again"):
        build_and_record(pair, config, planned)
    assert triton_pair.fork_refs() == refs


def test_errors_are_one_line_exit_2_and_write_nothing(triton_pair: TritonPair, tmp_path: Any) -> None:
    """Bad input: one line on stderr, exit 2, no ref written."""
    s = triton_pair.shas
    refs = triton_pair.fork_refs()
    cases = [
        ("plan", "--upstream", str(triton_pair.upstream.path), "--fork", str(tmp_path / "missing")),
        ("chain", *triton_pair.args, s["docs"], "add", "--into", "chain-nope"),
        ("chain", *triton_pair.args, s["docs"], "remove"),
        ("chain", *triton_pair.args, s["base"], "add"),
        ("chain", *triton_pair.args, "no-such-ref", "add"),
        ("chain", *triton_pair.args, s["docs"], "remove", "--into", "x"),
        ("bundle", *triton_pair.args, "--push", str(tmp_path / "nowhere")),
    ]
    for argv in cases:
        rc, out, err = triton_pair.cli(*argv)
        assert rc == 2, (argv, out, err)
        assert err.startswith("forksync: error: ") and err.count("\n") == 1, (argv, err)
    bad = tmp_path / "bad.yml"
    bad.write_text("risk:\n  max_lines: lots\n")
    rc, _, err = triton_pair.cli("plan", *triton_pair.args, "--config", str(bad))
    assert rc == 2 and "bad.yml:2" in err
    unrecognised = tmp_path / "trailer.yml"
    unrecognised.write_text('ledger:\n  trailer: "Ported-From: {sha}"\n')
    rc, _, err = triton_pair.cli("bundle", *triton_pair.args, "--config", str(unrecognised))
    assert rc == 2 and "trailer_patterns" in err
    assert triton_pair.fork_refs() == refs


def test_configured_committer_is_used(triton_pair: TritonPair, tmp_path: Any) -> None:
    """bundle.committer from the config names the committer of built commits; the author stays upstream's."""
    config = tmp_path / "forksync.yml"
    config.write_text('bundle: {committer: "Fork Bot <bot@fork.example>"}\n')
    built = json.loads(triton_pair.cli("bundle", *triton_pair.args, "--config", str(config), "--json")[1])
    who = triton_pair.fork.git("log", "-1", "--format=%cn <%ce>|%an", built["bundles"][0]["head"])
    assert who == "Fork Bot <bot@fork.example>|Ada Author"


def test_pygit2_sees_built_commits_with_upstream_author_date(triton_pair: TritonPair) -> None:
    """Author date is the upstream author date (not build time); committer time is upstream's too."""
    s = triton_pair.shas
    built = json.loads(triton_pair.cli("bundle", *triton_pair.args, "--json")[1])
    head = pygit2.Repository(str(triton_pair.fork.path)).get(built["bundles"][0]["head"])
    upstream = pygit2.Repository(str(triton_pair.upstream.path)).get(s["td"])
    assert isinstance(head, pygit2.Commit) and isinstance(upstream, pygit2.Commit)
    assert head.author.time == upstream.author.time and head.commit_time == upstream.commit_time
    assert head.committer.name == "forksync" and head.author.email == upstream.author.email


def test_bundle_push_sends_branches_and_record_to_remote(triton_pair: TritonPair, tmp_path: Any) -> None:
    """``--push REMOTE`` sends the same branches and the chain record to the remote as to the fork."""
    remote = tmp_path / "remote.git"
    triton_pair.fork.git("init", "-q", "--bare", str(remote))
    triton_pair.fork.git("remote", "add", "origin", str(remote))
    rc, out, err = triton_pair.cli("bundle", *triton_pair.args, "--push", "origin", "--json")
    assert rc == 0, err
    built = json.loads(out)
    listing = [line.split("\t") for line in triton_pair.fork.git("ls-remote", str(remote)).splitlines()]
    pushed = {ref: sha for sha, ref in listing}
    for branch in (*built["bundles"], *built["chains"]):
        assert pushed[f"refs/heads/{branch['branch']}"] == branch["head"]
    assert pushed[CHAINS_REF] == triton_pair.fork_refs()[CHAINS_REF]
    assert "refs/heads/main" not in pushed  # nothing but forksync's refs
    # A rerun that changes nothing in the fork still brings a new remote up to date.
    other = tmp_path / "other.git"
    triton_pair.fork.git("init", "-q", "--bare", str(other))
    assert triton_pair.cli("bundle", *triton_pair.args, "--push", str(other))[0] == 0
    assert triton_pair.fork.git("ls-remote", str(other)) == triton_pair.fork.git("ls-remote", str(remote))


def test_chain_closes_when_all_its_commits_are_picked(triton_pair: TritonPair) -> None:
    """Once a chain's branch is merged into the fork trunk, the chain leaves the plan and the record."""
    s = triton_pair.shas
    built = json.loads(triton_pair.cli("bundle", *triton_pair.args, "--json")[1])
    llvm = next(c for c in built["chains"] if c["commits"] == [s["llvm"]])
    record_before = triton_pair.fork.git("show", f"{CHAINS_REF}:chains.json")
    assert llvm["id"] in record_before
    triton_pair.fork.git("merge", "-q", "--no-edit", llvm["branch"])
    plan = plan_json(triton_pair)
    assert all(c["id"] != llvm["id"] for c in plan["chains"])
    assert triton_pair.cli("bundle", *triton_pair.args)[0] == 0
    record_after = triton_pair.fork.git("show", f"{CHAINS_REF}:chains.json")
    assert llvm["id"] not in record_after
    assert f"chain-{s['conflict'][:7]}" in record_after  # the others stay open


def test_recorded_chains_merged_by_a_new_commit_are_recorded_once(triton_pair: TritonPair) -> None:
    """A new upstream commit linking two recorded chains merges them; the record keeps only the older."""
    s = triton_pair.shas
    assert triton_pair.cli("bundle", *triton_pair.args)[0] == 0
    both = triton_pair.upstream.commit(
        "[Coalesce] Vector width follows the new LLVM (#110)",
        {
            COALESCE: triton_pair.upstream.git("show", f"HEAD:{COALESCE}").replace(
                "// capped", "// capped for llvm 19"
            ),
            "cmake/llvm-hash.txt": "cccccccccccc\n",
        },
    )
    assert triton_pair.cli("bundle", *triton_pair.args)[0] == 0
    plan = plan_json(triton_pair)
    merged = next(c for c in plan["chains"] if c["id"] == f"chain-{s['conflict'][:7]}")
    assert merged["commits"] == [s["conflict"], s["dependent"], s["header"], s["llvm"], both]
    record = json.loads(triton_pair.fork.git("show", f"{CHAINS_REF}:chains.json"))
    ids = [c["id"] for c in record["chains"]]
    assert f"chain-{s['llvm'][:7]}" not in ids and f"chain-{s['conflict'][:7]}" in ids
    members = [sha for c in record["chains"] for sha in c["commits"]]
    assert len(members) == len(set(members))  # no commit recorded in two chains


def test_fork_given_as_url_reads_and_writes_through_fetch_and_push(triton_pair: TritonPair) -> None:
    """With --fork as a file:// URL, bundle pushes branches and the record; plan reads the record back."""
    s = triton_pair.shas
    args = ["--upstream", str(triton_pair.upstream.path), "--fork", f"file://{triton_pair.fork.path}"]
    rc, out, err = triton_pair.cli("bundle", *args, "--json")
    assert rc == 0, err
    built = json.loads(out)
    refs = triton_pair.fork_refs()
    assert refs[f"refs/heads/{built['bundles'][0]['branch']}"] == built["bundles"][0]["head"]
    assert CHAINS_REF in refs
    assert triton_pair.cli("chain", *args, s["dependent"], "remove")[0] == 0
    rc, out, err = triton_pair.cli("plan", *args, "--json")
    assert rc == 0, err
    chain = next(c for c in json.loads(out)["chains"] if c["id"] == f"chain-{s['conflict'][:7]}")
    assert s["dependent"] not in chain["commits"]


def test_chain_dissolve_drops_the_record_and_members_are_placed_afresh(triton_pair: TritonPair) -> None:
    """``chain ID dissolve`` removes the chain from the record; an unknown id is a one-line error naming the open ones."""
    s = triton_pair.shas
    assert triton_pair.cli("bundle", *triton_pair.args)[0] == 0
    chain_id = f"chain-{s['llvm'][:7]}"
    rc, out, err = triton_pair.cli("chain", *triton_pair.args, chain_id, "dissolve")
    assert rc == 0, err
    assert out.startswith(f"dissolved {chain_id}: 1 commit(s)")
    record = json.loads(triton_pair.fork.git("show", f"{CHAINS_REF}:chains.json"))
    assert chain_id not in [c["id"] for c in record["chains"]]
    assert chain_id in [
        c["id"] for c in plan_json(triton_pair)["chains"]
    ]  # still risky by itself: the rules re-seed it
    rc, out, err = triton_pair.cli("chain", *triton_pair.args, "chain-nope", "dissolve")
    assert rc != 0 and "there is no open chain 'chain-nope'" in err and len(err.strip().splitlines()) == 1


def test_recorded_chain_heals_when_its_seed_is_carried(triton_pair: TritonPair) -> None:
    """The fork takes the chain's seed by hand: its dependents no longer hold the chain, the plan says so."""
    s = triton_pair.shas
    assert triton_pair.cli("bundle", *triton_pair.args)[0] == 0
    fork = triton_pair.fork
    fork.commit(
        f"[fbtriton] take #102 by hand\n\n(cherry picked from commit {s['conflict']})",
        {COALESCE: triton_pair.upstream.git("show", f"{s['conflict']}:{COALESCE}")},
    )
    rc, out, err = triton_pair.cli("plan", *triton_pair.args)
    assert rc == 0, err
    assert "is carried by the fork now" in out
