"""One-line usage errors for every ``forksync`` parser: the README's promise (one line, exit 2).

argparse prints a usage block and the message on separate lines; :class:`OneLineParser` (the
class of the top parser, hence of every subcommand's parser) prints only
``forksync: error: <prog>: <message>; see <prog> --help`` on stderr and exits 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

EXIT_USAGE = 2


def usage_error(prog: str, message: str) -> NoReturn:
    print(f"forksync: error: {prog}: {message}; see {prog} --help", file=sys.stderr)
    sys.exit(EXIT_USAGE)


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (subparsers inherit the class)."""

    def error(self, message: str) -> NoReturn:
        usage_error(self.prog, message)
