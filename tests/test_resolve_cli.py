"""``forksync merge-file`` (git merge-file's contract, usable as a merge driver) and ``forksync resolve``."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.gitrepo import GitRepo
from workers.cli import main

AGENT = Path(__file__).parent / "data" / "resolve" / "scripted_agent.py"
REPO_ROOT = Path(__file__).resolve().parent.parent
BASE = "import os\n\n\ndef greet(name):\n    return 'hi ' + name\n"
OURS = BASE.replace("name", "who")
THEIRS = BASE.replace("'hi '", "'hello '")
RESOLVED = OURS.replace("'hi '", "'hello '")


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(argv))
        except SystemExit as exc:
            rc = int(exc.code or 0)
    return rc, out.getvalue(), err.getvalue()


def _files(tmp_path: Path, ours: str, base: str, theirs: str) -> list[str]:
    paths = []
    for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
        p = tmp_path / name
        p.write_text(text)
        paths.append(str(p))
    return paths


def test_merge_file_resolves_into_ours_with_exit_0(tmp_path: Path) -> None:
    """Resolved: OURS holds the result, exit 0; --json says which strategy."""
    paths = _files(tmp_path, OURS, BASE, THEIRS)
    rc, out, _ = cli("merge-file", *paths, "--path", "app.py", "--json")
    assert rc == 0 and Path(paths[0]).read_text() == RESOLVED
    doc = json.loads(out)
    assert doc["resolved"] and doc["entry"]["strategy"] == "token-merge" and doc["path"] == "app.py"


def test_merge_file_off_switches_a_rule_off(tmp_path: Path) -> None:
    """--off token-merge: the same files keep git's markers (exit 1); an unknown rule is a usage error."""
    paths = _files(tmp_path, OURS, BASE, THEIRS)
    rc, _, _ = cli("merge-file", *paths, "--path", "app.py", "--off", "token-merge")
    assert rc == 1 and "<<<<<<< ours" in Path(paths[0]).read_text()
    rc, _, err = cli("merge-file", *paths, "--off", "token_merge")
    assert rc == 2 and "token_merge" in err


def test_merge_file_default_rules_off_and_all_rules(tmp_path: Path) -> None:
    """upstream-inserts is off by default (as resolve.rules_off's default); --all-rules switches it back on."""
    base = "def f(a: int):\n    return a\n"
    ours = "def f(a):\n    return a\n"
    theirs = "def g():\n    pass\n\n\ndef f(a: int):\n    return a\n"
    paths = _files(tmp_path, ours, base, theirs)
    rc, _, _ = cli("merge-file", *paths, "--path", "app.py")
    assert rc == 1 and "<<<<<<< ours" in Path(paths[0]).read_text()
    paths = _files(tmp_path, ours, base, theirs)
    rc, out, _ = cli("merge-file", *paths, "--path", "app.py", "--all-rules", "--json")
    assert rc == 0 and json.loads(out)["entry"]["strategy"] == "upstream-inserts"
    assert Path(paths[0]).read_text() == "def g():\n    pass\n\n\ndef f(a):\n    return a\n"


def test_merge_file_leaves_markers_with_exit_1(tmp_path: Path) -> None:
    """A real conflict: git's markers in OURS, exit 1, like git merge-file."""
    paths = _files(tmp_path, "a\nX\nb\n", "a\nx\nb\n", "a\nY\nb\n")
    rc, _, _ = cli("merge-file", *paths)
    assert rc == 1 and "<<<<<<< ours" in Path(paths[0]).read_text()


def test_merge_file_errors_are_one_line_exit_2(tmp_path: Path) -> None:
    """A missing file is one line on stderr with exit 2; OURS is not touched."""
    paths = _files(tmp_path, OURS, BASE, THEIRS)
    rc, _, err = cli("merge-file", paths[0], str(tmp_path / "missing"), paths[2])
    assert rc == 2 and err.count("\n") == 1 and "cannot read BASE" in err
    assert Path(paths[0]).read_text() == OURS


def test_merge_file_works_as_a_git_merge_driver(make_repo: Callable[[str], GitRepo]) -> None:
    """Configured as `driver = forksync merge-file %A %O %B --path %P`, git's own cherry-pick succeeds."""
    repo = make_repo("r")
    repo.commit("base", {"app.py": BASE, ".gitattributes": "*.py merge=forksync\n"})
    repo.git("checkout", "-q", "-b", "fork")
    repo.commit("fork", {"app.py": OURS})
    repo.git("checkout", "-q", "main")
    up = repo.commit("upstream", {"app.py": THEIRS})
    repo.git("checkout", "-q", "fork")
    driver = f"env PYTHONPATH={REPO_ROOT} {sys.executable} -m workers.cli merge-file %A %O %B --path %P"
    repo.git("config", "merge.forksync.driver", driver)
    repo.cherry_pick(up)
    assert (repo.path / "app.py").read_text() == RESOLVED


