"""Real-history replay of any upstream: forksync's partition beside a line-level oracle.

What it is for: showing the partition on histories it was not tuned on. A :class:`Project` names
an upstream history (a bare mirror, its tip), how the fork is cut from it and how much of it the
fork has already ingested, the fork's ``.github/forksync.yml`` (what a maintainer of that project
would write) and, optionally, the fork's own divergence. Triton's values are the defaults
(:data:`TRITON`, the replay ``benchmarks/replay_triton.py`` runs); other projects are in
:data:`PROJECTS`. Bring a mirror with the search tool's ``fetch`` (a bare git dir) and pass
``--mirror``.

Replay (``snapshot``): the fork is cut ``cut`` first-parent commits before the tip (the base);
the first ``ingested`` upstream commits are ingested by a real ``git cherry-pick -x`` loop in a
work tree (``-m 1`` for a merge on the mainline), leaving **holes** (every commit whose sha's first
8 hex digits are divisible by ``hole_modulus``, ~4% at 25, is skipped) and **conflicts** behind (a
pick that conflicts because of a hole is aborted and skipped). The fork carries the project's
config. Then ``forksync plan`` (engine, in process) places the backlog holes and the pending
commits; once with ``risk.link: line`` (default) and once with ``file``.

**The oracle** (git-deps style, independent of forksync's link code): walk the same commits in
upstream order with one running bundle tree (the fork tip, then every bundled commit picked onto
it by git's own merge, ``git merge-tree``). Commit B goes to the chain when ``git blame
BASE..B^`` over B's hunks, widened by one line of context (``git diff -U1``), names an earlier
chain commit; or when it touches a diverged zone or risky path; or when its real trial pick onto
the running bundle conflicts. Otherwise it is bundled and the running tree advances.

**Loose chain members** (the check that chains hold only what must be there): walking forksync's
own plan in upstream order with its running bundle tree (the fork tip, then each commit forksync
bundled), a chain member is *loose* when it touches no zone or risky path, its trial pick onto
that tree is clean, and ``git blame`` (as the oracle's) names no earlier chain member. Each is
listed with forksync's reason: a symbol link is a dependency blame cannot see (read it by hand);
anything else is a member that depends on nothing.

**Continuous** (``weekly``): the ``cut`` commits cut into calendar weeks (committer date); for
each week the fork is upstream as of the week's start (everything earlier landed) and the week's
commits are planned; forksync's pure partition (line mode, git trial picks) and the oracle, side
by side. Models: A (zones configured), B (A plus the fork's own divergence, where the project
names one) and C (no zones: seeds only from conflicts, risky paths and links). Chain conflict
counts: each chain built through commit by commit on the fork trunk, where bundle.py builds it,
a conflict "resolved" by taking the upstream side of the files, and counted.

    python -m benchmarks.replay_history --project pydantic --mirror /work/.mirror/pydantic+pydantic/repo \
        --work /tmp/replay-pydantic --only snapshot --no-speed
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pygit2

from benchmarks.bench_plan import cherry_pick_loop, fresh_fork
from core.config import RepoConfig, load_repo_config
from workers.engine.changes import CHANGES_CACHE_FILE, CommitChanges, commit_changes_many
from workers.engine.git import Repository, run_git
from workers.engine.lines import line_dependencies
from workers.engine.merges import MERGE_CACHE_FILE, GitMerger
from workers.engine.pair import open_configured
from workers.engine.partition.records import Plan
from workers.engine.partition.walk import partition
from workers.engine.paths import first_match
from workers.engine.pick import PickTarget
from workers.engine.planning import TipTrial, as_change, make_plan
from workers.engine.symbols import last_name, stoplist
from workers.engine.treenames import names_in_tree


@dataclass(frozen=True)
class Project:
    """One upstream history to replay, and the fork a maintainer of that project would keep.

    ``config``: the fork's ``.github/forksync.yml``, with ``LINK`` where ``risk.link`` goes.
    ``divergence``: a commit on top of ``tip`` whose changes ``tip..divergence`` are the fork's
    own (weekly model B), or None where the project has none to show."""

    name: str
    tip: str
    config: str
    cut: int = 1000
    ingested: int = 600
    hole_modulus: int = 25
    divergence: str | None = None

    def config_text(self, link: str = "line") -> str:
        return self.config.replace("LINK", link)

    def repo_config(self, *, zones: bool = True) -> RepoConfig:
        """The config in line mode; without ``zones``, no diverged zones (weekly model C)."""
        config = load_repo_config(self.config_text("line"))
        if zones:
            return config
        return dataclasses.replace(config, risk=dataclasses.replace(config.risk, diverged_zones=()))


# facebookexperimental/triton's pre-fork upstream: the commit before its first own commit
# ([TLX-rebase][1/2]); its own divergence is [TLX-rebase][1/2] and [2/2]: 68 files (45 added, 23
# changed). Zones and the risky path in the style of fbtriton's.
TRITON = Project(
    name="triton",
    tip="2ac060b8b",
    divergence="2d98c5e28",
    config="""\
