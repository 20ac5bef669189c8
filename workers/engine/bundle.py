"""Build bundles and risky chains as branches, by in-memory cherry-picks (never a work tree).

Bundles are stacked in plan order: the first is built on the fork tip, each next one on the
head of the previous, exactly the target the partition's trial picks used. A chain is built on
the head of the last bundle that started before the chain's first commit (the fork tip when
none), up to its first conflict. Every built commit keeps the upstream author and author date,
carries the upstream message, the upstream PR link and the configured trailer, and is
committed by the bot at the upstream commit's committer time: the same plan gives the same
shas, so a rerun updates branches instead of duplicating them.

A bundle commit that fails at build time (the fork moved since planning, or libgit2 could not
merge it) is ejected to a chain (a new one, or one ejected earlier in this build that it links
to by file or symbol) and the build goes on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pygit2

from workers.engine.changes import CommitChanges
from workers.engine.partition import Chain, Plan, Reason, short
from workers.engine.pick import PickTarget

BUNDLE_BRANCH = "forksync/bundle/"
CHAIN_BRANCH = "forksync/chain/"
BOT_COMMITTER = ("forksync", "forksync@users.noreply.github.com")

_SQUASH_PR = re.compile(r"\(#(\d+)\)\s*$")
_MERGE_PR = re.compile(r"^Merge pull request #(\d+)\b")


@dataclass(frozen=True)
class Built:
    """One built branch: what it carries, where it starts, and what did not make it."""

    kind: str  # "bundle" or "chain"
    id: str
    branch: str
    base: str  # the commit it is built on
    base_branch: str  # what a PR of it targets: the fork branch or the previous bundle's branch
    head: str
    commits: tuple[str, ...]  # upstream shas carried, in order
    picks: tuple[str, ...]  # the fork commits made, one per carried upstream commit
    ejected: tuple[str, ...] = ()  # bundle commits that failed and went to a chain
    stopped_at: str | None = None  # chain: the first commit that did not pick cleanly
    conflicts: tuple[str, ...] = ()  # chain: the paths it conflicts in

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "branch": self.branch,
            "base": self.base,
            "base_branch": self.base_branch,
            "head": self.head,
            "commits": list(self.commits),
        }
        if self.kind == "bundle":
            out["ejected"] = list(self.ejected)
        else:
            out["stopped_at"] = self.stopped_at
            out["conflicts"] = list(self.conflicts)
        return out


@dataclass(frozen=True)
class BuildResult:
    bundles: tuple[Built, ...]
    chains: tuple[Built, ...]
    # The plan's chains plus those made by ejection: what to record as open chains.
    open_chains: tuple[Chain, ...] = field(default=())

    def as_json(self) -> dict[str, Any]:
        return {
            "bundles": [b.as_json() for b in self.bundles],
            "chains": [c.as_json() for c in self.chains],
            "ejected": sorted(sha for b in self.bundles for sha in b.ejected),
        }


@dataclass(frozen=True)
class PickStyle:
    """How built commits are written: trailer template, upstream web URL, committer."""

    trailer: str = "(cherry picked from commit {sha})"
    upstream_url: str | None = None
    committer: tuple[str, str] = BOT_COMMITTER


def pr_number(message: str) -> int | None:
    """The upstream PR a squash-merge subject (``... (#123)``) or a merge subject names."""
    subject = message.split("\n", 1)[0]
    m = _SQUASH_PR.search(subject) or _MERGE_PR.match(subject)
    return int(m.group(1)) if m else None


def pick_message(message: str, sha: str, style: PickStyle) -> str:
    """Upstream message, then the upstream PR link and the trailer naming the upstream commit."""
    lines = []
    pr = pr_number(message)
    if pr is not None:
        lines.append(f"{style.upstream_url.rstrip('/')}/pull/{pr}" if style.upstream_url else f"Upstream-PR: #{pr}")
    lines.append(style.trailer.replace("{sha}", sha))
    return message.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n"


class _Builder:
    def __init__(
        self, repo: pygit2.Repository, changes: Mapping[str, CommitChanges], style: PickStyle
    ) -> None:
        self.repo = repo
        self.changes = changes
        self.style = style

    def commit(self, sha: str, tree: pygit2.Oid, parent: pygit2.Oid) -> pygit2.Oid:
        upstream = self.repo.get(sha)
        assert isinstance(upstream, pygit2.Commit)
        author = upstream.author
        committer = pygit2.Signature(
            self.style.committer[0], self.style.committer[1], upstream.commit_time, upstream.commit_time_offset
        )
        message = pick_message(upstream.message, sha, self.style)
        return self.repo.create_commit(None, author, committer, message, tree, [parent])

    def run(self, base: pygit2.Oid, commits: Sequence[str], stop_at_conflict: bool) -> tuple[
        pygit2.Oid, list[str], list[str], list[tuple[str, tuple[str, ...], str]]
    ]:
        """Pick ``commits`` onto ``base``: (head, carried, picks, failures (sha, paths, error))."""
        base_commit = self.repo.get(base)
        assert isinstance(base_commit, pygit2.Commit)
        target = PickTarget(self.repo, base_commit.tree.id)
        head = base
        carried: list[str] = []
        picks: list[str] = []
        failures: list[tuple[str, tuple[str, ...], str]] = []
        for sha in commits:
            result = target.pick(self.changes[sha])
            if not result.clean:
                failures.append((sha, result.conflicts, result.error))
                if stop_at_conflict:
                    break
                continue
            head = self.commit(sha, target.tree(), head)
            carried.append(sha)
            picks.append(str(head))
        return head, carried, picks, failures


def build(
    repo: pygit2.Repository,
    plan: Plan,
    fork_tip: str,
    fork_branch: str,
    changes: Mapping[str, CommitChanges],
    order: Sequence[str],
    style: PickStyle = PickStyle(),
) -> BuildResult:
    """Build every bundle and chain of ``plan`` as commits in ``repo`` (no refs are written).

    ``changes`` must hold every planned commit; ``order`` is the upstream order of the walk
    (it decides which bundle a chain is built on).
    """
    position = {sha: i for i, sha in enumerate(order)}
    builder = _Builder(repo, changes, style)
    head = pygit2.Oid(hex=fork_tip)
    base_branch = fork_branch
    stack: list[tuple[int, pygit2.Oid, str]] = []  # (first position, head, branch) per bundle
    bundles: list[Built] = []
    ejected_chains: list[_Ejected] = []
    taken = {c.id for c in plan.chains}
    for bundle in plan.bundles:
        branch = BUNDLE_BRANCH + short(bundle.commits[0])
        new_head, carried, picks, failures = builder.run(head, bundle.commits, stop_at_conflict=False)
        for sha, paths, error in failures:
            _eject(sha, paths, error, branch, changes, ejected_chains, taken)
        bundles.append(
            Built("bundle", bundle.id, branch, str(head), base_branch, str(new_head), tuple(carried), tuple(picks),
                  ejected=tuple(sha for sha, _, _ in failures))
        )
        stack.append((position[bundle.commits[0]], new_head, branch))
        head, base_branch = new_head, branch

    open_chains = [*plan.chains, *(e.chain() for e in ejected_chains)]
    open_chains.sort(key=lambda c: position[c.commits[0]])
    built_chains = []
    for chain in open_chains:
        first = position[chain.commits[0]]
        base, base_name = pygit2.Oid(hex=fork_tip), fork_branch
        for start, bundle_head, bundle_branch in stack:
            if start < first:
                base, base_name = bundle_head, bundle_branch
        new_head, carried, picks, failures = builder.run(base, chain.commits, stop_at_conflict=True)
        stopped = failures[0] if failures else None
        built_chains.append(
            Built(
                "chain", chain.id, CHAIN_BRANCH + chain.id.removeprefix("chain-"), str(base), base_name,
                str(new_head), tuple(carried), tuple(picks),
                stopped_at=stopped[0] if stopped else None, conflicts=stopped[1] if stopped else (),
            )
        )
    return BuildResult(tuple(bundles), tuple(built_chains), tuple(open_chains))


@dataclass
class _Ejected:
    id: str
    commits: list[str]
    reasons: list[Reason]
    files: set[str]
    symbols: set[str]

    def chain(self) -> Chain:
        return Chain(self.id, tuple(self.commits), tuple(self.reasons))


def _eject(
    sha: str,
    paths: tuple[str, ...],
    error: str,
    branch: str,
    changes: Mapping[str, CommitChanges],
    ejected: list[_Ejected],
    taken: set[str],
) -> None:
    change = changes[sha]
    for chain in ejected:
        files = sorted(set(change.paths) & chain.files)
        symbols = sorted(change.symbols & chain.symbols)
        if files or symbols:
            kind, what = ("file", files[0]) if files else ("symbol", f"symbol {symbols[0]}")
            chain.commits.append(sha)
            chain.reasons.append(Reason(sha, kind, f"ejected from {branch}; touches {what} of {chain.id}"))
            chain.files.update(change.paths)
            chain.symbols.update(change.symbols)
            return
    detail = f"ejected from {branch}: pick conflicts in {', '.join(paths)}" if paths else (
        f"ejected from {branch}: {error}"
    )
    chain_id, n = f"chain-{short(sha)}", 2
    while chain_id in taken:
        chain_id, n = f"chain-{short(sha)}-{n}", n + 1
    taken.add(chain_id)
    ejected.append(_Ejected(chain_id, [sha], [Reason(sha, "conflict", detail)], set(change.paths), set(change.symbols)))
