"""The engine as the ingestion loop calls it: ledger → partition → bundle build → refs in the fork cache.

One function, :func:`run_engine`, composes the engine modules (pair, ledger, changes, partition,
pick, bundle, chains) on the worker's two bare caches and returns the texts to post. Built
branches and the chain record are written into the fork cache (as ``pair.push_to_fork`` does
for any local fork); the executor then pushes them to the real fork. Deterministic: the same
caches and config give the same plan id, branches and shas.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import pygit2

from bot.config import RepoConfig
from bot.render.ingest import BundleView, ChainView, CommitRow, IngestionFigures
from workers.engine.bundle import PickStyle, build
from workers.engine.chains import CHAINS_REF, prepare_chains, read_chains
from workers.engine.changes import CommitChanges, commit_changes
from workers.engine.decisions import Disposition
from workers.engine.git import Repository
from workers.engine.ledger import Ledger, load_ledger
from workers.engine.pair import Pair, normalise_web_url, open_pair
from workers.engine.partition import Change, Plan, partition
from workers.engine.pick import PickTarget
from workers.engine.symbols import stoplist
from workers.ingestion import EngineOutput


class _TrialOnForkTip:
    """The partition's Trial: picks in memory onto the fork tip plus every clean pick before."""

    def __init__(self, repo: pygit2.Repository, fork_tip: str, changes: Mapping[str, CommitChanges]) -> None:
        commit = repo.get(fork_tip)
        assert isinstance(commit, pygit2.Commit)
        self.target: PickTarget = PickTarget(repo, commit.tree.id)
        self.changes: Mapping[str, CommitChanges] = changes

    def try_pick(self, sha: str) -> tuple[str, ...]:
        result = self.target.pick(self.changes[sha])
        if result.clean:
            return ()
        return result.conflicts or ("(merge failed: " + result.error + ")",)


def plan_id(pair: Pair, plan: Plan) -> str:
    """A short, stable id of this plan: the tips it was made from and its JSON."""
    digest = hashlib.sha256(f"{pair.upstream_tip}\0{pair.fork_tip}\0{plan.to_json()}".encode()).hexdigest()
    return digest[:12]


def _row(ledger: Ledger, sha: str, note: str = "") -> CommitRow:
    entry = ledger.entry(sha)
    if entry is None:
        return CommitRow(sha=sha, subject="(not in the upstream range)", author="?", note=note)
    return CommitRow(sha=sha, subject=entry.subject, author=entry.author, pr=entry.pr_number, note=note)


def run_engine(upstream: Repository, fork: Repository, upstream_branch: str, fork_branch: str, config: RepoConfig) -> EngineOutput:
    pair = open_pair(str(upstream.path), str(fork.path), upstream_branch, fork_branch, notes_ref=config.ledger.notes_ref)
    web_url = normalise_web_url(config.upstream.url) if config.upstream.url else None
    ledger = load_ledger(pair, config.ledger, upstream_url=web_url)
    order = [e.sha for e in (*ledger.backlog_commits, *ledger.pending_commits)]
    repo = pygit2.Repository(str(pair.repo.path))
    stop = stoplist(config.risk.symbol_stoplist)
    changes = {sha: commit_changes(repo, sha, stop) for sha in order}
    store = read_chains(pair)
    # Members of recorded chains that are no longer to place still link by file and symbol.
    history: dict[str, Change] = {}
    for record in store.records:
        for sha in record.commits:
            if sha not in changes and repo.get(sha) is not None:
                c = commit_changes(repo, sha, stop)
                history[sha] = Change(sha, c.paths, c.symbols, c.lines)
    walk = [Change(sha, changes[sha].paths, changes[sha].symbols, changes[sha].lines) for sha in order]
    deferred = [e.sha for e in ledger.with_disposition(Disposition.DEFERRED)]
    plan = partition(walk, config, _TrialOnForkTip(repo, pair.fork_tip, changes), store.records, history, deferred)
    built = build(repo, plan, pair.fork_tip, fork_branch, changes, order, PickStyle(config.ledger.trailer, web_url))

    for b in (*built.bundles, *built.chains):
        pair.push_to_fork(b.head, f"refs/heads/{b.branch}", force=True)
    chains_commit = prepare_chains(
        repo, store, [c.record() for c in built.open_chains], f"forksync: record {len(built.open_chains)} open chains"
    )
    if chains_commit is not None:
        pair.push_to_fork(chains_commit, CHAINS_REF)

    pid = plan_id(pair, plan)
    reasons = {r.commit: f"{r.kind}: {r.detail}" for c in built.open_chains for r in c.reasons}
    bundles = tuple(
        BundleView(
            key=b.id,
            branch=b.branch,
            base_branch=b.base_branch,
            commits=tuple(_row(ledger, sha) for sha in b.commits),
            plan_id=pid,
            ejected=tuple(_row(ledger, sha, reasons.get(sha, "failed to apply at build time")) for sha in b.ejected),
        )
        for b in built.bundles
        if b.commits
    )
    chains = tuple(
        ChainView(
            key=c.id,
            branch=c.branch if c.picks else None,
            commits=tuple(_row(ledger, sha, reasons.get(sha, "")) for sha in _chain_members(built.open_chains, c.id)),
            conflicts=c.conflicts,
            reproduce=reproduce_command(config, fork_branch, _chain_members(built.open_chains, c.id)),
            plan_id=pid,
        )
        for c in built.chains
    )
    m = ledger.metrics
    figures = IngestionFigures(
        days_behind=m.days_behind,
        backlog=m.backlog,
        pending=m.pending,
        picked=m.picked,
        frontier=m.frontier,
        upstream_tip=m.upstream_tip,
        bundles=len(bundles),
        chains=len(chains),
    )
    return EngineOutput(figures=figures, plan_id=pid, bundles=bundles, chains=chains, upstream_web_url=web_url)


def _chain_members(chains: tuple[object, ...], chain_id: str) -> tuple[str, ...]:
    for chain in chains:
        if getattr(chain, "id", None) == chain_id:
            return tuple(getattr(chain, "commits", ()))
    return ()


def reproduce_command(config: RepoConfig, fork_branch: str, commits: tuple[str, ...]) -> str:
    """Shell lines a maintainer runs in a clone of the fork to replay the chain and meet its conflicts."""
    upstream = config.upstream.url or "<upstream url>"
    return "\n".join(
        [
            f"git fetch {upstream} {config.upstream.branch}",
            f"git switch -c forksync-chain-replay origin/{fork_branch}",
            f"git cherry-pick -x {' '.join(sha[:12] for sha in commits)}",
        ]
    )
