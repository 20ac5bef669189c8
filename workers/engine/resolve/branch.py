"""A pick branch (a ``[RESOLVED]`` PR's head) read and rebuilt: which upstream commits it carries,
which commits a human pushed, and the resolved picks built through one after another.

``plan_branch`` is pure: from the branch's commits it finds the upstream commits (the configured
trailer patterns) and the commits not written by forksync (a maintainer's own resolution), which
forksync must never rewrite. ``build_through`` resolves each upstream commit in order onto the
previous result and writes the commits (upstream author, forksync committer, the trailer).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pygit2

from core.config import RepoConfig, ResolveConfig
from workers.engine.bundle import PickStyle, pick_message
from workers.engine.resolve.history import FileHistory
from workers.engine.resolve.model import ResolveOutcome
from workers.engine.resolve.pick import AgentStep, resolve_pick
from workers.engine.resolve.pipeline import HunkMemory


@dataclass(frozen=True)
class BranchCommit:
    """One commit of a pick branch, as far as the plan needs it."""

    sha: str
    committer_email: str
    message: str


@dataclass(frozen=True)
class BranchPlan:
    """What a pick branch carries: upstream commits (in order) and the commits a human wrote."""

    upstream: tuple[str, ...]
    human: tuple[BranchCommit, ...]

    @property
    def human_owned(self) -> bool:
        return bool(self.human)


def plan_branch(
    commits: Sequence[BranchCommit], trailer_patterns: Sequence[str], bot_email: str
) -> BranchPlan:
    """Upstream commits named by trailers, and commits not committed by forksync (oldest first)."""
    upstream: list[str] = []
    human: list[BranchCommit] = []
    compiled = [re.compile(p) for p in trailer_patterns]
    for c in commits:
        for pattern in compiled:
            m = pattern.search(c.message)
            if m and m.group("sha").lower() not in upstream:
                upstream.append(m.group("sha").lower())
                break
        if c.committer_email.lower() != bot_email.lower():
            human.append(c)
    return BranchPlan(tuple(upstream), tuple(human))


def read_branch(repo: pygit2.Repository, base: str, head: str) -> list[BranchCommit]:
    """The first-parent commits of ``head`` not in ``base``, oldest first."""
    stop = repo.revparse_single(base).peel(pygit2.Commit).id
    out: list[BranchCommit] = []
    commit = repo.revparse_single(head).peel(pygit2.Commit)
    assert isinstance(commit, pygit2.Commit)
    base_ancestors = {stop}
    while commit.id not in base_ancestors and not repo.descendant_of(stop, commit.id):
        out.append(BranchCommit(str(commit.id), commit.committer.email, commit.message))
        if not commit.parents:
            break
        commit = commit.parents[0]
    return list(reversed(out))


@dataclass(frozen=True)
class BuildResult:
    """The head built (None when a commit waits for a human) and each pick's outcome, in order."""

    head: str | None
    outcomes: tuple[ResolveOutcome, ...]


def commit_pick(
    repo: pygit2.Repository,
    upstream: pygit2.Commit,
    parent: str,
    tree: str,
    style: PickStyle,
    when: int | None = None,
    resolved_by: str | None = None,
) -> str:
    """A pick commit: upstream's author and message (plus link and trailer), forksync as committer;
    a resolved pick also carries ``Resolved-By: <deterministic|memory|agent>`` in its trailers."""
    import time

    name, email = style.committer
    stamp = int(time.time()) if when is None else when
    committer = pygit2.Signature(name, email, stamp, 0)
    message = pick_message(upstream.message, str(upstream.id), style, resolved_by)
    oid = repo.create_commit(
        None, upstream.author, committer, message, pygit2.Oid(hex=tree), [pygit2.Oid(hex=parent)]
    )
    return str(oid)


def build_through(
    repo: pygit2.Repository,
    upstream: Sequence[str],
    onto: str,
    *,
    config: RepoConfig | ResolveConfig | None,
    style: PickStyle,
    memory: HunkMemory | None = None,
    agent_for: Callable[[str], AgentStep | None] = lambda onto: None,
    when: int | None = None,
    history_for: Callable[[str], FileHistory | None] = lambda onto: None,
) -> BuildResult:
    """Resolve and commit each upstream commit in order onto ``onto``; stop at the first that waits.

    ``history_for(current)``: why the branch built so far lacks a file (``resolve.history``; None:
    read from git alone, without the ledger's carried commits)."""
    head = repo.revparse_single(onto).peel(pygit2.Commit)
    assert isinstance(head, pygit2.Commit)
    current = str(head.id)
    outcomes: list[ResolveOutcome] = []
    for sha in upstream:
        outcome = resolve_pick(
            repo,
            sha,
            current,
            config=config,
            memory=memory,
            agent=agent_for(current),
            history=history_for(current),
        )
        outcomes.append(outcome)
        if not outcome.resolved or outcome.tree is None:
            return BuildResult(None, tuple(outcomes))
        up = repo.revparse_single(outcome.commit).peel(pygit2.Commit)
        assert isinstance(up, pygit2.Commit)
        current = commit_pick(repo, up, current, outcome.tree, style, when, outcome.resolved_by)
    return BuildResult(current, tuple(outcomes))
