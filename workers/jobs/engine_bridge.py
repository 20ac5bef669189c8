"""The engine as the ingestion loop calls it: ledger → plan → bundle build → refs in the fork cache.

:func:`run_engine` runs the engine's own plan-and-build (``workers/engine/planning.py``, the
same code as ``forksync plan`` / ``forksync bundle``) on the worker's two bare caches and turns
the result into the texts to post. Built branches and the chain record land in the fork cache;
the executor then pushes them to the real fork. Deterministic: the same caches and config give
the same plan id, branches and shas.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Mapping

from core.config import RepoConfig
from core.render.ingest import (
    BundleView,
    ChainView,
    CommitRow,
    IngestionFigures,
    UrgentView,
    resolution_notes,
)
from core.render.resolution import conflict_resolution_section
from workers.adapters.gitcache import reset
from workers.engine.bundle import Built, Resolved, bundle_branch
from workers.engine.git import Repository
from workers.engine.ledger.records import Ledger
from workers.engine.pair import Pair, cache_root, normalise_web_url, open_pair
from workers.engine.partition.records import Bundle, Plan, Reason
from workers.engine.parts import whereabouts
from workers.engine.planning import Planned, build_and_record, make_plan
from workers.jobs.dashboard_feed import (
    engine_facts,
    landed_changes,
    read_fork_commits,
    read_paths,
)
from workers.jobs.ingest_plan import Moved
from workers.jobs.ingestion import EngineOutput


def plan_id(pair: Pair, plan: Plan) -> str:
    """A short, stable id of this plan: the tips it was made from and its JSON."""
    digest = hashlib.sha256(f"{pair.upstream_tip}\0{pair.fork_tip}\0{plan.to_json()}".encode()).hexdigest()
    return digest[:12]


def _row(ledger: Ledger, sha: str, note: str = "") -> CommitRow:
    entry = ledger.entry(sha)
    if entry is None:
        return CommitRow(sha=sha, subject="(not in the upstream range)", author="?", note=note)
    return CommitRow(sha=sha, subject=entry.subject, author=entry.author, pr=entry.pr_number, note=note)


def reset_pair_caches(fork: Repository) -> int:
    """Clear what a crashed task left in the engine's pair caches of this fork (stale ``*.lock``
    files, worktrees, temporary refs); returns how many caches were reset.

    Safe because the caller holds this fork's cache lock: no other task uses a pair cache whose
    fork side is this cache (``locations.txt``, written by ``open_pair``, names it).
    """
    root = cache_root() / "pairs"
    count = 0
    for locations in root.glob("*/locations.txt"):
        try:
            text = locations.read_text()
        except OSError:
            continue
        repo = locations.parent / "repo.git"
        if f"fork {fork.path}\n" in text and (repo / "HEAD").exists():
            reset(Repository(repo))
            count += 1
    return count


def run_engine(
    upstream: Repository,
    fork: Repository,
    upstream_branch: str,
    fork_branch: str,
    config: RepoConfig,
    *,
    declined: Collection[str] = (),
) -> EngineOutput:
    reset_pair_caches(fork)
    pair = open_pair(
        str(upstream.path), str(fork.path), upstream_branch, fork_branch, notes_ref=config.ledger.notes_ref
    )
    web_url = normalise_web_url(config.upstream.url) if config.upstream.url else None
    # The fork here is the worker's cache: build_and_record writes the branches and the chain
    # record into it in one atomic push; the executor then pushes them to the real fork.
    planned = make_plan(pair, config, declined=declined)
    built = build_and_record(pair, config, planned)
    plan, ledger = planned.plan, planned.ledger
    pid = plan_id(pair, plan)
    reasons = {r.commit: f"{r.kind}: {r.detail}" for c in built.open_chains for r in c.reasons}
    planned_bundles = {b.id: b for b in plan.bundles}
    bundles = tuple(
        _bundle_view(b, planned_bundles, ledger, pid, fork_branch, reasons.get)
        for b in built.bundles
        if b.commits
    )
    chains = tuple(
        ChainView(
            key=c.id,
            branch=c.branch if c.picks else None,
            commits=tuple(
                _row(ledger, sha, reasons.get(sha, "")) for sha in _chain_members(built.open_chains, c.id)
            ),
            conflicts=c.conflicts,
            reproduce=c.reproduce
            or reproduce_command(config, fork_branch, _chain_members(built.open_chains, c.id)),
            plan_id=pid,
            base_branch=c.base_branch,
            carried=len(c.commits),
            resolutions=tuple(_resolution_section(r) for r in c.resolved),
            stopped_at=c.stopped_at,
            waiting=c.waiting,
            waits_for=c.waits_for,
        )
        for c in built.chains
    )
    urgent = tuple(
        UrgentView(
            key=u.id,
            branch=u.branch if u.picks else None,
            base_branch=u.base_branch,
            commit=_row(ledger, sha, "marked urgent: picked alone, out of order; the frontier stays"),
            conflicts=u.conflicts,
            reproduce=reproduce_command(config, fork_branch, (sha,)),
            plan_id=pid,
        )
        for u in built.urgent
        for sha in (u.stopped_at or (u.commits[0] if u.commits else ""),)
        if sha
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
        urgent=len(urgent),
    )
    return EngineOutput(
        figures=figures,
        plan_id=pid,
        bundles=bundles,
        chains=chains,
        upstream_web_url=web_url,
        urgent=urgent,
        dashboard=_dashboard_facts_or_none(upstream, fork, ledger, bundles, chains),
        emptied=tuple(
            (bundle_branch(Bundle(gone, ())), bundle_branch(Bundle(home, ()))) for gone, home in plan.emptied
        ),
        moved=moved_bundles(planned, urgent, chains),
    )


def moved_bundles(
    planned: Planned, urgent: tuple[UrgentView, ...], chains: tuple[ChainView, ...]
) -> tuple[tuple[str, Moved], ...]:
    """The bundles recorded by the last build that this plan has no successor for (no new bundle
    holds most of their commits, ``workers.engine.parts``), by branch, with where each one's commits
    are now: the branch of the bundle, chain or urgent pick holding them (a chain's id while it has
    no branch), how many landed, how many are in nothing."""
    plan = planned.plan
    alive = {b.id for b in plan.bundles} | {gone for gone, _ in plan.emptied}
    gone = [p for p in planned.store.parts if p.id not in alive]
    if not gone:
        return ()
    placed: dict[str, str] = {}
    order: list[str] = []

    def put(dest: str, commits: tuple[str, ...]) -> None:
        order.append(dest)
        placed.update(dict.fromkeys(commits, dest))

    views = {v.key: v.branch or v.key for v in urgent} | {v.key: v.branch or v.key for v in chains}
    for u in plan.urgent:
        put(views.get(u.id, u.id), u.commits)
    for b in plan.bundles:
        put(bundle_branch(b), b.commits)
    for c in plan.chains:
        put(views.get(c.id, c.id), c.commits)
    carried = frozenset(e.sha for e in planned.ledger.entries if e.carriers)
    out = []
    for part in gone:
        where = whereabouts(part, placed, order, carried)
        out.append((bundle_branch(Bundle(part.id, ())), Moved(where.into, where.landed, where.out)))
    return tuple(out)


def _bundle_view(
    built: Built,
    planned: Mapping[str, Bundle],
    ledger: Ledger,
    pid: str,
    fork_branch: str,
    ejection: Callable[[str], str | None],
) -> BundleView:
    """A built bundle as its PR shows it: members, ejections, and (stacked) what it needs and why."""
    bundle = planned[built.id]

    def why(reason: Reason) -> CommitRow:
        return _row(ledger, reason.commit, f"{reason.kind}: {reason.detail}")

    stacked = built.base_branch != fork_branch  # built on the bundle it needs (bundle.build)
    under, at = 0, bundle.stacked_on if stacked else None
    while at is not None and at in planned:  # the commits of the bundles under it
        under += len(planned[at].commits)
        at = planned[at].stacked_on
    return BundleView(
        key=built.id,
        branch=built.branch,
        base_branch=built.base_branch,
        commits=tuple(_row(ledger, sha) for sha in built.commits),
        plan_id=pid,
        ejected=tuple(
            _row(ledger, sha, ejection(sha) or "failed to apply at build time") for sha in built.ejected
        ),
        stacked_on=bundle.stacked_on if stacked else None,
        stack_commits=under,
        needs=tuple(why(r) for r in bundle.needs) if stacked else (),
        unstacked_from=bundle_branch(Bundle(bundle.unstacked_from, ())) if bundle.unstacked_from else None,
        left_behind=tuple(why(r) for r in bundle.left_behind),
    )


def _dashboard_facts_or_none(
    upstream: Repository,
    fork: Repository,
    ledger: Ledger,
    bundles: tuple[BundleView, ...],
    chains: tuple[ChainView, ...],
) -> dict[str, object]:
    """The dashboard is never a reason for an ingest to fail: a problem here is logged, the run goes on."""
    import logging

    try:
        return dashboard_facts(upstream, fork, ledger, bundles, chains)
    except Exception:
        logging.getLogger(__name__).exception("dashboard facts not computed")
        return {}


def dashboard_facts(
    upstream: Repository,
    fork: Repository,
    ledger: Ledger,
    bundles: tuple[BundleView, ...],
    chains: tuple[ChainView, ...],
) -> dict[str, object]:
    """The ledger facts of the dashboard and the digest: picks, decisions, what landed lately and
    the upstream files each recent or in-flight commit touches (for the area owners)."""
    commits = read_fork_commits(fork, [p.sha for p in ledger.picks])
    # Every pick's upstream files: which picks are new (landed since the last ingest) is known
    # only to the executor, which dates them (workers/jobs/ingestion.landing_times).
    carried = [
        u for p in ledger.picks if p.reverted_by is None for u in p.upstream if ledger.entry(u) is not None
    ]
    views: list[BundleView | ChainView] = [*bundles, *chains]
    in_flight = [row.sha for view in views for row in view.commits]
    paths = read_paths(upstream, [*carried, *in_flight])
    facts: dict[str, object] = dict(engine_facts(ledger, commits))
    facts["landed"] = landed_changes(ledger, commits, paths, 0.0)
    facts["commits"] = {
        view.key: [
            {
                "sha": row.sha,
                "subject": row.subject[:120],
                "pr": row.pr,
                "paths": list(paths.get(row.sha, ())),
            }
            for row in view.commits
        ]
        for view in views
    }
    return facts


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


def _resolution_section(resolved: Resolved) -> str:
    """The resolution engineer's renderer for a real ResolveOutcome; fbtriton's minimal form otherwise."""
    from workers.engine.resolve.model import ResolveOutcome

    if isinstance(resolved.outcome, ResolveOutcome):
        return conflict_resolution_section(resolved.outcome, with_details=False)
    return resolution_notes(
        resolved.commit, tuple((e.path, e.action, e.reason) for e in resolved.outcome.entries)
    )
