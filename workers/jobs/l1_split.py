"""The executor of a red bundle's split (see ``workers.testing.red_bundle``): each subset of the
bundle's commits is built in memory on the merge-base (``git merge-tree``, no work tree) and L1
runs on it; ``find_culprits`` bisects; culprits are ejected through ``eject`` (the chains ref);
the bundle is rebuilt without them here, in memory on the same base, and force-pushed to the
PR's branch through ``push`` (the L1 job re-tests it in the same PR), and ``rebuild`` (an ingest)
opens the chains' PRs."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.config import RepoConfig
from workers.engine.git import Repository
from workers.testing.l1 import failing_test_ids, run_l1_for_ref
from workers.testing.red_bundle import SplitPlan, culprit_reason, upstream_of
from workers.testing.split import SplitResult, failing_tests_oracle, find_culprits
from workers.testing.triage import TrunkResults

log = logging.getLogger(__name__)

# eject(upstream sha, reason) -> the chain it went into (None: it could not be ejected)
Eject = Callable[[str, str], str | None]


@dataclass(frozen=True)
class Culprit:
    fork_sha: str
    subject: str
    upstream_sha: str | None
    chain: str | None
    tests: tuple[str, ...]


@dataclass(frozen=True)
class SplitOutcome:
    result: SplitResult
    culprits: tuple[Culprit, ...]
    commits: int
    rebuilt: bool  # the ingest was asked to rebuild (chain PRs for the ejected commits)
    # The bundle rebuilt here without its ejected culprits (in memory, on the same base) and
    # force-pushed to the PR's branch; the caller re-tests it in the same PR.
    rebuilt_head: str | None = None
    not_rebuilt: str = ""  # why it was not rebuilt here although culprits were ejected
    # Who had approved the old head: the force-push overran their approval, so the PR says so
    # and asks them to review again (never a silent force-push over a review).
    overrun_approvals: tuple[str, ...] = ()


def build_subset(cache: Repository, base: str, commits: Sequence[str]) -> str | None:
    """A commit: ``base`` plus ``commits`` cherry-picked in order, in memory (libgit2's three-way
    tree merge, no work tree); None on a conflict."""
    import pygit2

    repo = pygit2.Repository(str(cache.path))
    current = repo[base].peel(pygit2.Commit)
    for sha in commits:
        commit = repo[sha].peel(pygit2.Commit)
        index = repo.merge_trees(commit.parents[0].tree, current.tree, commit.tree)
        if index.conflicts is not None:
            return None  # it cannot be built without a commit this subset leaves out
        tree = index.write_tree(repo)
        oid = repo.create_commit(None, commit.author, commit.committer, commit.message, tree, [current.id])
        current = repo[oid].peel(pygit2.Commit)
    return str(current.id)


def split_bundle(
    cache: Repository,
    repo: str,
    head: str,
    merge_base: str,
    config: RepoConfig,
    plan: SplitPlan,
    *,
    pr: int,
    data_dir: Path,
    results: TrunkResults,
    eject: Eject | None,
    rebuild: Callable[[], None] | None,
    max_runs: int,
    push: Callable[[str], None] | None = None,
) -> SplitOutcome:
    """Bisect the bundle ``merge_base..head`` for the commits that make ``plan.targets`` fail,
    eject them, and rebuild the bundle without the ejected ones: ``push(sha)`` force-pushes the
    rebuilt head to the PR's branch (None: the ingest's rebuild alone)."""
    commits = cache.text("rev-list", "--reverse", "--first-parent", f"{merge_base}..{head}").split()
    seen: dict[tuple[str, ...], frozenset[str]] = {}

    def run_subset(subset: Sequence[str]) -> frozenset[str]:
        key = tuple(subset)
        if key not in seen:
            built = build_subset(cache, merge_base, subset)
            if built is None:
                seen[key] = plan.targets  # unbuildable without what it leaves out: as bad as the failure
            else:
                run = run_l1_for_ref(
                    cache.path,
                    built,
                    config,
                    data_dir=data_dir,
                    suite_names=plan.suites,
                    base_ref=merge_base,
                    results=results,
                    infra_retries=0,
                )
                seen[key] = failing_test_ids(run)
        return seen[key]

    result = find_culprits(commits, failing_tests_oracle(run_subset, plan.targets), max_runs=max_runs)
    culprits = []
    for sha in result.culprits:
        message = cache.text("log", "-1", "--format=%B", sha)
        upstream = upstream_of(message, config.ledger.trailer_patterns)
        tests = tuple(sorted(plan.targets))
        chain = eject(upstream, culprit_reason(tests, pr)) if eject and upstream else None
        culprits.append(Culprit(sha, message.splitlines()[0] if message else "", upstream, chain, tests))
    ejected = {c.fork_sha for c in culprits if c.chain}
    rebuilt_head, not_rebuilt = None, ""
    if ejected and push is not None:
        remaining = [sha for sha in commits if sha not in ejected]
        if not remaining:
            not_rebuilt = "every commit of the bundle was ejected: the next ingest closes or replans it"
        else:
            # The same picks (authors, committer, messages) on the same base: the commits the
            # bundle builder makes for this bundle without them, so the ingest's rebuild agrees.
            rebuilt_head = build_subset(cache, merge_base, remaining)
            if rebuilt_head is None:
                not_rebuilt = (
                    "the remaining commits conflict without the ejected ones: the next ingest replans them"
                )
            else:
                push(rebuilt_head)
    rebuilt = False
    if rebuild is not None and ejected:
        rebuild()
        rebuilt = True
    log.info(
        "L1 split %s#%d: %d commit(s), culprits %s in %d run(s), rebuilt %s",
        repo,
        pr,
        len(commits),
        [c.fork_sha[:12] for c in culprits],
        len(result.runs),
        (rebuilt_head or "no")[:12],
    )
    return SplitOutcome(result, tuple(culprits), len(commits), rebuilt, rebuilt_head, not_rebuilt)


def chain_ejector(config: RepoConfig, upstream_location: str, fork_location: str, token: str | None) -> Eject:
    """``eject`` for a worker: move the upstream commit into a chain of its own in the fork's
    chains ref (as ``/chain`` does, the reason naming the failing test); None when it cannot."""

    def eject(upstream_sha: str, reason: str) -> str | None:
        from core.errors import ForksyncError
        from workers.commands.services import git_auth
        from workers.engine.pair import open_pair
        from workers.engine.planning import move_commit

        try:
            with git_auth(token, fork_location):
                pair = open_pair(
                    upstream_location,
                    fork_location,
                    config.upstream.branch,
                    config.fork.branch,
                    notes_ref=config.ledger.notes_ref,
                )
                record = move_commit(pair, config, upstream_sha, "add", detail=reason)
        except ForksyncError as exc:
            log.warning("L1 split: could not eject %s: %s", upstream_sha[:12], exc)
            return None
        return record.id if record is not None else None

    return eject
