"""``forksync resolve --upstream U --fork F REF [--onto BRANCH] [--agent CMD] [--json]``: propose a resolution.

Cherry-picks the upstream commit REF onto the fork's trunk (or --onto) in memory, runs the
pipeline (memory from the fork's refs/forksync/resolutions, the deterministic strategies, the
agent when --agent or the config names one), the rails, and prints File/Action/Reason per file
or what waits for a human. Nothing touches a work tree; the resolved tree is written to the
pair's cache only. Exit 0: resolved (or clean); 1: files wait for a human; 2: error.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
from typing import Any

import pygit2

from core.config import RepoConfig
from core.errors import ForksyncError
from workers.cli.pairargs import add_pair_arguments, one_line_errors, open_from_args
from workers.engine.git import GitError
from workers.engine.ledger.cache import load_ledger
from workers.engine.ledger.records import matching
from workers.engine.pair import FORK_PREFIX, Pair
from workers.engine.resolve import resolve_pick
from workers.engine.resolve.agent import agent_step, from_config
from workers.engine.resolve.history import ledger_history
from workers.engine.resolve.memory import fetch_memory
from workers.engine.resolve.model import ResolveOutcome
from workers.engine.resolve.rails import Check


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "resolve",
        help="propose a conflict resolution for one upstream commit onto the fork (no work tree touched)",
        description="Cherry-pick REF onto the fork in memory and resolve its conflicts behind the rails. "
        "Exit 0: resolved or clean; 1: files wait for a human; 2: error.",
    )
    one_line_errors(parser)
    add_pair_arguments(parser)
    parser.add_argument(
        "ref", metavar="REF", help="the upstream commit: #N (upstream PR), a sha, a prefix or a revision"
    )
    parser.add_argument(
        "--onto",
        metavar="BRANCH",
        help="the fork branch (or commit) to pick onto (default: the fork's trunk)",
    )
    parser.add_argument(
        "--agent", metavar="CMD", help="run this agent command (JSON on stdin/stdout) for what is left"
    )
    parser.add_argument(
        "--json", action="store_true", help="the outcome as JSON, with raw conflicts and resolution diffs"
    )
    parser.set_defaults(func=run)


def _upstream_commit(pair: Pair, config: RepoConfig, ref: str) -> str:
    if ref.startswith("#") and ref[1:].isdigit():
        ledger = load_ledger(pair, config.ledger, upstream_url=config.upstream.url)
        hits = matching(ledger.entries, ref)
        if len(hits) != 1:
            raise ForksyncError(
                f"{ref} names {'no' if not hits else len(hits)} upstream commit{'s' if len(hits) > 1 else ''}",
                "give the sha instead",
            )
        return hits[0].sha
    sha = pair.repo.rev_parse(ref)
    if sha is None:
        raise ForksyncError(
            f"{ref} is not a commit of upstream or the fork", "give an upstream sha, a prefix or #N"
        )
    return sha


def _onto(pair: Pair, onto: str | None) -> str:
    if onto is None:
        return pair.fork_tip
    for rev in (f"{FORK_PREFIX}{onto}", onto):
        sha = pair.repo.rev_parse(rev)
        if sha is not None:
            return sha
    try:
        pair.repo.git(
            "fetch", "--quiet", "--no-tags", "--", pair.fork.remote, f"+refs/heads/{onto}:{FORK_PREFIX}{onto}"
        )
    except GitError:
        raise ForksyncError(
            f"--onto {onto} is neither a fork branch nor a commit", "name a branch of the fork"
        ) from None
    sha = pair.repo.rev_parse(f"{FORK_PREFIX}{onto}")
    assert sha is not None
    return sha


def render_text(outcome: ResolveOutcome) -> str:
    lines = []
    if outcome.error:
        return f"error: {outcome.error}"
    if outcome.clean:
        return f"{outcome.commit[:12]} picks cleanly onto {outcome.onto[:12]} (tree {outcome.tree})"
    for e in outcome.entries:
        lines += [
            f"- File: {e.path}",
            f"  Action: {e.action}",
            f"  Reason: {e.reason}",
            f"  Strategy: {e.strategy}",
        ]
    for w in outcome.waiting:
        lines += [f"- Waiting: {w.path}", f"  {w.reason}"]
    if outcome.resolved:
        lines.append(
            f"resolved: {len(outcome.entries)} file(s); tree {outcome.tree} (in the cache; nothing pushed)"
        )
    else:
        lines.append(f"not resolved: {len(outcome.waiting)} file(s) wait for a human")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    pair, config = open_from_args(args)
    commit = _upstream_commit(pair, config, args.ref)
    onto = _onto(pair, args.onto)
    memory = fetch_memory(pair, config.resolve.memory_ref)
    repo = pygit2.Repository(str(pair.repo.path))
    agent = from_config(config.resolve.agent, shlex.split(args.agent) if args.agent else None)
    checks = tuple(Check(suffix, argv) for suffix, argv in config.resolve.checks)
    step = (
        agent_step(
            agent, repo, onto=onto, checks=checks, history_commits=config.resolve.agent.history_commits
        )
        if agent
        else None
    )
    try:
        ledger = load_ledger(pair, config.ledger, upstream_url=config.upstream.url)
        history = ledger_history(pair.repo, pair.base, onto, ledger)  # the ledger's carried commits
        outcome = resolve_pick(repo, commit, onto, config=config, memory=memory, agent=step, history=history)
    except subprocess.SubprocessError as exc:  # pragma: no cover - defensive: agent errors are outcomes
        raise ForksyncError(f"the resolution failed: {exc}", "rerun with --json for details") from None
    if outcome.error:
        raise ForksyncError(outcome.error, "check REF and --onto")
    if args.json:
        print(json.dumps(outcome.as_json(text=True), indent=2))
    else:
        print(render_text(outcome))
    return 0 if outcome.resolved else 1
