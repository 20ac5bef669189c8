"""``forksync chain REF add [--into ID] | remove`` and ``forksync chain ID dissolve``: move a
commit into or out of a chain, or dissolve a chain."""

from __future__ import annotations

import argparse
from typing import Any

from workers.cli.pairargs import add_pair_arguments, one_line_errors, open_from_args
from workers.engine.planning import dissolve_chain, move_commit


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "chain",
        help="move a pending upstream commit into a risky chain or out of one (recorded in the fork)",
        description="add: put REF into chain ID (--into), or into a new chain of its own. remove: take "
        "REF out of its chain; file or symbol links never pull it back into that chain, though it "
        "may join another chain or seed its own when it is risky by itself. Recorded durably in the "
        "fork at refs/forksync/chains. dissolve (REF is a chain id, e.g. chain-1a2b3c4): drop the chain; its "
        "commits are placed afresh by the rules.",
    )
    one_line_errors(parser)
    add_pair_arguments(parser)
    parser.add_argument(
        "ref",
        metavar="REF",
        help="the upstream commit: #N (upstream PR), a sha, a prefix or a "
        "revision; for dissolve, the chain id",
    )
    parser.add_argument(
        "action",
        choices=("add", "remove", "dissolve"),
        help="add to a chain, remove from its chain, or dissolve the chain REF",
    )
    parser.add_argument("--into", metavar="ID", help="with add: the chain to add to (e.g. chain-1a2b3c4)")
    parser.set_defaults(func=run, _parser=parser)


def run(args: argparse.Namespace) -> int:
    if args.into is not None and args.action != "add":
        args._parser.error("--into goes with add only")
    pair, config = open_from_args(args)
    if args.action == "dissolve":
        gone = dissolve_chain(pair, config, args.ref)
        print(f"dissolved {gone.id}: {len(gone.commits)} commit(s) are placed afresh by the rules (recorded)")
        return 0
    chain = move_commit(pair, config, args.ref, args.action, args.into)
    if chain is None:
        print(f"removed {args.ref} from its chain (recorded; it will not be linked back into it)")
    else:
        print(f"{args.ref} is in {chain.id}: {len(chain.commits)} commit(s)")
    return 0
