"""The ledger's records: ``Ledger``, its ``LedgerEntry`` entries and ``Pick`` records, their JSON.

For the bundling engine: ``Ledger.backlog_commits`` (holes behind the frontier, oldest first)
then ``Ledger.pending_commits`` (not carried and not deferred/wont_port after the frontier,
oldest first) is the order of work. Entries never change order: ``Ledger.entries`` is upstream
first-parent order, oldest first, and the JSON is byte-for-byte deterministic.
``LEDGER_VERSION`` is part of both the JSON and the cache key (:mod:`workers.engine.ledger.cache`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from workers.engine import forkpins
from workers.engine.decisions import Disposition
from workers.engine.metrics import Metrics

# Bump when the ledger's meaning or JSON shape changes: old caches are then ignored.
LEDGER_VERSION = 10  # 4: fbtriton fixes; 5: [Hotfix] is upstream's; 6: union recognition, message decisions, fork pins; 7: cache rows; 8: backport PR forms, Linux-stable trailers; 9: branch-tagged backports, patchback, Gerrit Change-Id; 10: inline bundle items split at commas


@dataclass(frozen=True)
class LedgerEntry:
    """One upstream commit: who made it, what the fork does with it, and why."""

    sha: str
    subject: str
    author: str
    author_time: int
    committer_time: int
    pr_number: int | None
    disposition: Disposition
    carriers: tuple[str, ...]  # fork commits that carry it now (reverted picks excluded)
    reason: str
    recognisers: tuple[str, ...] = ()  # per carrier, the recogniser that found it there
    decided_by: str | None = None  # "notes" or "message" when a recorded decision stands

    def as_json(self) -> dict[str, Any]:
        out = {
            "sha": self.sha,
            "subject": self.subject,
            "author": self.author,
            "author_time": self.author_time,
            "committer_time": self.committer_time,
            "pr_number": self.pr_number,
            "disposition": self.disposition.value,
            "carriers": list(self.carriers),
            "reason": self.reason,
        }
        # Only where there is something to say: most entries of a long range have neither.
        if self.recognisers:
            out["recognisers"] = list(self.recognisers)
        if self.decided_by is not None:
            out["decided_by"] = self.decided_by
        return out

    def as_row(self) -> list[Any]:
        """The cache's form: positional (a third cheaper to write and read than ``as_json``)."""
        row = [
            self.sha,
            self.subject,
            self.author,
            self.author_time,
            self.committer_time,
            self.pr_number,
            self.disposition.value,
            list(self.carriers),
            self.reason,
        ]
        if self.recognisers or self.decided_by is not None:
            row += [list(self.recognisers), self.decided_by]
        return row

    @classmethod
    def from_row(cls, r: list[Any]) -> LedgerEntry:
        sha, subject, author, author_time, committer_time, pr, disposition, carriers, reason = r[:9]
        return cls(
            sha,
            subject,
            author,
            author_time,
            committer_time,
            pr,
            Disposition(disposition),
            tuple(carriers),
            reason,
            tuple(r[9]) if len(r) > 9 else (),
            r[10] if len(r) > 10 else None,
        )

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LedgerEntry:
        return cls(
            sha=d["sha"],
            subject=d["subject"],
            author=d["author"],
            author_time=d["author_time"],
            committer_time=d["committer_time"],
            pr_number=d["pr_number"],
            disposition=Disposition(d["disposition"]),
            carriers=tuple(d["carriers"]),
            reason=d["reason"],
            recognisers=tuple(d.get("recognisers", ())),
            decided_by=d.get("decided_by"),
        )


def matching(entries: Sequence[LedgerEntry], ref: str) -> tuple[LedgerEntry, ...]:
    """The entries a REF names: upstream PR ``#N``, or a sha prefix. One is an answer; none or
    several are for the caller to explain (the CLI and the comment commands word it their way)."""
    if ref.startswith("#"):
        number = int(ref[1:])
        return tuple(e for e in entries if e.pr_number == number)
    prefix = ref.lower()
    return tuple(e for e in entries if e.sha.startswith(prefix))


