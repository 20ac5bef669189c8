"""Plan, build and record for an upstream/fork pair: the ledger and git side of the partition.

``make_plan(pair, config)`` reads the ledger and the recorded chains and runs the pure partition
with trial picks onto the fork tip; each commit's analysis (paths, size, symbols, line
dependencies) is made in memory as the partition reaches it, or earlier while git merges a trial
pick (:mod:`workers.engine.analyses`). Commits marked ``urgent`` and not carried yet stay out of
the partition: each becomes an urgent bundle of its own (``Plan.urgent``), trial-picked alone
onto the fork tip. ``build_and_record`` builds the branches and writes them, with the chain
record, to the fork in one atomic push. ``move_commit`` applies ``forksync chain add/remove``.

Who writes what: ``plan`` only reads. ``bundle`` writes the branches and records the open
chains (ejected commits included); ``chain`` records the moved commit. The next run of any of
them reads the record, so dependents keep joining a chain even once its seed no longer
conflicts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pygit2

from core.config import RepoConfig
from core.errors import ForksyncError
from workers.engine.analyses import Dependencies, PlanAnalyses
from workers.engine.bundle import BuildResult, PickStyle, Resolver, build, bundle_branch
from workers.engine.chains import CHAINS_REF, ChainStore, prepare_chains, read_chains
from workers.engine.changes import AnalysisCache, CommitChanges, commit_changes
from workers.engine.cycles import no_cycle_collection
from workers.engine.decisions import Disposition, read_decisions
from workers.engine.git import GitError, Repository
from workers.engine.healing import HealNote, heal
from workers.engine.ids import fresh_ids
from workers.engine.ledger.cache import load_ledger
from workers.engine.ledger.records import Ledger
from workers.engine.lines import LineDep, line_dependencies
from workers.engine.merges import GitMerger, MergeCache
from workers.engine.pair import FORK_NOTES_REF, Pair
from workers.engine.partition.records import ChainRecord, Change, Plan, Reason, Urgent
from workers.engine.partition.walk import partition
from workers.engine.parts import PartRecord
from workers.engine.pick import PickTarget
from workers.engine.symbols import last_name, stoplist
from workers.engine.treenames import TreeNames

if TYPE_CHECKING:
    from workers.engine.resolve.history import FileHistory


@dataclass(frozen=True)
class Planned:
    """A plan with what produced it, for building and recording."""

    plan: Plan
    order: tuple[str, ...]  # the walk: commits to place, upstream order
    changes: dict[str, CommitChanges]
    store: ChainStore
    ledger: Ledger
    notes: tuple[HealNote, ...] = ()  # what healing did to the recorded chains this run
    # git's merge outcomes of the trial picks: the build makes the same picks onto the trunk again
    merges: MergeCache | None = None


class TipTrial:
    """Trial picks onto the fork tip plus everything bundled so far (one in-memory target), one
    target per open chain for the partition's ``pick`` rule (``partition.trials.ChainTrial``), and
    the fork tip plus the current bundle alone (``partition.trials.BundleTrial``: bundles land
    independently)."""

    def __init__(self, target: PickTarget, changes: Mapping[str, CommitChanges]) -> None:
        self.target = target
        self.changes = changes
        self.trunk = target.tree()
        self.alone: PickTarget | None = None  # the trunk plus the current bundle (trials.BundleTrial)
        self._trunk_target: PickTarget | None = None  # the trunk, never picked onto (prefetch only)
        # Chain targets are built lazily: only a conflicting commit asks for one (the pick rule),
        # so most chains never pay for picking their members a second time.
        self.chains: dict[str, PickTarget] = {}
        self.waiting: dict[str, list[str]] = {}  # chain → members not yet picked onto its target
        # chain → the running bundle as it stood at the chain's first member: a copy, whose tree is
        # written only if the pick rule ever asks that chain (most are never asked)
        self.started: dict[str, PickTarget] = {}

    def try_pick(self, sha: str) -> tuple[str, ...]:
        change = self.changes[sha]
        # A commit that picks cleanly here is bundled next, and picked onto the trunk plus the
        # current bundle (bundle_add, picks_alone): start that merge now, beside this one.
        self._next_bundle_target().prefetch(change)
        return _conflicts(self.target, change)

    def _next_bundle_target(self) -> PickTarget:
        if self.alone is not None:
            return self.alone
        if self._trunk_target is None:
            self._trunk_target = PickTarget(self.target.repo, self.trunk, self.target.merger)
        return self._trunk_target

    def picks_alone(self, sha: str, fresh: bool) -> bool:
        if fresh or self.alone is None:
            return PickTarget(self.target.repo, self.trunk, self.target.merger).pick(self.changes[sha]).clean
        return self.alone.scratch().pick(self.changes[sha]).clean

    def bundle_add(self, sha: str) -> None:
        if self.alone is None:
            self.alone = PickTarget(self.target.repo, self.trunk, self.target.merger)
        self.alone.pick(self.changes[sha])  # a commit that conflicts here is ejected at build, on the trunk

    def bundle_close(self) -> None:
        self.alone = None

    def chain_add(self, chain_id: str, sha: str) -> None:
        if chain_id not in self.started:
            self.started[chain_id] = self.target.scratch()
        self.waiting.setdefault(chain_id, []).append(sha)

    def chain_merge(self, keep: str, other: str, members: Sequence[str]) -> None:
        self.chains.pop(other, None)
        self.started.pop(other, None)
        self.waiting.pop(other, None)
        self.waiting.setdefault(keep, []).extend(members)

    def picks_with(self, chain_id: str, sha: str) -> bool:
        if chain_id not in self.started:
            return False
        target = self.chains.get(chain_id)
        if target is None:
            target = self.chains[chain_id] = self.started[chain_id]
        members = self.waiting.pop(chain_id, [])
        for i, member in enumerate(members):
            change = self.changes[member]
            # A member git must merge mostly conflicts here too (it is in the chain for it) and
            # leaves the target as it is: start the next one's merge onto it now, beside this one.
            # A member settled without git moves the target: the next merge would be onto the
            # wrong tree, so it starts only once this one is applied.
            if target.needs_git(change):
                target.prefetch(self.changes[members[i + 1] if i + 1 < len(members) else sha])
            target.pick(change)  # a conflicting member waits for its resolution: not applied
        return target.scratch().pick(self.changes[sha]).clean


def _conflicts(target: PickTarget, change: CommitChanges) -> tuple[str, ...]:
    result = target.pick(change)
    if result.error:
        return (f"(no merge possible: {result.error})",)
    return result.conflicts


def urgent_commits(ledger: Ledger) -> tuple[str, ...]:
    """Commits marked urgent that the fork does not carry yet, upstream order.

    They are taken out of the walk: each gets an urgent bundle of its own, built on the fork tip.
    Once its pick lands, the ledger counts it ``urgent`` (the decision note says so), which never
    moves the frontier.
    """
    return tuple(e.sha for e in ledger.entries if e.disposition is Disposition.URGENT and not e.carriers)


def urgent_trial(repo: pygit2.Repository, fork_tip: str, change: CommitChanges) -> tuple[str, ...]:
    """Conflicting paths of ``change`` picked alone onto the fork tip (empty: it picks cleanly)."""
    tip = repo.get(fork_tip)
    assert isinstance(tip, pygit2.Commit)
    return _conflicts(PickTarget(repo, tip.tree.id, GitMerger(repo)), change)


def as_change(
    c: CommitChanges,
    depends: Mapping[str, tuple[LineDep, ...]] | None = None,
    known: frozenset[str] = frozenset(),
) -> Change:
    """The partition's view of an analysed commit: its line dependencies from ``depends`` (by sha),
    and the names it introduces less those the fork already has (``known``)."""
    return Change(
        c.sha,
        c.paths,
        c.symbols,
        c.lines,
        depends=(depends or {}).get(c.sha, ()),
        defined=c.defined,
        introduced=frozenset(s for s in c.introduced if last_name(s) not in known),
        used=c.used,
    )


def history_dependencies(
    ledger: Ledger, changes: Mapping[str, CommitChanges], context: int
) -> dict[str, tuple[LineDep, ...]]:
    """Line dependencies of every upstream commit after the base, in one pass over the history."""
    return line_dependencies(
        [(e.sha, changes[e.sha].ranges) for e in ledger.entries if e.sha in changes], context
    )


def walk_of(ledger: Ledger, decided_deferred: set[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(commits to place in upstream order: backlog holes then pending; deferred commits).

    The ledger calls every hole behind the frontier ``deferred``; only those a maintainer
    *marked* deferred stay out of bundles and chains (listed apart), the other holes are placed
    first, oldest first, like the issue's walk says.
    """
    entries = (*ledger.backlog_commits, *ledger.pending_commits)
    deferred = tuple(e.sha for e in ledger.entries if e.sha in decided_deferred and not e.carriers)
    walk = [e.sha for e in entries if e.sha not in decided_deferred]
    return tuple(dict.fromkeys(walk)), tuple(dict.fromkeys(deferred))


