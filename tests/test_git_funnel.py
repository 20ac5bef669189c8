"""The git funnel: list arguments, output as bytes, failures as domain errors."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.gitrepo import GitRepo
from workers.engine import git as git_module
from workers.engine.git import GitError, Repository, run_git, start_git


def test_git_returns_stdout_and_resolves_revisions(make_repo: Callable[[str], GitRepo]) -> None:
    """A successful command returns stdout; rev_parse peels to a full commit sha."""
    repo = make_repo("r")
    sha = repo.commit("first", {"a.txt": "a\n"})
    funnel = Repository(repo.path)
    assert funnel.text("rev-parse", "HEAD") == sha
    assert funnel.rev_parse("main") == sha
    assert funnel.rev_parse("no-such-branch") is None


def test_failure_raises_git_error_with_first_stderr_line(make_repo: Callable[[str], GitRepo]) -> None:
    """A failing command raises GitError naming the command and git's message, not a traceback string."""
    repo = make_repo("r")
    repo.commit("first", {"a.txt": "a\n"})
    with pytest.raises(GitError) as info:
        Repository(repo.path).git("show", "does-not-exist")
    assert "git show does-not-exist failed" in str(info.value)
    assert "\n" not in str(info.value)


def test_arguments_are_never_interpreted_by_a_shell(make_repo: Callable[[str], GitRepo]) -> None:
    """Metacharacters in arguments reach git verbatim."""
    repo = make_repo("r")
    repo.commit("subject; rm -rf / $(echo x)", {"a.txt": "a\n"})
    out = Repository(repo.path).text("log", "-1", "--format=%s")
    assert out == "subject; rm -rf / $(echo x)"


def test_stream_yields_lines_while_git_runs_and_feeds_a_long_input(
    make_repo: Callable[[str], GitRepo],
) -> None:
    """stream() gives git's stdout line by line, equal to git()'s; an input longer than a pipe's
    buffer, with an output as long, does not deadlock (the input is fed beside the reading)."""
    repo = make_repo("r")
    sha = repo.commit("first", {"a.txt": "a\n"})
    funnel = Repository(repo.path)
    many = "".join(f"{sha}\n" for _ in range(5000)).encode()  # 205 kB in, as much out
    lines = list(funnel.stream("cat-file", "--batch-check=%(objectname)", input=many))
    assert lines == funnel.git("cat-file", "--batch-check=%(objectname)", input=many).splitlines(
        keepends=True
    )
    assert len(lines) == 5000 and lines[0] == f"{sha}\n".encode()


def test_stream_failure_raises_git_error_at_the_end(make_repo: Callable[[str], GitRepo]) -> None:
    """A failing streamed command raises GitError with git's message once its output is read."""
    repo = make_repo("r")
    repo.commit("first", {"a.txt": "a\n"})
    with pytest.raises(GitError) as info:
        list(Repository(repo.path).stream("log", "does-not-exist", "--"))
    assert "git log does-not-exist" in str(info.value)


def test_start_runs_beside_the_caller_and_refuses_network_verbs(make_repo: Callable[[str], GitRepo]) -> None:
    """start_git returns at once; wait() gives what run_git gives. A remote command is refused
    (it needs run_git's timeout)."""
    repo = make_repo("r")
    sha = repo.commit("first", {"a.txt": "a\n"})
    running = start_git(repo.path, ["rev-parse", "HEAD"])
    assert running.wait() == run_git(repo.path, ["rev-parse", "HEAD"]) == f"{sha}\n".encode()
    with pytest.raises(ValueError):
        start_git(repo.path, ["fetch", "origin"])
    with pytest.raises(GitError):
        start_git(repo.path, ["show", "does-not-exist"]).wait()


def test_feed_writes_as_it_goes_and_abandon_leaves_nothing(make_repo: Callable[[str], GitRepo]) -> None:
    """A fed fast-import takes its stream in pieces and writes it when finished; an abandoned one
    writes no ref; a stream git rejects raises GitError at the end."""
    repo = make_repo("r")
    funnel = Repository(repo.path)

    def commit(ref: str, text: str) -> bytes:
        return (
            f"blob\nmark :1\ndata {len(text)}\n{text}\n"
            f"commit {ref}\ncommitter A <a@example.com> 0 +0000\ndata 2\nm\nM 100644 :1 f.txt\n\n"
        ).encode()

    fed = funnel.feed("fast-import", "--quiet", "--done")
    fed.write(commit("refs/heads/fed", "one"))
    fed.write(b"done\n")
    fed.finish()
    assert funnel.text("show", "fed:f.txt") == "one"

    dropped = funnel.feed("fast-import", "--quiet", "--done")
    dropped.write(commit("refs/heads/dropped", "two"))
    dropped.abandon()
    assert funnel.rev_parse("refs/heads/dropped") is None

    bad = funnel.feed("fast-import", "--quiet", "--done")
    bad.write(b"no such command\n")
    with pytest.raises(GitError):
        bad.finish()


def test_stream_in_blocks_gives_the_same_bytes_and_stops_git_when_left(
    make_repo: Callable[[str], GitRepo],
) -> None:
    """stream(blocks=True) yields git's stdout cut anywhere, the same bytes as git() in order; a
    caller that stops reading early is not left waiting on git (git is stopped), and a failing
    command still raises GitError at the end."""
    repo = make_repo("r")
    sha = repo.commit("first", {"a.txt": "a\n"})
    funnel = Repository(repo.path)
    many = "".join(f"{sha}\n" for _ in range(20000)).encode()  # ~820 kB out: several blocks
    args = ("cat-file", "--batch-check=%(objectname)")
    blocks = list(funnel.stream(*args, input=many, blocks=True))
    assert b"".join(blocks) == funnel.git(*args, input=many)
    assert len(blocks) > 1
    first = funnel.stream(*args, input=many * 5, blocks=True)
    assert next(first).startswith(sha.encode())
    first.close()  # returns once git is stopped (it would otherwise write ~4 MB more)
    with pytest.raises(GitError):
        list(funnel.stream("log", "does-not-exist", "--", blocks=True))


def test_stream_in_blocks_reads_ahead_boundedly_and_ends_cleanly(
    make_repo: Callable[[str], GitRepo], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With room for a single block ahead, a block stream still gives all of git's output, in
    order, and exits 0 when read to the end (git is never stopped then); a caller that stops while
    the reader waits to hand over a block does not hang."""
    monkeypatch.setattr(git_module, "READ_AHEAD_BLOCKS", 1)
    repo = make_repo("r")
    sha = repo.commit("first", {"a.txt": "a\n"})
    funnel = Repository(repo.path)
    many = "".join(f"{sha}\n" for _ in range(60000)).encode()  # ~2.5 MB out: many blocks
    args = ("cat-file", "--batch-check=%(objectname)")
    for _ in range(5):  # a stream read to the end never reports a stopped git
        assert b"".join(funnel.stream(*args, input=many, blocks=True)) == funnel.git(*args, input=many)
    stopped = funnel.stream(*args, input=many, blocks=True)
    next(stopped)
    time.sleep(0.2)  # the reader fills its one slot and waits
    stopped.close()
