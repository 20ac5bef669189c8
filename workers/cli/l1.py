"""``forksync l1``: run a commit's L1 suites locally exactly as a worker would, and conclude."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from core.config import CONFIG_PATH, RepoConfig, load_repo_config, load_repo_config_file
from core.errors import ForksyncError
from core.store import open_store
from workers.engine.git import Repository
from workers.testing.canary import CanaryResult, run_canary
from workers.testing.l1 import CANCELLED, FAILURE, L1Run, run_l1_for_ref
from workers.testing.triage import TrunkResults

# Exit status: 0 success (or nothing configured), 1 the change failed L1, 3 only the runner failed.
EXIT_FAILURE, EXIT_INFRA = 1, 3


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "l1",
        help="run the L1 suites of a commit locally, as a worker would",
        description=(
            "Check out REF in a clean detached worktree, run each configured L1 suite in its own process "
            "group with its timeout (GPU suites after the runner canary), read their JUnit XML, apply "
            "the omitted-suite watchdog and trunk-aware triage, and print the results and the "
            f"conclusion. The config is {CONFIG_PATH} at REF unless --config is given. "
            "Exit status: 0 success, 1 failure, 3 infrastructure only (not the change's fault), 2 usage."
        ),
    )
    p.add_argument("--repo", default=".", help="the repository (default: current directory)")
    p.add_argument("--ref", default="HEAD", help="the commit to test (default HEAD)")
    p.add_argument("--config", help=f"config file (default: {CONFIG_PATH} at REF)")
    p.add_argument(
        "--suite", action="append", dest="suites", metavar="NAME", help="run only this suite (repeatable)"
    )
    p.add_argument("--json", action="store_true", help='print {"conclusion", "suites": [...]} as JSON')
    p.add_argument("--base", help="the trunk branch to triage against (default: fork.branch from the config)")
    p.add_argument(
        "--trunk", action="store_true", help="this is a trunk commit: record its results for triage"
    )
    p.add_argument(
        "--canary",
        choices=("gpu", "interpreter", "off"),
        default="gpu",
        help="runner canary before GPU suites (default gpu; interpreter: Triton on the CPU)",
    )
    p.add_argument(
        "--data-dir", help="where logs and trunk results live (default $FORKSYNC_DATA_DIR or .git/forksync)"
    )
    p.set_defaults(func=run)


def load_config(repo: Repository, ref: str, path: str | None) -> RepoConfig:
    if path:
        return load_repo_config_file(path)
    spec = f"{ref}:{CONFIG_PATH}"
    if not repo.ok("cat-file", "-e", spec):
        return RepoConfig()
    return load_repo_config(repo.git("show", spec).decode("utf-8", "replace"), f"{CONFIG_PATH} at {ref}")


def data_dir(repo: Repository, given: str | None) -> Path:
    if given:
        return Path(given).resolve()
    if os.environ.get("FORKSYNC_DATA_DIR"):
        return Path(os.environ["FORKSYNC_DATA_DIR"]).resolve()
    common = Path(repo.text("rev-parse", "--git-common-dir"))
    return (common if common.is_absolute() else repo.path / common).resolve() / "forksync"


def run(args: argparse.Namespace) -> int:
    repo_path = Path(args.repo).resolve()
    repo = Repository(repo_path)
    if not repo.ok("rev-parse", "--git-dir"):
        raise ForksyncError(f"{repo_path} is not a git repository", "pass --repo PATH of a clone")
    if repo.rev_parse(args.ref) is None:
        raise ForksyncError(
            f"{args.ref!r} is not a commit in {repo_path}", "fetch it first, or pass an existing --ref"
        )
    config = load_config(repo, args.ref, args.config)
    base = args.base
    if base is None and not args.trunk and repo.rev_parse(config.fork.branch) is not None:
        base = config.fork.branch
    canary = _canary(args.canary)
    result = run_l1_for_ref(
        repo_path,
        args.ref,
        config,
        data_dir=data_dir(repo, args.data_dir),
        suite_names=args.suites,
        base_ref=base,
        trunk=args.trunk,
        canary=canary,
        results=TrunkResults(
            open_store(os.environ.get("FORKSYNC_DATABASE_URL"), data_dir(repo, args.data_dir))
        ),
    )
    if args.json:
        print(json.dumps(result.as_json(), indent=2))
    else:
        print(render_text(result))
    if result.conclusion == FAILURE:
        return EXIT_FAILURE
    if result.conclusion == CANCELLED:
        return EXIT_INFRA
    return 0


def _canary(mode: str) -> Any:
    if mode == "off":
        return lambda: CanaryResult(True, "skipped", "canary disabled with --canary off", 0.0)
    if mode == "interpreter":
        return lambda: run_canary(interpret=True)
    return None  # the default GPU canary


def render_text(result: L1Run) -> str:
    from core.render.l1 import l1_title

    lines = [f"L1 on {result.sha[:12]}: {result.conclusion} - {l1_title(result)}"]
    if result.canary is not None:
        lines.append(f"  {result.canary.describe()}")
    if result.suites:
        lines.append(
            f"  {'suite':<20} {'status':<15} {'passed':>7} {'failed':>7} {'skipped':>8} {'expected':>9} {'time':>8}"
        )
    for s in result.suites:
        lines.append(
            f"  {s.name:<20} {s.status:<15} {s.passed:>7} {s.failed:>7} {s.skipped:>8} {s.expected or '-':>9} "
            f"{s.duration_s:>7.1f}s"
        )
        if s.reason and s.status != "passed":
            lines.append(f"      {s.reason}")
        for f in s.failures[:20]:
            where = f" ({f.file}:{f.line})" if f.file and f.line else ""
            lines.append(
                f"      [{f.triage}] {f.test_id}{where}: {f.message.splitlines()[0] if f.message else ''}"
            )
        if len(s.failures) > 20:
            lines.append(f"      ... and {len(s.failures) - 20} more failures")
        if s.log_path:
            lines.append(f"      log: {s.log_path}")
    if result.trunk:
        lines.append("  trunk run: results recorded for triage and the suites' baselines")
    return "\n".join(lines)