def _pair(make_repo: Callable[[str], GitRepo], fork_text: str) -> tuple[GitRepo, GitRepo, str]:
    upstream = make_repo("upstream")
    upstream.commit("base", {"app.py": BASE})
    fork = make_repo("fork")
    fork.fetch(upstream)
    fork.git("reset", "-q", "--hard", "refs/remotes/other/main")
    fork.commit("fork change", {"app.py": fork_text})
    up = upstream.commit("upstream change", {"app.py": THEIRS})
    return upstream, fork, up


def test_resolve_proposes_without_touching_the_fork(make_repo: Callable[[str], GitRepo]) -> None:
    """Exit 0 with File/Action/Reason; the fork's branches, HEAD and work tree are unchanged."""
    upstream, fork, up = _pair(make_repo, OURS)
    before = (fork.git("for-each-ref"), fork.git("status", "--porcelain"), fork.head())
    rc, out, err = cli("resolve", "--upstream", str(upstream.path), "--fork", str(fork.path), up)
    assert rc == 0, err
    assert "- File: app.py" in out and "Action: Merged the fork's and upstream's edits word by word" in out
    assert "Strategy: token-merge" in out
    assert (fork.git("for-each-ref"), fork.git("status", "--porcelain"), fork.head()) == before


def test_resolve_json_waits_and_exits_1_on_a_real_conflict(make_repo: Callable[[str], GitRepo]) -> None:
    """A conflict no rule may take: exit 1, the file in `waiting` with its reason."""
    upstream, fork, up = _pair(make_repo, BASE.replace("'hi '", "'hey '"))
    rc, out, _ = cli("resolve", "--upstream", str(upstream.path), "--fork", str(fork.path), up, "--json")
    doc = json.loads(out)
    assert rc == 1 and not doc["resolved"] and [w["path"] for w in doc["waiting"]] == ["app.py"]


def test_resolve_with_a_scripted_agent(
    make_repo: Callable[[str], GitRepo], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--agent CMD takes what is left; the entry names the agent; the rails still apply."""
    monkeypatch.setenv("SCRIPTED_AGENT_MODE", "resolve")
    upstream, fork, up = _pair(make_repo, BASE.replace("'hi '", "'hey '"))
    rc, out, err = cli(
        "resolve",
        "--upstream",
        str(upstream.path),
        "--fork",
        str(fork.path),
        up,
        "--agent",
        f"{sys.executable} {AGENT}",
        "--json",
    )
    assert rc == 0, err
    (entry,) = json.loads(out)["entries"]
    assert entry["strategy"] == "agent:scripted_agent.py" and "-<<<<<<< ours" in entry["resolution_diff"]


def test_resolve_unknown_ref_is_one_line_exit_2(make_repo: Callable[[str], GitRepo]) -> None:
    """A REF that names nothing: one line, exit 2."""
    upstream, fork, _ = _pair(make_repo, OURS)
    rc, _, err = cli("resolve", "--upstream", str(upstream.path), "--fork", str(fork.path), "deadbeef")
    assert rc == 2 and err.count("\n") == 1 and "not a commit" in err


def test_resolve_reads_the_ledger_for_why_the_fork_lacks_a_file(make_repo: Callable[[str], GitRepo]) -> None:
    """The fork carries upstream A (its trailer) without A's new file: B's change to that file is
    skipped as dropped, not left waiting for A. A file whose upstream commit has not landed (C) makes
    D wait for it, never skipped as dropped."""
    upstream = make_repo("upstream")
    upstream.commit("base", {"app.py": BASE, "notes.txt": "n\n"})
    fork = make_repo("fork")
    fork.fetch(upstream)
    fork.git("reset", "-q", "--hard", "refs/remotes/other/main")
    a = upstream.commit("Add gen (#1)", {"gen.py": "x = 1\n", "notes.txt": "n\ngen\n"})
    b = upstream.commit("Tweak gen (#2)", {"gen.py": "x = 2\n"})
    c = upstream.commit("Add extra (#3)", {"extra.py": "y = 1\n"})
    d = upstream.commit("Tweak extra (#4)", {"extra.py": "y = 2\n"})
    fork.commit(f"Add gen (#1), without gen.py\n\n(cherry picked from commit {a})", {"notes.txt": "n\ngen\n"})
    args = ("resolve", "--upstream", str(upstream.path), "--fork", str(fork.path), "--json")
    rc, out, err = cli(*args, b)
    doc = json.loads(out)
    assert rc == 0 and doc["resolved"], (err, doc)
    (entry,) = doc["entries"]
    assert entry["path"] == "gen.py" and a[:10] in entry["reason"] and "carries" in entry["reason"]
    rc, out, _ = cli(*args, d)
    doc = json.loads(out)
    assert rc == 1 and not doc["resolved"] and doc["entries"] == []
    (waiting,) = doc["waiting"]
    assert waiting["path"] == "extra.py" and c[:10] in waiting["reason"] and "not landed" in waiting["reason"]
