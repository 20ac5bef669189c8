"""``/resolve`` on a pick PR, on real repositories (the fake GitHub stands in only for comments and the PR)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.commands import parse
from tests.fixtures.commands import FakeCommentGitHub, pull_info
from tests.gitrepo import GitRepo
from workers.commands.actions import Services
from workers.commands.gate import MemoryGate
from workers.commands.handler import Answer, CommentTask, handle
from workers.commands.registry import default_actions

UPSTREAM_URL = "https://github.com/up/stream"
AGENT = Path(__file__).parent / "data" / "resolve" / "scripted_agent.py"
BASE = "def greet(name):\n    return 'hi ' + name\n"
BOT = {"GIT_COMMITTER_NAME": "forksync", "GIT_COMMITTER_EMAIL": "forksync@users.noreply.github.com"}
BRANCH = "forksync/pick-upstream"


@dataclass
class World:
    upstream: GitRepo
    fork: GitRepo
    pick: str  # the upstream commit the PR carries
    gh: FakeCommentGitHub

    def branch_head(self) -> str:
        return self.fork.git("rev-parse", BRANCH)

    def say(self, body: str, author: str = "alice") -> Answer:
        cid = self.gh.add(5, body, author)
        services = Services(
            fork_location=lambda repo: str(self.fork.path),
            upstream_location=lambda url: str(self.upstream.path) if url == UPSTREAM_URL else url,
        )
        answer = handle(
            CommentTask(1, "o/fork", 5, cid, author, "User", True, "d"),
            self.gh,
            MemoryGate(),
            default_actions(),
            services,
        )
        assert answer is not None
        return answer


def _world(
    make_repo: Callable[[str], GitRepo], fake_github: FakeCommentGitHub, fork_text: str, config: str = ""
) -> World:
    upstream = make_repo("upstream")
    upstream.commit("base", {"app.py": BASE})
    fork = make_repo("fork")
    fork.fetch(upstream)
    fork.git("reset", "-q", "--hard", "refs/remotes/other/main")
    fork.commit("fork change", {"app.py": fork_text})
    pick = upstream.commit("Say hello (#42)", {"app.py": BASE.replace("'hi '", "'hello '")})
    fork.fetch(upstream)
    # The PR branch: forksync's earlier pick with the conflict left for later (a placeholder commit).
    fork.git("checkout", "-q", "-b", BRANCH)
    fork.write({"CONFLICTS.md": "app.py conflicts\n"})
    fork.git("commit", "-q", "-m", f"Say hello (#42)\n\n(cherry picked from commit {pick})", env=BOT)
    fork.git("checkout", "-q", "main")
    fake_github.config = f"upstream: {{url: {UPSTREAM_URL}}}\ncommands: {{rate_limit: 100}}\n{config}"
    fake_github.pulls[5] = pull_info(
        5, fork.git("rev-parse", BRANCH), BRANCH, "o/fork", "forksync[bot]", "NONE"
    )
    return World(upstream, fork, pick, fake_github)


def test_parse_resolve_forms() -> None:
    """/resolve, /resolve agent, /resolve show FILE; anything else is a usage error."""
    assert [c.args for c in parse("/resolve\n/resolve agent\n/resolve show lib/a.cpp")] == [
        (),
        ("agent",),
        ("show", "lib/a.cpp"),
    ]
    bad = parse("/resolve everything\n/resolve show\n/resolve show ../etc/passwd")
    assert all(c.error for c in bad) and "usage: `/resolve [agent] | /resolve show FILE`" in (
        bad[0].error or ""
    )


def test_resolve_rebuilds_the_bot_branch_with_the_resolution(
    make_repo: Callable[[str], GitRepo], fake_github: FakeCommentGitHub
) -> None:
    """All commits are forksync's: the branch is rebuilt onto trunk with the resolved pick and the trailer."""
    w = _world(make_repo, fake_github, BASE.replace("name", "who"))
    answer = w.say("/resolve")
    assert answer.reactions == ("+1",), answer.body
    assert "resolved 1 file(s) in 1 pick(s)" in answer.body and "- File: app.py" in answer.body
    assert "approval (a review or `/approve`) is still required" in answer.body
    head = w.branch_head()
    assert w.fork.git("show", f"{head}:app.py") == "def greet(who):\n    return 'hello ' + who"
    assert w.fork.git("rev-parse", f"{head}^") == w.fork.git("rev-parse", "main")
    assert f"(cherry picked from commit {w.pick})" in w.fork.message(head)
    assert w.fork.git("log", "-1", "--format=%an|%cn", head) == "Test User|forksync"
    message = w.fork.message(head)
    assert message.rstrip().endswith("Resolved-By: deterministic"), "who resolved it, in the trailers"
    # The dashboard counts resolutions by that trailer: it reads back what was written.
    from workers.jobs.dashboard_feed import classify_pick

    assert classify_pick(message.splitlines()[0], message, 1) == ("single", True, "deterministic")


