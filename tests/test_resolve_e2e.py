"""/resolve end to end: a signed webhook into the web app, the real comment task, the loopback GitHub
over HTTP and real git remotes: the pick PR's branch is rebuilt with the resolution, shown, approved,
and the approval teaches the fork's resolution memory."""

from __future__ import annotations

import pytest

from tests.fixtures.commands import FORK, CommandWorld

BOT = {"GIT_COMMITTER_NAME": "forksync", "GIT_COMMITTER_EMAIL": "forksync@users.noreply.github.com"}
BRANCH = "forksync/pick-102"


def _git(w: CommandWorld, *args: str) -> str:
    from workers.engine.git import Repository

    return Repository(w.gh.bare(FORK)).text(*args)


@pytest.fixture
def pick_pr(command_world: CommandWorld) -> int:
    """The fork changed b()'s signature; upstream #102 changes its body on the next line (git conflicts)."""
    w = command_world
    w.pair.fork.commit("Fork: b takes x", {"src/b.py": "def b(x):\n    return 2\n"})
    w.pair.push_fork()
    sha = w.pair.shas["#102"]
    w.pair.fork.git("checkout", "-q", "-b", BRANCH)
    w.pair.fork.write({"CONFLICTS.md": "src/b.py conflicts\n"})
    w.pair.fork.git("commit", "-q", "-m", f"Improve b (#102)\n\n(cherry picked from commit {sha})", env=BOT)
    w.pair.fork.git("push", "-q", str(w.gh.bare(FORK)), f"{BRANCH}:{BRANCH}")
    w.pair.fork.git("checkout", "-q", "main")
    return int(
        w.gh.add_pull(
            FORK,
            BRANCH,
            title="[Cherry-pick][CONFLICTS] 'Improve b (#102)'",
            author="forksync[bot]",
            author_association="NONE",
        )
    )


def test_resolve_show_and_approve_through_the_loopback(command_world: CommandWorld, pick_pr: int) -> None:
    """/resolve rebuilds the branch (👍), /resolve show answers one file, /approve records and teaches memory."""
    w = command_world
    cid = w.say("/resolve", issue=pick_pr)
    assert w.reactions(cid) == ["eyes", "+1"], w.reply(cid)
    body = w.reply(cid)
    assert "resolved 1 file(s) in 1 pick(s)" in body and "- File: src/b.py" in body
    assert _git(w, "show", f"{BRANCH}:src/b.py") == "def b(x):\n    return 20"
    assert _git(w, "rev-parse", f"{BRANCH}^") == _git(w, "rev-parse", "main")
    assert f"(cherry picked from commit {w.pair.shas['#102']})" in _git(w, "log", "-1", "--format=%B", BRANCH)
    with w.gh.lock:
        pr = dict(w.gh.state.issues[FORK][pick_pr])
    assert pr["title"] == "[Cherry-pick][RESOLVED] 'Improve b (#102)'"
    assert "Conflict Resolution:\n- File: src/b.py" in pr["body"] and "<details>" in pr["body"]

    shown = w.say("/resolve show src/b.py", issue=pick_pr)
    assert "Merged the fork's and upstream's edits word by word" in w.reply(
        shown
    ) and "Raw conflict" in w.reply(shown)

    approved = w.say("/approve", issue=pick_pr)
    assert w.reactions(approved) == ["eyes", "+1"], w.reply(approved)
    assert "approved the resolution" in w.reply(approved)
    assert _git(w, "rev-parse", "--verify", "refs/forksync/resolutions")


def test_reader_cannot_resolve(command_world: CommandWorld, pick_pr: int) -> None:
    """Without write permission the command is denied and the branch does not move."""
    w = command_world
    before = _git(w, "rev-parse", BRANCH)
    cid = w.say("/resolve", author="reader", issue=pick_pr)
    assert w.reactions(cid) == ["eyes", "confused"]
    assert _git(w, "rev-parse", BRANCH) == before