def marked_deferred(pair: Pair) -> set[str]:
    """Upstream commits a maintainer marked deferred in the fork's decisions notes."""
    decisions = read_decisions(pair.repo, FORK_NOTES_REF if pair.fork_notes_tip else None)
    return {sha for sha, d in decisions.by_sha.items() if d.disposition is Disposition.DEFERRED}


def make_plan(
    pair: Pair,
    config: RepoConfig,
    *,
    ledger: Ledger | None = None,
    store: ChainStore | None = None,
    declined: Collection[str] = (),
) -> Planned:
    """Partition the pair's pending and backlog commits (reads only; writes nothing to the fork).

    ``declined``: ids of bundles whose PR a maintainer closed unmerged (nothing is stacked on them).

    While git merges a trial pick, the plan reads ahead: the analyses of the commits it will
    place next and their line dependencies are made as they are first needed, or while the plan
    would otherwise wait for git (:mod:`workers.engine.analyses`). The fork's names come from one
    ``git grep`` that runs meanwhile (:mod:`workers.engine.treenames`). The trial picks' objects
    are the cache's to keep tidy afterwards (:meth:`~workers.engine.pair.Pair.tidy`)."""
    read_objects_as_git()
    with contextlib.closing(TreeNames(pair.repo, pair.fork_tip)) as fork_names, no_cycle_collection():
        planned = _plan(pair, config, fork_names, ledger, store, declined)
    pair.tidy()
    return planned


