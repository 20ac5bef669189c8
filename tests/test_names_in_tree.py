"""Uses link only to names the fork lacks: ``names_in_tree`` finds which names a tree already has."""

from __future__ import annotations

from collections.abc import Callable

from tests.gitrepo import GitRepo
from workers.engine.git import Repository
from workers.engine.planning import names_in_tree


def test_names_in_tree_are_whole_words_of_the_tree(make_repo: Callable[[str], GitRepo]) -> None:
    """A name is known when a file of the tree has it as a whole word; a longer word does not count."""
    repo = make_repo("repo")
    tip = repo.commit(
        "base", {"lib/a.cpp": "Value builder(int x);\n", "py/t.py": "def target_size(): pass\n"}
    )
    known = names_in_tree(Repository(repo.path), tip, ["builder", "target", "TensorDescriptor", "not-a-name"])
    assert known == {"builder"}
