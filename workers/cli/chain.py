"""``forksync chain REF add [--into ID] | remove``: move an upstream commit into or out of a chain."""

from __future__ import annotations

import argparse
from typing import Any

from workers.cli.pairargs import add_pair_arguments, one_line_errors, open_from_args
from workers.engine.planning import move_commit


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "chain",
        help="move a pending upstream commit into a risky chain or out of one (recorded in the fork)",
        description="add: put REF into chain ID (--into), or into a new chain of its own. remove: take "
        "REF out of its chain; file or symbol links never pull it back into that chain, though it "
        "may join another chain or seed its own when it is risky by itself. Recorded durably in the "
        "fork at refs/forksync/chains.",
    )
    one_line_errors(parser)
    add_pair_arguments(parser)
    parser.add_argument("ref", metavar="REF", help="the upstream commit: #N (upstream PR), a sha, a prefix or a revision")
    parser.add_argument("action", choices=("add", "remove"), help="add to a chain, or remove from its chain")
    parser.add_argument("--into", metavar="ID", help="with add: the chain to add to (e.g. chain-1a2b3c4)")
    parser.set_defaults(func=run, _parser=parser)


def run(args: argparse.Namespace) -> int:
    if args.into is not None and args.action != "add":
        args._parser.error("--into goes with add only")
    pair, config = open_from_args(args)
    chain = move_commit(pair, config, args.ref, args.action, args.into)
    if chain is None:
        print(f"removed {args.ref} from its chain (recorded; it will not be linked back into it)")
    else:
        print(f"{args.ref} is in {chain.id}: {len(chain.commits)} commit(s)")
    return 0
