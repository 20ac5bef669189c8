"""Stacked bundles through the loopback GitHub: real git remotes, the real engine, the PyGithub
adapter over HTTP. A bundle that dependencies carry past ``bundle.max_commits`` is split into
bounded bundles; a part that needs an earlier one is a PR based on that part's branch, saying why.
When the base lands, the next ingest re-targets the stacked PR to the trunk (same PR) and
rebuilds it; when the base PR is closed unmerged, the stacked one is rebuilt on the trunk without
it, with a comment saying why, and nothing is reopened or duplicated. A stacked PR's ``forksync / L1``
check waits ("lands after #N ...", action_required) until it is re-targeted to the trunk; a stacked
PR merged early anyway (into its base's branch) is noticed by the next ingest, which says so."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from core.store import open_store
from tests.fixtures.ingest import CONFIG, UPSTREAM_URL, IngestPair, build_ingest_pair, loopback_ingest_env
from tests.gitrepo import GitRepo
from tests.loopback_github import LoopbackGitHub
from workers.adapters.gitcache import GitCache
from workers.engine.git import Repository
from workers.jobs.ingestion import IngestEnv, IngestReport, ingest_repository
from workers.jobs.l1_job import L1Job, L1JobResult, run_l1_job

FORK = "acme/fork"
LONG = "".join(f"line {n}\n" for n in range(1, 21))


@dataclass
class World:
    gh: LoopbackGitHub
    pair: IngestPair
    env: IngestEnv
    c: dict[str, str]  # "c1" → upstream sha
    installation: int

    def ingest(self) -> IngestReport:
        report = ingest_repository(self.env, FORK)
        assert report.status == "ingested", report.check
        return report

    def pulls(self) -> dict[str, dict[str, Any]]:
        """Every PR (open or closed) by head branch: number, base, state, merged, body."""
        with self.gh.lock:
            return {
                pr["head"]: {
                    "number": n,
                    "base": pr["base"],
                    "state": self.gh.state.issues[FORK][n]["state"],
                    "merged": pr["merged"],
                    "body": self.gh.state.issues[FORK][n]["body"],
                }
                for n, pr in self.gh.state.pulls[FORK].items()
            }

    def comments(self, number: int) -> list[str]:
        with self.gh.lock:
            return [c["body"] for c in self.gh.state.comments[FORK].values() if c["issue_number"] == number]

    def branch(self, n: str) -> str:
        return f"forksync/bundle/{self.c[n][:7]}"

    def parent(self, head_branch: str, commits: int) -> str:
        """What the branch's ``commits`` own commits are built on."""
        head = self.gh.head(FORK, head_branch)
        assert head is not None
        return Repository(self.gh.bare(FORK)).text("rev-parse", f"{head}~{commits}")


@pytest.fixture
def world(tmp_path: Path, make_repo: Callable[[str], GitRepo]) -> Iterator[World]:
    gh = LoopbackGitHub(tmp_path / "github").start()
    try:
        gh.add_repo(FORK)
        installation = gh.add_installation([FORK])
        pair = build_ingest_pair(make_repo, tmp_path, fork_bare=gh.bare(FORK))
        config = CONFIG.format(url=UPSTREAM_URL).replace("max_commits: 10", "max_commits: 2")
        pair.fork.commit("Fork: bundles of two", {".github/forksync.yml": config})
        pair.push_fork()
        dev = "Upstream Dev <dev@upstream.example>"
        up = pair.upstream
        c = {
            "c1": up.commit("Add long (#201)", {"src/long.py": LONG}, author=dev),
            "c2": up.commit("Add e (#202)", {"src/e.py": "e = 1\n"}, author=dev),
            "c3": up.commit(
                "Tweak line 3 (#203)", {"src/long.py": LONG.replace("line 3\n", "line three\n")}, author=dev
            ),
            "c4": up.commit("Add d (#204)", {"src/d.py": "d = 1\nd2 = 2\n"}, author=dev),
        }
        c["c6"] = up.commit(
            "Tweak line 4 and d (#206)",
            {
                "src/long.py": LONG.replace("line 3\n", "line three\n").replace("line 4\n", "line four\n"),
                "src/d.py": "d = 10\nd2 = 2\n",
            },
            author=dev,
        )
        pair.push_upstream()
        env = loopback_ingest_env(gh, pair, tmp_path, installation)
        yield World(gh, pair, env, c, installation)
    finally:
        gh.close()