def read_objects_as_git() -> None:
    """libgit2 reads objects as git does: without hashing each object again to check its id (its
    ``strict hash verification``, on by default). git checks ids where objects come in (fetch,
    ``fsck``), not on every read; a plan reads ~1,800 blobs and many trees, and the re-hash is
    ~40% of a blob read's CPU (3,000 Triton blobs: 0.21 -> 0.12 s). Process-wide, once set."""
    pygit2.settings.enable_strict_hash_verification(False)


def _plan(
    pair: Pair,
    config: RepoConfig,
    fork_names: TreeNames,
    ledger: Ledger | None,
    store: ChainStore | None,
    declined: Collection[str],
) -> Planned:
    ledger = ledger or load_ledger(pair, config.ledger, upstream_url=config.upstream.url)
    store = store if store is not None else read_chains(pair)
    repo = pygit2.Repository(str(pair.repo.path))
    walk, deferred = walk_of(ledger, marked_deferred(pair))
    urgent = urgent_commits(ledger)
    hurried_set = set(urgent)
    walk = tuple(s for s in walk if s not in hurried_set)
    stop = stoplist(config.risk.symbol_stoplist)
    line_mode = config.risk.link == "line"
    # In upstream order, the order the walk reads them. Already picked history is read for its
    # hunk ranges only (line dependencies), not its symbols.
    order = (*(e.sha for e in ledger.entries), *urgent, *walk) if line_mode else (*urgent, *walk)
    analyses = PlanAnalyses(
        repo, pair.repo, AnalysisCache(pair.cache_dir, stop), order, stop, {*urgent, *walk}
    )
    with contextlib.closing(analyses) as changes:
        return _placed(
            pair, config, repo, stop, fork_names, changes, ledger, store, declined, walk, deferred, urgent
        )


