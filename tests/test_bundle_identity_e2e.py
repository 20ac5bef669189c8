"""Bundle PRs survive re-cuts, through the loopback GitHub (real git remotes, the real engine, the
PyGithub adapter over HTTP). Upstream adds commits that tie two groups already opened as PRs, so
the merged group is cut again at ``bundle.max_commits``: every PR under review is updated in place
(same number, no close and reopen), the one whose commits now need another bundle is re-targeted
onto it, and a genuinely new part gets a new PR stacked on the part it needs. When members land
out of order and the group shrinks, the bundle left with no successor is closed with a comment
naming the PR that holds its commits now."""

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
LONG = "".join(f"line {n}\n" for n in range(1, 21))
DEV = "Upstream Dev <dev@upstream.example>"


@dataclass
class World:
    gh: LoopbackGitHub
    pair: IngestPair
    env: IngestEnv
    c: dict[str, str]  # "c1" → upstream sha

    def ingest(self) -> IngestReport:
        report = ingest_repository(self.env, FORK)
        assert report.status == "ingested", report.check
        return report

    def pulls(self) -> dict[str, dict[str, Any]]:
        """Every PR (open or closed) by head branch: number, base, state."""
        with self.gh.lock:
            return {
                pr["head"]: {"number": n, "base": pr["base"], "state": self.gh.state.issues[FORK][n]["state"]}
                for n, pr in self.gh.state.pulls[FORK].items()
            }

    def comments(self, number: int) -> list[str]:
        with self.gh.lock:
            return [c["body"] for c in self.gh.state.comments[FORK].values() if c["issue_number"] == number]

    def branch(self, n: str) -> str:
        return f"forksync/bundle/{self.c[n][:7]}"

    def carries(self, branch: str, base: str) -> list[str]:
        """Subjects of the commits ``branch``'s PR shows (those not on ``base``), oldest first."""
        out = Repository(self.gh.bare(FORK)).text("log", "--reverse", "--format=%s", f"{base}..{branch}")
        return out.splitlines()


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
        up = pair.upstream
        three = LONG.replace("line 3\n", "line three\n")
        c = {
            "c1": up.commit("Add long (#201)", {"src/long.py": LONG}, author=DEV),
            "c2": up.commit("Add e (#202)", {"src/e.py": "e = 1\n"}, author=DEV),
            "c3": up.commit("Tweak line 3 (#203)", {"src/long.py": three}, author=DEV),
            "c4": up.commit("Add d (#204)", {"src/d.py": "d = 1\nd2 = 2\n"}, author=DEV),
            "c5": up.commit("Add f (#205)", {"src/f.py": "f = 1\n"}, author=DEV),
        }
        pair.push_upstream()
        env = loopback_ingest_env(gh, pair, tmp_path, installation)
        yield World(gh, pair, env, c)
    finally:
        gh.close()


def _grow(world: World) -> None:
    """Upstream adds c6 (over c3's lines and c4's: it ties the two groups) and c7 (over c6's lines)."""
    up = world.pair.upstream
    three = LONG.replace("line 3\n", "line three\n")
    four = three.replace("line 4\n", "line four\n")
    world.c["c6"] = up.commit(
        "Tweak line 4 and d (#206)", {"src/long.py": four, "src/d.py": "d = 10\nd2 = 2\n"}, author=DEV
    )
    world.c["c7"] = up.commit(
        "Tweak line 5 (#207)", {"src/long.py": four.replace("line 5\n", "line five\n")}, author=DEV
    )
    world.pair.push_upstream()


