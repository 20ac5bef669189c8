"""Synthetic Triton-like upstream/fork pair for the plan/bundle benchmarks (fast-import, seeded).

``make_bundling_pair(root, pending=1000, files=3000)`` writes ``root/upstream`` and ``root/fork``:

* a base tree of ``files`` C++/header/TableGen/Python/MLIR files laid out like Triton (each with
  a dozen small functions, so diffs have real function context and symbols);
* the fork: the base plus fork-only work — 60 files edited in their first function, and the
  warp-specialization directory (the diverged zone) edited throughout — and ``upstream`` fetched
  as ``refs/remotes/upstream/main`` (what a maintainer's clone has);
* upstream: ``pending`` squash-merged commits after the base, each editing 1–3 functions in
  1–3 files; about 3% edit a function the fork changed (conflicts), 2% touch the diverged
  zone, 0.5% bump the LLVM pin, 1% add a large generated file (over risk.max_lines).

Deterministic for a given seed: the same arguments give the same shas.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from workers.demo.fastimport import Person, Stream
from workers.engine.git import Repository

START = 1_735_689_600
FUNCS = 12
WS_DIR = "lib/Dialect/TritonGPU/Transforms/WarpSpecialization"
CONFIG = """\
upstream: {url: https://github.com/triton-lang/triton, branch: main}
fork: {branch: main}
bundle: {max_commits: 30, max_lines: 5000}
risk:
  diverged_zones: ["lib/Dialect/TritonGPU/Transforms/WarpSpecialization/**"]
  risky_paths: ["cmake/llvm-hash.txt"]
  max_lines: 2000
"""

_DIRS = [
    ("lib/Dialect/Triton/IR", ".cpp"),
    ("lib/Dialect/Triton/Transforms", ".cpp"),
    ("lib/Dialect/TritonGPU/IR", ".cpp"),
    ("lib/Dialect/TritonGPU/Transforms", ".cpp"),
    ("lib/Dialect/TritonGPU/Transforms/Pipeliner", ".cpp"),
    ("lib/Dialect/TritonNvidiaGPU/Transforms", ".cpp"),
    ("lib/Conversion/TritonGPUToLLVM", ".cpp"),
    ("lib/Analysis", ".cpp"),
    ("third_party/nvidia/lib/TritonNVIDIAGPUToLLVM", ".cpp"),
    ("third_party/amd/lib/TritonAMDGPUToLLVM", ".cpp"),
    ("include/triton/Dialect/TritonGPU/Transforms", ".h"),
    ("include/triton/Analysis", ".h"),
    ("include/triton/Dialect/Triton/IR", ".td"),
    ("include/triton/Dialect/TritonGPU/IR", ".td"),
    ("python/triton/language", ".py"),
    ("python/triton/runtime", ".py"),
    ("python/triton/compiler", ".py"),
    ("python/test/unit/language", ".py"),
    ("test/TritonGPU", ".mlir"),
    ("test/Conversion", ".mlir"),
]


@dataclass(frozen=True)
class BundlingPair:
    upstream: Path
    fork: Path
    pending: tuple[str, ...]  # upstream shas after the base, oldest first
    conflicts_planted: int
    zone_hits: int


def _render(path: str, values: list[str]) -> str:
    stem = Path(path).stem
    if path.endswith(".py"):
        body = "".join(
            f"def {stem}_{k}(x):\n    v = x + {values[k]}\n    return v\n\n\n" for k in range(FUNCS)
        )
        return f'"""{path}"""\nimport math\n\n\n{body}'
    if path.endswith(".td"):
        body = "".join(
            f'def {stem}_{k} : TT_Op<"{stem.lower()}{k}"> {{\n  let summary = "{values[k]}";\n}}\n\n'
            for k in range(FUNCS)
        )
        return f'// {path}\ninclude "mlir/IR/OpBase.td"\n\n{body}'
    if path.endswith(".mlir"):
        body = "".join(
            f"tt.func @{stem}_{k}() {{\n  %c = arith.constant {values[k]} : i32\n  tt.return\n}}\n\n"
            for k in range(FUNCS)
        )
        return f"// RUN: triton-opt %s | FileCheck %s\n\n{body}"
    body = "".join(
        f"static int {stem}_{k}(int x) {{\n  int v = x + {values[k]};\n  return v;\n}}\n\n"
        for k in range(FUNCS)
    )
    return f'// {path}\n#include "triton/Analysis/Utility.h"\n\nnamespace mlir::triton {{\n\n{body}}} // namespace\n'


def make_bundling_pair(root: Path, pending: int = 1000, files: int = 3000, seed: int = 7) -> BundlingPair:
    rng = random.Random(seed)
    paths: list[str] = []
    for i in range(files - 40):
        directory, ext = _DIRS[i % len(_DIRS)]
        paths.append(f"{directory}/Unit{i:05d}{ext}")
    zone = [f"{WS_DIR}/Partition{i:02d}.cpp" for i in range(40)]
    state: dict[str, list[str]] = {p: [str(k) for k in range(FUNCS)] for p in (*paths, *zone)}
    dev = Person("Upstream Dev", "dev@triton.example")
    fork_dev = Person("Fork Dev", "dev@fork.example")
    merger = Person("GitHub", "noreply@github.com")

    up = Stream()
    base_files = {p: _render(p, v) for p, v in state.items()}
    base_files["cmake/llvm-hash.txt"] = "4c4a9a2d0f3e\n"
    base_mark = up.commit("refs/heads/main", "Initial import (#1)", base_files, author=dev, author_time=START)

    forked = rng.sample(paths, 60)
    t = START + 3600
    marks: list[str] = []
    conflicts = zone_hits = 0
    for n in range(pending):
        t += 600
        roll = rng.random()
        changes: dict[str, str | None] = {}
        if roll < 0.03:
            path = rng.choice(forked)
            state[path][0] = f"{n} * 3"
            changes[path] = _render(path, state[path])
            conflicts += 1
        elif roll < 0.05:
            path = rng.choice(zone)
            state[path][rng.randrange(1, FUNCS)] = f"{n} + 1"
            changes[path] = _render(path, state[path])
            zone_hits += 1
        elif roll < 0.055:
            changes["cmake/llvm-hash.txt"] = f"{n:012x}\n"
        elif roll < 0.065:
            big = f"python/test/unit/generated/test_sweep_{n}.py"
            changes[big] = "".join(f"def test_case_{k}():\n    assert {k} == {k}\n\n" for k in range(900))
        else:
            for path in rng.sample(paths, rng.randint(1, 3)):
                for k in rng.sample(range(1, FUNCS), rng.randint(1, 3)):
                    state[path][k] = f"{n}"
                changes[path] = _render(path, state[path])
        author = Person(f"Dev {n % 37}", f"dev{n % 37}@triton.example")
        marks.append(
            up.commit(
                "refs/heads/main",
                f"[area{n % 11}] Change number {n} (#{1000 + n})",
                changes,
                author=author,
                author_time=t - 300,
                committer=merger,
                committer_time=t,
            )
        )
    up_marks = up.run(root / "upstream")
    upstream_repo = Repository(root / "upstream")
    base = up_marks[base_mark]

    fork = Repository(root / "fork")
    fork.path.mkdir(parents=True, exist_ok=True)
    fork.git("init", "--quiet", "-b", "main")
    fork.git(
        "fetch",
        "--quiet",
        "--no-tags",
        str(upstream_repo.path),
        "+refs/heads/main:refs/remotes/upstream/main",
    )
    fs = Stream()
    fork_files: dict[str, str | None] = {".github/forksync.yml": CONFIG}
    base_state = {p: [str(k) for k in range(FUNCS)] for p in (*forked, *zone)}
    for path in forked:
        base_state[path][0] = "42"
        fork_files[path] = _render(path, base_state[path])
    for path in zone:
        base_state[path] = [f"ws{k}" for k in range(FUNCS)]
        fork_files[path] = _render(path, base_state[path])
    fs.commit(
        "refs/heads/main",
        "[fork] our layouts and warp specialization",
        fork_files,
        author=fork_dev,
        author_time=START + 1800,
        parents=[base],
    )
    fs.run(fork.path)
    return BundlingPair(
        root / "upstream", root / "fork", tuple(up_marks[m] for m in marks), conflicts, zone_hits
    )
