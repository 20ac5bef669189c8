"""The conflict miner re-does real backports with git and writes what conflicted in bench_conflicts' layout."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pygit2

from benchmarks.bench_conflicts import run_case
from benchmarks.mine_conflicts import direct_original, keeps_clean_lines, main, mine, originals_of
from tests.gitrepo import GitRepo

BASE = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"


def _history(make_repo: Callable[[str], GitRepo]) -> tuple[GitRepo, dict[str, str]]:
    """main moves on; 1.x backports three fixes: one conflicting, one clean, one with an extra edit."""
    repo = make_repo("project")
    repo.commit("start", {"m.py": BASE, "other.py": "x = 1\n"})
    repo.git("branch", "1.x")
    repo.commit("main: rename the return values", {"m.py": BASE.replace("return 1", "return one()")})
    fix = repo.commit("fix f", {"m.py": BASE.replace("return 1", "return one() + 0")})
    clean = repo.commit(
        "fix g", {"m.py": BASE.replace("return 1", "return one() + 0").replace("return 2", "return 3")}
    )
    extra = repo.commit(
        "fix f again", {"m.py": BASE.replace("return 1", "return one() + 1").replace("return 2", "return 3")}
    )
    repo.git("checkout", "-q", "1.x")
    repo.commit("branch: keep f's old spelling", {"m.py": BASE.replace("return 1", "return 1  # old")})
    resolved = BASE.replace("return 1", "return 1 + 0  # old")
    picked = repo.commit(f"fix f\n\n(cherry picked from commit {fix})", {"m.py": resolved})
    repo.cherry_pick(clean, x=True)
    repo.commit(
        f"fix f again\n\nBackport of {extra} from main",
        {"m.py": resolved.replace("1 + 0", "1 + 1").replace("return 2", "return 3"), "third.py": "y = 1\n"},
    )
    repo.git("checkout", "-q", "main")
    return repo, {"fix": fix, "picked": picked}


def test_mines_the_conflicting_backport_with_the_maintainers_file(
    make_repo: Callable[[str], GitRepo], tmp_path: Path
) -> None:
    """The conflicting pick becomes a case (sides, truth, diff3); clean picks and extra edits are counted, not kept."""
    repo, shas = _history(make_repo)
    out = tmp_path / "set"
    summary = mine(
        str(repo.path / ".git"),
        out,
        name="o/project",
        licence="MIT",
        branches=r"1\.x",
        refs=[],
        max_files=10,
        time_limit=60,
    )
    assert summary["by_status"] == {"conflict": 1, "clean": 1, "extra edits": 1}
    assert summary["cases"] == 1 and summary["conflicted_files"] == 1
    meta = json.loads((out / "case-001" / "meta.json").read_text())
    assert meta["original_sha"] == shas["fix"] and meta["backport_sha"] == shas["picked"]
    assert meta["conflicted_paths"] == ["m.py"]
    assert meta["files"][0]["expected_keeps_all_non_conflicting_lines"] is True
    names = meta["files"][0]["files"]
    assert (out / "case-001" / names["expected"]).read_text() == BASE.replace(
        "return 1", "return 1 + 0  # old"
    )
    assert (out / "case-001" / names["ours"]).read_text() == BASE.replace("return 1", "return 1  # old")
    assert "<<<<<<< ours" in (out / "case-001" / names["conflict_diff3"]).read_text()
    # The mined case is what bench_conflicts reads: it scores without error.
    [result] = run_case(out / "case-001")
    assert result.path == "m.py" and result.baselines["oracle"] is False
    assert json.loads((out / "mined.json").read_text())["visited"] == 3


def test_caps_stop_early_and_the_order_is_fixed(make_repo: Callable[[str], GitRepo], tmp_path: Path) -> None:
    """A zero time budget visits nothing; two runs over the same history write the same set."""
    repo, _ = _history(make_repo)
    gitdir = str(repo.path / ".git")
    assert (
        mine(
            gitdir,
            tmp_path / "none",
            name="o/p",
            licence="MIT",
            branches=r"1\.x",
            refs=[],
            max_files=10,
            time_limit=-1,
        )["visited"]
        == 0
    )
    a = mine(
        gitdir,
        tmp_path / "a",
        name="o/p",
        licence="MIT",
        branches=r"1\.x",
        refs=[],
        max_files=10,
        time_limit=60,
    )
    b = mine(
        gitdir,
        tmp_path / "b",
        name="o/p",
        licence="MIT",
        branches=r"1\.x",
        refs=[],
        max_files=10,
        time_limit=60,
    )
    assert a["by_status"] == b["by_status"]
    assert (tmp_path / "a" / "case-001" / "meta.json").read_text() == (
        tmp_path / "b" / "case-001" / "meta.json"
    ).read_text()


def test_trailers_and_cli_errors(tmp_path: Path) -> None:
    """Both trailer forms are read; several originals are kept apart (the pick is dropped); a non-repo is an error."""
    assert originals_of("x\n\n(cherry picked from commit abcdef1234)\n") == ("abcdef1234",)
    assert originals_of("Backport of 1234567abc from main") == ("1234567abc",)
    assert (
        len(originals_of("(cherry picked from commit aaaaaaa1)\n(cherry picked from commit bbbbbbb2)")) == 2
    )
    assert main([str(tmp_path), "--out", str(tmp_path / "o"), "--name", "o/p"]) == 2


def test_a_pick_of_a_pick_is_replayed_from_its_direct_source(make_repo: Callable[[str], GitRepo]) -> None:
    """Two trailers where the last pick's own message names the first: a chain, its last link is the source."""
    repo, shas = _history(make_repo)
    git = pygit2.Repository(str(repo.path / ".git"))
    assert direct_original(git, (shas["fix"], shas["picked"])) == shas["picked"]
    # Two unrelated originals (a squash of several fixes): no single source.
    other = repo.head("main~1")
    assert direct_original(git, (other, shas["picked"])) is None
    assert direct_original(git, (shas["fix"],)) == shas["fix"]


def test_keeps_clean_lines_tells_block_rewrites_from_edits_elsewhere() -> None:
    """The human's file is the clean merge with the block rewritten, or it also changed a clean line."""
    ours, base, theirs = "a\nB\nc\nd\n", "a\nb\nc\nd\n", "a\nC\nc\nd\n"
    assert keeps_clean_lines(ours, base, theirs, "a\nBC\nmore\nc\nd\n")
    assert not keeps_clean_lines(ours, base, theirs, "a\nBC\nc\nd changed\n")
    assert not keeps_clean_lines(ours, base, theirs, "z\na\nBC\nc\nd\n")
