"""``forksync bisect``: find the first bad trunk commit locally, like ``git bisect run`` in a clean worktree."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from core.errors import ForksyncError
from workers.engine.git import Repository
from workers.testing.bisect import BisectReport, MetricRule, Reference, bisect

EXIT_NOT_FOUND = 1


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "bisect",
        help="find the first bad commit between GOOD and BAD by running a command at midpoints",
        description=(
            "Bisect the first-parent history GOOD..BAD, running COMMAND in a clean worktree at each "
            "midpoint. Without --metric the exit status decides as in git bisect run: 0 good, 125 skip, "
            "1-127 bad, 128 or more (or a signal) aborts. With --metric NAME --threshold PCT, the command "
            'prints {"metrics": {NAME: value}} as its last stdout line; it is run once at GOOD for a '
            "reference, and a commit is bad when NAME is worse than that by more than PCT percent. "
            "Infrastructure failures (disk full, network, busy GPU) and timeouts are skipped."
        ),
    )
    p.add_argument("--repo", default=".", help="the repository (default: current directory)")
    p.add_argument("--good", required=True, help="a commit known good")
    p.add_argument("--bad", required=True, help="a commit known bad (a descendant of GOOD)")
    p.add_argument("--metric", help="judge by this metric instead of the exit status")
    p.add_argument(
        "--threshold", type=float, help="with --metric: percent worse than the reference that is bad"
    )
    p.add_argument(
        "--direction",
        choices=("higher", "lower"),
        default="higher",
        help="with --metric: which way is better (default higher)",
    )
    p.add_argument("--reference", type=float, help="with --metric: the good value (skips the run at GOOD)")
    p.add_argument("--budget", type=int, help="at most this many runs (default: no limit)")
    p.add_argument("--timeout", type=float, help="seconds per run; a run that takes longer is skipped")
    p.add_argument("--cwd", default=".", help="directory inside the checkout to run COMMAND in")
    p.add_argument(
        "--test",
        action="append",
        default=[],
        dest="tests",
        metavar="TEST_ID",
        help="the failing test, to rank suspects if bisection cannot finish (repeatable)",
    )
    p.add_argument(
        "--json", action="store_true", help='print {"culprit": sha, "runs": n, "skipped": [...]} and more'
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...: run at each commit")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise ForksyncError(
            "no command given", "put it after --, e.g. forksync bisect ... -- python bench.py"
        )
    if (args.metric is None) != (args.threshold is None):
        raise ForksyncError(
            "--metric and --threshold go together", "give both, or neither to judge by exit status"
        )
    if args.reference is not None and args.metric is None:
        raise ForksyncError("--reference needs --metric", "give --metric NAME --threshold PCT too")
    if args.budget is not None and args.budget < 1:
        raise ForksyncError(f"--budget must be at least 1, got {args.budget}")
    repo_path = Path(args.repo)
    if not (repo_path / ".git").exists() and not (repo_path / "HEAD").exists():
        raise ForksyncError(f"{repo_path} is not a git repository", "pass --repo PATH of a clone")
    rule = MetricRule(args.metric, args.threshold, args.direction) if args.metric else None
    reference = Reference(args.reference, source="--reference") if args.reference is not None else None
    report = bisect(
        Repository(repo_path.resolve()),
        args.good,
        args.bad,
        command,
        rule=rule,
        reference=reference,
        budget=args.budget,
        timeout=args.timeout,
        cwd=args.cwd,
        test_ids=args.tests,
    )
    if args.json:
        print(json.dumps(report.as_json(), indent=2, sort_keys=True))
    else:
        print(render_text(report))
    return 0 if report.culprit else EXIT_NOT_FOUND


def render_text(report: BisectReport) -> str:
    lines = []
    if report.culprit:
        lines.append(f"culprit: {report.culprit} {report.culprit_subject}".rstrip())
    else:
        lines.append(f"no culprit ({report.status}): {report.reason}")
    lines.append(
        f"runs: {report.runs} over {report.candidates} commits, {len(report.skipped)} skipped, "
        f"{report.elapsed_s:.1f}s"
    )
    if report.reference is not None:
        lines.append(f"reference: {report.reference.value:g} ({report.reference.source})")
    for p in report.probes:
        lines.append(f"  {p.sha[:12]}  {p.outcome:<4}  {p.reason}")
    if not report.culprit and report.remaining:
        lines.append(f"remaining suspects: {len(report.remaining)} commits")
        for s in report.suspects:
            files = f" ({', '.join(s.files[:3])})" if s.files else ""
            lines.append(f"  {s.sha[:12]}  score {s.score:>3}  {s.subject}{files}")
    return "\n".join(lines)
