"""``forksync demo``: generate the sample upstream/fork pair in a temp dir and show ``status`` on it.

No network, no Redis, no GitHub: everything runs on two local repositories. Later features add
their own sections by extending :func:`run_demo` (it returns the pair's paths for them).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from core.errors import ForksyncError
from core.github.records import cut
from workers.cli.pairargs import one_line_errors
from workers.cli.status import render_table
from workers.demo.sample import Sample, make_sample
from workers.engine.ledger.cache import load_ledger
from workers.engine.pair import open_configured


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="generate a sample Triton-like upstream/fork pair and show status on it (offline)",
        description="Generate a realistic sample upstream/fork pair in a temp dir (or --dir) and run status on it.",
    )
    one_line_errors(parser)
    parser.add_argument(
        "--dir", default=None, metavar="DIR", help="keep the sample here instead of a temp dir"
    )
    parser.add_argument("--json", action="store_true", help="print status as JSON")
    parser.add_argument(
        "--no-loop",
        action="store_true",
        help="status only: skip the ingestion loop (Celery, simulated GitHub)",
    )
    parser.add_argument(
        "--serve", action="store_true", help="then serve the dashboard of the demo's data until Ctrl-C"
    )
    parser.set_defaults(func=run)


# What the demo writes under its folder; a marker file says the folder is the demo's, so that a
# re-run may clear these (and only these) first.
MARKER = ".forksync-demo"
OWN = ("upstream", "fork", "github", "data", "cache")


def prepare_dir(root: Path) -> None:
    """Make ``root`` ready for a (re-)run: new or empty, or a previous demo's, cleared of what it wrote."""
    if root.exists() and not root.is_dir():
        raise ForksyncError(f"--dir {root} is a file", "give a folder (new or empty) for the sample")
    if root.is_dir() and any(root.iterdir()) and not (root / MARKER).exists():
        raise ForksyncError(
            f"--dir {root} is not empty and was not made by forksync demo",
            "give a new or empty folder (a demo's own folder can be reused)",
        )
    for part in OWN:
        shutil.rmtree(root / part, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    (root / MARKER).write_text(
        "made by forksync demo; a re-run clears upstream/, fork/, github/, data/, cache/\n"
    )


def run(args: argparse.Namespace) -> int:
    if args.dir:
        root = Path(args.dir).resolve()
        prepare_dir(root)
        _demo_and_loop(root, args, kept=True)
        return 0
    with tempfile.TemporaryDirectory(prefix="forksync-demo-") as tmp:
        _demo_and_loop(Path(tmp), args, kept=False)
    return 0


def _demo_and_loop(root: Path, args: argparse.Namespace, *, kept: bool) -> None:
    # The demo's pair caches live with the demo (removed with a temp dir), not in ~/.cache/forksync.
    saved = os.environ.get("FORKSYNC_CACHE_DIR")
    os.environ["FORKSYNC_CACHE_DIR"] = str(root / "cache")
    try:
        sample = run_demo(root, as_json=args.json)
        if not args.json and not args.no_loop:
            from workers.demo.loop import run_loop_demo
            from workers.demo.sample import UPSTREAM_URL

            run_loop_demo(
                root,
                sample.upstream,
                sample.fork,
                UPSTREAM_URL,
                kept=kept,
                serving=bool(getattr(args, "serve", False)),
            )
            if getattr(args, "serve", False):
                from workers.demo.loop import serve_dashboard

                serve_dashboard(root / "data")
    finally:
        if saved is None:
            os.environ.pop("FORKSYNC_CACHE_DIR", None)
        else:
            os.environ["FORKSYNC_CACHE_DIR"] = saved


def run_demo(root: Path, *, as_json: bool = False) -> Sample:
    """Make the sample under ``root`` and print its status; return it for later sections."""
    sample = make_sample(root)
    pair, config = open_configured(str(sample.upstream), str(sample.fork))
    ledger = load_ledger(pair, config.ledger, upstream_url=config.upstream.url)
    if as_json:
        print(json.dumps(ledger.metrics.as_json(), indent=2, sort_keys=True))
        return sample
    print(f"sample pair: upstream {sample.upstream}  fork {sample.fork}\n")
    print(render_table(pair, ledger.metrics, ledger.fork_pins))
    print("\nledger (upstream order):")
    for e in ledger.entries:
        print(f"  {e.sha[:10]}  {e.disposition.value:<9}  {cut(e.subject, 64):<64}  {cut(e.reason, 70)}")
    return sample