def test_a_maintainers_commit_is_never_rewritten(
    make_repo: Callable[[str], GitRepo], fake_github: FakeCommentGitHub
) -> None:
    """A human pushed their own resolution: /resolve keeps the branch exactly as it is and says why."""
    w = _world(make_repo, fake_github, BASE.replace("name", "who"))
    w.fork.git("checkout", "-q", BRANCH)
    w.fork.commit("my resolution", {"app.py": "def greet(who):\n    return 'hey ' + who\n"})
    w.fork.git("checkout", "-q", "main")
    before = w.branch_head()
    answer = w.say("/resolve")
    assert "a maintainer's commit" in answer.body and "will not rewrite the branch" in answer.body
    assert w.branch_head() == before


def test_resolve_show_writes_nothing(
    make_repo: Callable[[str], GitRepo], fake_github: FakeCommentGitHub
) -> None:
    """/resolve show FILE answers the file's entry and diffs; the branch does not move."""
    w = _world(make_repo, fake_github, BASE.replace("name", "who"))
    before = w.branch_head()
    answer = w.say("/resolve show app.py\n/resolve show nope.c")
    assert "Action: Merged the fork's and upstream's edits word by word" in answer.body
    assert "Resolution diff:" in answer.body
    assert (
        "`nope.c` does not conflict in this PR's picks" in answer.body
        and "conflicted files: `app.py`" in answer.body
    )
    assert w.branch_head() == before


def test_unresolvable_conflict_waits_and_leaves_the_branch(
    make_repo: Callable[[str], GitRepo], fake_github: FakeCommentGitHub
) -> None:
    """Both sides rewrite the same word: 😕 with the file and what to do; nothing pushed."""
    w = _world(make_repo, fake_github, BASE.replace("'hi '", "'hey '"))
    before = w.branch_head()
    answer = w.say("/resolve")
    assert answer.reactions == ("confused",)
    assert "1 file(s) still need a human" in answer.body and "Waiting for a human:" in answer.body
    assert w.branch_head() == before


def test_resolve_agent_needs_a_configured_agent(
    make_repo: Callable[[str], GitRepo], fake_github: FakeCommentGitHub
) -> None:
    """Without resolve.agent the command says which key to set."""
    w = _world(make_repo, fake_github, BASE.replace("'hi '", "'hey '"))
    answer = w.say("/resolve agent")
    assert "no conflict agent is configured" in answer.body and "resolve.agent.command" in answer.body