def _placed(
    pair: Pair,
    config: RepoConfig,
    repo: pygit2.Repository,
    stop: frozenset[str],
    fork_names: TreeNames,
    changes: PlanAnalyses,
    ledger: Ledger,
    store: ChainStore,
    declined: Collection[str],
    walk: tuple[str, ...],
    deferred: tuple[str, ...],
    urgent: tuple[str, ...],
) -> Planned:
    """The partition of ``walk`` with its analyses (``changes``), made as it reads them."""
    line_mode = config.risk.link == "line"
    history_order = [e.sha for e in ledger.entries]
    depends = Dependencies(history_order, changes, config.risk.context_lines) if line_mode else None
    in_walk = set(walk)
    history: dict[str, Change] = {}
    for record in store.records:
        for sha in record.commits:
            entry = ledger.entry(sha)
            if sha in in_walk or entry is None:
                continue
            if entry.disposition in (Disposition.PICKED, Disposition.URGENT) and sha not in history:
                history[sha] = as_change(commit_changes(repo, sha, stop))
    fork_tip = repo.get(pair.fork_tip)
    assert isinstance(fork_tip, pygit2.Commit)
    merger = GitMerger(repo, MergeCache.open(pair.cache_dir, repo))
    # While git merges: the analyses and dependencies still to make, then the cache's rows.
    first = depends.read_ahead if depends is not None else changes.read_ahead
    merger.idle = lambda: first() or changes.encode_ahead()
    trial = TipTrial(PickTarget(repo, fork_tip.tree.id, merger), changes)

    def change_of(sha: str) -> Change:
        c = changes[sha]
        return as_change(c, depends, fork_names.having(last_name(n) for n in c.introduced))

    walk_changes = OnDemand(walk, change_of)
    carried = frozenset(
        sha for r in store.records for sha in r.commits if (e := ledger.entry(sha)) is not None and e.carriers
    )
    records, notes = heal(store.records, walk_changes, walk, config.risk.link, carried)
    try:
        plan = partition(
            (walk_changes[s] for s in walk),
            config,
            trial,
            records,
            history,
            deferred,
            declined,
            store.parts,
            order=walk,
        )
    finally:
        merger.close()
    assert merger.cache is not None
    merger.cache.save()
    changes.save()
    everything = changes.complete()
    hurried = tuple(
        Urgent(name, s, urgent_trial(repo, pair.fork_tip, everything[s]))
        for s, name in zip(urgent, fresh_ids("urgent", urgent), strict=True)
    )
    plan = dataclasses.replace(plan, urgent=hurried)
    return Planned(plan, walk, dict(everything), store, ledger, notes, merger.cache)


class OnDemand(Mapping[str, Change]):
    """The partition's view of each commit of ``order``, made by ``make`` when first asked."""

    def __init__(self, order: Sequence[str], make: Callable[[str], Change]) -> None:
        self._order = order
        self._known = set(order)
        self._make = make
        self._made: dict[str, Change] = {}

    def __getitem__(self, sha: str) -> Change:
        if sha not in self._known:
            raise KeyError(sha)
        made = self._made.get(sha)
        if made is None:
            made = self._made[sha] = self._make(sha)
        return made

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)


