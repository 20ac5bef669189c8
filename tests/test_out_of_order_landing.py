"""Out-of-order landing through the loopback GitHub: real git remotes, the real engine, the PyGithub
adapter (``LiveGitHub``) over HTTP. Two bundles and a chain are independent PRs on the trunk; the
second bundle lands first; the next ingest rebuilds the others onto the new trunk in the same PRs
(bases unchanged, no duplicate), says so where it force-pushed over an approval or a running L1,
and re-requests the review. An old PR based on a stale branch is re-targeted, never duplicated."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.ingest import CONFIG, UPSTREAM_URL, IngestPair, build_ingest_pair, loopback_ingest_env
from tests.gitrepo import GitRepo
from tests.loopback_github import LoopbackGitHub
from workers.engine.git import Repository
from workers.jobs.ingestion import IngestEnv, IngestReport, ingest_repository

FORK = "acme/fork"
MAINTAINER = "mona"
L1 = "forksync / L1"


@dataclass
class World:
    gh: LoopbackGitHub
    pair: IngestPair
    env: IngestEnv
    installation: int

    def ingest(self) -> IngestReport:
        report = ingest_repository(self.env, FORK)
        assert report.status == "ingested", report.check
        return report

    def pulls(self) -> dict[str, dict[str, Any]]:
        """Every PR (open or closed) by title: number, head, base, state, merged."""
        with self.gh.lock:
            return {
                self.gh.state.issues[FORK][n]["title"]: {
                    "number": n,
                    "head": pr["head"],
                    "base": pr["base"],
                    "state": self.gh.state.issues[FORK][n]["state"],
                    "merged": pr["merged"],
                }
                for n, pr in self.gh.state.pulls[FORK].items()
            }

    def comments(self, number: int) -> list[str]:
        with self.gh.lock:
            return [c["body"] for c in self.gh.state.comments[FORK].values() if c["issue_number"] == number]

    def requested(self, number: int) -> list[str]:
        with self.gh.lock:
            return list(self.gh.state.pulls[FORK][number].get("requested_reviewers", []))


@pytest.fixture
def world(tmp_path: Path, make_repo: Callable[[str], GitRepo]) -> Iterator[World]:
    gh = LoopbackGitHub(tmp_path / "github").start()
    try:
        gh.add_repo(FORK)
        installation = gh.add_installation([FORK])
        gh.set_permission(FORK, MAINTAINER, "write")
        pair = build_ingest_pair(make_repo, tmp_path, fork_bare=gh.bare(FORK))
        # One commit per bundle: #102 and #104 are two bundles, #103 (a risky path) a chain.
        config = CONFIG.format(url=UPSTREAM_URL).replace("max_commits: 10", "max_commits: 1")
        pair.fork.commit("Fork: small bundles", {".github/forksync.yml": config})
        pair.push_fork()
        env = loopback_ingest_env(gh, pair, tmp_path, installation)
        yield World(gh, pair, env, installation)
    finally:
        gh.close()


B1 = "[Cherry-pick][BUNDLE] Cherry-pick 1 upstream(#102)"
B2 = "[Cherry-pick][BUNDLE] Cherry-pick 1 upstream(#104)"
CH = "[Cherry-pick][CHAIN] Cherry-pick 1 upstream(#103)"


def test_second_bundle_lands_first_and_the_others_are_rebuilt_in_the_same_prs(world: World) -> None:
    first = world.ingest()
    pulls = world.pulls()
    assert sorted(pulls) == sorted([B1, B2, CH])
    assert {p["base"] for p in pulls.values()} == {"main"}  # each on the trunk, landable on its own
    trunk = world.gh.head(FORK, "main")
    fork = Repository(world.gh.bare(FORK))
    for title in (B1, B2, CH):
        head = world.gh.head(FORK, pulls[title]["head"])
        assert fork.text("rev-parse", f"{head}~1") == trunk
    assert first.figures["pending"] == 3 and first.figures["bundles"] == 2
    # A maintainer approves bundle 1; L1 is still running on the chain.
    world.gh.review(FORK, pulls[B1]["number"], MAINTAINER, "APPROVED")
    chain_head = world.gh.head(FORK, pulls[CH]["head"])
    assert chain_head is not None
    world.gh.adapter(world.installation).create_check_run(
        FORK, name=L1, head_sha=chain_head, status="in_progress"
    )
    old_b1 = world.gh.head(FORK, pulls[B1]["head"])

    # Land the SECOND bundle first.
    landed = world.gh.merge(FORK, pulls[B2]["number"])
    second = world.ingest()

    after = world.pulls()
    assert sorted(after) == sorted([B1, B2, CH])  # no duplicate PR
    assert after[B2]["merged"] and after[B1]["state"] == "open" and after[CH]["state"] == "open"
    assert after[B1]["number"] == pulls[B1]["number"] and after[CH]["number"] == pulls[CH]["number"]
    assert after[B1]["base"] == "main" and after[CH]["base"] == "main"  # bases unchanged
    assert [p["created"] for p in second.pulls] == [False, False]
    new_b1 = world.gh.head(FORK, after[B1]["head"])
    assert new_b1 != old_b1 and fork.text("rev-parse", f"{new_b1}~1") == landed  # rebuilt onto the new trunk
    assert fork.text("rev-parse", f"{world.gh.head(FORK, after[CH]['head'])}~1") == landed
    assert world.gh.head(FORK, pulls[B2]["head"]) is None  # the landed bundle's branch is deleted
    # The ledger: #104 is picked; #102 and #103 are holes behind the frontier now, still in flight.
    assert second.figures["picked"] == 2 and second.figures["backlog"] == 2 and second.figures["pending"] == 0

    (note,) = world.comments(after[B1]["number"])
    assert "force-pushed over your approval" in note and f"@{MAINTAINER}" in note
    assert f"`{old_b1[:10]}` → `{new_b1[:10]}`" in note
    assert world.requested(after[B1]["number"]) == [MAINTAINER]  # review re-requested
    (chain_note,) = world.comments(after[CH]["number"])
    assert "L1 was still running on the old head" in chain_note and "over your approval" not in chain_note
    assert world.requested(after[CH]["number"]) == []

    # Nothing moved since: a rerun edits nothing and says nothing more.
    third = world.ingest()
    assert [p["created"] for p in third.pulls] == [False, False] and third.closed == []
    assert len(world.comments(after[B1]["number"])) == 1 and len(world.comments(after[CH]["number"])) == 1

    # Bundle 1 lands too (onto the trunk that already has bundle 2): only the chain remains.
    world.gh.merge(FORK, after[B1]["number"])
    fourth = world.ingest()
    assert fourth.figures["picked"] == 3 and [p["key"] for p in fourth.pulls] == [second.pulls[1]["key"]]
    assert len([p for p in world.pulls().values() if p["state"] == "open"]) == 1


def test_an_old_pr_based_on_a_stale_branch_is_retargeted_not_duplicated(world: World) -> None:
    world.ingest()
    pulls = world.pulls()
    number = pulls[B1]["number"]
    # From the stacked days: bundle 1's PR was based on another bundle's branch.
    stale = world.gh.commit(
        FORK, {"old.txt": "old\n"}, branch="forksync/bundle/0ld0ld0", message="an old bundle"
    )
    assert stale
    with world.gh.lock:
        world.gh.state.pulls[FORK][number]["base"] = "forksync/bundle/0ld0ld0"
    report = world.ingest()
    after = world.pulls()
    assert after[B1]["number"] == number and after[B1]["base"] == "main"  # the same PR, re-targeted
    assert len(after) == 3
    assert number in [p["number"] for p in report.pulls]
    (note,) = world.comments(number)
    assert "re-targeted this PR from `forksync/bundle/0ld0ld0` to `main`" in note
    edits = [r for r in world.gh.requests if r[0] == "PATCH" and r[1].endswith(f"/pulls/{number}")]
    assert edits, "the base was changed with PullRequest.edit (PATCH /pulls/N)"
