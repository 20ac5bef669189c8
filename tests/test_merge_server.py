"""Trial merges asked of long-running ``git merge-tree --stdin`` processes: git's outcome exactly as a
git process of its own gives it, and a merge that a server cannot answer still gets git's outcome."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pygit2
import pytest

import workers.engine.git as git_funnel
import workers.engine.merges as merges
from tests.gitrepo import GitRepo
from tests.test_pick_git import HIST_BASE, HIST_OURS, HIST_THEIRS, fork_and_upstream
from workers.engine.changes import commit_changes
from workers.engine.git import AskedGit, ask_git
from workers.engine.merges import GitMerger
from workers.engine.pick import PickTarget


def _pairs(make_repo: Callable[[str], GitRepo], tag: str = "") -> list[tuple[GitRepo, str, str]]:
    text = "".join(f"line {i}\n" for i in range(30))
    return [
        fork_and_upstream(  # clean: the two edits are far apart
            lambda name: make_repo(f"{name}-clean{tag}"),
            {"a.c": text},
            {"a.c": text.replace("line 2\n", "fork 2\n")},
            {"a.c": text.replace("line 25\n", "up 25\n")},
        ),
        fork_and_upstream(  # git's histogram merge conflicts here
            lambda name: make_repo(f"{name}-conflict{tag}"),
            {"f.c": HIST_BASE},
            {"f.c": HIST_OURS},
            {"f.c": HIST_THEIRS},
        ),
        fork_and_upstream(  # a conflict in a path git would C-quote without -z
            lambda name: make_repo(f"{name}-named{tag}"),
            {"dé jà/\u00e9t\u00e9.c": text, "b.c": text},
            {"dé jà/\u00e9t\u00e9.c": text.replace("line 4\n", "fork 4\n"), "b.c": text + "fork\n"},
            {"dé jà/\u00e9t\u00e9.c": text.replace("line 4\n", "up 4\n"), "b.c": text + "up\n"},
        ),
    ]


def _picks(
    make_repo: Callable[[str], GitRepo], tag: str
) -> list[tuple[tuple[str | None, tuple[str, ...]], GitMerger]]:
    """Each pair's pick (repositories named by ``tag``) through one merger per pair (the proof
    off: every merge is git's)."""
    out = []
    for repo, tip, up in _pairs(make_repo, tag):
        pg = pygit2.Repository(str(repo.path))
        commit = pg.get(tip)
        assert isinstance(commit, pygit2.Commit)
        merger = GitMerger(pg, prove=False)
        target = PickTarget(pg, commit.tree.id, merger)
        result = target.pick(commit_changes(pg, up))
        merger.close()
        out.append((((str(target.tree()) if result.clean else None), result.conflicts), merger))
    return out


def _alone(
    monkeypatch: pytest.MonkeyPatch, make_repo: Callable[[str], GitRepo]
) -> list[tuple[str | None, tuple[str, ...]]]:
    """The same picks with every merge a git process of its own (no server)."""
    with monkeypatch.context() as patched:
        patched.setattr(merges, "_servers_answer", False)
        outcomes = _picks(make_repo, "-alone")
    assert all(m.asked == 0 and m.calls == 1 for _, m in outcomes)
    return [o for o, _ in outcomes]


def test_a_server_answers_each_merge_while_it_runs(make_repo: Callable[[str], GitRepo]) -> None:
    """ask_git: one request, its answer, the next request on the same process; close() ends it."""
    repo, tip, up = _pairs(make_repo)[1]
    asked = ask_git(
        repo.path, ["merge-tree", "--stdin", "--write-tree", "--name-only", "--no-messages", "-z"]
    )
    assert isinstance(asked, AskedGit)
    asked.ask(f"{tip} {up}".encode())
    first = asked.answer(timeout=30)
    assert first is not None and first[0] == b"0" and first[2:] == [b"f.c"]  # conflicted, and where
    asked.ask(f"{tip} {tip}".encode())
    second = asked.answer(timeout=30)
    tree = pygit2.Repository(str(repo.path)).get(tip).tree.id
    assert second == [b"1", str(tree).encode()]  # a commit merged with itself: clean, its own tree
    asked.close()
    assert not asked.alive and asked.answer() is None


def test_server_merges_are_git_s_merges_of_their_own(
    monkeypatch: pytest.MonkeyPatch, make_repo: Callable[[str], GitRepo]
) -> None:
    """Clean, conflicting, and conflicting in a non-ASCII path (named as the tree names it, not
    C-quoted): a server's outcome is the outcome of a git process of its own."""
    alone = _alone(monkeypatch, make_repo)
    served = _picks(make_repo, "-served")
    assert [o for o, _ in served] == alone
    assert all(m.asked == m.calls == 1 for _, m in served)
    assert alone[0][0] is not None and alone[1] == (None, ("f.c",))
    assert alone[2] == (None, ("b.c", "dé jà/\u00e9t\u00e9.c"))


def test_a_server_that_stops_leaves_the_merge_to_a_git_of_its_own(
    make_repo: Callable[[str], GitRepo],
) -> None:
    """A server's git that dies before answering: that merge runs alone, with git's outcome; the
    next merge starts a new server."""
    repo, tip, up = _pairs(make_repo)[1]
    pg = pygit2.Repository(str(repo.path))
    commit = pg.get(tip)
    assert isinstance(commit, pygit2.Commit)
    change = commit_changes(pg, up)
    merger = GitMerger(pg, prove=False)
    PickTarget(pg, commit.tree.id, merger).prefetch(change)
    (server,) = merger._servers
    server.git._proc.kill()  # dies with the merge asked
    result = PickTarget(pg, commit.tree.id, merger).pick(change)
    assert result.conflicts == ("f.c",) and (merger.calls, merger.asked) == (1, 0)
    assert not merger._servers or not merger._servers[0].alive
    again = PickTarget(pg, commit.tree.id, merger).pick(change)  # no cache: git merges it again
    assert again.conflicts == ("f.c",) and (merger.calls, merger.asked) == (2, 1)
    merger.close()
    assert not merger._servers


def test_where_answers_do_not_come_back_merges_run_alone(
    monkeypatch: pytest.MonkeyPatch, make_repo: Callable[[str], GitRepo]
) -> None:
    """A git whose answers wait in its stdout buffer (here: run without ``stdbuf``) fails the
    once-a-process check within its time limit, and every merge runs as before; so does a machine
    without ``stdbuf``."""
    alone = _alone(monkeypatch, make_repo)

    def buffered(cwd: Path | str, args: Sequence[str]) -> AskedGit:
        return AskedGit(git_funnel._popen(args, cwd, stdin=True, stderr=False), args)

    with monkeypatch.context() as patched:
        patched.setattr(merges, "_servers_answer", None)
        patched.setattr(merges, "SERVER_CHECK_S", 0.5)
        patched.setattr(merges, "ask_git", buffered)
        outcomes = _picks(make_repo, "-buffered")
        assert merges._servers_answer is False
    assert [o for o, _ in outcomes] == alone and all(m.asked == 0 for _, m in outcomes)
    with monkeypatch.context() as patched:
        patched.setattr(merges, "_servers_answer", None)
        patched.setattr(git_funnel.shutil, "which", lambda name: None)
        outcomes = _picks(make_repo, "-no-stdbuf")
        assert merges._servers_answer is False
    assert [o for o, _ in outcomes] == alone and all(m.asked == 0 for _, m in outcomes)
