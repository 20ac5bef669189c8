"""Teaching the resolution memory: from a pick branch's commits (approved or merged), pushed to the fork.

``learn_branch`` recomputes, for each commit of a pick branch that names its upstream commit,
the conflict that pick had and takes the committed files as the answer (one record per hunk;
files whose answer also edited clean lines teach nothing). ``record_in_fork`` writes the records
on top of the fork's memory ref and pushes it fast-forward (one retry when another writer won).
"""

from __future__ import annotations

from collections.abc import Sequence

import pygit2

from core.errors import ForksyncError
from workers.engine.pair import Pair
from workers.engine.resolve.branch import BranchCommit, plan_branch, read_branch
from workers.engine.resolve.memory import (
    CACHE_MEMORY_REF,
    MemoryRecord,
    ResolutionMemory,
    fetch_memory,
    learn_from_commit,
    write_records,
)


def learn_branch(
    repo: pygit2.Repository, base: str, head: str, trailer_patterns: Sequence[str], source: str
) -> list[MemoryRecord]:
    """Records from the commits of ``head`` (not in ``base``) that name upstream commits.

    A branch carrying one upstream commit is answered by its head (a maintainer's fix-up commits
    on top count); with several, each pick commit answers its own conflict.
    """
    commits = read_branch(repo, base, head)
    plan = plan_branch(commits, trailer_patterns, bot_email="")
    if len(plan.upstream) == 1 and commits:
        first = repo.revparse_single(commits[0].sha).peel(pygit2.Commit)
        assert isinstance(first, pygit2.Commit)
        onto = str(first.parents[0].id) if first.parents else base
        try:
            return learn_from_commit(repo, head, plan.upstream[0], source, onto=onto)
        except (KeyError, ValueError):
            return []
    out: list[MemoryRecord] = []
    for commit in commits:
        plan = plan_branch([commit], trailer_patterns, bot_email="")
        for sha in plan.upstream[:1]:
            try:
                out.extend(learn_from_commit(repo, commit.sha, sha, source))
            except (KeyError, ValueError):
                continue  # the upstream commit is not in the cache: nothing to learn from
    return out


def record_in_fork(pair: Pair, records: Sequence[MemoryRecord], message: str, ref: str) -> int:
    """Write ``records`` into the fork's memory ref (fast-forward push); how many were new."""
    if not records:
        return 0
    for attempt in (1, 2):
        fetch_memory(pair, ref)
        repo = pygit2.Repository(str(pair.repo.path))
        known = {r.fingerprint: r for r in _known(repo)}
        new = [r for r in records if known.get(r.fingerprint) != r]
        if not new:
            return 0
        tip = write_records(repo, new, message, CACHE_MEMORY_REF)
        if tip is None:
            return 0
        try:
            pair.push_to_fork(tip, ref)
            return len(new)
        except ForksyncError:
            if attempt == 2:
                raise
    return 0


def _known(repo: pygit2.Repository) -> list[MemoryRecord]:
    return ResolutionMemory(repo, CACHE_MEMORY_REF).records()


def learn_merged(
    pair: Pair, number: int, trailer_patterns: Sequence[str], source: str, depth: int = 50
) -> list[MemoryRecord]:
    """Records from PR #number once merged into the fork's trunk (squash, merge commit or rebase).

    The merged result is found on the trunk's first-parent history (a subject naming ``#number``:
    GitHub's squash ``(#N)`` or ``Merge pull request #N``); its answer is the trunk's tree there,
    so a maintainer's own fix-up commits on the branch are learned too. A squash or merge that
    carries several upstream commits teaches nothing (which conflict each file answered is unknown).
    """
    repo = pygit2.Repository(str(pair.repo.path))
    found = repo.revparse_single(pair.fork_tip).peel(pygit2.Commit)
    commit: pygit2.Commit | None = found if isinstance(found, pygit2.Commit) else None
    tag = f"#{number}"
    for _ in range(depth):
        if commit is None:
            break
        subject = commit.message.split("\n", 1)[0]
        if f"({tag})" in subject or f"pull request {tag} " in subject + " ":
            upstream = list(plan_branch([_as_branch_commit(commit)], trailer_patterns, "").upstream)
            if not upstream and len(commit.parents) > 1:
                side = read_branch(repo, str(commit.parents[0].id), str(commit.parents[1].id))
                upstream = list(plan_branch(side, trailer_patterns, "").upstream)
            if len(upstream) != 1:
                return []
            try:
                return learn_from_commit(repo, str(commit.id), upstream[0], source)
            except (KeyError, ValueError):
                return []
        commit = commit.parents[0] if commit.parents else None
    return []


def _as_branch_commit(commit: pygit2.Commit) -> BranchCommit:
    return BranchCommit(str(commit.id), commit.committer.email, commit.message)
