"""Trial picks honour the fork's ``.gitattributes`` as ``git cherry-pick`` does.

A cherry-pick merges in a work tree holding the target (ours) and reads its ``.gitattributes``
(at any depth); ``git merge-tree`` run from the git directory reads none, so before the merger
handed git those rules (workers/engine/attributes.py) every case here got another verdict than
git's. Each case runs real ``git cherry-pick`` and compares verdict and tree with the trial pick.
"""

from __future__ import annotations

from collections.abc import Callable

import pygit2

from tests.gitrepo import GitRepo
from tests.test_pick_git import fork_and_upstream, git_pick, ours_pick
from workers.engine.attributes import MAX_LINE, TreeAttributes, translate

NUMBERED = "".join(f"line {i}\n" for i in range(30))
OURS = NUMBERED.replace("line 2\n", "fork 2\n")  # far from theirs: a clean text merge
THEIRS = NUMBERED.replace("line 25\n", "up 25\n")


def _beside(repo: GitRepo, up: str, files: dict[str, str | None]) -> str:
    """Another upstream commit on the same parent as ``up``: ``files`` changed instead."""
    repo.git("checkout", "-q", "--detach", f"{up}~1")
    return repo.commit("upstream, another change", files)


def _both(repo: GitRepo, tip: str, up: str) -> tuple[str | None, str | None]:
    """(cherry-pick's tree, the trial pick's tree); None for a conflict."""
    return git_pick(repo, tip, up), ours_pick(repo, tip, up, git=True)


def test_a_union_changelog_both_sides_appended_to_is_clean_as_in_git(
    make_repo: Callable[[str], GitRepo],
) -> None:
    """``merge=union``: both appends are kept (without it the two appends conflict)."""
    repo, tip, up = fork_and_upstream(
        make_repo,
        {"CHANGELOG.md": "# Changes\n- one\n", ".gitattributes": "CHANGELOG.md merge=union\n"},
        {"CHANGELOG.md": "# Changes\n- one\n- fork\n"},
        {"CHANGELOG.md": "# Changes\n- one\n- upstream\n"},
    )
    expected, trial = _both(repo, tip, up)
    assert expected is not None and trial == expected


def test_minus_merge_on_a_nested_directory_conflicts_as_in_git(make_repo: Callable[[str], GitRepo]) -> None:
    """``*.c -merge`` in ``lib/``: a both-sides change of ``lib/sub/f.c`` conflicts however far
    apart the edits are; the same edits outside ``lib/`` merge cleanly."""
    repo, tip, up = fork_and_upstream(
        make_repo,
        {"lib/sub/f.c": NUMBERED, "g.c": NUMBERED, "lib/.gitattributes": "*.c -merge\n"},
        {"lib/sub/f.c": OURS, "g.c": OURS},
        {"lib/sub/f.c": THEIRS},
    )
    assert _both(repo, tip, up) == (None, None)
    other = _beside(repo, up, {"g.c": THEIRS})
    expected, trial = _both(repo, tip, other)
    assert expected is not None and trial == expected


def test_a_pattern_with_a_slash_in_a_nested_file_is_relative_to_its_directory(
    make_repo: Callable[[str], GitRepo],
) -> None:
    """``gen/*.c -merge`` in ``lib/.gitattributes`` names ``lib/gen/*.c`` only: not
    ``lib/x/gen/b.c`` nor ``gen/c.c``."""
    files = {"lib/gen/a.c": NUMBERED, "lib/x/gen/b.c": NUMBERED, "gen/c.c": NUMBERED}
    repo, tip, up = fork_and_upstream(
        make_repo,
        {**files, "lib/.gitattributes": "# generated\ngen/*.c -merge\n"},
        {path: OURS for path in files},
        {"lib/gen/a.c": THEIRS},
    )
    assert _both(repo, tip, up) == (None, None)
    for path in ("lib/x/gen/b.c", "gen/c.c"):
        other = _beside(repo, up, {path: THEIRS})
        expected, trial = _both(repo, tip, other)
        assert expected is not None and trial == expected, path


def test_a_deeper_file_overrides_a_shallower_one(make_repo: Callable[[str], GitRepo]) -> None:
    """The root says ``*.txt -merge``, ``pkg/`` says ``*.txt merge=union``: ``pkg/log.txt``
    merges by union (clean), ``log.txt`` at the root conflicts."""
    log = "start\n"
    repo, tip, up = fork_and_upstream(
        make_repo,
        {
            "pkg/log.txt": log,
            "log.txt": NUMBERED,
            ".gitattributes": "*.txt -merge\n",
            "pkg/.gitattributes": "*.txt merge=union\n",
        },
        {"pkg/log.txt": log + "fork\n", "log.txt": OURS},
        {"pkg/log.txt": log + "upstream\n"},
    )
    expected, trial = _both(repo, tip, up)
    assert expected is not None and trial == expected
    other = _beside(repo, up, {"log.txt": THEIRS})
    assert _both(repo, tip, other) == (None, None)