def _first_ingest(world: World) -> dict[str, dict[str, Any]]:
    """The group [c1 c2 c3 c4 c6] (c3 needs c1's lines, c6 needs c3's and c4's) is split at 2."""
    world.ingest()
    pulls = world.pulls()
    p0, p1, p2 = world.branch("c1"), world.branch("c3"), world.branch("c6")
    other = f"forksync/bundle/{world.pair.shas['#102'][:7]}"
    assert sorted(pulls) == sorted([other, p0, p1, p2, "forksync/chain/" + world.pair.shas["#103"][:7]])
    assert pulls[other]["base"] == "main" and pulls[p0]["base"] == "main"  # independent: on the trunk
    assert pulls[p1]["base"] == p0 and pulls[p2]["base"] == p1  # stacked on the part each needs
    # Built on the base bundle's head, so each PR shows only its own commits.
    assert world.parent(p1, 2) == world.gh.head(FORK, p0) and world.parent(p2, 1) == world.gh.head(FORK, p1)
    body = pulls[p1]["body"]
    assert f"**Stacked on #{pulls[p0]['number']}** (`{p0}`, 2 commits it needs); lands after it" in body
    assert f"of src/long.py last changed by {world.c['c1'][:7]} of bundle-{world.c['c1'][:7]}" in body
    assert "Why stacked** (1)" in body and "<!-- forksync:stack-base -->" not in body
    assert f"**Stacked on #{pulls[p1]['number']}** (`{p1}`, 4 commits it needs)" in pulls[p2]["body"]
    assert "Stacked on" not in pulls[p0]["body"] and "lands on its own" in pulls[p0]["body"]
    return pulls


def test_a_group_past_the_bound_becomes_stacked_prs_and_the_base_landing_retargets_the_next(
    world: World,
) -> None:
    """Split at the bound, stacked bases and bodies; a rerun changes nothing; when the base lands the
    stacked PR is re-targeted to the trunk (same PR, PullRequest.edit) and rebuilt onto it, and the
    one stacked on it stays stacked, rebuilt too; nothing is duplicated."""
    pulls = _first_ingest(world)
    p0, p1, p2 = world.branch("c1"), world.branch("c3"), world.branch("c6")
    again = world.ingest()
    assert [p["created"] for p in again.pulls] == [False] * 5 and again.closed == []
    assert world.pulls() == pulls and all(world.comments(p["number"]) == [] for p in pulls.values())

    landed = world.gh.merge(FORK, pulls[p0]["number"])
    world.ingest()
    after = world.pulls()
    assert sorted(after) == sorted(pulls)  # no new PR
    assert after[p0]["merged"] and after[p1]["state"] == "open" and after[p2]["state"] == "open"
    assert after[p1]["number"] == pulls[p1]["number"] and after[p1]["base"] == "main"  # re-targeted
    assert world.parent(p1, 2) == landed  # rebuilt onto the new trunk
    assert after[p2]["base"] == p1 and world.parent(p2, 1) == world.gh.head(FORK, p1)  # still stacked
    (note,) = world.comments(after[p1]["number"])
    assert f"re-targeted this PR from `{p0}` to `main`" in note and "no longer open" in note
    edits = [
        r for r in world.gh.requests if r[0] == "PATCH" and r[1].endswith(f"/pulls/{pulls[p1]['number']}")
    ]
    assert edits, "the base was changed with PullRequest.edit (PATCH /pulls/N)"
    assert "Stacked on" not in after[p1]["body"] and "lands on its own" in after[p1]["body"]
    assert world.gh.head(FORK, p0) is None  # the landed bundle's branch is deleted

    # The next stacked PR lands once its base has: the stack unwinds the same way.
    world.gh.merge(FORK, after[p1]["number"])
    world.ingest()
    last = world.pulls()
    assert last[p2]["number"] == pulls[p2]["number"] and last[p2]["base"] == "main"
    assert world.parent(p2, 1) == world.gh.head(FORK, "main")


