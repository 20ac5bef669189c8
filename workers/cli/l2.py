"""``forksync l2``: run a trunk commit's L2 benchmarks locally as the nightly does, record and judge them."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from core.config import CONFIG_PATH
from core.errors import ForksyncError
from workers.cli.l1 import data_dir, load_config
from workers.engine.git import Repository
from workers.testing.l2 import BenchmarkOutcome, run_trunk
from workers.testing.regression import FAILED, REGRESSED
from workers.testing.results import ResultStore

# Exit status: 0 every benchmark ok (or skipped), 1 a regression or failure.
EXIT_BAD = 1


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "l2",
        help="run the L2 benchmarks of a trunk commit locally, record them and judge against the baseline",
        description=(
            "Check out REF in a clean worktree and run each configured L2 benchmark; read the metrics "
            'line ({"metrics": {...}} last on stdout) and JUnit ({junit} / $FORKSYNC_JUNIT); record the '
            "runs in the result store of the data dir; judge each against the median and noise of its "
            "last good runs; and bisect a benchmark that just turned bad (within l2.bisect_budget). "
            f"The config is {CONFIG_PATH} at REF unless --config is given. Exit status: 0 ok, 1 a "
            "regression or failure, 2 usage."
        ),
    )
    p.add_argument("--repo", default=".", help="the repository (default: current directory)")
    p.add_argument("--ref", default="HEAD", help="the trunk commit to test (default HEAD)")
    p.add_argument("--config", help=f"config file (default: {CONFIG_PATH} at REF)")
    p.add_argument(
        "--benchmark",
        action="append",
        dest="benchmarks",
        metavar="NAME",
        help="run only this benchmark (repeatable)",
    )
    p.add_argument("--name", help="the repository's name in the store (default: the directory name)")
    p.add_argument(
        "--data-dir", help="where the result store lives (default $FORKSYNC_DATA_DIR or .git/forksync)"
    )
    p.add_argument("--json", action="store_true", help="print the outcomes as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    repo = Repository(Path(args.repo).resolve())
    if not repo.ok("rev-parse", "--git-dir"):
        raise ForksyncError(f"{repo.path} is not a git repository", "pass --repo PATH of a clone")
    sha = repo.rev_parse(args.ref)
    if sha is None:
        raise ForksyncError(
            f"--ref {args.ref} is not a commit in {args.repo}", "pass a sha or branch that exists"
        )
    config = load_config(repo, sha, args.config)
    if not config.l2.benchmarks:
        raise ForksyncError(
            f"no l2.benchmarks in {args.config or CONFIG_PATH}",
            "add benchmarks under l2.benchmarks (see docs/trunk-tests.md)",
        )
    known = {b.name for b in config.l2.benchmarks}
    unknown = [b for b in args.benchmarks or () if b not in known]
    if unknown:
        raise ForksyncError(
            f"no L2 benchmark named {', '.join(unknown)}", f"known: {', '.join(sorted(known))}"
        )
    name = args.name or repo.path.resolve().name
    store = ResultStore.in_data_dir(data_dir(repo, args.data_dir), os.environ.get("FORKSYNC_DATABASE_URL"))
    outcomes = run_trunk(repo, name, sha, config, store, only=tuple(args.benchmarks or ()))
    if args.json:
        print(json.dumps([as_json(o) for o in outcomes], indent=2, sort_keys=True))
    else:
        for o in outcomes:
            print(render(o))
    return EXIT_BAD if any(o.verdict.status in (REGRESSED, FAILED) for o in outcomes) else 0


def as_json(o: BenchmarkOutcome) -> dict[str, Any]:
    return {
        "benchmark": o.run.benchmark,
        "sha": o.run.sha,
        "status": o.run.status,
        "verdict": o.verdict.status,
        "reason": o.verdict.reason,
        "metrics": dict(o.run.metrics),
        "first_bad": o.first_bad,
        "bisect": o.bisect.as_json() if o.bisect else None,
        "note": o.note,
    }


def render(o: BenchmarkOutcome) -> str:
    lines = [
        f"{o.run.benchmark}: {o.verdict.status} at {o.run.sha[:12]} ({o.run.duration_s:.1f}s): {o.verdict.reason}"
    ]
    for check in o.verdict.checks:
        lines.append(f"  {'✗' if check.regressed else '✓'} {check.reason}")
    if o.bisect and o.bisect.culprit:
        lines.append(f"  culprit: {o.bisect.culprit[:12]} {o.bisect.culprit_subject} ({o.bisect.runs} runs)")
    elif o.note:
        lines.append(f"  {o.note}")
    for s in o.suspects[:5]:
        lines.append(f"  suspect {s.sha[:12]} score {s.score}: {s.subject}")
    return "\n".join(lines)