def pick_style(pair: Pair, config: RepoConfig) -> PickStyle:
    """How built commits are written; refuses a trailer the ledger would not recognise.

    A built commit whose trailer no ``ledger.trailer_patterns`` regex matches would never count
    as picked once merged, and forksync would offer the same upstream commit again forever.
    """
    sample = "0123456789abcdef" * 2 + "01234567"
    text = config.ledger.trailer.replace("{sha}", sample)
    if not any(
        (m := re.search(p, text)) is not None and m.groupdict().get("sha") == sample
        for p in config.ledger.trailer_patterns
    ):
        raise ForksyncError(
            f"ledger.trailer {config.ledger.trailer!r} is not matched by any ledger.trailer_patterns regex, "
            "so the ledger would not recognise the commits forksync builds",
            "add a pattern for it to ledger.trailer_patterns, or use the default trailer",
        )
    name, _, email = config.bundle.committer.rpartition(" <")
    return PickStyle(
        trailer=config.ledger.trailer,
        upstream_url=config.upstream.url or pair.upstream_url,
        committer=(name.strip(), email.rstrip(">")),
    )


def build_and_record(
    pair: Pair,
    config: RepoConfig,
    planned: Planned,
    push: str | None = None,
    resolver: Resolver | None = None,
) -> BuildResult:
    """Build every branch and write them with the chain record to the fork in one atomic push.

    Chains are built through their conflicts by ``resolver`` (the conflict-resolution pipeline,
    ``workers.engine.resolve.resolve_pick``, unless another is given)."""
    style = pick_style(pair, config)
    repo = pygit2.Repository(str(pair.repo.path))
    # resolve imports bundle: here, not at the top
    from workers.engine.resolve.pick import resolve_pick

    if resolver is None:
        resolver = functools.partial(resolve_pick, history=fork_history(pair, planned))
    result = build(
        repo,
        planned.plan,
        pair.fork_tip,
        pair.fork_branch,
        planned.changes,
        planned.order,
        style,
        resolver=resolver,
        resolver_config=config,
        merges=planned.merges,
    )
    if planned.merges is not None:
        planned.merges.save()
    records = _records(planned, [c.record() for c in result.open_chains])
    updates: list[tuple[str, str, bool]] = [
        (b.head, f"refs/heads/{b.branch}", True) for b in (*result.bundles, *result.chains)
    ]
    # An urgent pick that conflicts has nothing to show: no branch (the plan and the PR or issue
    # text name its conflicting files instead).
    updates += [(u.head, f"refs/heads/{u.branch}", True) for u in result.urgent if u.picks]
    # The bundles are recorded too: the next plan keeps their ids (so branches and PRs) across a re-cut.
    parts = [PartRecord(b.id, b.commits) for b in planned.plan.bundles]
    chains_commit = prepare_chains(
        repo, planned.store, records, "forksync bundle: record open chains and built bundles", parts
    )
    if chains_commit:
        updates.append((chains_commit, CHAINS_REF, False))
    publish(pair, updates, push, chains_commit or planned.store.tip)
    return result


def fork_history(pair: Pair, planned: Planned) -> FileHistory:
    """Why the fork lacks a file a chain member changes: the fork's history since the fork point,
    the ledger's carried commits, and where the plan put the upstream commit that brings the file."""
    from workers.engine.resolve.history import GitFileHistory, plan_locator  # resolve imports bundle

    plan = planned.plan
    bundles = {sha: (b.id, bundle_branch(b)) for b in plan.bundles for sha in b.commits}
    chains = {sha: c.id for c in plan.chains for sha in c.commits}
    carried = frozenset(e.sha for e in planned.ledger.entries if e.carriers)
    where = plan_locator(bundles, chains, plan.deferred, [u.commit for u in plan.urgent])
    return GitFileHistory(pair.repo, pair.base, pair.fork_tip, carried=carried, where=where)


def _records(planned: Planned, records: Sequence[ChainRecord]) -> list[ChainRecord]:
    """The new record: the open chains, plus recorded chains none of whose live members was
    placed this run (all deferred for now): kept as they were, so they come back with them.
    A recorded chain merged into another this run is not kept: its members moved with it."""
    kept = {r.id: r for r in records}
    placed = set(planned.order)
    for old in planned.store.records:
        if old.id in kept:
            continue
        alive = [
            s
            for s in old.commits
            if (e := planned.ledger.entry(s)) is not None
            and not e.carriers
            and e.disposition is not Disposition.WONT_PORT
        ]
        if alive and not placed.intersection(alive):
            kept[old.id] = old
    return [kept[k] for k in sorted(kept)]


