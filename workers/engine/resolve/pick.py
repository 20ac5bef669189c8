"""``resolve_pick``: cherry-pick one commit onto a tree in memory and resolve its conflicts behind the rails.

This is the contract the chain builder calls, commit by commit::

    outcome = resolve_pick(repo, commit, onto, config=config)
    if outcome.resolved: new_tree = outcome.tree      # written to repo's object database

The merge is libgit2's whole-tree merge (``merge_trees``, rename detection on: a conflicted
pick is worth the cost). Each conflicted path goes through the per-file pipeline (memory, the
deterministic strategies); the files left go to the agent when one is given; every proposed
file passes the rails; and no conflict marker may be left in any file the pick changes. Nothing
touches a work tree, an index file or a ref.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path

import pygit2

from core.config import RepoConfig, ResolveConfig
from workers.engine.git import Repository
from workers.engine.resolve import rails
from workers.engine.resolve.history import FileHistory, GitFileHistory
from workers.engine.resolve.merge3 import Merged
from workers.engine.resolve.model import FileEntry, FileOutcome, ResolveOutcome, Waiting
from workers.engine.resolve.pipeline import Conflict, HunkMemory, resolve_text
from workers.engine.resolve.strategies import enabled

# An agent as the pick sees it: the files left after the deterministic pipeline in, and a
# candidate outcome per file out (already through the rails). workers.engine.resolve.agent builds one.
AgentStep = Callable[[pygit2.Commit, Sequence[tuple[Conflict, Merged | None]]], dict[str, FileOutcome]]


def _config(config: RepoConfig | ResolveConfig | None) -> ResolveConfig:
    if isinstance(config, RepoConfig):
        return config.resolve
    return config if config is not None else ResolveConfig()


def _text(repo: pygit2.Repository, entry: pygit2.IndexEntry | None) -> str | None:
    if entry is None:
        return None
    blob = repo.get(entry.id)
    if not isinstance(blob, pygit2.Blob):
        return None
    return blob.data.decode("utf-8", "surrogateescape")


def _is_text(repo: pygit2.Repository, entry: pygit2.IndexEntry | None) -> bool:
    if entry is None:
        return True
    blob = repo.get(entry.id)
    if not isinstance(blob, pygit2.Blob) or blob.is_binary:
        return False
    try:
        blob.data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _tree_of(repo: pygit2.Repository, rev: str) -> pygit2.Tree:
    obj = repo.revparse_single(rev)
    tree = obj.peel(pygit2.Tree)
    assert isinstance(tree, pygit2.Tree)
    return tree


def resolve_pick(
    repo: pygit2.Repository,
    commit: str,
    onto: str,
    *,
    config: RepoConfig | ResolveConfig | None = None,
    memory: HunkMemory | None = None,
    agent: AgentStep | None = None,
    history: FileHistory | None = None,
) -> ResolveOutcome:
    """Cherry-pick ``commit`` onto ``onto`` (a commit or tree) and resolve what conflicts, without a work tree.

    ``history`` says why the fork lacks a file the pick changes (dropped, or waiting for the
    pending upstream commit that brings it); by default it is read from the history of ``onto``
    and the pick since their merge base (no ledger: a carried commit is not known as such). With
    neither (``onto`` a tree), a file the fork lacks waits for a human."""
    cfg = _config(config)
    checks = tuple(rails.Check(suffix, argv) for suffix, argv in cfg.checks)
    try:
        pick = repo.revparse_single(commit).peel(pygit2.Commit)
        target = _tree_of(repo, onto)
    except (KeyError, ValueError, pygit2.GitError) as exc:
        return ResolveOutcome(commit, onto, False, None, error=f"cannot read {commit} or {onto}: {exc}")
    assert isinstance(pick, pygit2.Commit)
    if not pick.parents:
        return ResolveOutcome(
            pick.id.__str__(), onto, False, None, error="a root commit cannot be cherry-picked"
        )
    parent = pick.parents[0]
    read_default = history is None  # read only when a file the fork lacks asks for it
    try:
        index = repo.merge_trees(parent.tree, target, pick.tree)
    except pygit2.GitError as exc:
        return ResolveOutcome(str(pick.id), onto, False, None, error=f"libgit2 could not merge: {exc}")
    if index.conflicts is None:
        tree = index.write_tree(repo)
        return ResolveOutcome(str(pick.id), onto, True, str(tree), clean=True)

    conflicts: list[tuple[Conflict, pygit2.IndexEntry | None, pygit2.IndexEntry | None]] = []
    outcomes: dict[str, FileOutcome] = {}
    merges: dict[str, Merged | None] = {}
    for ancestor, ours, theirs in sorted(
        index.conflicts, key=lambda c: next(e.path for e in c if e is not None)
    ):
        path = next(e.path for e in (ours, theirs, ancestor) if e is not None)
        if not all(_is_text(repo, e) for e in (ancestor, ours, theirs)):
            outcomes[path] = FileOutcome(
                path, waiting=Waiting(path, "a binary or non-UTF-8 file conflicts: pick a side by hand")
            )
            continue
        if ancestor is not None and ours is not None and theirs is not None and ours.path != theirs.path:
            outcomes[path] = FileOutcome(
                path,
                waiting=Waiting(
                    path,
                    f"renamed differently on the two sides ({ours.path} in the fork, {theirs.path} upstream)",
                ),
            )
            continue
        conflict = Conflict(path, _text(repo, ancestor), _text(repo, ours), _text(repo, theirs))
        conflicts.append((conflict, ours, theirs))
        absence = None
        if conflict.ours is None and conflict.theirs is not None:
            if read_default:
                history, read_default = _history_of(repo, pick, onto), False
            absence = history.absence(path, str(parent.id)) if history is not None else None
        outcome, merged = resolve_text(
            conflict, memory=memory, checks=checks, strategies=enabled(cfg.rules_off), absence=absence
        )
        outcomes[path] = outcome
        merges[path] = merged

    if agent is not None:
        left = [(c, merges.get(c.path)) for c, _, _ in conflicts if not outcomes[c.path].resolved]
        if left:
            for path, outcome in agent(pick, left).items():
                if path in outcomes and not outcomes[path].resolved:
                    outcomes[path] = outcome

    entries = tuple(o.entry for o in sorted(outcomes.values(), key=lambda o: o.path) if o.entry is not None)
    waiting = tuple(
        o.waiting for o in sorted(outcomes.values(), key=lambda o: o.path) if o.waiting is not None
    )
    if waiting:
        return ResolveOutcome(str(pick.id), onto, False, None, entries, waiting)

    modes = {c.path: (ours or theirs) for c, ours, theirs in conflicts}
    for entry in entries:
        _place(repo, index, entry, modes.get(entry.path))
    tree = index.write_tree(repo)
    failure = _markers_in_tree(repo, parent.tree, pick.tree, target, repo.get(tree))
    if failure is not None:
        return ResolveOutcome(str(pick.id), onto, False, None, entries, (failure,))
    return ResolveOutcome(str(pick.id), onto, True, str(tree), entries)


def _history_of(repo: pygit2.Repository, pick: pygit2.Commit, onto: str) -> FileHistory | None:
    """The default history: ``onto``'s and the pick's since their merge base (None: ``onto`` is a tree)."""
    try:
        target = repo.revparse_single(onto).peel(pygit2.Commit)
        base = repo.merge_base(target.id, pick.id)
    except (KeyError, ValueError, pygit2.GitError):
        return None
    if base is None:
        return None
    return GitFileHistory(Repository(Path(repo.path)), str(base), str(target.id))


def _place(
    repo: pygit2.Repository, index: pygit2.Index, entry: FileEntry, like: pygit2.IndexEntry | None
) -> None:
    """Replace the conflict of ``entry.path`` in the in-memory index with the resolution."""
    with contextlib.suppress(KeyError):
        del index.conflicts[entry.path]
    if entry.content is None:
        with contextlib.suppress(OSError, KeyError):
            index.remove(entry.path)
        return
    oid = repo.create_blob(entry.content)
    mode = like.mode if like is not None else pygit2.enums.FileMode.BLOB
    index.add(pygit2.IndexEntry(entry.path, oid, mode))


def _markers_in_tree(
    repo: pygit2.Repository, base: pygit2.Tree, theirs: pygit2.Tree, ours: pygit2.Tree, result: object
) -> Waiting | None:
    """The markers rail over every file the pick changes (generated files included)."""
    assert isinstance(result, pygit2.Tree)
    diff = ours.diff_to_tree(result)
    for patch_delta in diff.deltas:
        path = patch_delta.new_file.path
        if patch_delta.new_file.id.raw == b"\x00" * 20:
            continue
        blob = repo.get(patch_delta.new_file.id)
        if not isinstance(blob, pygit2.Blob) or blob.is_binary:
            continue
        text = blob.data.decode("utf-8", "replace")
        before = _blob_text(repo, ours, path) + _blob_text(repo, theirs, path)
        failure = rails.check_markers(text, before, "")
        if failure is not None:
            return Waiting(path, f"{failure.detail}; resolve it by hand", rails=(failure,))
    return None


def _blob_text(repo: pygit2.Repository, tree: pygit2.Tree, path: str) -> str:
    try:
        obj = tree[path]
    except KeyError:
        return ""
    blob = repo.get(obj.id)
    return blob.data.decode("utf-8", "replace") if isinstance(blob, pygit2.Blob) else ""