def test_the_forks_rules_count_not_the_commits(make_repo: Callable[[str], GitRepo]) -> None:
    """The commit adds ``-merge`` for the file it changes: a cherry-pick merges with the work
    tree's (the fork's) rules, which have none, so the text merge is clean."""
    repo, tip, up = fork_and_upstream(
        make_repo,
        {"f.c": NUMBERED},
        {"f.c": OURS},
        {"f.c": THEIRS, ".gitattributes": "*.c -merge\n"},
    )
    expected, trial = _both(repo, tip, up)
    assert expected is not None and trial == expected


def test_a_long_line_pushed_over_gits_limit_is_split_into_lines_git_reads(
    make_repo: Callable[[str], GitRepo],
) -> None:
    """A line just under git's 2048 bytes in ``library/`` would pass it once prefixed: it is
    written as several lines of the same pattern, so ``-merge`` still applies as in git."""
    line = "f.c" + " x" * 1015 + " -merge"  # 2040 bytes: -merge is the last attribute
    assert len(line) < MAX_LINE < len(f"library/**/{line}")
    assert all(len(out) <= MAX_LINE for out in translate("library", line.encode() + b"\n"))
    repo, tip, up = fork_and_upstream(
        make_repo,
        {"library/f.c": NUMBERED, "library/.gitattributes": line + "\n"},
        {"library/f.c": OURS},
        {"library/f.c": THEIRS},
    )
    assert _both(repo, tip, up) == (None, None)


def test_the_limit_a_directory_path_longer_than_gits_line_limit(make_repo: Callable[[str], GitRepo]) -> None:
    """The limit (attributes.py): a ``.gitattributes`` whose directory path alone is over 2048
    bytes cannot be written root-relative in a line git reads; git ignores the rewritten rule,
    so the trial merges cleanly where the cherry-pick conflicts."""
    deep = "/".join(["d" * 200] * 11)
    assert len(deep) > MAX_LINE
    repo, tip, up = fork_and_upstream(
        make_repo,
        {f"{deep}/f.c": NUMBERED, f"{deep}/.gitattributes": "f.c -merge\n"},
        {f"{deep}/f.c": OURS},
        {f"{deep}/f.c": THEIRS},
    )
    expected, trial = _both(repo, tip, up)
    assert expected is None and trial is not None


def test_patterns_are_rewritten_root_relative() -> None:
    """The rewriting, line by line: basename, slash, leading slash, trailing slash, negation,
    macros (root only), comments, quoting and glob characters in the directory."""
    text = b'# c\n\n  *.c -merge\n/top.h text\ngen/*.c binary\nbuild/ -diff\n!x.c merge\n[attr]gen -diff\n"a b.c" -merge\n'
    assert translate("", text) == [
        b"*.c -merge",
        b"/top.h text",
        b"gen/*.c binary",
        b"build/ -diff",
        b"[attr]gen -diff",
        b'"a b.c" -merge',
    ]
    assert translate("src/x", text) == [
        b"src/x/**/*.c -merge",
        b"src/x/top.h text",
        b"src/x/gen/*.c binary",
        b"src/x/**/build/ -diff",
        b'"src/x/**/a b.c" -merge',
    ]
    assert translate("a[1]*", b"f.c -merge\n") == [b"a\\[1]\\*/**/f.c -merge"]
    assert translate("sp ace", b"f.c -merge\n") == [b'"sp ace/**/f.c" -merge']


def test_files_are_written_once_per_distinct_content(make_repo: Callable[[str], GitRepo]) -> None:
    """Two trees with the same rules share one file; a tree without ``.gitattributes`` gets none."""
    repo = make_repo("repo")
    one = repo.commit("one", {"a/.gitattributes": "*.c -merge\n", "a/f.c": "1\n"})
    two = repo.commit("two", {"a/f.c": "2\n"})
    three = repo.commit("three", {"a/.gitattributes": None})
    pg = pygit2.Repository(str(repo.path))
    rules = TreeAttributes(pg, repo.path / "rules")
    trees = [pg.get(sha).peel(pygit2.Tree).id for sha in (one, two, three)]  # type: ignore[union-attr]
    first, second, none = (rules.file(t) for t in trees)
    assert first is not None and first == second and none is None
    assert first.read_bytes() == b"a/**/*.c -merge\n"
    assert len(list((repo.path / "rules").iterdir())) == 1
