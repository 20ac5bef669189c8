"""The demo's pieces, fast (the whole demo runs in the slow tests/test_demo_loop.py): how it reads
forksync's own texts back as plain terminal lines, and the simulated GitHub the comment commands use."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from core.github.errors import GitHubNotFoundError
from core.render import commands as render_commands
from core.render.resolution import member_section
from workers.demo.github import BOT_LOGIN, DemoGitHub
from workers.demo.loop import _plain, _resolutions, _table
from workers.engine.git import Repository


@dataclass(frozen=True)
class _Entry:
    path: str
    strategy: str
    action: str
    reason: str
    diff3: str = '<<<<<<< ours\n#include "a.h"\n=======\n#include "b.h"\n>>>>>>> theirs\n'
    resolution_diff: str = '+#include "b.h"\n'


@dataclass(frozen=True)
class _Outcome:
    commit: str
    resolved: bool
    entries: tuple[_Entry, ...]
    waiting: tuple[object, ...] = ()


def test_the_resolution_entry_is_read_back_from_the_renderers_own_section() -> None:
    """What the chain PR body carries (core/render/resolution.py) comes back as File / Action /
    Reason / Resolved by, without code marks or the zero-width spaces that keep #N from linking."""
    outcome = _Outcome(
        "a" * 40,
        True,
        (
            _Entry(
                "lib/P.cpp",
                "list-union",
                "Merged both sides' additions (hunk 1)",
                "both add an include; see #12",
            ),
        ),
    )
    body = "Some PR text\n\n| # | commit |\n| --- | --- |\n\n" + member_section(outcome, "[WS] Split (#7014)")
    assert _resolutions(body) == [
        [
            ("File", "lib/P.cpp"),
            ("Action", "Merged both sides' additions (hunk 1)"),
            ("Reason", "both add an include; see #12"),
            ("Resolved by", "forksync list-union (deterministic)"),
        ]
    ]
    assert _resolutions("File: x\nAction: y\n") == []  # outside a Conflict Resolution section: nothing


def test_bot_texts_print_without_markdown() -> None:
    reply = render_commands.reply(
        "maintainer",
        7,
        [render_commands.done("/skip #7005 reason", "marked [`5dc4d0ac10`](https://x/y) **now**")],
    )
    lines = _plain(reply)
    assert all(
        "`" not in line and "**" not in line and "<!--" not in line and "](" not in line for line in lines
    )
    assert any("marked 5dc4d0ac10 now" in line for line in lines)
    summary = (
        "| figure | value |\n| --- | --- |\n| days behind upstream | 0.00 |\n| frontier | `e54dfd7b0f` |\n"
    )
    assert _table(summary) == [("days behind upstream", "0.00"), ("frontier", "e54dfd7b0f")]


def test_demo_github_answers_what_the_command_handler_asks(tmp_path: Path) -> None:
    bare = tmp_path / "fork.git"
    work = tmp_path / "work"
    Repository(tmp_path).git("init", "--quiet", "-b", "main", str(work))
    (work / ".github").mkdir()
    (work / ".github" / "forksync.yml").write_text("upstream: {url: https://github.com/o/u}\n")
    repo = Repository(work)
    repo.git("add", "-A")
    repo.git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "--quiet", "-m", "config")
    repo.git("branch", "forksync/chain/abc")
    Repository(tmp_path).git("clone", "--quiet", "--mirror", str(work), str(bare))
    gh = DemoGitHub(remotes={"o/f": str(bare)}, permissions={"maintainer": "maintain"})
    gh.open_pull("o/f", head="forksync/chain/abc", base="main", title="[CHAIN] x", body="b")

    assert gh.read_file("o/f", ".github/forksync.yml") == "upstream: {url: https://github.com/o/u}\n"
    assert gh.read_file("o/f", "missing.yml") is None and gh.read_file("o/f", ".github") is None
    assert gh.permission("o/f", "maintainer") == "maintain" and gh.permission("o/f", "someone") == "none"
    pull = gh.get_pull_request("o/f", 1)
    assert (
        pull.head_sha == repo.rev_parse("HEAD")
        and not pull.from_outside("o/f")
        and pull.head_ref == "forksync/chain/abc"
    )
    with pytest.raises(GitHubNotFoundError):
        gh.get_pull_request("o/f", 9)

    said = gh.say("o/f", 1, "maintainer", "/approve")
    assert said.author_type == "User" and gh.get_comment("o/f", said.id) == said
    mark = render_commands.reply_marker(said.id)
    posted, created = gh.upsert_comment("o/f", 1, marker=mark, body="first")
    again, created_again = gh.upsert_comment("o/f", 1, marker=mark, body="second")
    assert gh.find_comment("o/f", 1, mark) == again
    assert created and not created_again and again.id == posted.id and again.body.endswith("second")
    assert posted.author == BOT_LOGIN and posted.author_type == "Bot"
    assert [c.id for c in gh.list_comments("o/f", 1)] == [said.id, posted.id]
    with pytest.raises(GitHubNotFoundError):
        gh.get_comment("o/f", 1)
