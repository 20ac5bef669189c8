"""The ledger's cache: ``load_ledger`` and ``load_status``, keyed by what the ledger depends on.

``cache_key`` digests both tips, the base, the decisions notes tip, the config and the URLs
(and ``LEDGER_VERSION``); ``load_ledger`` reads the whole ledger back (one JSON file of rows),
``load_status`` only the ``StatusView`` ``forksync status`` prints (a small file of its own).
A miss builds the ledger (:func:`workers.engine.ledger.build.build_ledger`) and writes both.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.config import LedgerConfig
from workers.engine import forkpins
from workers.engine.ledger.build import build_ledger
from workers.engine.ledger.records import LEDGER_VERSION, Ledger
from workers.engine.metrics import Metrics
from workers.engine.pair import Pair

_KEEP_CACHED = 8


def cache_key(pair: Pair, config: LedgerConfig, upstream_url: str | None = None) -> str:
    """What the ledger depends on: both tips, the decisions, and the recognition rules."""
    parts = [
        str(LEDGER_VERSION),
        pair.upstream_tip,
        pair.fork_tip,
        pair.base,
        pair.fork_notes_tip or "-",
        repr(config),
        upstream_url or pair.upstream_url or "-",
        pair.fork_url or "-",
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def _cache_path(pair: Pair, key: str, kind: str) -> Path:
    return pair.cache_dir / "ledger" / f"{key}.{kind}.json"


def load_ledger(pair: Pair, config: LedgerConfig, *, upstream_url: str | None = None) -> Ledger:
    """The ledger, from the cache when both tips, the notes and the config are unchanged."""
    key = cache_key(pair, config, upstream_url)
    path = _cache_path(pair, key, "ledger")
    try:
        return Ledger.from_cache(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    ledger = build_ledger(pair, config, upstream_url=upstream_url)
    _store(pair, key, ledger)
    return ledger


@dataclass(frozen=True)
class StatusView:
    """What ``forksync status`` prints: the metrics, warnings, and the fork's own pins."""

    metrics: Metrics
    warnings: tuple[str, ...]
    fork_pins: forkpins.ForkPins

    def as_json(self) -> dict[str, Any]:
        return {
            "metrics": self.metrics.as_json(),
            "warnings": list(self.warnings),
            "fork_pins": self.fork_pins.as_json(),
        }


def load_status(pair: Pair, config: LedgerConfig, *, upstream_url: str | None = None) -> StatusView:
    """Metrics, warnings and fork pins only; a warm call reads a small file, not the whole ledger."""
    key = cache_key(pair, config, upstream_url)
    path = _cache_path(pair, key, "status")
    try:
        data = json.loads(path.read_text())
        return StatusView(
            Metrics.from_json(data["metrics"]),
            tuple(data["warnings"]),
            forkpins.ForkPins.from_json(data["fork_pins"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        pass
    ledger = load_ledger(pair, config, upstream_url=upstream_url)
    return StatusView(ledger.metrics, ledger.warnings, ledger.fork_pins)


def _store(pair: Pair, key: str, ledger: Ledger) -> None:
    """Write the cache atomically; a cache that cannot be written only costs speed."""
    folder = pair.cache_dir / "ledger"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for kind, data in (
            ("ledger", ledger.as_cache()),
            ("status", StatusView(ledger.metrics, ledger.warnings, ledger.fork_pins).as_json()),
        ):
            path = _cache_path(pair, key, kind)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            # Rows need no key sorting: every dict is built in a fixed order, so the bytes are deterministic.
            tmp.write_text(json.dumps(data, sort_keys=kind == "status", separators=(",", ":")))
            tmp.replace(path)
        stale = sorted(folder.glob("*.ledger.json"), key=lambda p: p.stat().st_mtime, reverse=True)[
            _KEEP_CACHED:
        ]
        for old in stale:
            for kind in ("ledger", "status"):
                old.with_name(old.name.replace(".ledger.json", f".{kind}.json")).unlink(missing_ok=True)
    except OSError:
        pass
