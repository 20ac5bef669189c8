"""The partition: pending upstream commits → large low-risk bundles and ordered risky chains.

Pure: it decides from plain data (the commits to place in upstream order with their paths,
hunk dependencies, definitions and size; the config; the open chains recorded by earlier runs)
and one narrow interface, :class:`Trial`, that answers "does this commit pick cleanly onto the
fork tip plus everything bundled before it?". Each commit, in upstream order:

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

**Stacks.** A bundle that dependencies carried past ``bundle.max_commits`` (or ``max_lines``) is
split, in upstream order, into bounded bundles. A split part whose members depend on an earlier
part is **stacked** on it (``Bundle.stacked_on``: its PR is based on that part's branch, and
lands after it; ``Bundle.needs`` says which lines or symbols tie it there); a part that depends on
no earlier part stays on the trunk. A part is stacked on the latest part it depends on when that
part's own stack holds every other part it needs (else on the first later part whose stack
does); when none does, the whole group is stacked in line (each part on the one before). A bundle whose PR a maintainer closed unmerged (``declined``) is
not a base any more: the members of the parts stacked on it that need it (directly, or through
another member that does) move to it, and those parts are re-based without it
(``Bundle.unstacked_from``, ``Bundle.left_behind``). A declined bundle stays in the plan
(``Bundle.declined``) holding its members, and is not rebuilt: its branch stays as it was closed.
A part is named by its first commit unless it still holds most of a bundle recorded by the last
build (``parts``, :func:`workers.engine.parts.keep_ids`): then it keeps that bundle's id, so its
branch and PR survive the re-cut.

Recorded chains (``chains.py``) make the partition durable and idempotent: a recorded member is
placed in its chain when the walk reaches it (so planning twice gives the same plan); a commit
removed by hand from a chain (``excluded``) is never linked back into that chain, though it may
still join another chain or seed its own when it is risky by itself. Healing (a recorded chain
whose members no longer depend on each other) is :mod:`workers.engine.healing`'s job, before
the walk.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from core.config import RepoConfig
from workers.engine.ids import fresh_id, fresh_ids
from workers.engine.lines import LineDep
from workers.engine.links import ChainLinks, Link
from workers.engine.parts import PartRecord, keep_ids
from workers.engine.paths import first_match, path_matches

__all__ = ["first_match", "path_matches"]  # re-exported: the globs moved to paths.py

REASON_KINDS = ("conflict", "diverged_zone", "risky_path", "size", "line", "symbol", "pick", "file", "manual")


@dataclass(frozen=True)
class Change:
    """One upstream commit as the partition sees it."""

    sha: str
    paths: tuple[str, ...]
    symbols: frozenset[str] = frozenset()  # file mode: function contexts and definitions
    lines: int = 0
    # Line mode: the earlier commits whose lines its hunks overlap, and its definitions and uses.
    depends: tuple[LineDep, ...] = ()
    defined: frozenset[str] = frozenset()
    introduced: frozenset[str] = frozenset()
    used: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Reason:
    """Why a commit is in its chain: ``kind`` among :data:`REASON_KINDS`, and a human detail."""

    commit: str
    kind: str
    detail: str

    def as_json(self) -> dict[str, str]:
        return {"commit": self.commit, "kind": self.kind, "detail": self.detail}


@dataclass(frozen=True)
class ChainRecord:
    """A chain as recorded durably: members in upstream order, a reason each, hand removals."""

    id: str
    commits: tuple[str, ...]
    reasons: tuple[Reason, ...] = ()
    excluded: tuple[str, ...] = ()

    def reason(self, sha: str) -> Reason | None:
        return next((r for r in self.reasons if r.commit == sha), None)


@dataclass(frozen=True)
class Bundle:
    """A low-risk bundle: ``commits`` in upstream order, built on the fork trunk alone.

    ``joined`` says, for each member that came in by depending on an earlier bundle (rather than
    by being next in line), which lines or symbol tie it there. A **stacked** bundle (part of a
    bundle that dependencies carried past the bound) is built on ``stacked_on``'s branch and lands
    after it: ``needs`` gives, for each member that depends on that stack, the lines or symbol and
    the commit it needs. ``unstacked_from`` names a declined bundle (its PR closed unmerged) this one
    was stacked on, and ``left_behind`` the members that need it and moved to it."""

    id: str
    commits: tuple[str, ...]
    lines: int = 0
    joined: tuple[Reason, ...] = ()
    stacked_on: str | None = None
    needs: tuple[Reason, ...] = ()
    unstacked_from: str | None = None
    left_behind: tuple[Reason, ...] = ()
    declined: bool = False  # its PR was closed unmerged: not rebuilt, nothing stacked on it


@dataclass(frozen=True)
class Chain:
    """An open risky chain: ``commits`` still to place (upstream order), one reason each."""

    id: str
    commits: tuple[str, ...]
    reasons: tuple[Reason, ...]
    picked: tuple[Reason, ...] = ()  # members already picked: they keep linking until all are
    excluded: tuple[str, ...] = ()
    # (member, the bundled commits whose lines it changes): its trial pick went onto their bundle's
    # tree, but the chain is built on the trunk, where they are not until their bundle lands
    after: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def bundled_needs(self, sha: str) -> tuple[str, ...]:
        """The bundled commits member ``sha`` changes lines of (empty: none)."""
        return next((needs for member, needs in self.after if member == sha), ())

    def record(self) -> ChainRecord:
        """What to record durably: every member (picked ones first) and the hand removals."""
        members = (*self.picked, *self.reasons)
        return ChainRecord(self.id, tuple(r.commit for r in members), members, self.excluded)


@dataclass(frozen=True)
class Urgent:
    """A commit a maintainer marked urgent: picked alone onto the fork tip, ahead of everything else.

    ``conflicts`` are the paths its trial pick onto the fork tip conflicts in (empty: clean).
    """

    id: str  # "urgent-<sha7>"
    commit: str
    conflicts: tuple[str, ...] = ()

    @property
    def commits(self) -> tuple[str, ...]:
        return (self.commit,)

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "commits": [self.commit], "conflicts": list(self.conflicts)}


@dataclass(frozen=True)
class Plan:
    """The partition's result. ``deferred`` commits are known holes: in no bundle or chain.
    ``urgent`` commits are each in their own single-commit urgent bundle, and in nothing else."""

    bundles: tuple[Bundle, ...]
    chains: tuple[Chain, ...]
    deferred: tuple[str, ...] = ()
    urgent: tuple[Urgent, ...] = ()
    # Stacked bundles that no longer exist because all their members need a declined bundle (whose PR
    # a maintainer closed unmerged) and moved to it: (their id, the declined bundle's id).
    emptied: tuple[tuple[str, str], ...] = ()

    def as_json(self) -> dict[str, Any]:
        """The ``plan --json`` contract: every pending or backlog commit in exactly one bundle or
        chain. Urgent commits appear as their own single-commit bundle (``"urgent": true``, built
        alone on the fork tip); each deferred hole as a ``manual`` chain of its own (``"deferred":
        true``, never built: it stays in the backlog, out of bundles). ``deferred`` and ``urgent``
        also list them apart, for readers that want only those. A chain's ``after_bundled`` maps
        each member whose lines depend on bundled commits to those commits (they land first)."""
        urgent_bundles = [
            {"id": u.id, "commits": [u.commit], "lines": 0, "urgent": True, "conflicts": list(u.conflicts)}
            for u in self.urgent
        ]
        deferred_chains = [
            {
                "id": hole,
                "commits": [sha],
                "reasons": [
                    Reason(
                        sha,
                        "manual",
                        "deferred by a maintainer: stays in the backlog, out of bundles "
                        "(`forksync mark REF clear` takes it back)",
                    ).as_json()
                ],
                "deferred": True,
            }
            for sha, hole in zip(self.deferred, fresh_ids("deferred", self.deferred), strict=True)
        ]
        return {
            "bundles": urgent_bundles + [_bundle_json(b) for b in self.bundles],
            "chains": [
                {
                    "id": c.id,
                    "commits": list(c.commits),
                    "reasons": [r.as_json() for r in c.reasons],
                    **({"after_bundled": {m: list(n) for m, n in c.after}} if c.after else {}),
                }
                for c in self.chains
            ]
            + deferred_chains,
            "deferred": list(self.deferred),
            "urgent": [u.as_json() for u in self.urgent],
        }

    def to_json(self) -> str:
        """Byte-stable JSON: same inputs, same bytes."""
        return json.dumps(self.as_json(), indent=2, ensure_ascii=False) + "\n"

    def chain_of(self, sha: str) -> Chain | None:
        return next((c for c in self.chains if sha in c.commits), None)

    def bundle_of(self, sha: str) -> Bundle | None:
        return next((b for b in self.bundles if sha in b.commits), None)

    def urgent_of(self, sha: str) -> Urgent | None:
        return next((u for u in self.urgent if u.commit == sha), None)


def _bundle_json(bundle: Bundle) -> dict[str, Any]:
    out: dict[str, Any] = {"id": bundle.id, "commits": list(bundle.commits), "lines": bundle.lines}
    if bundle.joined:
        out["joined"] = [r.as_json() for r in bundle.joined]
    if bundle.stacked_on is not None:
        out["stacked_on"] = bundle.stacked_on
        out["needs"] = [r.as_json() for r in bundle.needs]
    if bundle.declined:
        out["declined"] = True
    if bundle.unstacked_from is not None:
        out["unstacked_from"] = bundle.unstacked_from
        out["left_behind"] = [r.as_json() for r in bundle.left_behind]
    return out


class Trial(Protocol):
    """Trial cherry-picks onto the fork tip plus everything bundled so far, in memory."""

    def try_pick(self, sha: str) -> tuple[str, ...]:
        """Conflicting paths (sorted); empty when clean, in which case the target advances."""
        ...


@runtime_checkable
class ChainTrial(Protocol):
    """A :class:`Trial` that also keeps one target per open chain, for the ``pick`` rule."""

    def try_pick(self, sha: str) -> tuple[str, ...]: ...

    def chain_add(self, chain_id: str, sha: str) -> None:
        """Pick ``sha`` onto ``chain_id``'s target (made from the running bundle at its first member)."""
        ...

    def chain_merge(self, keep: str, other: str, members: Sequence[str]) -> None:
        """``other`` merged into ``keep``: ``members`` (upstream order) now ride on ``keep``'s target."""
        ...

    def picks_with(self, chain_id: str, sha: str) -> bool:
        """Whether ``sha`` picks cleanly on top of ``chain_id``'s target (nothing advances)."""
        ...