def test_a_base_closed_unmerged_leaves_the_stacked_pr_rebuilt_on_the_trunk_without_it(world: World) -> None:
    """The base PR closed unmerged: the stacked PR is re-targeted to the trunk and rebuilt without
    the commits that need the base (they stay with it, listed, with a comment saying why); a stacked
    PR all of whose commits need it is closed saying so; the closed PR is never reopened or opened
    again, and a rerun changes nothing."""
    pulls = _first_ingest(world)
    p0, p1, p2 = world.branch("c1"), world.branch("c3"), world.branch("c6")
    world.gh.adapter(world.installation).close_pull_request(FORK, pulls[p0]["number"])  # a maintainer
    closed_head = world.gh.head(FORK, p0)
    report = world.ingest()
    after = world.pulls()
    assert sorted(after) == sorted(pulls)  # no PR opened again for the declined bundle, none duplicated
    assert after[p0]["state"] == "closed" and not after[p0]["merged"]
    assert world.gh.head(FORK, p0) == closed_head  # its branch is kept as closed: reopening takes it back
    assert after[p1]["number"] == pulls[p1]["number"] and after[p1]["base"] == "main"
    trunk = world.gh.head(FORK, "main")
    assert world.parent(p1, 1) == trunk  # one commit (c4) on the trunk: c3 needs c1 and left
    fork = Repository(world.gh.bare(FORK))
    assert fork.text("log", "--format=%s", f"{trunk}..{world.gh.head(FORK, p1)}") == "Add d (#204)"
    (note,) = world.comments(after[p1]["number"])
    assert f"#{pulls[p0]['number']} (`{p0}`), a bundle it was stacked on, was closed unmerged" in note
    assert "1 commit(s) of this PR need it" in note
    assert f"Was stacked on `{p0}`, whose PR was closed unmerged" in after[p1]["body"]
    assert "moved there: its PR was closed unmerged" in after[p1]["body"]
    # c6 needs c3 (and c1): it stays with them, and its stacked PR is closed saying why.
    assert after[p2]["state"] == "closed" and world.gh.head(FORK, p2) is None
    assert any(c["branch"] == p2 for c in report.closed)
    (closing,) = world.comments(after[p2]["number"])
    assert f"every commit of this PR needs #{pulls[p0]['number']} (`{p0}`)" in closing

    rerun = world.ingest()
    assert world.pulls() == after and rerun.closed == []
    assert all(not p["created"] for p in rerun.pulls)


def test_a_stacked_body_says_why_even_when_no_member_names_a_need() -> None:
    """A part stacked in line (its group's needs cross) says so instead of pointing at an empty
    table; one with needs lists them; an independent one says it lands on its own."""
    from core.render.ingest import STACK_REF, BundleView, CommitRow, bundle_body

    row = CommitRow("a" * 40, "Tweak (#1)", "dev")
    view = BundleView("bundle-aaaaaaa", "forksync/bundle/aaaaaaa", "forksync/bundle/bbbbbbb", (row,), "p")
    stacked = BundleView(**{**view.__dict__, "stacked_on": "bundle-bbbbbbb", "stack_commits": 3})
    text = bundle_body(stacked, None)
    assert f"**Stacked on {STACK_REF}** (`forksync/bundle/bbbbbbb`, 3 commits it needs)" in text
    assert "stacked in line" in text and "Why stacked" not in text
    needing = BundleView(
        **{**stacked.__dict__, "needs": (CommitRow("a" * 40, "Tweak (#1)", "dev", note="line: x"),)}
    )
    assert "Why stacked** (1)" in bundle_body(needing, None) and "stacked in line" not in bundle_body(
        needing, None
    )
    alone = BundleView(**{**view.__dict__, "base_branch": "main"})
    assert "lands on its own" in bundle_body(alone, None) and "Stacked" not in bundle_body(alone, None)


# ---- L1 waits on a stacked PR; a stacked PR merged before its base