@dataclass(frozen=True)
class Pick:
    """A fork commit recognised as carrying upstream commits."""

    sha: str
    subject: str
    upstream: tuple[str, ...]
    recogniser: str  # the strongest recogniser that found something
    reverted_by: str | None = None
    found_by: tuple[str, ...] = ()  # per upstream commit, the recogniser that named it

    def as_json(self) -> dict[str, Any]:
        return {
            "sha": self.sha,
            "subject": self.subject,
            "upstream": list(self.upstream),
            "recogniser": self.recogniser,
            "reverted_by": self.reverted_by,
            "found_by": list(self.found_by),
        }


@dataclass(frozen=True)
class Ledger:
    """The mapping upstream commit → disposition, with the metrics computed from it."""

    base: str
    upstream_tip: str
    fork_tip: str
    entries: tuple[LedgerEntry, ...]
    metrics: Metrics
    picks: tuple[Pick, ...] = ()  # fork commits that carry upstream commits, fork order
    warnings: tuple[str, ...] = ()
    fork_pins: forkpins.ForkPins = field(
        default_factory=forkpins.ForkPins
    )  # UPSTREAM_HASH / UPSTREAM_FRONTIER_HASH as stated
    _by_sha: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_sha.update({e.sha: i for i, e in enumerate(self.entries)})

    def entry(self, sha: str) -> LedgerEntry | None:
        i = self._by_sha.get(sha)
        return self.entries[i] if i is not None else None

    def matching(self, ref: str) -> tuple[LedgerEntry, ...]:
        return matching(self.entries, ref)

    @property
    def frontier_index(self) -> int:
        """Position of the frontier in ``entries`` (-1 when the frontier is the base)."""
        return self._by_sha.get(self.metrics.frontier, -1)

    @property
    def backlog_commits(self) -> tuple[LedgerEntry, ...]:
        """Holes behind the frontier (neither picked nor wont_port), oldest first."""
        wanted = set(self.metrics.backlog_commits)
        return tuple(e for e in self.entries if e.sha in wanted)

    @property
    def pending_commits(self) -> tuple[LedgerEntry, ...]:
        """Commits after the frontier still to take (not carried, not deferred or wont_port), oldest first."""
        after = self.entries[self.frontier_index + 1 :]
        return tuple(
            e
            for e in after
            if not e.carriers and e.disposition not in (Disposition.WONT_PORT, Disposition.DEFERRED)
        )

    def with_disposition(self, disposition: Disposition) -> tuple[LedgerEntry, ...]:
        return tuple(e for e in self.entries if e.disposition is disposition)

    def as_json(self) -> dict[str, Any]:
        head = self.as_json_head()
        return {
            **{k: head[k] for k in ("version", "base", "upstream_tip", "fork_tip", "metrics")},
            "entries": [e.as_json() for e in self.entries],
            **{k: head[k] for k in ("picks", "warnings", "fork_pins")},
        }

    def as_cache(self) -> dict[str, Any]:
        """:meth:`as_json` with the entries as rows (``LedgerEntry.as_row``): what the cache keeps."""
        return {**self.as_json_head(), "entries": [e.as_row() for e in self.entries]}

    def as_json_head(self) -> dict[str, Any]:
        return {
            "version": LEDGER_VERSION,
            "base": self.base,
            "upstream_tip": self.upstream_tip,
            "fork_tip": self.fork_tip,
            "metrics": self.metrics.as_json(),
            "picks": [p.as_json() for p in self.picks],
            "warnings": list(self.warnings),
            "fork_pins": self.fork_pins.as_json(),
        }

    @classmethod
    def from_cache(cls, d: dict[str, Any]) -> Ledger:
        return cls.from_json(d, entries=tuple(LedgerEntry.from_row(r) for r in d["entries"]))

    @classmethod
    def from_json(cls, d: dict[str, Any], entries: tuple[LedgerEntry, ...] | None = None) -> Ledger:
        return cls(
            base=d["base"],
            upstream_tip=d["upstream_tip"],
            fork_tip=d["fork_tip"],
            entries=entries if entries is not None else tuple(LedgerEntry.from_json(e) for e in d["entries"]),
            metrics=Metrics.from_json(d["metrics"]),
            picks=tuple(
                Pick(
                    p["sha"],
                    p["subject"],
                    tuple(p["upstream"]),
                    p["recogniser"],
                    p["reverted_by"],
                    tuple(p["found_by"]),
                )
                for p in d["picks"]
            ),
            warnings=tuple(d["warnings"]),
            fork_pins=forkpins.ForkPins.from_json(d["fork_pins"]),
        )
