"""A chain member that edits a file an unlanded bundle adds waits for that bundle, end to end through
the loopback GitHub (real git remotes, the real engine and resolver, the PyGithub adapter): the chain
PR says which upstream commit and which bundle it waits for, instead of dropping the edit."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.ingest import IngestPair, build_ingest_pair, loopback_ingest_env
from tests.gitrepo import GitRepo
from tests.loopback_github import LoopbackGitHub
from workers.engine.git import Repository
from workers.jobs.ingestion import IngestEnv, IngestReport, ingest_repository

FORK = "acme/fork"


@dataclass
class World:
    gh: LoopbackGitHub
    pair: IngestPair
    env: IngestEnv

    def ingest(self) -> IngestReport:
        report = ingest_repository(self.env, FORK)
        assert report.status == "ingested", report.check
        return report

    def pulls(self) -> dict[str, dict[str, Any]]:
        with self.gh.lock:
            return {
                pr["head"]: {"number": n, "base": pr["base"], "body": self.gh.state.issues[FORK][n]["body"]}
                for n, pr in self.gh.state.pulls[FORK].items()
            }

    def issues(self) -> list[dict[str, Any]]:
        with self.gh.lock:
            return [i for n, i in self.gh.state.issues[FORK].items() if n not in self.gh.state.pulls[FORK]]


@contextlib.contextmanager
def _world(
    tmp_path: Path, make_repo: Callable[[str], GitRepo], subject: str, files: dict[str, str]
) -> Iterator[World]:
    """The ingest pair with one more upstream commit, #105 (``subject``, ``files``), on the loopback GitHub."""
    gh = LoopbackGitHub(tmp_path / "github").start()
    try:
        gh.add_repo(FORK)
        installation = gh.add_installation([FORK])
        pair = build_ingest_pair(make_repo, tmp_path, fork_bare=gh.bare(FORK))
        pair.push_fork()
        pair.shas["#105"] = pair.advance_upstream(subject, files)
        env = loopback_ingest_env(gh, pair, tmp_path, installation)
        yield World(gh, pair, env)
    finally:
        gh.close()


@pytest.fixture
def world(tmp_path: Path, make_repo: Callable[[str], GitRepo]) -> Iterator[World]:
    # #105 bumps the LLVM pin again (a risky path: it joins #103's chain) and edits src/c.py, which
    # #104 adds: #104 is in the bundle, not landed, so the fork has no src/c.py yet.
    with _world(
        tmp_path,
        make_repo,
        "Bump LLVM and use it in c (#105)",
        {"cmake/llvm-hash.txt": "0a1b2c\n", "src/c.py": "def c():\n    return 30\n"},
    ) as made:
        yield made


@pytest.fixture
def lines_world(tmp_path: Path, make_repo: Callable[[str], GitRepo]) -> Iterator[World]:
    # #105 joins #103's chain (the LLVM pin) and changes the line of src/b.py that #102, bundled and
    # not landed, changed: on the trunk (b still returns 2) its pick conflicts there.
    with _world(
        tmp_path,
        make_repo,
        "Bump LLVM and tune b (#105)",
        {"cmake/llvm-hash.txt": "0a1b2c\n", "src/b.py": "def b():\n    return 200\n"},
    ) as made:
        yield made


def test_a_chain_member_editing_a_file_an_open_bundle_adds_waits_for_it(world: World) -> None:
    """The chain [#103, #105] builds #103 and stops at #105: its edit of src/c.py is not skipped as a file
    the fork lacks; the chain PR names #104 and its bundle as what it waits for."""
    s = world.pair.shas
    world.ingest()
    pulls = world.pulls()
    bundle = f"forksync/bundle/{s['#102'][:7]}"
    chain = f"forksync/chain/{s['#103'][:7]}"
    assert sorted(pulls) == sorted([bundle, chain])
    fork = Repository(world.gh.bare(FORK))
    # Only #103 is on the chain branch: #105 did not ride along with its src/c.py edit dropped.
    log = fork.text("log", "--format=%B", f"main..{chain}")
    assert s["#103"] in log and s["#105"] not in log
    assert fork.text("ls-tree", "--name-only", chain, "src/") == "src/a.py\nsrc/b.py"
    body = pulls[chain]["body"]
    assert "src/c.py" in body and s["#104"][:10] in body and bundle in body
    assert "fork-lacks-file" not in body and "does not have it" not in body
    # It waits for #104 alone: no human is asked to resolve it, no reproduce command is offered.
    assert f"**Waits at `{s['#105'][:12]}`** for upstream `{s['#104'][:10]}`, not landed yet" in body
    assert "wait for a human" not in body and "git cherry-pick" not in body


def test_once_the_bundle_lands_the_waiting_member_picks(world: World) -> None:
    """The bundle with #104 lands: the next ingest rebuilds the chain on the new trunk, which has
    src/c.py, so #105 picks with its edit and the chain PR no longer waits."""
    s = world.pair.shas
    world.ingest()
    bundle = f"forksync/bundle/{s['#102'][:7]}"
    chain = f"forksync/chain/{s['#103'][:7]}"
    world.gh.merge(FORK, world.pulls()[bundle]["number"])
    world.ingest()
    fork = Repository(world.gh.bare(FORK))
    log = fork.text("log", "--format=%B", f"main..{chain}")
    assert s["#103"] in log and s["#105"] in log
    assert fork.text("show", f"{chain}:src/c.py") == "def c():\n    return 30"
    assert "Stopped at" not in world.pulls()[chain]["body"]


def test_a_chain_member_changing_lines_of_an_open_bundle_waits_for_it_unresolved(lines_world: World) -> None:
    """#105's conflict on the trunk is #102's lines, which its trial pick found on the bundle's tree:
    the plan says the chain comes after #102, the build asks no resolver and the chain PR says it
    waits for #102 and its bundle; once the bundle lands, the rebuilt chain carries #105 cleanly."""
    world, s = lines_world, lines_world.pair.shas
    world.ingest()
    pulls = world.pulls()
    bundle = f"forksync/bundle/{s['#102'][:7]}"
    chain = f"forksync/chain/{s['#103'][:7]}"
    assert sorted(pulls) == sorted([bundle, chain])
    fork = Repository(world.gh.bare(FORK))
    log = fork.text("log", "--format=%B", f"main..{chain}")
    assert s["#103"] in log and s["#105"] not in log
    body = pulls[chain]["body"]
    assert f"**Waits at `{s['#105'][:12]}`** for upstream `{s['#102'][:10]}`, not landed yet" in body
    assert "src/b.py" in body and bundle in body
    assert "Conflict Resolution" not in body and "wait for a human" not in body
    world.gh.merge(FORK, pulls[bundle]["number"])
    world.ingest()
    log = fork.text("log", "--format=%B", f"main..{chain}")
    assert s["#103"] in log and s["#105"] in log
    assert fork.text("show", f"{chain}:src/b.py") == "def b():\n    return 200"
    assert "Waits at" not in world.pulls()[chain]["body"]
