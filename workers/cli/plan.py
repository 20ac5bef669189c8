"""``forksync plan``: partition pending upstream commits into bundles and risky chains (read only)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

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
    """The readable plan: each bundle and chain with its commits; chains with their reasons."""
    plan, ledger = planned.plan, planned.ledger

    def subject(sha: str) -> str:
        entry = ledger.entry(sha)
        return entry.subject[:80] if entry else ""

    lines: list[str] = []
    for hurried in plan.urgent:
        state = f"conflicts in {', '.join(hurried.conflicts)}" if hurried.conflicts else "picks cleanly"
        lines.append(f"{hurried.id}  urgent, alone on the fork tip ({state})")
        lines.append(f"  {hurried.commit[:12]}  {subject(hurried.commit)}")
    for bundle in plan.bundles:
        lines.append(f"{bundle.id}  {len(bundle.commits)} commit(s), {bundle.lines} changed lines")
        lines.extend(f"  {sha[:12]}  {subject(sha)}" for sha in bundle.commits)
    for chain in plan.chains:
        lines.append(f"{chain.id}  {len(chain.commits)} commit(s), risky chain")
        for reason in chain.reasons:
            lines.append(f"  {reason.commit[:12]}  {subject(reason.commit)}")
            lines.append(f"      {reason.kind}: {reason.detail}")
    if plan.deferred:
        lines.append(f"deferred (backlog, in no bundle or chain): {len(plan.deferred)}")
        lines.extend(f"  {sha[:12]}  {subject(sha)}" for sha in plan.deferred)
    if not lines:
        lines.append("nothing to place: every upstream commit is picked, deferred or won't port")
    placed = sum(len(b.commits) for b in plan.bundles) + sum(len(c.commits) for c in plan.chains) + len(plan.urgent)
    urgent = f", {len(plan.urgent)} urgent" if plan.urgent else ""
    lines.append(f"{placed} commit(s): {len(plan.bundles)} bundle(s), {len(plan.chains)} chain(s){urgent}")
    return "\n".join(lines)
