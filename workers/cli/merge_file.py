"""``forksync merge-file OURS BASE THEIRS [--path P] [--json]``: the resolution pipeline on one file.

git merge-file's contract and argument order: the result is written to OURS; exit 0 when
resolved, 1 when conflict markers are left (git's zdiff3 merge, as git would leave it), 2 on
error. So it also serves as a git merge driver::

    [merge "forksync"]
        driver = forksync merge-file %A %O %B --path %P

Inside a repository, the resolution memory at refs/forksync/resolutions is consulted too.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import pygit2

from core.config import DEFAULT_RULES_OFF, RESOLVE_RULES
from core.errors import ForksyncError
from workers.cli.pairargs import one_line_errors
from workers.engine.resolve.memory import DEFAULT_REF, ResolutionMemory
from workers.engine.resolve.pipeline import Conflict, resolve_text
from workers.engine.resolve.strategies import enabled

EXIT_RESOLVED, EXIT_MARKERS = 0, 1


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "merge-file",
        help="three-way merge one file with forksync's resolution pipeline (git merge-file's contract)",
        description="Merge THEIRS into OURS relative to BASE, resolving conflicts with the deterministic "
        "pipeline and the rails; the result is written to OURS. Exit 0: resolved; 1: conflict markers left; "
        "2: error. Usable as a merge driver: driver = forksync merge-file %%A %%O %%B --path %%P",
    )
    one_line_errors(parser)
    parser.add_argument("ours", metavar="OURS", help="the current version; receives the result")
    parser.add_argument("base", metavar="BASE", help="the common ancestor")
    parser.add_argument("theirs", metavar="THEIRS", help="the version merged in")
    parser.add_argument(
        "--path", metavar="P", help="the file's path in the repository (language rules, memory)"
    )
    parser.add_argument("--json", action="store_true", help="print what was done as JSON on stdout")
    parser.add_argument(
        "--off",
        action="append",
        default=[],
        metavar="RULE",
        choices=RESOLVE_RULES,
        help="switch a deterministic rule off, as resolve.rules_off does (repeatable; replaces the "
        f"default list, {', '.join(DEFAULT_RULES_OFF)})",
    )
    parser.add_argument(
        "--all-rules",
        action="store_true",
        help="switch no rule off by default (only those named with --off), as rules_off: [] does",
    )
    parser.set_defaults(func=run)


def _read(path: str, role: str) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ForksyncError(f"cannot read {role} file {path}: {exc.strerror}", "check the path") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ForksyncError(
            f"{role} file {path} is not UTF-8 text", "merge binary files with git's own driver"
        ) from None


def _memory() -> ResolutionMemory | None:
    found = pygit2.discover_repository(os.getcwd())
    if not found:
        return None
    return ResolutionMemory(pygit2.Repository(found), DEFAULT_REF)


def rules_off(named: list[str], all_rules: bool) -> tuple[str, ...]:
    """The rules switched off: those named, or the config's default list when none are named (as rules_off)."""
    return tuple(named) if named or all_rules else DEFAULT_RULES_OFF


def run(args: argparse.Namespace) -> int:
    ours, base, theirs = _read(args.ours, "OURS"), _read(args.base, "BASE"), _read(args.theirs, "THEIRS")
    path = args.path or args.ours
    outcome, merged = resolve_text(
        Conflict(path, base, ours, theirs),
        memory=_memory(),
        strategies=enabled(rules_off(args.off, args.all_rules)),
    )
    if outcome.entry is not None and outcome.entry.content is not None:
        result, code = outcome.entry.content, EXIT_RESOLVED
    else:
        assert merged is not None
        result, code = merged.raw.encode("utf-8", "surrogateescape"), EXIT_MARKERS
    try:
        Path(args.ours).write_bytes(result)
    except OSError as exc:
        raise ForksyncError(
            f"cannot write the result to {args.ours}: {exc.strerror}", "check permissions"
        ) from None
    if args.json:
        doc: dict[str, Any] = {"path": path, "resolved": code == EXIT_RESOLVED}
        if outcome.entry is not None:
            doc["entry"] = outcome.entry.as_json(text=True)
        if outcome.waiting is not None:
            doc["waiting"] = outcome.waiting.as_json()
        print(json.dumps(doc, indent=2))
    return code
