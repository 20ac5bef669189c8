"""Uses link only to names the fork lacks: ``TreeNames`` finds which names a tree already has."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.gitrepo import GitRepo
from workers.engine.git import GitError, Repository
from workers.engine.treenames import TreeNames, names_in_tree


def test_names_in_tree_are_whole_words_of_the_tree(make_repo: Callable[[str], GitRepo]) -> None:
    """A name is known when a file of the tree has it as a whole word; a longer word does not count."""
    repo = make_repo("repo")
    tip = repo.commit(
        "base", {"lib/a.cpp": "Value builder(int x);\n", "py/t.py": "def target_size(): pass\n"}
    )
    known = names_in_tree(Repository(repo.path), tip, ["builder", "target", "TensorDescriptor", "not-a-name"])
    assert known == {"builder"}


def test_tree_names_are_what_the_identifier_regex_finds_in_source_files(
    make_repo: Callable[[str], GitRepo],
) -> None:
    """The names are exactly the words ``[A-Za-z_][A-Za-z0-9_]*`` finds in the tree's source files
    (this repository's own engine, and the edge cases: digits before a word, non-ASCII letters,
    underscores, punctuation glued to names), at any depth and whatever the extension's case; not
    in other files, nor in a binary source file."""
    samples = {
        "edge/digits.py": b"123abc 1_x 99 _ __init__ a1b2 9",
        "edge/accents.cc": "caf\u00e9 na\u00efve \u00fcber x\u00e9y".encode(),
        "edge/deep/er/glue.H": b"foo::bar(baz->qux[0]); #define X_Y 0x1f\n\tret_val=a.b.c;",
        "edge/Ops.TD": b'def TT_LoadOp : TT_Op<"load">',
        "edge/no_newline.pyi": b"last_word",
    }
    root = Path(__file__).resolve().parent.parent
    engine = {f"engine/{p.name}": p.read_bytes() for p in sorted((root / "workers" / "engine").glob("*.py"))}
    others = {"README.md": b"markdown_only_word", "data.json": b'{"json_only_word": 1}'}
    binary = {"edge/blob.cpp": b"\x00binary_only_word"}
    repo = make_repo("repo")
    for path, data in {**samples, **engine, **others, **binary}.items():
        (Path(repo.path) / path).parent.mkdir(parents=True, exist_ok=True)
        (Path(repo.path) / path).write_bytes(data)
    repo.git("add", "-A")
    tip = repo.commit("tree")
    regex = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
    expected = {w for data in (*samples.values(), *engine.values()) for w in regex.findall(data)}
    assert TreeNames(Repository(repo.path), tip).names() == expected
    known = names_in_tree(
        Repository(repo.path),
        tip,
        ["abc", "_x", "caf", "X_Y", "TT_LoadOp", "last_word", "markdown_only_word"],
    )
    assert known == {"abc", "_x", "caf", "X_Y", "TT_LoadOp", "last_word"}
    assert not names_in_tree(Repository(repo.path), tip, ["json_only_word", "binary_only_word"])


def test_a_tree_git_cannot_read_says_so(make_repo: Callable[[str], GitRepo]) -> None:
    """A tree that is not there is an error naming git's complaint, not an empty set of names."""
    repo = make_repo("repo")
    repo.commit("base", {"a.py": "x = 1\n"})
    names = TreeNames(Repository(repo.path), "0123456789abcdef0123456789abcdef01234567")
    with pytest.raises(GitError, match="grep"):
        names.having(["x"])


def test_names_never_collected_leave_no_git_running(make_repo: Callable[[str], GitRepo]) -> None:
    """A plan that fails before it needs the names stops the git it started."""
    repo = make_repo("repo")
    tip = repo.commit("base", {"a.py": "x = 1\n"})
    names = TreeNames(Repository(repo.path), tip)
    names.close()
    names.close()  # twice is harmless
