"""Comment commands: how long a maintainer waits for an answer, side by side with the CLI they would run.

Two figures:

1. **Parser throughput** on realistic comments (prose, fenced code, quoted replies, several
   commands, some with unbalanced quotes), against the quick baseline a bot author would write:
   ``shlex.split`` on every line that starts with ``/`` (which knows nothing of fences or quotes
   and raises on an unbalanced quote: the count of such crashes is printed too).
2. **Comment → answer** for ``/status`` and ``/skip``: a signed ``issue_comment`` webhook into
   ``bot.create_app``, the real ``forksync.on_comment`` task run in-process, the loopback GitHub
   over HTTP, the fork as a bare git remote served over HTTP (fetch, ledger, notes push, reply,
   reactions), against what the maintainer runs otherwise on a local clone:
   ``forksync status --json`` and ``forksync mark REF wont_port`` (each a fresh process).

    python -m benchmarks.bench_commands [--runs 7] [--comments 5000]

Uses temporary directories and an in-memory rate-limit gate; touches no shared Redis keys.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def hermetic(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n"
        '[protocol "file"]\n\tallow = always\n'
    )
    os.environ.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", FORKSYNC_CACHE_DIR=str(home / "cache"))
    os.environ.pop("REDIS_URL", None)


# --------------------------------------------------------------------------- parser


def comments(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    prose = ["Thanks, this looks good.", "I think the AMD path breaks here.", "See the log below.", "LGTM"]
    cmds = [
        "/skip abcd123 AMD only",
        "/skip #5123 \"breaks the 'hopper' path",
        "/bundle max=20 dry-run",
        "/retest unit lit",
        "/chain 9f8e7d6 into chain-9f8e7d6",
        "/status",
        "@forksync defer #77 later",
        "/bisect tflops good=abc1234",
        "/urgent #4242",
        "/hlep",
    ]
    out = []
    for _ in range(n):
        lines: list[str] = []
        for _ in range(rng.randint(2, 12)):
            kind = rng.random()
            if kind < 0.45:
                lines.append(rng.choice(prose))
            elif kind < 0.7:
                lines.append(rng.choice(cmds))
            elif kind < 0.85:
                lines += ["```", rng.choice(cmds), "error: something failed at line 12", "```"]
            else:
                lines.append("> " + rng.choice(cmds))
        out.append("\n".join(lines))
    return out


def naive(text: str) -> list[list[str]]:
    return [shlex.split(line) for line in text.splitlines() if line.startswith("/")]


def bench_parser(n: int) -> dict[str, float]:
    from core.commands import parse

    texts = comments(n)
    t0 = time.perf_counter()
    found = sum(len(parse(t)) for t in texts)
    ours = time.perf_counter() - t0
    crashes = 0
    t0 = time.perf_counter()
    for t in texts:
        try:
            naive(t)
        except ValueError:
            crashes += 1
    base = time.perf_counter() - t0
    return {"comments": n, "commands": found, "ours_s": ours, "naive_s": base, "naive_crashes": crashes}


# --------------------------------------------------------------------------- comment -> answer


def bench_answers(runs: int, tmp: Path) -> dict[str, Any]:
    from bot import create_app
    from core.settings import WorkerSettings
    from tests.fixtures.commands import WORLD_CONFIG, CommandWorld
    from tests.fixtures.ingest import build_ingest_pair
    from tests.fixtures.webhooks import SECRET, RecordingSender
    from tests.gitrepo import Clock, GitRepo
    from tests.loopback_github import LoopbackGitHub
    from workers.app.celery_app import create_celery
    from workers.tasks import commands as command_tasks

    gh = LoopbackGitHub(tmp / "github").start()
    gh.add_repo("acme/fork")
    gh.installation = gh.add_installation(["acme/fork"])
    clock = Clock()
    pair = build_ingest_pair(lambda name: GitRepo(tmp / name, clock), tmp, fork_bare=gh.bare("acme/fork"))
    pair.fork.commit(
        "config", {".github/forksync.yml": WORLD_CONFIG.format(url=pair.upstream_bare, rate_limit=10_000)}
    )
    pair.push_fork()
    gh.set_permission("acme/fork", "maint", "write")
    issue = gh.add_issue("acme/fork", "steering")
    api = gh.api_url
    settings = WorkerSettings.from_mapping(
        {
            **gh.settings(),
            "FORKSYNC_DATA_DIR": str(tmp / "data"),
            "FORKSYNC_GIT_URL_MAP": json.dumps({f"{api}/": f"{api}/git/"}),
        }
    )
    create_celery(settings)
    command_tasks.send_task = lambda name, kwargs: None  # type: ignore[assignment]
    command_tasks._gates.clear()

    class Dedup:
        def claim(self, delivery: str) -> bool:
            return True

        def release(self, delivery: str) -> None:
            pass

        def check(self) -> str:
            return "bench"

    sender = RecordingSender()
    app = create_app(
        {"FORKSYNC_WEBHOOK_SECRET": SECRET, "FORKSYNC_DATA_DIR": str(tmp / "web")},
        sender=sender,
        dedup=Dedup(),
    )
    world = CommandWorld(gh, pair, app.test_client(), sender, settings, issue, [])

    def timed(body: str, reset: bool = False) -> float:
        if reset:  # clear the decision so that every /skip writes one
            subprocess.run(
                ["git", "--git-dir", str(gh.bare("acme/fork")), "update-ref", "-d", "refs/notes/forksync"],
                check=False,
                capture_output=True,
            )
        t0 = time.perf_counter()
        cid = world.say(body)
        spent = time.perf_counter() - t0
        assert world.replies(cid), "no reply"
        return spent

    timed("/status")  # warm the caches (pair cache, ledger cache) as a running worker has them
    status_s = [timed("/status") for _ in range(runs)]
    skip_s = [timed("/skip #102 bench", reset=True) for _ in range(runs)]

    # The maintainer's alternative: the CLI on a local clone of the fork (warm cache as well).
    clone = tmp / "clone"
    subprocess.run(["git", "clone", "-q", str(gh.bare("acme/fork")), str(clone)], check=True)
    cli = [sys.executable, "-m", "workers.cli"]
    pair_args = ["--upstream", str(pair.upstream_bare), "--fork", str(clone)]

    def run_cli(args: list[str]) -> float:
        t0 = time.perf_counter()
        subprocess.run([*cli, *args], check=True, capture_output=True, cwd=ROOT)
        return time.perf_counter() - t0

    run_cli(["status", "--json", *pair_args])
    cli_status_s = [run_cli(["status", "--json", *pair_args]) for _ in range(runs)]
    cli_mark_s = []
    for _ in range(runs):
        subprocess.run(
            ["git", "-C", str(clone), "update-ref", "-d", "refs/notes/forksync"],
            check=False,
            capture_output=True,
        )
        cli_mark_s.append(
            run_cli(["mark", *pair_args, pair.shas["#102"][:8], "wont_port", "--reason", "bench"])
        )
    gh.close()
    return {"status": status_s, "skip": skip_s, "cli_status": cli_status_s, "cli_mark": cli_mark_s}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--comments", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="forksync-bench-commands-") as raw:
        tmp = Path(raw)
        hermetic(tmp / "home")
        sys.path.insert(0, str(ROOT))
        p = bench_parser(args.comments)
        print(f"parser: {p['comments']} comments, {p['commands']} commands")
        print(f"  forksync parse : {p['ours_s'] * 1e6 / p['comments']:.1f} us/comment")
        print(
            f"  naive shlex    : {p['naive_s'] * 1e6 / p['comments']:.1f} us/comment "
            f"(raised on {p['naive_crashes']} comments; ran fenced and quoted commands)"
        )
        print(f"  ratio forksync/naive: {p['ours_s'] / p['naive_s']:.2f}")
        a = bench_answers(args.runs, tmp)
        med = {k: statistics.median(v) for k, v in a.items()}
        print(f"comment -> answer (median of {args.runs}, in-process task, loopback GitHub over HTTP):")
        print(
            f"  /status : {med['status']:.3f} s   vs forksync status --json (CLI): {med['cli_status']:.3f} s "
            f"  ratio {med['status'] / med['cli_status']:.2f}"
        )
        print(
            f"  /skip   : {med['skip']:.3f} s   vs forksync mark (CLI): {med['cli_mark']:.3f} s "
            f"  ratio {med['skip'] / med['cli_mark']:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
