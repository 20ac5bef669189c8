"""``forksync bundle``: build bundles and risky chains as branches in the fork, in memory."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from workers.cli.pairargs import add_pair_arguments, one_line_errors, open_from_args
from workers.engine.bundle import BuildResult
from workers.engine.planning import build_and_record, make_plan


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bundle",
        help="build the plan's bundles and chains as forksync/bundle/* and forksync/chain/* branches",
        description="Plan, then cherry-pick each bundle and chain in memory onto the fork tip (bundles "
        "stacked in order) and write the branches and the open-chain record to the fork in one atomic "
        "push. The work tree, index and HEAD of the fork are never touched.",
    )
    one_line_errors(parser)
    add_pair_arguments(parser)
    parser.add_argument(
        "--push", metavar="REMOTE", help="also push the branches and the chain record to REMOTE"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='one object: {"bundles": [{id, branch, base, base_branch, head, commits, ejected}], '
        '"chains": [{id, branch, base, base_branch, head, commits, stopped_at, conflicts}], "ejected": [sha], '
        '"urgent": [{id, branch, base, base_branch, head, commits, stopped_at, conflicts}]}',
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    pair, config = open_from_args(args)
    planned = make_plan(pair, config)
    for warning in planned.ledger.warnings:
        print(f"forksync: warning: {warning}", file=sys.stderr)
    result = build_and_record(pair, config, planned, push=args.push)
    if args.json:
        sys.stdout.write(json.dumps(result.as_json(), indent=2) + "\n")
    else:
        print(render_build(result))
    return 0


def render_build(result: BuildResult) -> str:
    lines = []
    for u in result.urgent:
        if u.picks:
            lines.append(f"{u.branch}  {u.head[:12]}  urgent, 1 commit on {u.base_branch}")
        else:
            lines.append(
                f"{u.id}  urgent {(u.stopped_at or '')[:12]} not built: conflicts in {', '.join(u.conflicts) or '?'}"
            )
    for b in result.bundles:
        lines.append(f"{b.branch}  {b.head[:12]}  {len(b.commits)} commit(s) on {b.base_branch}")
        lines.extend(f"  ejected to a chain: {sha[:12]}" for sha in b.ejected)
    for c in result.chains:
        state = (
            f"stops at {c.stopped_at[:12]} (conflicts in {', '.join(c.conflicts) or '?'})"
            if c.stopped_at
            else "complete"
        )
        lines.append(f"{c.branch}  {c.head[:12]}  {len(c.commits)} commit(s) on {c.base_branch}, {state}")
    if not lines:
        lines.append("nothing to build: no pending upstream commits")
    return "\n".join(lines)
