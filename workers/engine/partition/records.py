"""The partition's records: the commits it places, the chains it records, and the plan it returns.

``Change`` is one upstream commit as the partition sees it; ``ChainRecord`` a chain as recorded
durably (:mod:`workers.engine.chains`); ``Reason`` why a commit is where it is, of a kind among
``REASON_KINDS``. The plan (``Plan``: ``Bundle``, ``Chain``, ``Urgent`` and the deferred holes)
is the walk's result (:mod:`workers.engine.partition.walk`), and ``Plan.to_json`` is the
byte-stable ``plan --json`` contract.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from workers.engine.ids import fresh_ids
from workers.engine.lines import LineDep

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
