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
    "store",
    "serve",
    "demo",
)

EXIT_USAGE = 2


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser; with ``only`` (a known subcommand) just that one, so a command
    does not pay for importing every other command's dependencies (status stays fast)."""
    import importlib

    from workers.cli.usage import OneLineParser

    parser = OneLineParser(
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
    # Flags a subcommand does not know are reported by that subcommand (its --help lists the right ones).
    for command_parser in sub.choices.values():
        command_parser.set_defaults(_command_parser=command_parser)
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
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        parser.error(f"unrecognized arguments: {argv[0]} (options go after the command)")
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        getattr(args, "_command_parser", parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return int(args.func(args) or 0)
    except ForksyncError as exc:
        print(f"forksync: error: {exc.one_line()}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("forksync: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _reader_went_away()


EXIT_BROKEN_PIPE = 141  # what a shell reports for a process killed by SIGPIPE (128 + 13), as git's


def _reader_went_away() -> int:
    """``forksync plan | head``: the reader closed the pipe. Stop quietly, like git does; point stdout
    at /dev/null so that the interpreter's own flush at exit does not print a second traceback."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
