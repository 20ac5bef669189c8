"""The git funnel: list arguments, output as bytes, failures as domain errors."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.gitrepo import GitRepo
from workers.engine.git import GitError, Repository


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
