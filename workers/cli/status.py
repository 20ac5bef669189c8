"""``forksync status``: the ledger's metrics for an upstream/fork pair, as a table or JSON."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from workers.cli import warm
from workers.cli.pairargs import add_pair_arguments, one_line_errors, open_from_args
from workers.engine.forkpins import ForkPins
from workers.engine.ledger.cache import load_status
from workers.engine.metrics import Metrics
from workers.engine.pair import Pair


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "status",
        help="days behind upstream, backlog and the rest of the ledger's metrics",
        description="Show how far the fork is behind upstream: frontier, contiguous pin, "
        "days behind, backlog commits, pending, picked, wont_port, deferred, urgent.",
    )
    one_line_errors(parser)
    add_pair_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object (stable keys)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    pair, config = open_from_args(args)
    view = load_status(pair, config.ledger, upstream_url=config.upstream.url)
    warnings = view.warnings
    for warning in warnings:
        print(f"forksync: warning: {warning}", file=sys.stderr)
    if args.json:
        text = json.dumps(status_json(view.metrics, view.fork_pins), indent=2, sort_keys=True)
    else:
        text = render_table(pair, view.metrics, view.fork_pins)
    print(text)
    warm.remember(pair, text, warnings)
    return 0


def status_json(m: Metrics, pins: ForkPins) -> dict[str, Any]:
    """``status --json``: the metrics' keys, plus ``fork_pins`` (the pins the fork states in its
    own messages, the fork commit that stated each, and a line per disagreement)."""
    return {
        **m.as_json(),
        "fork_pins": {**pins.as_json(), "disagreements": pins.disagreements(m.frontier, m.contiguous_pin)},
    }


def render_table(pair: Pair, m: Metrics, pins: ForkPins | None = None) -> str:
    """The readable form of ``status``: one fact per line, shas abbreviated to 12."""
    pins = pins or ForkPins()
    stated = [s for s in (pins.frontier_hash, pins.upstream_hash) if s]
    subjects = _subjects(pair, [m.base, m.upstream_tip, m.frontier, m.contiguous_pin, *stated])

    def commit(sha: str) -> str:
        return f"{sha[:12]}  {_day(subjects.get(sha, (0, ''))[0])}  {subjects.get(sha, (0, ''))[1][:72]}"

    rows = [
        ("upstream", f"{pair.upstream.given} ({pair.upstream_branch})"),
        ("fork", f"{pair.fork.given} ({pair.fork_branch}) at {pair.fork_tip[:12]}"),
        ("base", commit(m.base)),
        ("upstream tip", commit(m.upstream_tip)),
        ("frontier", commit(m.frontier)),
        ("contiguous pin", commit(m.contiguous_pin)),
        *_pin_rows(pins, m, commit),
        ("days behind", f"{m.days_behind:.2f}"),
        ("backlog", f"{m.backlog} commit{'s' if m.backlog != 1 else ''} behind the frontier"),
        ("pending", f"{m.pending} of {m.upstream_commits} upstream commits after the base"),
        ("picked", str(m.picked)),
        ("wont_port", str(m.wont_port)),
        ("deferred", str(m.deferred)),
        ("urgent", str(len(m.urgent))),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k:<{width}}  {v}" for k, v in rows]
    if m.backlog_commits:
        lines.append("")
        lines.append("backlog (oldest first):")
        shown = m.backlog_commits[:20]
        extra = _subjects(pair, list(shown))
        lines.extend(f"  {s[:12]}  {extra.get(s, (0, ''))[1][:80]}" for s in shown)
        if len(m.backlog_commits) > len(shown):
            lines.append(f"  ... and {len(m.backlog_commits) - len(shown)} more (--json lists all)")
    if m.urgent:
        lines.append("")
        lines.append("urgent:")
        extra = _subjects(pair, list(m.urgent))
        lines.extend(f"  {s[:12]}  {extra.get(s, (0, ''))[1][:80]}" for s in m.urgent)
    return "\n".join(lines)


def _pin_rows(pins: ForkPins, m: Metrics, commit: Callable[[str], str]) -> list[tuple[str, str]]:
    """The fork's own pins, when its messages state them, each saying whether it agrees."""
    rows = []
    for name, stated, ours, what in (
        ("fork's frontier", pins.frontier_hash, m.frontier, "frontier"),
        ("fork's pin", pins.upstream_hash, m.contiguous_pin, "contiguous pin"),
    ):
        if stated is None:
            continue
        verdict = (
            f"agrees with the {what}" if stated == ours else f"DISAGREES: forksync's {what} is {ours[:12]}"
        )
        key = "UPSTREAM_FRONTIER_HASH" if what == "frontier" else "UPSTREAM_HASH"
        rows.append((name, f"{commit(stated)}  ({key}; {verdict})"))
    return rows


def _subjects(pair: Pair, shas: list[str]) -> dict[str, tuple[int, str]]:
    wanted = sorted(set(shas))
    if not wanted:
        return {}
    out = pair.repo.git("show", "-s", "--no-walk=unsorted", "--format=%H%x1f%ct%x1f%s", *wanted).decode(
        "utf-8", "replace"
    )
    result: dict[str, tuple[int, str]] = {}
    for line in out.splitlines():
        sha, ct, subject = ([*line.split("\x1f"), "", ""])[:3]
        result[sha] = (int(ct or 0), subject)
    return result


def _day(ts: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts)) if ts else "          "
