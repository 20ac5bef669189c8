"""``forksync``: the engine on the command line, and ``serve`` for the whole bot on one machine.

Each subcommand lives in its own module of this package and exposes
``register(subparsers) -> None``, which adds its parser and sets ``func`` (``args -> int``).
This module only composes them and turns :class:`ForksyncError` into one line and exit 2.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

TYPE_CHECKING = False  # typing, argparse and bot are imported only past the warm status path
if TYPE_CHECKING:
    import argparse

# Subcommand modules, in the order ``forksync --help`` lists them. A module missing here is
# a feature not built yet; one that fails to import is a bug and must not be hidden.
SUBCOMMANDS: tuple[str, ...] = (
    "status",
    "ledger",
    "mark",
    "plan",
    "bundle",
    "chain",
    "resolve",
    "merge_file",
    "l1",
    "l2",
    "kernels",
    "bisect",
    "serve",
    "demo",
)

EXIT_USAGE = 2


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser; with ``only`` (a known subcommand) just that one, so a command
    does not pay for importing every other command's dependencies (status stays fast)."""
    import argparse
    import importlib

    parser = argparse.ArgumentParser(
        prog="forksync",
        description="Keep a fork close to a fast-moving upstream: ledger, metrics, bundles, tests.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    only = only.replace("-", "_") if only else only  # `merge-file` lives in merge_file.py
    for name in SUBCOMMANDS if only not in SUBCOMMANDS else (only,):
        try:
            module = importlib.import_module(f"workers.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"workers.cli.{name}":
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["status"]:
        # A repeated status answers from its last run when nothing it depends on moved,
        # before argparse, bot or the engine are even imported.
        from workers.cli import warm

        code = warm.answer(argv[1:])
        if code is not None:
            return code
    from core.errors import ForksyncError

    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ForksyncError as exc:
        print(f"forksync: error: {exc.one_line()}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("forksync: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