def test_a_re_cut_group_keeps_its_prs_in_place_and_a_new_part_is_stacked(world: World) -> None:
    """c6 ties [c1 c2 +c3] to [c4 c5]; cut again at 2 the group is [c1 c2] [c3 c4] [c5 c6] [c7]. The
    PRs of c1, c3 and c4 are the same PRs (none closed, none opened again for them): c3's now carries
    c4, c4's carries c5 and c6 and is re-targeted onto c3's branch (c6 needs c3 and c4), saying why;
    only [c7] is new, a PR stacked on c4's branch (c7 needs c6). A rerun changes nothing."""
    world.ingest()
    first = world.pulls()
    b1, b3, b4 = world.branch("c1"), world.branch("c3"), world.branch("c4")
    assert first[b1]["base"] == "main" and first[b3]["base"] == b1 and first[b4]["base"] == "main"
    assert world.carries(b4, "main") == ["Add d (#204)", "Add f (#205)"]

    _grow(world)
    report = world.ingest()
    after = world.pulls()
    b7 = world.branch("c7")
    assert sorted(after) == sorted([*first, b7])  # one new PR, no PR for a re-named part
    assert all(after[b]["number"] == first[b]["number"] and after[b]["state"] == "open" for b in first)
    assert report.closed == []
    assert [p["created"] for p in report.pulls if p["key"] == "bundle-" + world.c["c7"][:7]] == [True]
    assert sum(p["created"] for p in report.pulls) == 1
    assert world.carries(b3, b1) == ["Tweak line 3 (#203)", "Add d (#204)"]
    assert after[b4]["base"] == b3 and world.carries(b4, b3) == ["Add f (#205)", "Tweak line 4 and d (#206)"]
    (note,) = world.comments(after[b4]["number"])
    assert f"re-targeted this PR from `main` to `{b3}`" in note and "Same PR, same branch" in note
    assert after[b7]["base"] == b4 and world.carries(b7, b4) == ["Tweak line 5 (#207)"]
    assert world.comments(after[b1]["number"]) == [] and world.comments(after[b3]["number"]) == []

    again = world.ingest()
    assert world.pulls() == after and again.closed == [] and not any(p["created"] for p in again.pulls)


def test_a_part_left_without_successor_is_closed_naming_where_its_commits_went(world: World) -> None:
    """The fork lands c2 and c5 by hand: the group [c1 c3 c4 c6 c7] is cut [c1 c3] [c4 c6] [c7]. The
    PRs of c1, c3 and c7 stay (c7's re-targeted onto c3's branch, where c6 is now); c4's PR, whose
    commits are c5 (landed) and c6 (now in c3's PR), is closed with a comment saying so, and its
    branch deleted."""
    world.ingest()
    _grow(world)
    world.ingest()
    before = world.pulls()
    b1, b3, b4, b7 = (world.branch(n) for n in ("c1", "c3", "c4", "c7"))
    fork = world.pair.fork
    fork.fetch(world.pair.upstream)
    fork.git("pull", "-q", "--ff-only", str(world.pair.fork_bare), "main")
    fork.cherry_pick(world.c["c2"], x=True)
    fork.cherry_pick(world.c["c5"], x=True)
    world.pair.push_fork()

    report = world.ingest()
    after = world.pulls()
    assert sorted(after) == sorted(before)  # nothing new opened
    assert all(
        after[b]["number"] == before[b]["number"] and after[b]["state"] == "open" for b in (b1, b3, b7)
    )
    assert world.carries(b1, "main") == ["Add long (#201)", "Tweak line 3 (#203)"]
    assert world.carries(b3, b1) == ["Add d (#204)", "Tweak line 4 and d (#206)"]
    assert after[b7]["base"] == b3 and world.carries(b7, b3) == ["Tweak line 5 (#207)"]
    assert after[b4]["state"] == "closed" and world.gh.head(FORK, b4) is None
    assert [c["branch"] for c in report.closed] == [b4]
    closing = world.comments(after[b4]["number"])[-1]  # after the re-target note of the re-cut before
    assert f"Its 2 commit(s) are now: 1 in #{after[b3]['number']} (`{b3}`); 1 landed on the trunk" in closing
    (retarget,) = world.comments(after[b7]["number"])[-1:]
    assert f"re-targeted this PR from `{b4}` to `{b3}`" in retarget