def test_resolve_agent_runs_the_configured_agent(
    make_repo: Callable[[str], GitRepo], fake_github: FakeCommentGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With an agent configured, /resolve agent resolves what the rules declined, attributed to the agent."""
    monkeypatch.setenv("SCRIPTED_AGENT_MODE", "resolve")
    config = f"resolve:\n  agent:\n    command: [{sys.executable!r}, {str(AGENT)!r}]\n"
    w = _world(make_repo, fake_github, BASE.replace("'hi '", "'hey '"), config)
    answer = w.say("/resolve agent")
    assert answer.reactions == ("+1",), answer.body
    assert "the agent `scripted_agent.py` (checked by the rails)" in answer.body
    assert w.fork.message(w.branch_head()).rstrip().endswith("Resolved-By: agent")


def test_resolve_on_an_issue_or_a_foreign_branch_is_refused(
    make_repo: Callable[[str], GitRepo], fake_github: FakeCommentGitHub
) -> None:
    """Only forksync's own pick PRs are resolved."""
    w = _world(make_repo, fake_github, BASE.replace("name", "who"))
    fake_github.pulls[5] = pull_info(5, "0" * 40, "feature/x", "o/fork", "bob", "MEMBER")
    assert "is not a forksync pick branch" in w.say("/resolve").body


def _fork_memory(w: World) -> list[str]:
    import pygit2

    from workers.engine.resolve.memory import ResolutionMemory

    return [r.source for r in ResolutionMemory(pygit2.Repository(str(w.fork.path))).records()]


def test_approve_on_a_pick_pr_records_it_and_teaches_the_memory(
    make_repo: Callable[[str], GitRepo], fake_github: FakeCommentGitHub
) -> None:
    """/approve on a pick PR: a marked record at the head, and the maintainer's resolution in the fork's memory."""
    from workers.commands.resolution import resolution_approved

    w = _world(make_repo, fake_github, BASE.replace("'hi '", "'hey '"))
    w.fork.git("checkout", "-q", BRANCH)
    w.fork.commit("resolve by hand", {"app.py": "def greet(name):\n    return 'hey there ' + name\n"})
    w.fork.git("checkout", "-q", "main")
    head = w.branch_head()
    fake_github.pulls[5] = pull_info(5, head, BRANCH, "o/fork", "forksync[bot]", "NONE")
    answer = w.say("/approve")
    assert answer.reactions == ("+1",), answer.body
    assert "approved the resolution" in answer.body and "1 hunk resolution(s) added" in answer.body
    assert resolution_approved(fake_github, "o/fork", 5, head)
    assert not resolution_approved(fake_github, "o/fork", 5, "f" * 40)  # a later push needs a new approval
    assert _fork_memory(w) == ["approved #5 by @alice"]
    # The next /resolve of the same conflict replays the maintainer's answer from the memory.
    w.fork.git("branch", "-f", BRANCH, f"{BRANCH}~1")
    fake_github.pulls[5] = pull_info(5, w.branch_head(), BRANCH, "o/fork", "forksync[bot]", "NONE")
    again = w.say("/resolve")
    assert "resolution memory" in again.body and again.reactions == ("+1",)
    assert w.fork.git("show", f"{BRANCH}:app.py") == "def greet(name):\n    return 'hey there ' + name"


def test_a_merged_pick_teaches_the_memory(
    make_repo: Callable[[str], GitRepo], fake_github: FakeCommentGitHub
) -> None:
    """Squash-merged as `... (#5)` on the trunk: learn_from_merge records its resolution in the fork."""
    from core.config import load_repo_config
    from workers.tasks.resolution import learn_from_merge

    w = _world(make_repo, fake_github, BASE.replace("'hi '", "'hey '"))
    w.fork.git("merge", "-q", "--squash", BRANCH)
    w.fork.git("rm", "-q", "-f", "--", "CONFLICTS.md")
    w.fork.write({"app.py": "def greet(name):\n    return 'hey there ' + name\n"})
    w.fork.git("commit", "-q", "-m", f"Say hello (#42) (#5)\n\n(cherry picked from commit {w.pick})")
    config = load_repo_config(f"upstream: {{url: {UPSTREAM_URL}}}\n")
    assert learn_from_merge(config, str(w.fork.path), str(w.upstream.path), 5) == 1
    assert _fork_memory(w) == ["merged #5"]
    assert learn_from_merge(config, str(w.fork.path), str(w.upstream.path), 5) == 0  # idempotent


def test_resolve_reads_the_ledger_for_why_the_fork_lacks_a_file(
    make_repo: Callable[[str], GitRepo], fake_github: FakeCommentGitHub
) -> None:
    """The trunk carries upstream A (its trailer) without A's new file; the PR's pick changes that
    file: /resolve skips it as dropped (the fork carries A), instead of waiting for A forever."""
    upstream = make_repo("upstream")
    upstream.commit("base", {"app.py": BASE, "notes.txt": "n\n"})
    fork = make_repo("fork")
    fork.fetch(upstream)
    fork.git("reset", "-q", "--hard", "refs/remotes/other/main")
    a = upstream.commit("Add gen (#41)", {"gen.py": "x = 1\n", "notes.txt": "n\ngen\n"})
    pick = upstream.commit("Tweak gen (#42)", {"gen.py": "x = 2\n"})
    fork.commit(
        f"Add gen (#41), without gen.py\n\n(cherry picked from commit {a})", {"notes.txt": "n\ngen\n"}
    )
    fork.fetch(upstream)
    fork.git("checkout", "-q", "-b", BRANCH)
    fork.write({"CONFLICTS.md": "gen.py conflicts\n"})
    fork.git("commit", "-q", "-m", f"Tweak gen (#42)\n\n(cherry picked from commit {pick})", env=BOT)
    fork.git("checkout", "-q", "main")
    fake_github.config = f"upstream: {{url: {UPSTREAM_URL}}}\ncommands: {{rate_limit: 100}}\n"
    fake_github.pulls[5] = pull_info(
        5, fork.git("rev-parse", BRANCH), BRANCH, "o/fork", "forksync[bot]", "NONE"
    )
    w = World(upstream, fork, pick, fake_github)
    answer = w.say("/resolve")
    assert answer.reactions == ("+1",), answer.body
    assert "- File: gen.py" in answer.body and f"carries upstream {a[:10]}" in answer.body
    head = w.branch_head()
    assert w.fork.git("rev-parse", f"{head}^") == w.fork.git("rev-parse", "main")
    assert "gen.py" not in w.fork.git("ls-tree", "--name-only", head)
