"""Heads-up before a risky landing: ready PRs touching owned areas ask their owners to review."""

from __future__ import annotations

from core.dashboard.feed import InFlight
from tests.loopback_github import LoopbackGitHub
from workers.jobs.heads_up import execute, plan

OWNERS = {"cmake/llvm-hash.txt": ("llvm-owner",), "lib/Dialect/": ("acme/layout", "alice")}
COMMITS = {
    "b1": [
        {"sha": "a" * 40, "subject": "Bump LLVM", "pr": 8101, "paths": ["cmake/llvm-hash.txt"]},
        {"sha": "b" * 40, "subject": "Layouts", "pr": 8102, "paths": ["lib/Dialect/x.cpp"]},
        {"sha": "c" * 40, "subject": "Docs", "pr": 8103, "paths": ["README.md"]},
    ]
}


def _item(
    l1: str = "success",
    key: str = "b1",
    number: int = 2,
    kind: str = "bundle",
    pull: bool = True,
    conflicts: tuple[str, ...] = (),
) -> InFlight:
    return InFlight(kind, key, kind, number, None, 3, 0.0, l1=l1, pull=pull, conflicts=conflicts)


def test_a_ready_pr_touching_owned_areas_asks_those_owners() -> None:
    (action,) = plan([_item()], COMMITS, OWNERS, upstream_url="https://github.com/up/triton")
    assert action.number == 2 and action.users == ("llvm-owner", "alice") and action.teams == ("layout",)
    body = action.body
    assert "### `cmake/llvm-hash.txt`" in body and "[#8101](https://github.com/up/triton/pull/8101)" in body
    assert "Docs" not in body  # not in an owned area
    assert body.count("@alice") == 1


def test_no_heads_up_before_l1_passes_or_outside_owned_areas_or_for_chain_issues() -> None:
    assert plan([_item("pending"), _item("failure")], COMMITS, OWNERS) == []
    assert plan([_item(kind="chain", pull=False)], COMMITS, OWNERS) == []  # a chain issue: nothing to merge
    assert (
        plan([_item(kind="chain", conflicts=("lib/Dialect/x.cpp",))], COMMITS, OWNERS) == []
    )  # not built through
    assert plan([_item()], {"b1": COMMITS["b1"][2:]}, OWNERS) == []
    assert plan([_item()], COMMITS, {}) == []  # no owners at all


def test_a_ready_chain_pr_asks_the_owners_of_its_areas_too() -> None:
    """A chain built to its end as a PR (conflicts resolved) whose L1 passed gets the same heads-up,
    saying it is a chain whose conflicts were resolved; only the owners of areas it touches."""
    chain = {"c1": [COMMITS["b1"][1], COMMITS["b1"][2]]}
    (action,) = plan(
        [_item(kind="chain", key="c1", number=7)], chain, OWNERS, upstream_url="https://github.com/up/triton"
    )
    assert action.number == 7 and action.users == ("alice",) and action.teams == ("layout",)
    assert "this chain is built to its end (its conflicts resolved)" in action.body
    assert (
        "### `lib/Dialect/`" in action.body and "llvm-hash" not in action.body and "Docs" not in action.body
    )


def test_heads_up_on_github_requests_review_once_and_edits_its_comment(
    loopback_github: LoopbackGitHub,
) -> None:
    gh = loopback_github
    gh.set_permission("acme/fork", "llvm-owner", "write")
    gh.set_permission("acme/fork", "alice", "write")
    gh.commit("acme/fork", {"x.txt": "x\n"}, branch="forksync/bundle/b1")
    number = gh.add_pull("acme/fork", "forksync/bundle/b1")
    port = gh.adapter(gh.installation)
    actions = plan([_item(number=number)], COMMITS, OWNERS)
    assert execute(port, "acme/fork", actions) == 1
    assert execute(port, "acme/fork", actions) == 0  # same comment, no second request
    pr = gh.state.pulls["acme/fork"][number]
    assert pr["requested_reviewers"] == ["alice", "llvm-owner"] and pr["requested_teams"] == ["layout"]
    comments = [c for c in gh.state.comments["acme/fork"].values() if c["issue_number"] == number]
    assert len(comments) == 1 and "Heads-up before this lands" in comments[0]["body"]
    posts = [r for r in gh.requests if r[0] == "POST" and r[1].endswith("/requested_reviewers")]
    assert posts == [("POST", f"/repos/acme/fork/pulls/{number}/requested_reviewers", 201)]


