"""Chains built through: at a conflict the resolver is asked; resolved members ride on, else the chain stops and says why."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pygit2

from tests.fixtures.bundling import COALESCE, COALESCE_TEXT, TritonPair
from workers.engine.pair import open_configured
from workers.engine.planning import build_and_record, make_plan


@dataclass(frozen=True)
class Entry:
    path: str
    strategy: str
    action: str
    reason: str


@dataclass(frozen=True)
class Wait:
    path: str
    reason: str


@dataclass(frozen=True)
class Outcome:
    resolved: bool
    tree: str | None
    entries: tuple[Entry, ...] = ()
    waiting: tuple[Wait, ...] = ()
    resolved_by: str | None = None


@dataclass
class TakeFile:
    """A small real resolver: merges like a cherry-pick, and resolves a conflicted file it was given content
    for (per upstream commit)."""

    files: Mapping[str, Mapping[str, str]]
    asked: list[tuple[str, str]] = field(default_factory=list)

    def __call__(self, repo: pygit2.Repository, commit: str, onto: str, *, config: Any) -> Outcome:
        self.asked.append((commit, onto))
        pick = repo.get(commit)
        target = repo.get(onto)
        assert isinstance(pick, pygit2.Commit) and isinstance(target, pygit2.Tree)
        index = repo.merge_trees(pick.parents[0].tree, target, pick.tree)
        conflicted = sorted({e.path for c in (index.conflicts or ()) for e in c if e is not None})
        given = self.files.get(commit, {})
        missing = [p for p in conflicted if p not in given]
        if missing:
            return Outcome(False, None, waiting=tuple(Wait(p, "no content given for it") for p in missing))
        entries = []
        for path in conflicted:
            del index.conflicts[path]  # type: ignore[index]
            index.add(
                pygit2.IndexEntry(path, repo.create_blob(given[path].encode()), pygit2.enums.FileMode.BLOB)
            )
            entries.append(
                Entry(path, "given", "Keep both: upstream's cap, the fork's width", "the test says so")
            )
        return Outcome(True, str(index.write_tree(repo)), tuple(entries), resolved_by="memory")


RESOLVED = COALESCE_TEXT.replace(
    "std::min<int>(perThread, 4)", "std::min<int>(perThread, std::min(maxVec, 8))"
)


def _build(pair: TritonPair, resolver: TakeFile) -> Any:
    opened, config = open_configured(str(pair.upstream.path), str(pair.fork.path))
    return build_and_record(opened, config, make_plan(opened, config), resolver=resolver)


def test_chain_is_built_through_a_resolved_conflict(triton_pair: TritonPair) -> None:
    """The seed conflicts, the resolver resolves it: every member is on the chain branch, the resolution recorded."""
    s = triton_pair.shas
    # dependent edits the line after the resolved one: it conflicts again and is resolved too.
    dependent = RESOLVED.replace("static Value getMemAccessPtr", "Value getMemAccessPtr").replace(
        "layoutMap[op] = perThread;", "layoutMap[op] = perThread; // capped"
    )
    resolver = TakeFile({s["conflict"]: {COALESCE: RESOLVED}, s["dependent"]: {COALESCE: dependent}})
    result = _build(triton_pair, resolver)
    chain = next(c for c in result.chains if c.id == f"chain-{s['conflict'][:7]}")
    assert chain.commits == (s["conflict"], s["dependent"], s["header"]) and chain.stopped_at is None
    assert [r.commit for r in chain.resolved] == [s["conflict"], s["dependent"]]
    assert chain.resolved[0].outcome.entries[0].path == COALESCE
    assert [sha for sha, _ in resolver.asked] == [s["conflict"], s["dependent"]]  # never for header: it picks
    text = triton_pair.fork.git("show", f"{chain.head}:{COALESCE}")
    assert (
        "std::min(maxVec, 8)" in text and "layoutMap[op] = perThread; // capped" in text
    )  # dependent rode on
    assert chain.as_json()["resolved"][0]["entries"][0]["action"].startswith("Keep both")
    # Resolved members say who resolved them in their trailers; the member that picked cleanly does not.
    log = triton_pair.fork.git("log", "--format=%B%x00", f"{chain.head}", "-3").split("\x00")
    messages = [m.strip() for m in log if m.strip()]
    assert [m.endswith("Resolved-By: memory") for m in messages] == [False, True, True]


def test_chain_without_a_resolution_stops_and_says_what_waits(triton_pair: TritonPair) -> None:
    """No resolution: the chain stops at the commit, names the waiting files and how to reproduce it."""
    s = triton_pair.shas
    chain = next(c for c in _build(triton_pair, TakeFile({})).chains if c.id == f"chain-{s['conflict'][:7]}")
    assert chain.commits == () and chain.stopped_at == s["conflict"]
    assert chain.waiting == ((COALESCE, "no content given for it"),)
    assert chain.reproduce.endswith(f"git cherry-pick -x {s['conflict']}")
    assert f"forksync/chain/{s['conflict'][:7]}" in chain.reproduce
