"""The partition's walk: each commit to place, in upstream order, into one chain or one bundle.

``partition(commits, config, trial, ...)`` places each commit, in upstream order:

1. **dependency** — it depends on an open chain (:mod:`workers.engine.links`; ``risk.link``):
   its hunks overlap lines a chain member changed (``line``), it changes a definition a member
   changes or uses a name a member introduces (``symbol``), or — once its trial pick conflicts —
   it picks cleanly on top of a chain that touches the conflicting files (``pick``). Linking
   several chains merges them into the oldest one, upstream order preserved. Sharing a file is
   not a dependency (it is with ``risk.link: file``, the earlier rule, reason ``file``);
2. **risk seed** — otherwise it starts a new chain when it touches a diverged zone
   (``diverged_zone``), a risky path (``risky_path``), or its trial pick conflicts
   (``conflict``, naming the files). Size alone (``risk.max_lines``) seeds only with
   ``risk.size_seeds: true`` (``size``); a large clean commit is otherwise bundled, alone when it
   exceeds ``bundle.max_lines``. The cheap checks run first so the trial pick is only paid for
   commits that would otherwise be bundled;
3. **otherwise** it is bundled. Bundles are independent: each is built on the fork trunk alone and
   lands on its own, in any order. So a commit whose change depends on an earlier bundle — its
   hunks overlap lines a member of that bundle was the last to change, it changes a definition a
   member changes, or it uses a name a member introduces (the chain rules, on bundles) — joins
   **that** bundle, past its size bound if need be (a dependency beats the bound); depending on
   several bundles merges them into the oldest. Otherwise it joins the current bundle, which
   closes at ``bundle.max_commits`` commits or ``bundle.max_lines`` changed lines. A dependency
   the trial pick alone reveals (a commit that picks on the running target but not on the trunk
   with its own bundle) is caught when the bundle is built on the trunk: the commit is ejected to
   a chain that follows the bundle it needs (``bundle.build``).

When the walk ends, a bundle that dependencies carried past its bound is cut into bounded
parts stacked on the parts they depend on (:mod:`workers.engine.partition.stacks`).

Recorded chains (``chains.py``) make the partition durable and idempotent: a recorded member is
placed in its chain when the walk reaches it (so planning twice gives the same plan); a commit
removed by hand from a chain (``excluded``) is never linked back into that chain, though it may
still join another chain or seed its own when it is risky by itself. Healing (a recorded chain
whose members no longer depend on each other) is :mod:`workers.engine.healing`'s job, before
the walk.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from core.config import RepoConfig
from workers.engine.ids import fresh_id
from workers.engine.links import ChainLinks, Link
from workers.engine.partition.records import Chain, ChainRecord, Change, Plan, Reason
from workers.engine.partition.stacks import split, stack
from workers.engine.partition.trials import BundleTrial, ChainTrial, Trial
from workers.engine.parts import PartRecord, keep_ids
from workers.engine.paths import first_match

# Chains tried by the ``pick`` rule for one conflicting commit: those touching its conflicting
# files, oldest first. Each try is one in-memory pick; the bound keeps a busy file from costing
# a pick per open chain.
MAX_PICK_CANDIDATES = 3


@dataclass
class _Open:
    id: str
    order: int  # walk position of the oldest member (-1: a member is already picked)
    picked: list[Reason]
    members: list[str]
    reasons: dict[str, Reason]
    excluded: set[str]
    after: dict[str, tuple[str, ...]] = field(default_factory=dict)  # member → bundled commits it needs


@dataclass
class OpenBundle:
    """A bundle as the walk fills it: what :func:`~workers.engine.partition.stacks.stack` cuts."""

    id: str
    members: list[str]
    lines: int
    joined: list[Reason]


def partition(
    commits: Iterable[Change],
    config: RepoConfig,
    trial: Trial,
    chains: Sequence[ChainRecord] = (),
    history: Mapping[str, Change] | None = None,
    deferred: Sequence[str] = (),
    declined: Collection[str] = (),
    parts: Sequence[PartRecord] = (),
    *,
    order: Sequence[str] | None = None,
) -> Plan:
    """Place every commit of ``commits`` (upstream order) in exactly one bundle or chain.

    ``chains`` are the open chains recorded by earlier runs; ``history`` gives the changes of
    their members that are no longer to place (already picked): with ``risk.link: file`` their
    files and symbols keep linking. Members neither to place nor in ``history`` (won't port,
    deferred, gone) drop out. ``declined``: ids of bundles whose PR a maintainer closed unmerged;
    nothing stays stacked on them (:mod:`workers.engine.partition.stacks`). ``parts``: the
    bundles recorded by the last build; a bundle that still holds most of a recorded one's
    commits keeps its id (:func:`workers.engine.parts.keep_ids`), so its branch and PR survive a
    re-cut.
    ``order``: the shas of ``commits``, in their order, when ``commits`` are made as they are placed
    (a generator whose analyses are still coming: :mod:`workers.engine.analyst`); the walk needs
    every commit's position before it places the first.
    """
    if order is None:
        commits = list(commits)
        order = [c.sha for c in commits]
    walk = _Walk(order, config, trial)
    walk.restore(chains, history or {})
    for sha, change in zip(order, commits, strict=True):
        if change.sha != sha:
            raise ValueError(f"commit {change.sha} placed where the order says {sha}")
        walk.place(change)
    return walk.plan(deferred, frozenset(declined), parts)


class _Walk:
    """The state of one partition walk: open chains, their link index, the current bundle."""

    def __init__(self, order: Sequence[str], config: RepoConfig, trial: Trial) -> None:
        self.position = {sha: i for i, sha in enumerate(order)}
        if len(self.position) != len(order):
            raise ValueError("a commit appears twice in the walk")
        self.config = config
        self.trial = trial
        self.chain_trial = trial if isinstance(trial, ChainTrial) else None
        self.bundle_trial = trial if isinstance(trial, BundleTrial) else None
        self.opened: dict[str, _Open] = {}
        self.alias: dict[str, str] = {}  # merged chain id → surviving id
        self.forced: dict[str, str] = {}  # sha → recorded chain id
        self.taken_ids: set[str] = set()
        self.links = ChainLinks(config.risk.link)
        self.touched: dict[str, set[str]] = {}  # path → chains touching it: candidates of the pick rule
        # Bundles: members, lines and join reasons by id; the one still filling; their link index.
        self.bundled: dict[str, OpenBundle] = {}
        self.current: OpenBundle | None = None
        self.bundle_alias: dict[str, str] = {}
        self.bundle_links = ChainLinks("line")  # lines and definitions only: a shared file is no dependency
        # Each bundled commit as its own "chain": which bundled commits a member needs, for stacks.
        self.member_links = ChainLinks("line")
        self.needs: dict[str, dict[str, Link]] = {}  # bundled sha → the bundled shas it depends on
        self.lines: dict[str, int] = {}  # bundled sha → its changed lines
        self.planned = 0

    # ---- chains

    def find(self, chain_id: str) -> str:
        while chain_id in self.alias:
            chain_id = self.alias[chain_id]
        return chain_id

    def restore(self, records: Sequence[ChainRecord], history: Mapping[str, Change]) -> None:
        """Open the recorded chains that still have members to place."""
        position = self.position
        for record in sorted(records, key=lambda r: r.id):
            self.taken_ids.add(record.id)
            pending = [sha for sha in record.commits if sha in position and sha not in self.forced]
            if not pending:
                continue  # every member picked (or dropped): the chain is closed
            chain = _Open(record.id, min(position[s] for s in pending), [], [], {}, set(record.excluded))
            for sha in record.commits:
                reason = record.reason(sha) or Reason(sha, "manual", f"recorded in {record.id}")
                if sha in position and sha not in self.forced:
                    self.forced[sha] = record.id
                    chain.reasons[sha] = reason
                elif sha in history and sha not in position:
                    chain.picked.append(reason)
                    chain.order = -1
                    old = history[sha]
                    self.links.add(record.id, sha, old.paths, old.symbols, pending=False)
            self.opened[record.id] = chain

    def new_chain(self, change: Change, reason: Reason) -> None:
        chain_id = fresh_id("chain", change.sha, self.taken_ids)
        self.taken_ids.add(chain_id)
        self.opened[chain_id] = _Open(chain_id, self.position[change.sha], [], [], {}, set())
        self.join(chain_id, change, reason)

    def join(self, chain_id: str, change: Change, reason: Reason) -> None:
        chain = self.opened[self.find(chain_id)]
        chain.members.append(change.sha)
        chain.reasons[change.sha] = reason
        # Bundled commits whose lines it changes (line links only: those are what a pick conflicts on).
        needs = tuple(
            sorted(
                (
                    sha
                    for sha, link in self.member_links.links_of(change, _same).items()
                    if link.kind == "line"
                ),
                key=self.position.__getitem__,
            )
        )
        if needs:
            chain.after[change.sha] = needs
        self.links.add(chain.id, change.sha, change.paths, change.symbols, change.defined, change.introduced)
        for path in change.paths:
            self.touched.setdefault(path, set()).add(chain.id)
        if self.chain_trial is not None:
            self.chain_trial.chain_add(chain.id, change.sha)

    def merge(self, ids: Sequence[str]) -> str:
        """Merge chains into the oldest; its id survives, members stay in upstream order."""
        order = sorted(set(ids), key=lambda i: (self.opened[i].order, i))
        keep = self.opened[order[0]]
        for other_id in order[1:]:
            other = self.opened.pop(other_id)
            self.alias[other_id] = keep.id
            keep.picked.extend(other.picked)
            keep.members = sorted({*keep.members, *other.members}, key=self.position.__getitem__)
            keep.reasons.update(other.reasons)
            keep.excluded |= other.excluded
            keep.after.update(other.after)
            keep.order = min(keep.order, other.order)
            if self.chain_trial is not None:
                self.chain_trial.chain_merge(keep.id, other_id, other.members)
        return keep.id

    # ---- one commit

    def place(self, change: Change) -> None:
        sha = change.sha
        if sha in self.forced:
            chain_id = self.find(self.forced[sha])
            self.join(chain_id, change, self.opened[chain_id].reasons[sha])
            return
        links = {
            chain_id: link
            for chain_id, link in self.links.links_of(change, self.find).items()
            if sha not in self.opened[chain_id].excluded
        }
        if links:
            target = self.merge(sorted(links))
            self.join(
                target,
                change,
                _link_reason(sha, [(c, Reason(sha, ln.kind, ln.detail)) for c, ln in links.items()]),
            )
            return
        seed = risk_seed(change, self.config)
        if seed is None:
            conflicts = self.trial.try_pick(sha)
            if conflicts:
                host = self.pick_host(change, conflicts)
                if host is not None:
                    self.join(
                        host,
                        change,
                        Reason(
                            sha,
                            "pick",
                            f"its trial pick conflicts in {', '.join(conflicts)} onto the fork tip + "
                            f"{self.planned} planned commit(s) and picks cleanly on top of {host}",
                        ),
                    )
                    return
                seed = Reason(
                    sha,
                    "conflict",
                    f"trial pick onto the fork tip + {self.planned} planned commit(s) conflicts in "
                    + ", ".join(conflicts),
                )
        if seed is not None:
            self.new_chain(change, seed)
            return
        self.bundle(change)

    def pick_host(self, change: Change, conflicts: Sequence[str]) -> str | None:
        """The open chain that ``change`` picks cleanly on top of (the ``pick`` rule), if any."""
        if self.chain_trial is None or self.config.risk.link == "file":
            return None
        candidates = {self.find(c) for path in conflicts for c in self.touched.get(path, ())}
        candidates = {c for c in candidates if c in self.opened and change.sha not in self.opened[c].excluded}
        ordered = sorted(candidates, key=lambda c: (self.opened[c].order, c))[:MAX_PICK_CANDIDATES]
        return next((c for c in ordered if self.chain_trial.picks_with(c, change.sha)), None)

    def find_bundle(self, bundle_id: str) -> str:
        while bundle_id in self.bundle_alias:
            bundle_id = self.bundle_alias[bundle_id]
        return bundle_id

    def bundle(self, change: Change) -> None:
        """Bundle ``change``: into the bundle(s) it depends on, else into the current one."""
        deps = self.bundle_links.links_of(change, self.find_bundle)
        current = self.current.id if self.current is not None else None
        bound = self.config.bundle
        full = self.current is not None and (
            len(self.current.members) + 1 > bound.max_commits
            or self.current.lines + change.lines > bound.max_lines
        )
        if (
            deps
            and set(deps) != {current}
            and self.bundle_trial is not None
            and self.bundle_trial.picks_alone(
                change.sha, fresh=current is None or (full and current not in deps)
            )
        ):
            # Near an earlier bundle's lines, yet it applies on the trunk with its own bundle alone:
            # no dependency for landing (the trial says so), the bounds hold.
            deps = {b: link for b, link in deps.items() if b == current}
        if deps:
            # It depends on bundled commits: it must land with them (bundles land independently),
            # past the size bound if need be; depending on several bundles merges them.
            ids = sorted(set(deps), key=lambda b: self.position[self.bundled[b].members[0]])
            keep = self.bundled[ids[0]]
            for other_id in ids[1:]:
                other = self.bundled.pop(other_id)
                self.bundle_alias[other_id] = keep.id
                keep.members = sorted({*keep.members, *other.members}, key=self.position.__getitem__)
                keep.lines += other.lines
                keep.joined.extend(other.joined)
                for sha in other.members:
                    self.bundle_links.member[sha] = keep.id
            if current is not None and current in ids[1:]:
                self.close_current()  # merged into an older bundle: the next commit starts a new one
            if keep.id != current or full:
                keep.joined.append(
                    _link_reason(
                        change.sha, [(b, Reason(change.sha, ln.kind, ln.detail)) for b, ln in deps.items()]
                    )
                )
            inside = set(keep.members)
            self.needs[change.sha] = {
                sha: link for sha, link in self.member_links.links_of(change, _same).items() if sha in inside
            }
            self.add_to(keep, change)
            return
        if full:
            self.close_current()
        if self.current is None:
            # The id names the first commit (as its branch does); the full sha where seven digits collide.
            bundle_id = fresh_id("bundle", change.sha, self.bundled.keys() | self.bundle_alias.keys())
            self.current = OpenBundle(bundle_id, [], 0, [])
            self.bundled[self.current.id] = self.current
        self.add_to(self.current, change)

    def close_current(self) -> None:
        self.current = None
        if self.bundle_trial is not None:
            self.bundle_trial.bundle_close()

    def add_to(self, bundle: OpenBundle, change: Change) -> None:
        if bundle is self.current and self.bundle_trial is not None:
            self.bundle_trial.bundle_add(change.sha)
        bundle.members.append(change.sha)
        bundle.lines += change.lines
        self.lines[change.sha] = change.lines
        self.bundle_links.add(
            bundle.id, change.sha, change.paths, change.symbols, change.defined, change.introduced
        )
        self.member_links.add(
            change.sha, change.sha, change.paths, change.symbols, change.defined, change.introduced
        )
        self.planned += 1

    # ---- the result

    def plan(
        self,
        deferred: Sequence[str],
        declined: frozenset[str] = frozenset(),
        parts: Sequence[PartRecord] = (),
    ) -> Plan:
        groups = sorted(self.bundled.values(), key=lambda b: self.position[b.members[0]])
        bound = self.config.bundle
        cuts = [
            split(
                sorted(g.members, key=self.position.__getitem__),
                self.lines,
                bound.max_commits,
                bound.max_lines,
            )
            for g in groups
        ]
        flat = [part for cut in cuts for part in cut]
        kept = iter(keep_ids(flat, parts, self.position))
        emptied: list[tuple[str, str]] = []
        bundles = [
            bundle
            for group, cut in zip(groups, cuts, strict=True)
            for bundle in stack(
                group,
                cut,
                [next(kept) for _ in cut],
                self.needs,
                self.lines,
                self.position,
                declined,
                emptied,
            )
        ]
        out = []
        for chain in self.opened.values():
            if not chain.members:
                continue
            members = sorted(chain.members, key=self.position.__getitem__)
            out.append(
                (
                    self.position[members[0]],
                    Chain(
                        chain.id,
                        tuple(members),
                        tuple(chain.reasons[s] for s in members),
                        picked=tuple({r.commit: r for r in chain.picked}.values()),
                        excluded=tuple(sorted(chain.excluded)),
                        after=tuple((s, chain.after[s]) for s in members if s in chain.after),
                    ),
                )
            )
        out.sort(key=lambda item: item[0])
        bundles.sort(key=lambda b: self.position[b.commits[0]])
        return Plan(tuple(bundles), tuple(chain for _, chain in out), tuple(deferred), emptied=tuple(emptied))


def _same(sha: str) -> str:
    return sha


def _link_reason(sha: str, links: list[tuple[str, Reason]]) -> Reason:
    order = {"line": 0, "symbol": 1, "file": 2}
    reasons = sorted(links, key=lambda link: (order.get(link[1].kind, 3), link[0]))
    first = reasons[0][1]
    if len(links) == 1:
        return first
    others = ", ".join(sorted(chain_id for chain_id, _ in links))
    return Reason(sha, first.kind, f"{first.detail}; links and merges {others}")


def risk_seed(change: Change, config: RepoConfig) -> Reason | None:
    """Why ``change`` is risky by itself (zone, risky path, size when ``risk.size_seeds``), if it is."""
    risk = config.risk
    paths = sorted(change.paths)
    hit = first_match(paths, risk.diverged_zones)
    if hit:
        return Reason(change.sha, "diverged_zone", f"{hit[0]} is in diverged zone {hit[1]}")
    hit = first_match(paths, risk.risky_paths)
    if hit:
        return Reason(change.sha, "risky_path", f"touches risky path {hit[0]} ({hit[1]})")
    if risk.size_seeds and change.lines > risk.max_lines:
        return Reason(change.sha, "size", f"{change.lines} changed lines > risk.max_lines {risk.max_lines}")
    return None