def _l1(w: World, tmp_path: Path, branch: str) -> tuple[L1JobResult, dict[str, Any]]:
    """Run the L1 job on the head of ``branch``'s PR as a worker would (no suites configured); the
    result and the ``forksync / L1`` check run on that head."""
    head = w.gh.head(FORK, branch)
    assert head is not None
    result = run_l1_job(
        w.gh.adapter(w.installation),
        GitCache(tmp_path / "l1-git"),
        tmp_path / "l1-data",
        L1Job(FORK, head, pr_number=w.pulls()[branch]["number"]),
        clone_url=w.gh.git_url(FORK),
        token=w.gh.token_for(w.installation),
        store=open_store(None, tmp_path / "l1-data"),
    )
    with w.gh.lock:
        (check,) = [
            r
            for r in w.gh.state.check_runs[FORK].values()
            if r["name"] == "forksync / L1" and r["head_sha"] == head
        ]
        return result, dict(check)


def test_l1_on_a_stacked_pr_waits_for_its_base_then_runs_once_retargeted(
    world: World, tmp_path: Path
) -> None:
    """The stacked PR's check says it lands after its base (action_required: nothing ran); the base PR,
    on the trunk, runs L1; once the base lands and the stacked PR is re-targeted, its L1 runs."""
    pulls = _first_ingest(world)
    p0, p1, p2 = world.branch("c1"), world.branch("c3"), world.branch("c6")
    n0, n1 = pulls[p0]["number"], pulls[p1]["number"]
    result, check = _l1(world, tmp_path, p1)
    assert result.status == "stacked" and check["status"] == "completed"
    assert check["conclusion"] == "action_required"
    title = check["output"]["title"]
    assert (
        title == f"Waiting: lands after #{n0} (base branch {p0}); re-targeted to the trunk when #{n0} lands"
    )
    assert "Nothing ran on this head" in check["output"]["summary"]
    base_result, base_check = _l1(world, tmp_path, p0)
    assert base_result.status == "done" and base_check["conclusion"] != "action_required"

    world.gh.merge(FORK, n0)
    world.ingest()
    assert world.pulls()[p1]["base"] == "main"
    after, after_check = _l1(world, tmp_path, p1)
    assert after.status == "done" and after_check["conclusion"] != "action_required"
    assert "Waiting" not in after_check["output"]["title"]
    # The one stacked on it still waits, now on it.
    _, waiting = _l1(world, tmp_path, p2)
    assert (
        waiting["conclusion"] == "action_required"
        and f"lands after #{n1} (base branch {p1})" in waiting["output"]["title"]
    )


def test_a_stacked_pr_merged_early_is_noticed_by_the_next_ingest(world: World) -> None:
    """Merged before its base, the stacked PR went into its base's branch, not the trunk. The next
    ingest says so on it and on the base PR, rebuilds the base's branch with its own commits, and
    opens the stacked commits again (same branch, stacked on the base); a rerun says nothing more."""
    pulls = _first_ingest(world)
    p0, p1, p2 = world.branch("c1"), world.branch("c3"), world.branch("c6")
    n0, n1 = pulls[p0]["number"], pulls[p1]["number"]
    world.gh.merge(FORK, n1)  # GitHub merges it into p0's branch: its base
    world.ingest()
    after = world.pulls()
    reopened = after[p1]
    assert reopened["number"] != n1 and reopened["state"] == "open" and reopened["base"] == p0
    (note,) = world.comments(n1)
    assert (
        f"This PR was merged into `{p0}`, the branch of the bundle it is stacked on (#{n0}), not into `main`"
        in note
    )
    assert f"opened these again in a new PR from `{p1}` (#{reopened['number']}), stacked on #{n0}" in note
    (base_note,) = world.comments(n0)
    assert f"#{n1} (`{p1}`, stacked on this PR) was merged into `{p0}` before this PR landed" in base_note
    assert f"new PR (#{reopened['number']})" in base_note
    fork = Repository(world.gh.bare(FORK))
    assert world.c["c3"] not in fork.text("log", "--format=%B", "main")  # nothing reached the trunk
    assert world.c["c3"] not in fork.text("log", "--format=%B", f"main..{p0}")  # p0 holds its own commits
    assert world.c["c3"] in fork.text("log", "--format=%B", f"{p0}..{p1}")
    assert f"**Stacked on #{reopened['number']}**" in after[p2]["body"]  # the next one names the new PR

    again = world.ingest()
    assert [p["created"] for p in again.pulls] == [False] * len(again.pulls)
    assert len(world.comments(n1)) == 1 and len(world.comments(n0)) == 1
