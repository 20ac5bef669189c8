"""Arguments shared by the commands that read an upstream/fork pair, and one-line usage errors."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from core.config import RepoConfig
from workers.cli.usage import usage_error
from workers.engine.pair import Pair, open_configured

EXIT_USAGE = 2


def one_line_errors(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Make argparse's usage errors one line on stderr with exit 2, like every other error."""

    def error(message: str) -> NoReturn:
        usage_error(parser.prog, message)

    parser.error = error  # type: ignore[method-assign]
    return parser


def add_pair_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--upstream", required=True, metavar="REPO", help="upstream repository: local path or URL"
    )
    parser.add_argument("--fork", required=True, metavar="REPO", help="fork repository: local path or URL")
    parser.add_argument(
        "--upstream-branch",
        default=None,
        metavar="BRANCH",
        help="upstream branch (default: config, else main)",
    )
    parser.add_argument(
        "--fork-branch", default=None, metavar="BRANCH", help="fork trunk (default: config, else main)"
    )
    parser.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="repository config (default: .github/forksync.yml at the fork's trunk tip, if any)",
    )


def open_from_args(args: Any) -> tuple[Pair, RepoConfig]:
    return open_configured(args.upstream, args.fork, args.upstream_branch, args.fork_branch, args.config)