def test_a_refused_review_request_still_leaves_the_comment(loopback_github: LoopbackGitHub) -> None:
    gh = loopback_github
    gh.commit("acme/fork", {"x.txt": "x\n"}, branch="forksync/bundle/b1")
    number = gh.add_pull("acme/fork", "forksync/bundle/b1")
    actions = plan([_item(number=number)], COMMITS, {"cmake/llvm-hash.txt": ("stranger",)})
    assert execute(gh.adapter(gh.installation), "acme/fork", actions) == 1
    assert ("POST", f"/repos/acme/fork/pulls/{number}/requested_reviewers", 422) in gh.requests
    assert any("@stranger" in c["body"] for c in gh.state.comments["acme/fork"].values())


def test_the_feed_refresh_gives_a_ready_chain_pr_its_heads_up(
    tmp_path, loopback_github: LoopbackGitHub
) -> None:  # type: ignore[no-untyped-def]
    """Through the feed refresh on the loopback GitHub: a chain PR built to its end whose L1 check
    passed gets the comment and the review request from the owner of its area; a chain PR still
    stopped at a conflict (same area, L1 green on its partial build) gets nothing."""
    from core.dashboard.store import SqlFeedStore
    from core.settings import WorkerSettings
    from workers.adapters.state import open_state
    from workers.tasks.ingest import refresh_feed

    gh = loopback_github
    gh.commit("acme/fork", {".github/forksync.yml": "owners:\n  lib/Dialect/: [alice]\n"})
    gh.set_permission("acme/fork", "alice", "write")
    port = gh.adapter(gh.installation)
    items = []
    for key, conflicts in (("c1", []), ("c2", ["lib/Dialect/y.cpp"])):
        head = gh.commit("acme/fork", {f"{key}.txt": "x\n"}, branch=f"forksync/chain/{key}")
        number = gh.add_pull("acme/fork", f"forksync/chain/{key}")
        port.create_check_run(
            "acme/fork", name="forksync / L1", head_sha=head, status="completed", conclusion="success"
        )
        items.append(
            {
                "kind": "chain",
                "key": key,
                "title": f"chain {key}",
                "number": number,
                "url": None,
                "size": 1,
                "conflicts": conflicts,
                "pull": True,
                "head_sha": head,
                "commits": [
                    {"sha": "d" * 40, "subject": "Layouts", "pr": 8104, "paths": ["lib/Dialect/x.cpp"]}
                ],
            }
        )
    settings = WorkerSettings.from_mapping({**gh.settings(), "FORKSYNC_DATA_DIR": str(tmp_path)})
    SqlFeedStore(None, tmp_path).put_facts("acme/fork", {"private": False, "in_flight": items})
    refresh_feed(settings, open_state(settings), gh.app(), gh.installation, "acme/fork")
    ready, stopped = (int(i["number"]) for i in items)
    said = [c for c in gh.state.comments["acme/fork"].values() if c["issue_number"] == ready]
    assert len(said) == 1 and "this chain is built to its end (its conflicts resolved)" in said[0]["body"]
    assert "### `lib/Dialect/`" in said[0]["body"]
    assert gh.state.pulls["acme/fork"][ready]["requested_reviewers"] == ["alice"]
    assert not [c for c in gh.state.comments["acme/fork"].values() if c["issue_number"] == stopped]
    assert not gh.state.pulls["acme/fork"][stopped].get("requested_reviewers")
