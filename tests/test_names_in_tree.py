"""Uses link only to names the fork lacks: ``names_in_tree`` finds which names a tree already has."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from tests.gitrepo import GitRepo
from workers.engine.git import Repository
from workers.engine.planning import identifiers, names_in_tree


def test_names_in_tree_are_whole_words_of_the_tree(make_repo: Callable[[str], GitRepo]) -> None:
    """A name is known when a file of the tree has it as a whole word; a longer word does not count."""
    repo = make_repo("repo")
    tip = repo.commit(
        "base", {"lib/a.cpp": "Value builder(int x);\n", "py/t.py": "def target_size(): pass\n"}
    )
    known = names_in_tree(Repository(repo.path), tip, ["builder", "target", "TensorDescriptor", "not-a-name"])
    assert known == {"builder"}


def test_identifiers_are_what_the_identifier_regex_finds() -> None:
    """The split-based reader finds exactly the words the regex ``[A-Za-z_][A-Za-z0-9_]*`` finds,
    over the real sources in this repository and the edge cases: digits before a word, non-ASCII
    letters, underscores, punctuation glued to names."""
    regex = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
    samples = [
        b"",
        b"123abc 1_x 99 _ __init__ a1b2 9",
        "caf\u00e9 na\u00efve \u00fcber x\u00e9y".encode(),
        b"foo::bar(baz->qux[0]); #define X_Y 0x1f\n\tret_val=a.b.c;",
        b"\x00\xff name\x80other 7e3 1e_x",
    ]
    root = Path(__file__).resolve().parent.parent
    samples += [p.read_bytes() for p in sorted((root / "workers" / "engine").glob("*.py"))]
    for data in samples:
        assert identifiers(data) == set(regex.findall(data))
