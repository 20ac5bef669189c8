"""``forksync mark``: record a decision (wont_port, deferred, urgent, or clear it) in the fork's notes."""

from __future__ import annotations

import argparse
import re
from typing import Any

from core.errors import ForksyncError
from workers.cli.pairargs import add_pair_arguments, one_line_errors, open_from_args
from workers.engine.decisions import Disposition, write_decision
from workers.engine.ledger.cache import load_ledger
from workers.engine.ledger.records import Ledger, LedgerEntry
from workers.engine.pair import FORK_NOTES_REF, Pair

CHOICES = ("wont_port", "deferred", "urgent", "clear")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "mark",
        help="record wont_port / deferred / urgent for an upstream commit (durable, in the fork)",
        description="Record a decision on an upstream commit in the fork's notes ref "
        "(ledger.notes_ref, default refs/notes/forksync); 'clear' removes it.",
    )
    one_line_errors(parser)
    add_pair_arguments(parser)
    parser.add_argument("ref", metavar="REF", help="upstream commit: a sha (a unique prefix is enough) or #N")
    parser.add_argument("decision", metavar="{wont_port,deferred,urgent,clear}", choices=CHOICES)
    parser.add_argument(
        "--reason", default="", metavar="TEXT", help="why (shown in status and bundle bodies)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ref = args.ref.strip()
    _check_ref_syntax(ref)
    reason = " ".join(args.reason.split())
    pair, config = open_from_args(args)
    ledger = load_ledger(pair, config.ledger, upstream_url=config.upstream.url)
    entry = resolve_ref(pair, ledger, ref)
    disposition = None if args.decision == "clear" else Disposition(args.decision)
    new = write_decision(pair.repo, pair.fork_notes_tip, entry.sha, disposition, reason)
    label = f"{entry.sha[:12]} {entry.subject[:70]}"
    if new is None:
        if disposition is None:
            print(f"nothing to clear: {label} has no recorded decision")
        else:
            print(f"already recorded: {label} is marked {disposition.value}; nothing written")
        return 0
    pair.push_to_fork(new, pair.notes_ref)
    pair.repo.git("update-ref", FORK_NOTES_REF, new)
    if disposition is None:
        print(f"cleared the decision on {label}")
    else:
        print(f"marked {label} {disposition.value}" + (f" ({reason})" if reason else ""))
        if entry.carriers and disposition is not Disposition.URGENT:
            print(
                f"note: the fork already carries it ({', '.join(c[:12] for c in entry.carriers)}), so it stays picked"
            )
    return 0


def _check_ref_syntax(ref: str) -> None:
    if not (re.fullmatch(r"#\d+", ref) or re.fullmatch(r"[0-9a-fA-F]{4,40}", ref)):
        raise ForksyncError(
            f"REF {ref!r} is neither an upstream sha nor a PR number",
            "pass a sha (at least 4 hex digits, a unique prefix is enough) or #N",
        )


def resolve_ref(pair: Pair, ledger: Ledger, ref: str) -> LedgerEntry:
    """The ledger entry that REF names: a unique sha prefix in the range, or upstream PR #N."""
    where = f"upstream {pair.upstream_branch} after the base {pair.base[:12]}"
    hits = ledger.matching(ref)
    if ref.startswith("#"):
        number = int(ref[1:])
        if not hits:
            raise ForksyncError(
                f"no commit of {where} has PR #{number} in its subject",
                "check the number, or pass the upstream sha instead",
            )
        if len(hits) > 1:
            raise ForksyncError(
                f"PR #{number} names {len(hits)} commits of {where} ({', '.join(h.sha[:12] for h in hits)})",
                "pass the sha of the one you mean",
            )
        return hits[0]
    prefix = ref.lower()
    if len(hits) > 1:
        raise ForksyncError(
            f"sha prefix {ref} is ambiguous: it matches {len(hits)} commits of {where}",
            "pass more digits of the sha",
        )
    if not hits:
        known = pair.repo.rev_parse(prefix) if len(prefix) >= 4 else None
        if known:
            raise ForksyncError(
                f"{ref} is not one of the commits of {where} (it is at or before the base, or not on "
                "upstream's first-parent history)",
                "only upstream commits the fork has not reached by merge can be marked",
            )
        raise ForksyncError(
            f"no upstream commit matches {ref}", "check the sha (git log upstream) or pass #N"
        )
    return hits[0]
