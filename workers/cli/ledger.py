"""``forksync ledger``: every upstream commit after the base, with why it has its disposition.

``forksync ledger --upstream U --fork F [REF...] [--disposition D] [--json]`` lists each
upstream commit (oldest first, or only the ones REF names: a sha prefix or ``#N``) with its
disposition, the fork commits carrying it and the recogniser that found it in each (trailer,
bundle, pr-subject, subject, pr-pattern, body-link, reapply, same-change, patch-id, merge),
who decided it (the decisions notes, or the fork's own messages) and the ledger's reason.
``--json`` prints one JSON object per commit per line, with stable keys. This answers "why is
#6515 in my backlog?" without reading the source.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from typing import Any

from core.errors import ForksyncError
from workers.cli.pairargs import add_pair_arguments, one_line_errors, open_from_args
from workers.engine.decisions import Disposition
from workers.engine.ledger.cache import load_ledger
from workers.engine.ledger.records import Ledger, LedgerEntry
from workers.engine.pair import Pair

BACKLOG = "backlog"
CHOICES = (*(d.value for d in Disposition), BACKLOG)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ledger",
        help="each upstream commit: disposition, carrying fork commits, recogniser and reason",
        description="List the upstream commits after the base (or the ones REF names) with their "
        "disposition, the fork commits that carry them, the recogniser that matched, who decided "
        "and why. 'backlog' selects the pending holes behind the frontier.",
    )
    one_line_errors(parser)
    add_pair_arguments(parser)
    parser.add_argument(
        "refs", nargs="*", metavar="REF", help="upstream commit: a sha prefix or #N (default: all)"
    )
    parser.add_argument(
        "--disposition",
        choices=CHOICES,
        metavar="{" + ",".join(CHOICES) + "}",
        help="only commits with this disposition",
    )
    parser.add_argument(
        "--json", action="store_true", help="one JSON object per commit per line (stable keys)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    refs = [r.strip() for r in args.refs]
    for ref in refs:
        if not (re.fullmatch(r"#\d+", ref) or re.fullmatch(r"[0-9a-fA-F]{4,40}", ref)):
            raise ForksyncError(
                f"REF {ref!r} is neither an upstream sha nor a PR number",
                "pass a sha (at least 4 hex digits, a unique prefix is enough) or #N",
            )
    pair, config = open_from_args(args)
    ledger = load_ledger(pair, config.ledger, upstream_url=config.upstream.url)
    entries = select(pair, ledger, refs)
    if args.disposition:
        entries = [e for e in entries if _has(ledger, e, args.disposition)]
    picks = {p.sha: p for p in ledger.picks}
    if args.json:
        for e in entries:
            print(json.dumps(entry_json(ledger, e), sort_keys=True))
        return 0
    if not entries:
        print(
            "no upstream commit matches" + (f" --disposition {args.disposition}" if args.disposition else "")
        )
        return 0
    for e in entries:
        print(render_entry(ledger, e, {s: picks[s].subject for s in e.carriers if s in picks}))
    return 0


def select(pair: Pair, ledger: Ledger, refs: Sequence[str]) -> list[LedgerEntry]:
    """The entries REFs name, in upstream order; every entry when there are none."""
    if not refs:
        return list(ledger.entries)
    where = f"upstream {pair.upstream_branch} after the base {pair.base[:12]}"
    chosen: set[str] = set()
    for ref in refs:
        hits = ledger.matching(ref)
        if not hits:
            raise ForksyncError(
                f"no commit of {where} matches {ref}",
                "check the sha or #N (commits at or before the base are not in the ledger)",
            )
        if not ref.startswith("#") and len(hits) > 1:
            raise ForksyncError(
                f"sha prefix {ref} is ambiguous: it matches {len(hits)} commits of {where}",
                "pass more digits of the sha",
            )
        chosen.update(h.sha for h in hits)  # #N of a re-landed PR lists every landing
    return [e for e in ledger.entries if e.sha in chosen]


def _has(ledger: Ledger, e: LedgerEntry, wanted: str) -> bool:
    if wanted == BACKLOG:
        return e.sha in set(ledger.metrics.backlog_commits)
    return e.disposition.value == wanted


def entry_json(ledger: Ledger, e: LedgerEntry) -> dict[str, Any]:
    """One commit, stable keys: what ``--json`` prints per line."""
    return {
        "sha": e.sha,
        "pr_number": e.pr_number,
        "subject": e.subject,
        "disposition": e.disposition.value,
        "backlog": e.sha in set(ledger.metrics.backlog_commits),
        "carriers": [
            {"sha": s, "recogniser": how} for s, how in zip(e.carriers, _recognisers(e), strict=True)
        ],
        "decided_by": e.decided_by,
        "reason": e.reason,
    }


def _recognisers(e: LedgerEntry) -> tuple[str, ...]:
    return e.recognisers if len(e.recognisers) == len(e.carriers) else ("",) * len(e.carriers)


def render_entry(ledger: Ledger, e: LedgerEntry, subjects: dict[str, str]) -> str:
    """The readable form: a head line, then who carries it and why."""
    pr = f"#{e.pr_number}" if e.pr_number is not None else "-"
    state = e.disposition.value + (" (backlog)" if e.sha in set(ledger.metrics.backlog_commits) else "")
    lines = [f"{e.sha[:12]}  {pr:>7}  {state:<19} {e.subject[:80]}"]
    for s, how in zip(e.carriers, _recognisers(e), strict=True):
        lines.append(f"    carried by {s[:12]} ({how}) {subjects.get(s, '')[:70]}".rstrip())
    if e.reason:
        lines.append(f"    why: {e.reason}")
    return "\n".join(lines)