upstream: {url: https://github.com/triton-lang/triton, branch: main}
fork: {branch: main}
bundle: {max_commits: 30, max_lines: 5000}
risk:
  diverged_zones:
    - "lib/Dialect/TritonGPU/Transforms/WarpSpecialization/**"
    - "lib/Dialect/TritonGPU/IR/LinearLayoutConversions.cpp"
    - "third_party/nvidia/lib/TritonNVIDIAGPUToLLVM/TensorMemoryToLLVM.cpp"
  risky_paths: ["cmake/llvm-hash.txt"]
  link: LINK
""",
)

# pydantic/pydantic (Python, and pydantic-core's Rust since it moved in by a subtree merge on the
# mainline, in this window). The fork a maintainer would keep: its own URL types and mypy plugin
# (diverged), and the Rust crates' lock as the pin bump to take on its own (as Triton's LLVM pin).
PYDANTIC = Project(
    name="pydantic",
    tip="2151025aa51263f3016502b00010b78e4481eaa1",
    config="""\
upstream: {url: https://github.com/pydantic/pydantic, branch: main}
fork: {branch: main}
bundle: {max_commits: 30, max_lines: 5000}
risk:
  diverged_zones:
    - "pydantic/networks.py"
    - "pydantic/mypy.py"
  risky_paths: ["pydantic-core/Cargo.lock"]
  link: LINK
""",
)

# onnx/onnx (C++ and Python, binary test data under onnx/backend/test/data). A vendor's fork with
# its own IR extensions and shape inference (diverged), taking the opset registry, the version and
# vendored third-party code on their own (a new opset renumbers what the fork registered).
ONNX = Project(
    name="onnx",
    tip="f7546912001bc31e92a238b17068a21b373d882e",
    config="""\
upstream: {url: https://github.com/onnx/onnx, branch: main}
fork: {branch: main}
bundle: {max_commits: 30, max_lines: 5000}
risk:
  diverged_zones:
    - "onnx/shape_inference/**"
    - "onnx/common/ir.h"
    - "onnx/common/ir_pb_converter.cc"
  risky_paths: ["onnx/defs/operator_sets.h", "VERSION_NUMBER", "third_party/**"]
  link: LINK
""",
)

# astral-sh/uv (Rust, with binary trampolines). A company's fork with its own authentication and
# publishing to its registry (diverged), taking the Rust toolchain pin on its own.
UV = Project(
    name="uv",
    tip="26a9dd4b2125bc271b47855e1fa0c49af3365db5",
    config="""\
upstream: {url: https://github.com/astral-sh/uv, branch: main}
fork: {branch: main}
bundle: {max_commits: 30, max_lines: 5000}
risk:
  diverged_zones:
    - "crates/uv-auth/**"
    - "crates/uv-publish/**"
  risky_paths: ["rust-toolchain.toml"]
  link: LINK
""",
)

PROJECTS: dict[str, Project] = {p.name: p for p in (TRITON, PYDANTIC, ONNX, UV)}


def git(cwd: Path, *args: str, check: bool = True) -> str:
    return run_git(cwd, list(args), check=check).decode("utf-8", "replace")


def first_parent(mirror: Path, tip: str) -> list[str]:
    return git(mirror, "rev-list", "--first-parent", "--reverse", tip, "--").split()


def is_hole(sha: str, modulus: int) -> bool:
    """A commit the fork skipped while ingesting (a hole in its history)."""
    return int(sha[:8], 16) % modulus == 0


# The fork as build_replay made it, kept beside it: each speed round starts from a copy.
PRISTINE = "fork-as-built"


def build_replay(project: Project, mirror: Path, work: Path) -> dict[str, Any]:
    """The upstream (alternates on the mirror) and the fork (``ingested`` picked with holes), made once."""
    marker = work / "replay.json"
    if marker.exists():
        info = dict(json.loads(marker.read_text()))
        if info.get("project", TRITON.name) != project.name:
            raise SystemExit(f"{work} holds the replay of {info.get('project')}, not {project.name}")
        return info
    work.mkdir(parents=True, exist_ok=True)
    tip = git(mirror, "rev-parse", "--verify", project.tip + "^{commit}").strip()
    history = first_parent(mirror, tip)
    base, upstream = history[-project.cut - 1], history[-project.cut :]
    objects = str((mirror / "objects").resolve())
    up = work / "upstream.git"
    git(work, "init", "-q", "--bare", str(up))
    (up / "objects" / "info" / "alternates").write_text(objects + "\n")
    git(up, "update-ref", "refs/heads/main", tip)
    fork = work / "fork"
    git(work, "init", "-q", "-b", "main", str(fork))
    (fork / ".git" / "objects" / "info" / "alternates").write_text(objects + "\n")
    env = {
        "GIT_AUTHOR_NAME": "fork",
        "GIT_AUTHOR_EMAIL": "fork@example.com",
        "GIT_COMMITTER_NAME": "fork",
        "GIT_COMMITTER_EMAIL": "fork@example.com",
    }
    os.environ.update(env)
    git(fork, "reset", "-q", "--hard", base)
    (fork / ".github").mkdir(exist_ok=True)
    (fork / ".github" / "forksync.yml").write_text(project.config_text("line"))
    git(fork, "add", ".github/forksync.yml")
    git(fork, "commit", "-q", "-m", "[fork] forksync config")
    holes, left = [], []
    started = time.monotonic()
    merges = set(git(mirror, "rev-list", "--merges", f"{base}..{tip}").split())
    for sha in upstream[: project.ingested]:
        if is_hole(sha, project.hole_modulus):
            holes.append(sha)
            continue
        mainline = ["-m", "1"] if sha in merges else []  # a merge on the mainline: its first-parent change
        out = subprocess.run(
            ["git", "-C", str(fork), "cherry-pick", "-x", "--allow-empty", *mainline, sha],
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            git(fork, "cherry-pick", "--abort", check=False)
            git(fork, "reset", "-q", "--hard", "HEAD", check=False)
            left.append(sha)
    info = {
        "project": project.name,
        "base": base,
        "tip": tip,
        "upstream": upstream,
        "holes": holes,
        "left_behind": left,
        "ingest_seconds": round(time.monotonic() - started, 1),
    }
    shutil.copytree(fork, work / PRISTINE, symlinks=True)  # the fork as built, for speed's rounds
    marker.write_text(json.dumps(info, indent=1))
    return info


# --------------------------------------------------------------------------- the oracle


def blame_owners(repo: Path, since: str, sha: str, files: dict[str, list[tuple[int, int]]]) -> set[str]:
    """Commits after ``since`` that last changed the given line ranges of ``sha``'s parent (git blame)."""
    owners: set[str] = set()
    for path, ranges in files.items():
        args = ["blame", "--porcelain", "-s"]
        for a, b in ranges:
            args += ["-L", f"{a},{b}"]
        out = run_git(repo, [*args, f"{since}..{sha}^", "--", path], check=False).decode("utf-8", "replace")
        for line in out.splitlines():
            head = line.split(" ", 1)[0]
            if len(head) == 40 and all(c in "0123456789abcdef" for c in head) and not line.startswith("\t"):
                owners.add(head)
    return owners


def hunk_ranges(repo: Path, sha: str, context: int = 1) -> dict[str, list[tuple[int, int]]]:
    """Per file B modifies (present in its parent): old-side line ranges of its hunks with context."""
    out = git(repo, "diff", f"-U{context}", "--no-renames", "--no-color", f"{sha}^", sha)
    files: dict[str, list[tuple[int, int]]] = {}
    path: str | None = None
    for line in out.splitlines():
        if line.startswith("--- "):
            path = None if line == "--- /dev/null" else line[6:]
        elif line.startswith("@@") and path is not None:
            old = line.split(" ")[1][1:]
            start, _, count = old.partition(",")
            a, n = int(start), int(count) if count else 1
            if n == 0:
                a, n = max(a, 1), 1
            files.setdefault(path, []).append((max(a, 1), a + n - 1))
    return files


def oracle(
    repo_path: Path,
    pg: pygit2.Repository,
    walk: Sequence[str],
    since: str,
    tree: pygit2.Oid,
    changes: dict[str, CommitChanges],
    zones: Sequence[str],
) -> dict[str, Any]:
    running = PickTarget(pg, tree, GitMerger(pg))
    chain: list[str] = []
    members: set[str] = set()
    bundled = 0
    for sha in walk:
        deps = blame_owners(repo_path, since, sha, hunk_ranges(repo_path, sha)) if members else set()
        if deps & members or first_match(changes[sha].paths, zones) or not running.pick(changes[sha]).clean:
            chain.append(sha)
            members.add(sha)
        else:
            bundled += 1
    return {"placed": len(walk), "bundled": bundled, "chain": len(chain), "members": chain}


def loose_members(
    repo_path: Path,
    pg: pygit2.Repository,
    plan: Plan,
    walk: Sequence[str],
    since: str,
    tree: pygit2.Oid,
    changes: dict[str, CommitChanges],
    zones: Sequence[str],
) -> list[dict[str, str]]:
    """forksync's chain members that nothing holds in a chain: in upstream order, with the running
    tree of forksync's own bundles (the fork tip, then each commit it bundled, picked by git's
    merge), a member that touches no zone or risky path, picks cleanly onto that tree, and over
    whose hunks ``git blame`` (as the oracle's) names no earlier chain member. Each with forksync's
    reason for it (kind and detail)."""
    running = PickTarget(pg, tree, GitMerger(pg))
    bundled = {s for b in plan.bundles for s in b.commits}
    reasons = {r.commit: r for c in plan.chains for r in c.reasons}
    chained = {s for c in plan.chains for s in c.commits}
    earlier: set[str] = set()
    loose = []
    for sha in walk:
        if sha in bundled:
            running.pick(changes[sha])
        elif sha in chained:
            if (
                not first_match(changes[sha].paths, zones)
                and not blame_owners(repo_path, since, sha, hunk_ranges(repo_path, sha)) & earlier
                and running.scratch().pick(changes[sha]).clean
            ):
                reason = reasons.get(sha)
                loose.append(
                    {
                        "commit": sha[:10],
                        "kind": reason.kind if reason else "",
                        "detail": reason.detail if reason else "",
                    }
                )
            earlier.add(sha)
    return loose


# --------------------------------------------------------------------------- build-through counts


def chain_conflicts(
    pg: pygit2.Repository,
    tree: pygit2.Oid,
    chains: Sequence[Sequence[str]],
    changes: dict[str, CommitChanges],
    conflicting: list[str] | None = None,
) -> list[int]:
    """Conflicts met building each chain through on the fork trunk, as bundle.py builds every
    branch (alone on the trunk, landable in any order); a conflict "resolved" by taking the
    upstream side of its files, and counted (and each conflicting member added to ``conflicting``)."""
    merger = GitMerger(pg)
    counts = []
    for members in chains:
        target = PickTarget(pg, tree, merger)
        conflicts = 0
        for sha in members:
            result = target.pick(changes[sha])
            if not result.clean:
                conflicts += 1
                if conflicting is not None:
                    conflicting.append(sha)
                # resolved by taking the upstream side of its files
                target.replace({d.path: d.new for d in changes[sha].deltas})
        counts.append(conflicts)
    return counts


# --------------------------------------------------------------------------- runs


def drop_caches(cache_dir: Path) -> None:
    """A cold plan: no ledger, merge or commit-analysis cache (the cache repository's objects stay)."""
    shutil.rmtree(cache_dir / "ledger", ignore_errors=True)
    for name in (MERGE_CACHE_FILE, CHANGES_CACHE_FILE):
        (cache_dir / name).unlink(missing_ok=True)


def speed(work: Path, cfg_file: Path, rounds: int = 2) -> dict[str, Any]:
    """Plan (cold caches, then warm) beside a worktree ``git cherry-pick -x`` loop over the same
    commits (the walk) onto the fork tip, alternated in one run, with the load average of each."""
    fork, up = work / "fork", work / "upstream.git"
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "fork",
        "GIT_AUTHOR_EMAIL": "fork@example.com",
        "GIT_COMMITTER_NAME": "fork",
        "GIT_COMMITTER_EMAIL": "fork@example.com",
    }
    runs: list[dict[str, Any]] = []
    outputs: set[str] = set()
    # Every round starts from the fork as built: the loop's picks (and earlier plans' pushes) land in
    # the fork's objects, which the cache borrows, so a later plan would skip writing them.
    # (A work folder made before this copy existed takes the fork as it is now: rebuild it for
    # a pristine start.)
    pristine = work / PRISTINE
    if not pristine.exists():
        shutil.copytree(fork, pristine, symlinks=True)
    for n in range(rounds):
        fresh_fork(fork, pristine)
        pair, config = open_configured(str(up), str(fork), config_file=str(cfg_file))
        drop_caches(pair.cache_dir)
        load = os.getloadavg()[0]
        started = time.monotonic()
        cold = make_plan(pair, config)
        cold_s = time.monotonic() - started
        started = time.monotonic()
        warm = make_plan(pair, config)
        warm_s = time.monotonic() - started
        outputs |= {cold.plan.to_json(), warm.plan.to_json()}
        loop_dir = work / f"loop-{n}"
        shutil.rmtree(loop_dir, ignore_errors=True)
        loop_dir.mkdir()
        loop_s, failed = cherry_pick_loop(fork, cold.order, env, loop_dir)
        runs.append(
            {
                "load": round(load, 2),
                "plan_cold_s": round(cold_s, 2),
                "plan_warm_s": round(warm_s, 2),
                "loop_s": round(loop_s, 1),
                "loop_conflicts": failed,
                "commits": len(cold.order),
                "cold_ratio": round(loop_s / cold_s, 1),
                "warm_ratio": round(loop_s / warm_s, 1),
                "load_after": round(os.getloadavg()[0], 2),
            }
        )
    if len(outputs) != 1:
        raise SystemExit("plan output differs between cold and warm runs")
    return {"runs": runs, "byte_identical": True}


def snapshot(
    project: Project, work: Path, info: dict[str, Any], skip_oracle: bool, timed: bool = True
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "holes": len(info["holes"]),
        "left_behind": len(info["left_behind"]),
        "ingest_loop_seconds": info["ingest_seconds"],
    }
    fork, up = work / "fork", work / "upstream.git"
    for link in ("line", "file"):
        cfg_file = work / f"forksync-{link}.yml"
        cfg_file.write_text(project.config_text(link))
        pair, config = open_configured(str(up), str(fork), config_file=str(cfg_file))
        started = time.monotonic()
        planned = make_plan(pair, config)
        seconds = time.monotonic() - started
        plan = planned.plan
        bundled = sum(len(b.commits) for b in plan.bundles)
        placed = len(planned.order)
        pg = pygit2.Repository(str(pair.repo.path))
        tip = pg.get(pair.fork_tip)
        assert isinstance(tip, pygit2.Commit)
        kinds: dict[str, int] = {}
        for c in plan.chains:
            for r in c.reasons:
                kinds[r.kind] = kinds.get(r.kind, 0) + 1
        counts = (
            chain_conflicts(pg, tip.tree.id, [c.commits for c in plan.chains], planned.changes)
            if link == "line"
            else []
        )
        out[link] = {
            "placed": placed,
            "bundled": bundled,
            "share": round(bundled / placed, 3) if placed else 0,
            "bundles": [len(b.commits) for b in plan.bundles],
            "stacked": sum(getattr(b, "stacked_on", None) is not None for b in plan.bundles),
            "chains": sorted((len(c.commits) for c in plan.chains), reverse=True),
            "reasons": kinds,
            "plan_seconds": round(seconds, 2),
            "chain_conflicts": sum(counts),
            "chain_conflicts_each": counts,
            "plan_sha256": hashlib.sha256(plan.to_json().encode()).hexdigest()[:12],
        }
        if link == "line" and timed:
            out["speed"] = speed(work, cfg_file)
        if link == "line" and not skip_oracle:
            started = time.monotonic()
            result = oracle(
                Path(pair.repo.path),
                pg,
                planned.order,
                info["base"],
                tip.tree.id,
                planned.changes,
                config.risk.diverged_zones + config.risk.risky_paths,
            )
            ours = {s for c in plan.chains for s in c.commits}
            theirs = set(result.pop("members"))
            result["seconds"] = round(time.monotonic() - started, 1)
            result["share"] = round(result["bundled"] / result["placed"], 3)
            result["ours_chained_oracle_bundled"] = len(ours - theirs)
            result["oracle_chained_ours_bundled"] = len(theirs - ours)
            why = {r.commit: f"{r.kind}: {r.detail}" for c in plan.chains for r in c.reasons}
            result["ours_chained_oracle_bundled_why"] = {
                s[:10]: why.get(s, "") for s in planned.order if s in ours - theirs
            }
            result["oracle_chained_ours_bundled_commits"] = [
                s[:10] for s in planned.order if s in theirs - ours
            ]
            out["oracle"] = result
            out[link]["loose_members"] = loose_members(
                Path(pair.repo.path),
                pg,
                plan,
                planned.order,
                info["base"],
                tip.tree.id,
                planned.changes,
                config.risk.diverged_zones + config.risk.risky_paths,
            )
    return out


def diverged_tree(
    pg: pygit2.Repository, repo_path: Path, upstream_tree: pygit2.Oid, base: str, own: str
) -> tuple[pygit2.Oid, int]:
    """``upstream_tree`` plus the fork's own changes ``base..own`` by git's merge; where they
    conflict with that upstream the file stays upstream's (the fork's change there is left out),
    and so does a file whose blob the partial mirror lacks. Returns the tree and the files left out."""
    b, o = pg.revparse_single(base).peel(pygit2.Tree), pg.revparse_single(own).peel(pygit2.Tree)
    theirs = PickTarget(pg, o.id)
    for delta in b.diff_to_tree(o).deltas:
        if delta.new_file.id != pygit2.Oid(hex="0" * 40) and delta.new_file.id not in pg:
            old = delta.old_file
            theirs.replace(
                {delta.new_file.path: None if old.id == pygit2.Oid(hex="0" * 40) else (old.id, int(old.mode))}
            )
    sig = pygit2.Signature("m", "m@example.com", 0, 0)
    root = pg.create_commit(None, sig, sig, "base", b.id, [])
    one = pg.create_commit(None, sig, sig, "ours", upstream_tree, [root])
    two = pg.create_commit(None, sig, sig, "theirs", theirs.tree(), [root])
    out = git(
        repo_path,
        "merge-tree",
        "--write-tree",
        "--name-only",
        "--no-messages",
        str(one),
        str(two),
        check=False,
    )
    lines = [x for x in out.split("\n") if x]
    merged = PickTarget(pg, pygit2.Oid(hex=lines[0]))
    ours = PickTarget(pg, upstream_tree)
    conflicted = sorted(set(lines[1:]))
    merged.replace({p: ours.entry(p) for p in conflicted})
    return merged.tree(), len(conflicted)


def upstream_weeks(pg: pygit2.Repository, commits: Sequence[str]) -> dict[str, list[str]]:
    """``commits`` (upstream order) by the ISO week of their commit time: the weekly windows."""
    weeks: dict[str, list[str]] = {}
    for sha in commits:
        c = pg.get(sha)
        assert isinstance(c, pygit2.Commit)
        weeks.setdefault(datetime.fromtimestamp(c.commit_time, UTC).strftime("%G-W%V"), []).append(sha)
    return weeks


def weekly(
    project: Project,
    work: Path,
    info: dict[str, Any],
    skip_oracle: bool,
    *,
    divergence: bool = False,
    zones: bool = True,
) -> dict[str, Any]:
    """The continuous model: each calendar week planned on the fork as of the week's start.

    The fork is upstream as of the week's start (everything earlier landed), plus, with
    ``divergence``, the fork's own real changes (``project.divergence``). ``zones``: the configured
    diverged zones seed chains (else only conflicts, links and the risky path do). Names a chain
    member introduces link only when the week's fork tree lacks them, as in ``make_plan``.
    """
    up = work / "upstream.git"
    pg = pygit2.Repository(str(up))
    config = project.repo_config(zones=zones)
    stop = stoplist(config.risk.symbol_stoplist)
    commits: list[str] = info["upstream"]
    changes = commit_changes_many(pg, Repository(up), commits, stop)
    weeks = upstream_weeks(pg, commits)
    ours_b = oracle_b = total = 0
    bundle_sizes: list[int] = []
    stacked = 0
    chain_sizes: list[int] = []
    oracle_sizes: list[int] = []
    conflicts = left_out = on_bundles = 0
    loose: list[dict[str, str]] = []
    seeds: dict[str, int] = {}  # chains by the reason of their first member (what started them)
    members: dict[str, int] = {}  # chain members by reason
    for _week, shas in sorted(weeks.items()):
        first = pg.get(shas[0])
        assert isinstance(first, pygit2.Commit)
        tree, since = first.parents[0].tree.id, str(first.parents[0].id)
        if divergence:
            assert project.divergence is not None
            tree, dropped = diverged_tree(pg, up, tree, info["tip"], project.divergence)
            left_out += dropped
        deps = line_dependencies([(s, changes[s].ranges) for s in shas], config.risk.context_lines)
        known = names_in_tree(
            Repository(up), str(tree), (last_name(n) for s in shas for n in changes[s].introduced)
        )
        walk = [as_change(changes[s], deps, known) for s in shas]
        trial = TipTrial(PickTarget(pg, tree, GitMerger(pg)), changes)
        plan = partition(walk, config, trial)
        total += len(shas)
        ours_b += sum(len(b.commits) for b in plan.bundles)
        bundle_sizes += [len(b.commits) for b in plan.bundles]
        stacked += sum(getattr(b, "stacked_on", None) is not None for b in plan.bundles)
        chain_sizes += [len(c.commits) for c in plan.chains]
        for c in plan.chains:
            seeds[c.reasons[0].kind] = seeds.get(c.reasons[0].kind, 0) + 1
            for r in c.reasons:
                members[r.kind] = members.get(r.kind, 0) + 1
        conflicting: list[str] = []
        conflicts += sum(chain_conflicts(pg, tree, [c.commits for c in plan.chains], changes, conflicting))
        # A conflicting member whose lines depend on a commit the week's bundles hold: its trial
        # pick (onto the fork + the bundles before it) was clean; built alone on the trunk it is not.
        bundled = {s for b in plan.bundles for s in b.commits}
        on_bundles += sum(bool({d.commit for d in deps[s]} & bundled) for s in conflicting)
        if not skip_oracle:
            result = oracle(
                up, pg, shas, since, tree, changes, config.risk.diverged_zones + config.risk.risky_paths
            )
            loose += loose_members(
                up, pg, plan, shas, since, tree, changes, config.risk.diverged_zones + config.risk.risky_paths
            )
            oracle_b += result["bundled"]
            if result["chain"]:
                oracle_sizes.append(result["chain"])
    return {
        "divergence": divergence,
        "zones": zones,
        "divergence_files_left_out": left_out,
        "weeks": len(weeks),
        "commits": total,
        "bundled": ours_b,
        "share": round(ours_b / total, 3),
        "bundles": len(bundle_sizes),
        "largest_bundles": sorted(bundle_sizes, reverse=True)[:6],
        "bundles_over_bound": sum(n > config.bundle.max_commits for n in bundle_sizes),
        "stacked": stacked,
        "chains": len(chain_sizes),
        "median_chain": statistics.median(chain_sizes) if chain_sizes else 0,
        "largest_chains": sorted(chain_sizes, reverse=True)[:6],
        "chain_conflicts": conflicts,
        "chain_conflicts_on_bundled_lines": on_bundles,
        "seeds": dict(sorted(seeds.items())),
        "members": dict(sorted(members.items())),
        "oracle": None
        if skip_oracle
        else {
            "bundled": oracle_b,
            "share": round(oracle_b / total, 3),
            "median_chain": statistics.median(oracle_sizes) if oracle_sizes else 0,
            "largest_chains": sorted(oracle_sizes, reverse=True)[:6],
        },
        "loose_members": None if skip_oracle else loose,
    }


def project_from(args: argparse.Namespace) -> Project:
    """The named project with the command line's overrides."""
    project = PROJECTS[args.project]
    overrides: dict[str, Any] = {
        k: v
        for k, v in {
            "tip": args.tip,
            "cut": args.cut,
            "ingested": args.ingested,
            "hole_modulus": args.hole_modulus,
            "divergence": args.divergence,
        }.items()
        if v is not None
    }
    if args.config is not None:
        text = args.config.read_text()
        if "LINK" not in text:
            raise SystemExit(
                f"{args.config}: write `link: LINK` under risk: (the replay plans line and file)"
            )
        overrides["config"] = text
    return dataclasses.replace(project, **overrides)


def main(default: str = TRITON.name) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mirror", type=Path, required=True, help="bare mirror of the project's upstream")
    parser.add_argument("--project", choices=sorted(PROJECTS), default=default)
    parser.add_argument("--tip", help="the upstream tip to replay up to (a revision in the mirror)")
    parser.add_argument(
        "--cut", type=int, help="the fork's base: this many first-parent commits before the tip"
    )
    parser.add_argument("--ingested", type=int, help="how many of those the fork has ingested")
    parser.add_argument(
        "--hole-modulus", type=int, help="a commit whose sha's first 8 hex digits it divides is a hole"
    )
    parser.add_argument(
        "--divergence", help="a commit on the tip whose changes are the fork's own (weekly model B)"
    )
    parser.add_argument("--config", type=Path, help="the fork's forksync.yml, with `link: LINK` under risk")
    parser.add_argument(
        "--work", type=Path, default=None, help="the replay's work folder (made once, reused)"
    )
    parser.add_argument("--only", choices=("snapshot", "weekly"), default=None)
    parser.add_argument("--no-oracle", action="store_true")
    parser.add_argument("--no-speed", action="store_true", help="skip the plan vs cherry-pick loop timing")
    args = parser.parse_args()
    project = project_from(args)
    suffix = "" if project.name == TRITON.name else f"-{project.name}"
    work: Path = args.work or Path(tempfile.gettempdir()) / f"forksync-replay{suffix}"
    os.environ.setdefault("FORKSYNC_CACHE_DIR", str(work / "cache"))
    info = build_replay(project, args.mirror, work)
    load = os.getloadavg()
    result: dict[str, Any] = {"load_before": [round(x, 2) for x in load]}
    if args.only in (None, "snapshot"):
        result["snapshot"] = snapshot(project, work, info, args.no_oracle, not args.no_speed)
    if args.only in (None, "weekly"):
        result["weekly"] = [weekly(project, work, info, args.no_oracle)]
        if project.divergence is not None:
            result["weekly"].append(weekly(project, work, info, args.no_oracle, divergence=True))
        result["weekly"].append(
            weekly(
                project, work, info, args.no_oracle, divergence=project.divergence is not None, zones=False
            )
        )
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