def publish(
    pair: Pair,
    updates: Sequence[tuple[str, str, bool]],
    push: str | None = None,
    chains_tip: str | None = None,
) -> None:
    """Write refs to the fork in one atomic push (all or nothing), then optionally to ``push``.

    Branches are forced (a rerun replaces them); the chain record must fast-forward so that a
    concurrent writer is detected instead of overwritten. ``push`` is checked for reachability
    before anything is written, then receives the same branches and the chain record
    (``chains_tip``, the record after this write) in one atomic push of its own.
    """
    if push:
        where = Repository(pair.fork.path) if pair.fork.path is not None else pair.repo
        try:
            where.git("ls-remote", "--heads", "--", push)
        except GitError as exc:
            raise ForksyncError(
                f"cannot reach {push!r} to push to (nothing was written): {exc.problem}",
                "pass a remote name of the fork or a repository URL to --push",
            ) from None
    specs = [f"{'+' if force else ''}{src}:{dst}" for src, dst, force in updates]
    if specs:
        _push(pair.repo, pair.fork.remote, specs, f"the fork {pair.fork.given}")
    if push:
        remote = [(src, dst, force) for src, dst, force in updates if dst != CHAINS_REF]
        if chains_tip:
            remote.append((chains_tip, CHAINS_REF, False))
        if pair.fork.path is not None:
            refs = [f"{'+' if force else ''}{dst}:{dst}" for _, dst, force in remote]
            _push(Repository(pair.fork.path), push, refs, f"remote {push}")
        else:
            _push(
                pair.repo,
                push,
                [f"{'+' if force else ''}{src}:{dst}" for src, dst, force in remote],
                f"remote {push}",
            )


def _push(repo: Repository, remote: str, specs: list[str], where: str) -> None:
    try:
        repo.git("push", "--quiet", "--atomic", "--no-verify", "--", remote, *specs)
    except GitError as exc:
        if any(word in exc.stderr for word in ("non-fast-forward", "fetch first", "stale info")):
            raise ForksyncError(
                f"{CHAINS_REF} in {where} moved while forksync was writing (nothing was written)",
                "run the command again: it re-reads the chains first",
            ) from None
        first = next((line for line in exc.stderr.splitlines() if line.strip()), exc.problem)
        raise ForksyncError(
            f"cannot write bundle branches to {where} (nothing was written): {first.strip()}",
            "check that it is reachable and writable by you",
        ) from None


def move_commit(
    pair: Pair, config: RepoConfig, ref: str, action: str, into: str | None = None, detail: str | None = None
) -> ChainRecord | None:
    """``forksync chain REF add [--into ID] | remove``: record the move durably; return the chain.

    ``add`` puts the commit into chain ``ID`` (or a new chain of its own) with reason ``manual``;
    ``remove`` takes it out of its chain and records it as excluded there, so file or symbol
    links never pull it back into that chain (it may still join another chain, or seed its own
    when it is risky by itself). Returns the chain the commit is now in (None after remove).
    """
    planned = make_plan(pair, config)
    sha = resolve_upstream(pair, planned, ref)
    plan = planned.plan
    records = {r.id: r for r in _records(planned, [c.record() for c in plan.chains])}
    current = plan.chain_of(sha)
    result: ChainRecord | None
    if action == "add":
        if into is not None and into not in records:
            known = ", ".join(sorted(c.id for c in plan.chains)) or "none"
            raise ForksyncError(
                f"there is no open chain {into!r}", f"use one of: {known} (forksync plan lists them)"
            )
        if current is not None and current.id == into:
            return records[current.id]
        if current is not None:
            records[current.id] = _without(records[current.id], sha, exclude=True)
        reason = Reason(
            sha, "manual", detail or f"added by hand (forksync chain add{' --into ' + into if into else ''})"
        )
        if into is None:
            base = f"chain-{sha[:7]}"
            into, n = base, 2
            while into in records:
                into, n = f"{base}-{n}", n + 1
            records[into] = ChainRecord(into, (sha,), (reason,))
        else:
            records[into] = _with(records[into], sha, reason, planned.order)
        result = records[into]
    else:
        if current is None:
            raise ForksyncError(
                f"commit {sha[:12]} is in no chain (it is {'bundled' if plan.bundle_of(sha) else 'not pending'})",
                "forksync plan shows where each commit is",
            )
        records[current.id] = _without(records[current.id], sha, exclude=True)
        result = None
    live = [r for r in records.values() if r.commits]
    repo = pygit2.Repository(str(pair.repo.path))
    commit = prepare_chains(
        repo, planned.store, sorted(live, key=lambda r: r.id), f"forksync chain {action} {sha}"
    )
    if commit:
        publish(pair, [(commit, CHAINS_REF, False)])
    return result