@runtime_checkable
class BundleTrial(Protocol):
    """A :class:`Trial` that also keeps the trunk plus the current bundle alone, so that a commit
    near an earlier bundle's lines is joined to that bundle only when it does not apply without it."""

    def try_pick(self, sha: str) -> tuple[str, ...]: ...

    def picks_alone(self, sha: str, fresh: bool) -> bool:
        """Whether ``sha`` picks cleanly onto the trunk plus the current bundle (``fresh``: the trunk
        alone, for a commit that starts a new bundle); nothing advances."""
        ...

    def bundle_add(self, sha: str) -> None:
        """``sha`` joined the current bundle: pick it onto the current bundle's target."""
        ...

    def bundle_close(self) -> None:
        """The current bundle is closed: the next one starts from the trunk."""
        ...


# --------------------------------------------------------------------------- the walk

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
class _OpenBundle:
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
    nothing stays stacked on them (module docstring, **Stacks**). ``parts``: the bundles recorded
    by the last build; a bundle that still holds most of a recorded one's commits keeps its id
    (:func:`workers.engine.parts.keep_ids`), so its branch and PR survive a re-cut.
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
        self.bundled: dict[str, _OpenBundle] = {}
        self.current: _OpenBundle | None = None
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
            self.current = _OpenBundle(bundle_id, [], 0, [])
            self.bundled[self.current.id] = self.current
        self.add_to(self.current, change)

    def close_current(self) -> None:
        self.current = None
        if self.bundle_trial is not None:
            self.bundle_trial.bundle_close()

    def add_to(self, bundle: _OpenBundle, change: Change) -> None:
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
            _split(
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
            for bundle in _stack(
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


def _stack(
    group: _OpenBundle,
    parts: Sequence[Sequence[str]],
    ids: Sequence[str],
    needs: Mapping[str, Mapping[str, Link]],
    lines: Mapping[str, int],
    position: Mapping[str, int],
    declined: frozenset[str],
    emptied: list[tuple[str, str]],
) -> list[Bundle]:
    """One walk bundle, cut into ``parts`` (``_split``) named ``ids``, as bounded bundles: each part
    stacked on the part it depends on, nothing stacked on a declined part (module docstring,
    **Stacks**). A part whose members all moved to a declined bundle is appended to ``emptied`` as
    (its id, the declined id)."""
    members = sorted(group.members, key=position.__getitem__)
    # Joins name the walk's bundle by its first commit; that name stands for the group's first part,
    # which may have kept a recorded id: name that.
    joins = [_renamed(r, group.id, ids[0]) for r in group.joined]
    if len(parts) == 1:
        return [Bundle(ids[0], tuple(members), group.lines, tuple(joins), declined=ids[0] in declined)]
    joined = {r.commit: r for r in joins}
    first_of = {sha: k for k, part in enumerate(parts) for sha in part}
    planned = _bases(parts, needs, set())
    # Whoever needs a member of a declined part (directly, or through a member that moved) moves to it.
    home = dict(first_of)
    left: dict[int, list[Reason]] = {}
    for k, part in enumerate(parts):
        if ids[k] in declined:
            continue
        for sha in part:
            for need in sorted(needs.get(sha, {}), key=position.__getitem__):
                to = home.get(need)
                if to is not None and to != k and ids[to] in declined:
                    home[sha] = to
                    why = _named(needs[sha][need].detail, need, ids[to])
                    left.setdefault(k, []).append(
                        Reason(sha, needs[sha][need].kind, f"{why}; moved there: its PR was closed unmerged")
                    )
                    break
    kept = [sorted((s for s in members if home[s] == k), key=position.__getitem__) for k in range(len(parts))]
    avoid = {k for k in range(len(parts)) if ids[k] in declined or not kept[k]}
    base = _bases(kept, needs, avoid)
    out = []
    for k, part in enumerate(kept):
        if not part:
            # Every member moved to a declined bundle: its branch goes, its PR is closed saying so.
            emptied.append((ids[k], ids[home[parts[k][0]]]))
            continue
        on = base[k]
        stack = {sha for below in _below(base, on) for sha in kept[below]}
        reasons = []
        for sha in part:
            hit = sorted((n for n in needs.get(sha, {}) if n in stack), key=position.__getitem__)
            if hit:
                link = needs[sha][hit[0]]
                reasons.append(Reason(sha, link.kind, _named(link.detail, hit[0], ids[home[hit[0]]])))
        was = next((ids[i] for i in _below(planned, planned[k]) if ids[i] in declined and i != on), None)
        out.append(
            Bundle(
                ids[k],
                tuple(part),
                sum(lines.get(sha, 0) for sha in part),
                tuple(joined[sha] for sha in part if sha in joined),
                stacked_on=ids[on] if on is not None else None,
                needs=tuple(reasons),
                unstacked_from=was,
                left_behind=tuple(left.get(k, ())),
                declined=ids[k] in declined,
            )
        )
    return out


def _split(
    members: Sequence[str], lines: Mapping[str, int], max_commits: int, max_lines: int
) -> list[list[str]]:
    """``members`` (upstream order) cut into parts of at most ``max_commits`` commits and
    ``max_lines`` changed lines (a larger commit is a part alone)."""
    parts: list[list[str]] = [[]]
    size = 0
    for sha in members:
        if parts[-1] and (len(parts[-1]) + 1 > max_commits or size + lines.get(sha, 0) > max_lines):
            parts.append([])
            size = 0
        parts[-1].append(sha)
        size += lines.get(sha, 0)
    return parts


def _below(base: Sequence[int | None], at: int | None) -> Iterator[int]:
    """The parts a stack rests on, from ``at`` down to the trunk (``base``: each part's base)."""
    while at is not None:
        yield at
        at = base[at]


def _bases(
    parts: Sequence[Sequence[str]], needs: Mapping[str, Mapping[str, Link]], avoid: set[int]
) -> list[int | None]:
    """Each part's base (the index of an earlier part) or None (the trunk), never a part in ``avoid``.

    A part goes on the latest part it depends on when that part's stack holds every other part
    it needs, else on the first later part whose stack does (a tree of stacks); when none does,
    every part goes on the one before it (skipping ``avoid``), which holds all earlier parts."""
    of = {sha: k for k, part in enumerate(parts) for sha in part}
    base: list[int | None] = []
    for k, part in enumerate(parts):
        wants = {of[n] for sha in part for n in needs.get(sha, {}) if n in of and of[n] < k}
        if not wants:
            base.append(None)
            continue
        # The first part from the latest one it needs onwards whose stack holds all it needs.
        for top in range(max(wants), k):
            if top in avoid:
                continue
            if wants <= set(_below(base, top)):
                base.append(top)
                break
        else:
            line: list[int | None] = []
            previous: int | None = None
            for j in range(len(parts)):
                line.append(previous)
                if j not in avoid:
                    previous = j
            return line
    return base


def _renamed(reason: Reason, walk_id: str, bundle_id: str) -> Reason:
    """``reason`` naming ``bundle_id`` where it named the walk's ``walk_id``."""
    if walk_id == bundle_id:
        return reason
    return Reason(
        reason.commit, reason.kind, re.sub(rf" of {re.escape(walk_id)}\b", f" of {bundle_id}", reason.detail)
    )


def _named(detail: str, sha: str, bundle_id: str) -> str:
    """A member-level link's detail, naming the bundle of the commit it needs instead of the commit."""
    return detail.replace(f" of {sha}", f" of {bundle_id}")


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
