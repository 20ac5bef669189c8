"""``forksync plan``: partition pending upstream commits into bundles and risky chains (read only)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from core.render.plan import plan_text
from workers.cli.pairargs import add_pair_arguments, one_line_errors, open_from_args
from workers.engine.planning import Planned, make_plan


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="partition pending upstream commits into low-risk bundles and risky chains",
        description="Walk the pending and backlog upstream commits in upstream order and place each in "
        "a low-risk bundle or a risky chain, with the reason. Reads only: nothing is written.",
    )
    one_line_errors(parser)
    add_pair_arguments(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help='one object: {"bundles": [{id, commits, lines}], "chains": [{id, commits, reasons}], '
        '"deferred": [sha], "urgent": [{id, commits, conflicts}]}; byte-identical for the same inputs',
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    pair, config = open_from_args(args)
    planned = make_plan(pair, config)
    for warning in planned.ledger.warnings:
        print(f"forksync: warning: {warning}", file=sys.stderr)
    if args.json:
        sys.stdout.write(planned.plan.to_json())
    else:
        print(render_plan(planned))
    return 0


def render_plan(planned: Planned) -> str:
    """The readable plan: summary first, then each bundle and chain with its commits and reasons."""
    subjects = {e.sha: e.subject[:100] for e in planned.ledger.entries}
    return plan_text(planned.plan, subjects, [n.text for n in planned.notes])