def dissolve_chain(pair: Pair, config: RepoConfig, chain_id: str) -> ChainRecord:
    """``forksync chain ID dissolve``: drop the chain from the record; its commits go back to the
    walk (bundled, or in other chains, by the rules), none excluded. Returns the dissolved chain."""
    planned = make_plan(pair, config)
    records = {r.id: r for r in _records(planned, [c.record() for c in planned.plan.chains])}
    if chain_id not in records:
        known = ", ".join(sorted(records)) or "none"
        raise ForksyncError(
            f"there is no open chain {chain_id!r}", f"use one of: {known} (forksync plan lists them)"
        )
    gone = records.pop(chain_id)
    repo = pygit2.Repository(str(pair.repo.path))
    commit = prepare_chains(
        repo,
        planned.store,
        sorted(records.values(), key=lambda r: r.id),
        f"forksync chain {chain_id} dissolve",
    )
    if commit:
        publish(pair, [(commit, CHAINS_REF, False)])
    return gone


def _without(record: ChainRecord, sha: str, exclude: bool) -> ChainRecord:
    return ChainRecord(
        record.id,
        tuple(s for s in record.commits if s != sha),
        tuple(r for r in record.reasons if r.commit != sha),
        tuple(sorted({*record.excluded, sha})) if exclude else record.excluded,
    )


def _with(record: ChainRecord, sha: str, reason: Reason, order: Sequence[str]) -> ChainRecord:
    position = {s: i for i, s in enumerate(order)}
    commits = sorted({*record.commits, sha}, key=lambda s: position.get(s, -1))
    reasons = {r.commit: r for r in record.reasons}
    reasons[sha] = reason
    return ChainRecord(
        record.id,
        tuple(commits),
        tuple(reasons[s] for s in commits if s in reasons),
        tuple(s for s in record.excluded if s != sha),
    )


def resolve_upstream(pair: Pair, planned: Planned, ref: str) -> str:
    """An upstream commit to place, from ``#N``, a sha (prefix) or a revision; errors say what it is
    instead."""
    if ref.startswith("#"):
        hits = planned.ledger.matching(ref)
        if len(hits) != 1:
            raise ForksyncError(
                f"{ref} names {len(hits)} upstream commits after the base"
                + (f" ({', '.join(h.sha[:12] for h in hits)})" if hits else ""),
                "pass the upstream sha instead",
            )
        sha: str | None = hits[0].sha
    else:
        sha = pair.repo.rev_parse(ref)
    if sha is None:
        raise ForksyncError(
            f"{ref!r} is not a commit known to the upstream or the fork", "pass an upstream sha"
        )
    if sha in planned.order:
        return sha
    entry = planned.ledger.entry(sha)
    if entry is None:
        raise ForksyncError(
            f"{ref} ({sha[:12]}) is not an upstream commit after the base",
            "pass a commit of the upstream branch that the fork has not taken yet",
        )
    raise ForksyncError(
        f"{ref} ({sha[:12]}) is {entry.disposition.value}, not pending: only pending or backlog commits move",
        "pick another commit (forksync plan lists them)",
    )
