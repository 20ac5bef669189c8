"""resolve_pick: in-memory cherry-pick with the deterministic pipeline and rails (real repositories)."""

from __future__ import annotations

from collections.abc import Callable

import pygit2

from tests.gitrepo import GitRepo
from workers.engine.resolve import resolve_pick
from workers.engine.resolve.model import FORK_LACKS_FILE, TOKEN_MERGE

BASE = "def greet(name):\n    return 'hi ' + name\n\n\ndef other():\n    return 1\n"


def _fork_and_pick(
    make_repo: Callable[[str], GitRepo],
    fork_files: dict[str, str | None],
    upstream_files: dict[str, str | None],
    base: dict[str, str] | None = None,
) -> tuple[GitRepo, str, str]:
    """A repository with a base commit, a fork branch and an upstream commit; returns (repo, pick, fork tip)."""
    repo = make_repo("r")
    repo.commit("base", base or {"app.py": BASE})
    repo.git("checkout", "-q", "-b", "fork")
    fork = repo.commit("fork change", fork_files)
    repo.git("checkout", "-q", "main")
    pick = repo.commit("upstream change", upstream_files)
    return repo, pick, fork


def test_clean_pick_is_resolved_with_its_merged_tree(make_repo: Callable[[str], GitRepo]) -> None:
    """A pick that does not conflict resolves to libgit2's merged tree with no entries."""
    repo, pick, fork = _fork_and_pick(make_repo, {"other.txt": "x\n"}, {"app.py": BASE.replace("1", "2")})
    out = resolve_pick(pygit2.Repository(str(repo.path)), pick, fork)
    assert out.resolved and out.clean and out.tree and not out.entries and not out.waiting


def test_neighbouring_word_edits_are_token_merged(make_repo: Callable[[str], GitRepo]) -> None:
    """The fork renames the argument, upstream changes the greeting on the same line: both kept."""
    repo, pick, fork = _fork_and_pick(
        make_repo,
        {"app.py": BASE.replace("name", "who")},
        {"app.py": BASE.replace("'hi '", "'hello '")},
    )
    r = pygit2.Repository(str(repo.path))
    out = resolve_pick(r, pick, fork)
    assert out.resolved, out.waiting
    assert [e.strategy for e in out.entries] == [TOKEN_MERGE]
    assert out.tree is not None
    tree = r.get(out.tree)
    assert isinstance(tree, pygit2.Tree)
    blob = r.get(tree["app.py"].id)
    assert isinstance(blob, pygit2.Blob)
    assert (
        blob.data.decode() == "def greet(who):\n    return 'hello ' + who\n\n\ndef other():\n    return 1\n"
    )
    assert repo.git("status", "--porcelain") == ""  # no work tree touched


def test_a_rule_switched_off_is_not_used(make_repo: Callable[[str], GitRepo]) -> None:
    """``resolve.rules_off: [token-merge]``: the same neighbouring edits now wait for a human."""
    from core.config import load_repo_config

    repo, pick, fork = _fork_and_pick(
        make_repo,
        {"app.py": BASE.replace("name", "who")},
        {"app.py": BASE.replace("'hi '", "'hello '")},
    )
    config = load_repo_config("resolve:\n  rules_off: [token-merge]\n")
    out = resolve_pick(pygit2.Repository(str(repo.path)), pick, fork, config=config)
    assert not out.resolved and [w.path for w in out.waiting] == ["app.py"]


def test_overlapping_edits_wait_for_a_human(make_repo: Callable[[str], GitRepo]) -> None:
    """Both sides rewrite the same word differently: declined, nothing written, the file named."""
    repo, pick, fork = _fork_and_pick(
        make_repo,
        {"app.py": BASE.replace("'hi '", "'hey '")},
        {"app.py": BASE.replace("'hi '", "'hello '")},
    )
    out = resolve_pick(pygit2.Repository(str(repo.path)), pick, fork)
    assert not out.resolved and out.tree is None
    assert [w.path for w in out.waiting] == ["app.py"]
    assert "need a human" in out.waiting[0].reason


def test_file_the_fork_deleted_is_skipped_with_a_note(make_repo: Callable[[str], GitRepo]) -> None:
    """Upstream edits a file the fork removed: the pick resolves without it, and says so."""
    repo, pick, fork = _fork_and_pick(
        make_repo,
        {"gone.py": None},
        {"gone.py": "x = 2\n"},
        base={"app.py": BASE, "gone.py": "x = 1\n"},
    )
    r = pygit2.Repository(str(repo.path))
    out = resolve_pick(r, pick, fork)
    assert out.resolved
    assert [(e.path, e.strategy) for e in out.entries] == [("gone.py", FORK_LACKS_FILE)]
    tree = r.get(out.tree)
    assert isinstance(tree, pygit2.Tree) and "gone.py" not in tree


def test_upstream_deleting_a_file_the_fork_changed_waits(make_repo: Callable[[str], GitRepo]) -> None:
    """Modify/delete the other way round is a human decision."""
    repo, pick, fork = _fork_and_pick(make_repo, {"app.py": BASE + "# fork\n"}, {"app.py": None})
    out = resolve_pick(pygit2.Repository(str(repo.path)), pick, fork)
    assert not out.resolved and "upstream deletes" in out.waiting[0].reason


def test_onto_may_be_a_tree(make_repo: Callable[[str], GitRepo]) -> None:
    """The chain builder may hold only a tree; it is accepted like a commit."""
    repo, pick, fork = _fork_and_pick(
        make_repo,
        {"app.py": BASE.replace("name", "who")},
        {"app.py": BASE.replace("'hi '", "'hello '")},
    )
    tree = repo.git("rev-parse", f"{fork}^{{tree}}")
    out = resolve_pick(pygit2.Repository(str(repo.path)), pick, tree)
    assert out.resolved and out.tree


def test_markers_anywhere_in_the_picks_files_are_refused(make_repo: Callable[[str], GitRepo]) -> None:
    """The tree-wide markers rail: a marker line in any file the pick changes, new on both sides, is refused."""
    from workers.engine.resolve.pick import _markers_in_tree

    repo, pick, fork = _fork_and_pick(make_repo, {"other.txt": "x\n"}, {"gen/out.txt": "fine\n"})
    r = pygit2.Repository(str(repo.path))
    fork_tree = r.revparse_single(fork).peel(pygit2.Tree)
    pick_tree = r.revparse_single(pick).peel(pygit2.Tree)
    builder = r.TreeBuilder(fork_tree)
    gen = r.TreeBuilder()
    gen.insert("out.txt", r.create_blob(b"<<<<<<< ours\nfine\n"), pygit2.enums.FileMode.BLOB)
    builder.insert("gen", gen.write(), pygit2.enums.FileMode.TREE)
    bad = r.get(builder.write())
    waiting = _markers_in_tree(r, pick_tree, pick_tree, fork_tree, bad)
    assert waiting is not None and waiting.path == "gen/out.txt" and waiting.rails[0].rail == "markers"
    good = r.get(resolve_pick(r, pick, fork).tree or "")
    assert _markers_in_tree(r, pick_tree, pick_tree, fork_tree, good) is None
