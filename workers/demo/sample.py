"""A realistic sample upstream/fork pair (Triton-like), for ``forksync demo`` and the tests.

``make_sample(root) -> Sample`` writes two repositories under ``root``: ``upstream`` (squash-
merge subjects ending in ``(#N)``) and ``fork`` (its own commits plus picks in every recogniser
style: ``cherry-pick -x`` trailer, ``Reactor Backport Revision``, ``[Cherry-pick] '... (#N)' (#M)``,
a ``[Cherry-pick][BUNDLE]``, a body link, a marker-less pick found by patch-id, a pick that was
reverted, an urgent pick beyond the frontier, a wont_port and a deferred decision in the notes,
fork-only work in a diverged zone that upstream later changes too, and an LLVM pin bump pending).
``Sample.expect`` says what the ledger must find, so tests check it without hard-coding shas.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from workers.demo.fastimport import Person, Stream
from workers.engine.decisions import Disposition, write_decision
from workers.engine.git import Repository

UPSTREAM_URL = "https://github.com/triton-lang/triton"
FORK_URL = "https://github.com/example-org/triton"
START = 1_735_689_600  # 2025-01-01T00:00:00Z
HOUR = 3600

UPSTREAM_AUTHORS = (
    Person("Lei Zhang", "lei@example.com"),
    Person("Ada Okafor", "ada@example.com"),
    Person("Mario Rossi", "mario@example.com"),
    Person("Priya Nair", "priya@example.com"),
)
MERGER = Person("GitHub", "noreply@github.com")
FORK_DEV = Person("Fork Dev", "dev@fork.example.com")
BOT = Person("forksync", "forksync@localhost")

BASE_FILES: dict[str, int] = {
    "README.md": 6,
    "cmake/llvm-hash.txt": 1,
    "include/triton/Dialect/Triton/IR/TritonOps.td": 12,
    "include/triton/Dialect/TritonGPU/IR/TritonGPUAttrDefs.td": 12,
    "lib/Dialect/Triton/IR/Ops.cpp": 16,
    "lib/Dialect/TritonGPU/IR/Dialect.cpp": 16,
    "lib/Dialect/TritonGPU/Transforms/Pipeliner/SoftwarePipeliner.cpp": 16,
    "lib/Dialect/TritonGPU/Transforms/WarpSpecialization/Partition.cpp": 16,
    "lib/Conversion/TritonGPUToLLVM/ElementwiseOpToLLVM.cpp": 16,
    "third_party/amd/lib/TritonAMDGPUToLLVM/LoadStoreOpToLLVM.cpp": 16,
    "python/triton/language/core.py": 16,
    "python/triton/runtime/jit.py": 16,
    "python/triton/compiler/compiler.py": 16,
    "python/test/unit/language/test_core.py": 16,
}


# The sample fork's L1 suite: every Python file of the tree compiles, and the TLX helper behaves.
# Plain python3 (no pytest on a fresh machine), writing the JUnit XML the L1 runner reads.
UNIT_TESTS = """\
import pathlib, sys, time, traceback
from xml.sax.saxutils import escape

def test_every_python_file_compiles():
    for path in sorted(pathlib.Path(".").rglob("*.py")):
        compile(path.read_text(), str(path), "exec")

def test_tlx_async_load_returns_its_pointer():
    scope = {}
    exec(pathlib.Path("third_party/tlx/language/tlx/async_load.py").read_text(), scope)
    assert scope["async_load"](42) == 42

cases = []
for name, fn in [(n, f) for n, f in sorted(globals().items()) if n.startswith("test_")]:
    start = time.monotonic()
    try:
        fn()
        failure = ""
    except Exception:
        failure = traceback.format_exc()
    cases.append((name, time.monotonic() - start, failure))
failed = sum(1 for c in cases if c[2])
with open(sys.argv[1], "w") as out:
    out.write(f'<testsuite name="unit" tests="{len(cases)}" failures="{failed}">')
    for name, seconds, failure in cases:
        body = f'<failure message="failed">{escape(failure)}</failure>' if failure else ""
        out.write(f'<testcase classname="ci.unit_tests" name="{name}" time="{seconds:.3f}">{body}</testcase>')
    out.write("</testsuite>")
print(f"{len(cases) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
"""

# The sample fork's L2 benchmark: how many Python files of the tree compile (its metric, higher is
# better: a file that stops compiling is a regression), printed as the last line of stdout.
BENCH_COMPILE = """\
import json, pathlib
files = 0
for path in sorted(pathlib.Path(".").rglob("*.py")):
    try:
        compile(path.read_text(), str(path), "exec")
        files += 1
    except SyntaxError:
        pass
print(json.dumps({"metrics": {"files": files}}))
"""


def _initial(path: str, lines: int) -> list[str]:
    if path == "cmake/llvm-hash.txt":
        return ["4c4a9a2d0f3e8b1c5d6e7f8091a2b3c4d5e6f708"]
    comment = "#" if path.endswith((".py", ".txt", ".md")) else "//"
    return [f"{comment} {path}"] + [f"{comment} anchor {k}" for k in range(lines)]


class Tree:
    """File contents as lines; edits insert after an anchor so picks replay on a diverged tree."""

    def __init__(self, files: Mapping[str, list[str]]) -> None:
        self.files = {p: list(lines) for p, lines in files.items()}

    def copy(self) -> Tree:
        return Tree(self.files)

    def insert(self, path: str, anchor: int, text: str) -> str:
        lines = self.files.setdefault(path, _initial(path, 4))
        key = f"anchor {anchor}"
        at = next((i for i, line in enumerate(lines) if line.endswith(key)), len(lines) - 1)
        lines.insert(at + 1, text)
        return "\n".join(lines) + "\n"

    def replace_all(self, path: str, lines: list[str]) -> str:
        self.files[path] = list(lines)
        return "\n".join(lines) + "\n"

    def text(self, path: str) -> str:
        return "\n".join(self.files[path]) + "\n"


Edit = tuple[str, int, str]  # (path, anchor, inserted line)


@dataclass
class Sample:
    """Where the pair lives and what its ledger must say (upstream PR number → expectation)."""

    upstream: Path
    fork: Path
    base: str = ""
    pr_sha: dict[int, str] = field(default_factory=dict)  # upstream PR number → sha
    expect: dict[int, str] = field(default_factory=dict)  # PR → disposition value
    frontier_pr: int = 0
    recogniser: dict[int, str] = field(default_factory=dict)  # PR → recogniser expected


# Upstream commits after the base: (PR, subject, edits). Subjects follow Triton's style.
UPSTREAM: tuple[tuple[int, str, tuple[Edit, ...]], ...] = (
    (
        7001,
        "[AMD] Fix buffer load lowering for i8 pointers",
        (
            (
                "third_party/amd/lib/TritonAMDGPUToLLVM/LoadStoreOpToLLVM.cpp",
                3,
                "  // i8 buffer loads use dword alignment",
            ),
        ),
    ),
    (
        7002,
        "[FRONTEND] Allow constexpr in tl.range step",
        (("python/triton/language/core.py", 5, "    # constexpr step accepted by tl.range"),),
    ),
    (
        7003,
        "[BACKEND] Hoist invariant loads out of the pipelined loop",
        (
            (
                "lib/Dialect/TritonGPU/Transforms/Pipeliner/SoftwarePipeliner.cpp",
                4,
                "  // hoist loop-invariant loads",
            ),
        ),
    ),
    (
        7004,
        "[Docs] Clarify tl.dot input precision",
        (("python/triton/language/core.py", 11, "    # input_precision: tf32, tf32x3, ieee"),),
    ),
    (
        7005,
        "[LAYOUTS] Generalize LinearLayout conversion for MMAv3",
        (
            ("lib/Dialect/TritonGPU/IR/Dialect.cpp", 6, "  // LinearLayout: MMAv3 generalised"),
            (
                "include/triton/Dialect/TritonGPU/IR/TritonGPUAttrDefs.td",
                2,
                "  // MMAv3 linear layout parameter",
            ),
        ),
    ),
    (
        7006,
        "[TESTING] Add regression test for tl.range step",
        (("python/test/unit/language/test_core.py", 7, "def test_range_constexpr_step(): pass"),),
    ),
    (
        7007,
        "[BACKEND] Fix elementwise fp8 conversion rounding",
        (("lib/Conversion/TritonGPUToLLVM/ElementwiseOpToLLVM.cpp", 5, "  // fp8 rounding: RTNE"),),
    ),
    (
        7008,
        "[RUNTIME] Cache kernel binaries by target arch",
        (("python/triton/runtime/jit.py", 6, "    # cache key includes target arch"),),
    ),
    (
        7009,
        "[AMD] Enable buffer atomics on gfx950",
        (("third_party/amd/lib/TritonAMDGPUToLLVM/LoadStoreOpToLLVM.cpp", 9, "  // gfx950 buffer atomics"),),
    ),
    (
        7010,
        "[FRONTEND] Fix typo in JIT error message",
        (("python/triton/runtime/jit.py", 12, "    # error: kernel argument mismatch"),),
    ),
    (
        7011,
        "[IR] Verify tt.reshape element counts",
        (("lib/Dialect/Triton/IR/Ops.cpp", 8, "  // reshape verifies element count"),),
    ),
    (
        7012,
        "[COMPILER] Report the failing pass in compile errors",
        (("python/triton/compiler/compiler.py", 4, "    # name the failing pass"),),
    ),
    (
        7013,
        "[FRONTEND] Add tl.cumprod reverse flag",
        (("python/triton/language/core.py", 14, "    # cumprod(reverse=True)"),),
    ),
    (
        7014,
        "[WS] Split producer partitions by buffer",
        (
            (
                "lib/Dialect/TritonGPU/Transforms/WarpSpecialization/Partition.cpp",
                6,
                '#include "triton/Dialect/TritonGPU/Transforms/BufferSplit.h"',
            ),
        ),
    ),
    (
        7015,
        "[IR] Add tt.descriptor_gather verifier",
        (
            ("lib/Dialect/Triton/IR/Ops.cpp", 12, "  // descriptor_gather verifier"),
            ("include/triton/Dialect/Triton/IR/TritonOps.td", 7, "  // DescriptorGatherOp hasVerifier"),
        ),
    ),
    (7016, "[BUILD] Bump LLVM to 8a6b3c1", ()),
    (
        7017,
        "[TESTING] Deflake test_dot on small shapes",
        (("python/test/unit/language/test_core.py", 12, "def test_dot_small_shapes_deflaked(): pass"),),
    ),
    (
        7018,
        "[BACKEND] Fix warp-specialized barrier placement",
        (
            (
                "lib/Dialect/TritonGPU/Transforms/WarpSpecialization/Partition.cpp",
                11,
                "  // barrier after producer commit",
            ),
        ),
    ),
    (
        7019,
        "[RUNTIME] Fix autotuner crash on empty configs",
        (("python/triton/runtime/jit.py", 3, "    # empty autotune configs: clear error"),),
    ),
    (
        7020,
        "[BACKEND] Fix miscompile of masked stores with i1 masks",
        (
            (
                "lib/Conversion/TritonGPUToLLVM/ElementwiseOpToLLVM.cpp",
                12,
                "  // i1 masks widened before store",
            ),
        ),
    ),
    (
        7021,
        "[FRONTEND] Deprecate tl.math.fast_expf alias",
        (("python/triton/language/core.py", 2, "    # fast_expf alias deprecated"),),
    ),
    (
        7022,
        "[AMD] Tune stream-pipeliner defaults for MI300",
        (
            (
                "third_party/amd/lib/TritonAMDGPUToLLVM/LoadStoreOpToLLVM.cpp",
                13,
                "  // MI300 pipeliner defaults",
            ),
        ),
    ),
)

# What the fork does with each PR (the story the sample tells).
PICKED_BY = {
    7001: "trailer",  # git cherry-pick -x
    7002: "pr-subject",  # [Cherry-pick] '<subject> (#7002)' (#M)
    7003: "bundle",
    7004: "bundle",
    7006: "bundle",
    7007: "trailer",  # Reactor Backport Revision
    7008: "body-link",
    7010: "patch-id",  # no marker at all, retitled by the fork
    7012: "pr-subject",
    7020: "pr-subject",  # urgent, far beyond the frontier
}


def make_sample(root: Path) -> Sample:
    """Write the sample pair under ``root`` (``root/upstream``, ``root/fork``) and return it."""
    up_path, fork_path = root / "upstream", root / "fork"
    stream = Stream()
    tree = Tree({p: _initial(p, n) for p, n in BASE_FILES.items()})
    clock = START
    # Upstream history before the base: an initial import and a few changes.
    prev = stream.commit(
        "refs/heads/main",
        "Initial commit (#1)",
        {p: tree.text(p) for p in tree.files},
        author=UPSTREAM_AUTHORS[0],
        author_time=clock,
    )
    for n, line in ((6990, "  // older change"), (6995, "  // last change before the fork")):
        clock += 5 * HOUR
        prev = stream.commit(
            "refs/heads/main",
            f"[BACKEND] Old upstream change (#{n})",
            {"lib/Dialect/Triton/IR/Ops.cpp": tree.insert("lib/Dialect/Triton/IR/Ops.cpp", 1, line)},
            author=UPSTREAM_AUTHORS[n % 4],
            author_time=clock,
            committer=MERGER,
            parents=[prev],
        )
    base_mark = prev
    base_tree = tree.copy()

    up_marks: dict[int, str] = {}
    edits_of: dict[int, tuple[Edit, ...]] = {}
    author_of: dict[int, tuple[Person, int]] = {}
    for i, (pr, subject, edits) in enumerate(UPSTREAM):
        clock += 9 * HOUR + i * 97
        changes: dict[str, str | None] = {}
        if not edits:  # the LLVM bump replaces the pin
            changes["cmake/llvm-hash.txt"] = tree.replace_all(
                "cmake/llvm-hash.txt", ["8a6b3c1e2d4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b"]
            )
        for path, anchor, text in edits:
            changes[path] = tree.insert(path, anchor, text)
        author = UPSTREAM_AUTHORS[i % 4]
        prev = stream.commit(
            "refs/heads/main",
            f"{subject} (#{pr})",
            changes,
            author=author,
            author_time=clock - HOUR,
            committer=MERGER,
            committer_time=clock,
            parents=[prev],
        )
        up_marks[pr] = prev
        edits_of[pr] = edits
        author_of[pr] = (author, clock - HOUR)
    subject_of = {pr: f"{s} (#{pr})" for pr, s, _ in UPSTREAM}

    # The fork: cut at the base, days later; its own PRs are numbered from 101.
    fork_ref = "refs/forksync-sample/fork"
    ftree = base_tree.copy()
    fclock = START + 2 * 24 * HOUR
    fprev = base_mark
    fork_pr = [100]

    def fork_commit(
        message: str,
        changes: Mapping[str, str | None],
        *,
        author: Person = FORK_DEV,
        author_time: int | None = None,
    ) -> str:
        nonlocal fprev, fclock
        fclock += 3 * HOUR
        fprev = stream.commit(
            fork_ref,
            message,
            changes,
            author=author,
            author_time=author_time or fclock,
            committer=FORK_DEV,
            committer_time=fclock,
            parents=[fprev],
        )
        return fprev

    def next_pr() -> int:
        fork_pr[0] += 1
        return fork_pr[0]

    def apply(pr: int) -> dict[str, str | None]:
        return {path: ftree.insert(path, anchor, text) for path, anchor, text in edits_of[pr]}

    config = (
        "upstream:\n"
        f"  url: {UPSTREAM_URL}\n"
        "  branch: main\n"
        "fork:\n  branch: main\n"
        "risk:\n"
        "  diverged_zones:\n"
        '    - "lib/Dialect/TritonGPU/Transforms/WarpSpecialization/**"\n'
        '    - "lib/Dialect/TritonGPU/IR/Dialect.cpp"\n'
        "  risky_paths:\n"
        '    - "cmake/llvm-hash.txt"\n'
        # A real CPU suite (L1, on every PR) and a real trunk benchmark (L2), both plain python3.
        "l1:\n"
        "  suites:\n"
        '    - {name: unit, run: [python3, ci/unit_tests.py, "{junit}"], timeout: 120, min_tests: 2}\n'
        "l2:\n"
        "  benchmarks:\n"
        "    - name: compile-python\n"
        "      run: [python3, ci/bench_compile.py]\n"
        "      timeout: 120\n"
        "      metrics:\n"
        "        - {name: files, direction: higher, threshold: 5.0}\n"
    )
    fork_commit(
        f"Add forksync config, the CPU unit suite and the compile benchmark (#{next_pr()})",
        {
            ".github/forksync.yml": config,
            "ci/unit_tests.py": UNIT_TESTS,
            "ci/bench_compile.py": BENCH_COMPILE,
        },
    )
    fork_commit(
        f"[TLX] Add tlx.async_load and barrier helpers (#{next_pr()})",
        {"third_party/tlx/language/tlx/async_load.py": "def async_load(ptr):\n    return ptr\n"},
    )
    # Fork-only work inside the diverged zone (warp specialization), so upstream 7014 and 7018 are
    # risky. 7014 conflicts with it: both add an #include at the same line, a conflict git leaves
    # to humans and the resolution pipeline's `list-union` rule resolves (both kept, sorted).
    fork_commit(
        f"[autoWS] Fork-specific partition scheduling (#{next_pr()})",
        {
            "lib/Dialect/TritonGPU/Transforms/WarpSpecialization/Partition.cpp": ftree.insert(
                "lib/Dialect/TritonGPU/Transforms/WarpSpecialization/Partition.cpp",
                6,
                '#include "triton/Dialect/TritonGPU/Transforms/AutoWS/Schedule.h"',
            )
        },
    )
    a, t = author_of[7001]
    fork_commit(
        f"{subject_of[7001]}\n\n(cherry picked from commit {{sha:7001}})\n",
        apply(7001),
        author=a,
        author_time=t,
    )
    fork_commit(f"[Cherry-pick] '{subject_of[7002]}' (#{next_pr()})\n\nUpstream PR #7002.\n", apply(7002))
    changes = {**apply(7003), **apply(7004)}
    changes.update(apply(7006))
    bundle_pr = next_pr()
    fork_commit(
        f"[Cherry-pick][BUNDLE] Cherry-pick 3 upstream(#7003 #7004 #7006) (#{bundle_pr})\n\n"
        "Picked (upstream order):\n"
        f"- {{sha:7003}} {subject_of[7003]}\n- {{sha:7004}} {subject_of[7004]}\n- {{sha:7006}} {subject_of[7006]}\n\n"
        "Deferred (backlog):\n"
        f"- #7005 {UPSTREAM[4][1]}: conflicts with the fork's layout interface\n\n"
        "Frontier: {sha:7006}\nContiguous pin: {sha:7004}\n",
        changes,
        author=BOT,
    )
    fork_commit(
        f"[Cherry-pick] {subject_of[7007]} (#{next_pr()})\n\nReactor Backport Revision: {{sha:7007}}\n",
        apply(7007),
    )
    fork_commit(
        f"Port the arch-keyed kernel cache (#{next_pr()})\n\nUpstream: {UPSTREAM_URL}/pull/7008\n"
        f"Pull Request resolved: {FORK_URL}/pull/{fork_pr[0]}\n",
        apply(7008),
    )
    fork_commit(f"Fix JIT error message wording (#{next_pr()})", apply(7010))
    pick_7011 = fork_commit(f"[Cherry-pick] '{subject_of[7011]}' (#{next_pr()})", apply(7011))
    fork_commit(f"[Cherry-pick] '{subject_of[7012]}' (#{next_pr()})", apply(7012))
    # The 7011 pick broke an internal model: reverted (git revert), so 7011 is a hole again.
    revert_changes = {
        "lib/Dialect/Triton/IR/Ops.cpp": ftree.replace_all(
            "lib/Dialect/Triton/IR/Ops.cpp",
            [x for x in ftree.files["lib/Dialect/Triton/IR/Ops.cpp"] if "reshape verifies" not in x],
        )
    }
    fork_commit(
        f"Revert \"[Cherry-pick] '{subject_of[7011]}' (#{fork_pr[0] - 1})\"\n\nThis reverts commit {{fork:{pick_7011}}}.\n",
        revert_changes,
    )
    fork_commit(f"[Cherry-pick][URGENT] '{subject_of[7020]}' (#{next_pr()})", apply(7020))
    fork_commit(
        f"[TLX] Add tlx.barrier_wait lowering (#{next_pr()})",
        {"third_party/tlx/language/tlx/barrier.py": "def barrier_wait(bar):\n    return bar\n"},
    )
    stream.reset("refs/heads/main", prev)

    marks = stream.run(up_path)
    pr_sha = {pr: marks[m] for pr, m in up_marks.items()}
    upstream_repo = Repository(up_path)
    upstream_repo.git("config", "remote.origin.url", f"{UPSTREAM_URL}.git")
    # Shas are known only after the import: patch them into the fork's messages by rewriting
    # the fork branch with filter-free plumbing (a second import over the same marks).
    _rewrite_fork_messages(upstream_repo, fork_ref, pr_sha, marks)

    fork_repo = Repository(fork_path)
    fork_path.mkdir(parents=True, exist_ok=True)
    fork_repo.git("init", "--quiet", "-b", "main")
    fork_repo.git("config", "remote.origin.url", f"{FORK_URL}.git")
    fork_repo.git("fetch", "--quiet", "--no-tags", "--", str(up_path), f"{fork_ref}:refs/heads/sample-import")
    fork_repo.git("checkout", "--quiet", "-B", "main", "refs/heads/sample-import")
    fork_repo.git("branch", "--quiet", "-D", "sample-import")
    upstream_repo.git("update-ref", "-d", fork_ref)

    # Durable decisions, as `forksync mark` would write them.
    notes = None
    for pr, disposition, reason in (
        (7005, Disposition.DEFERRED, "conflicts with the fork's layout interface; needs the layouts owner"),
        (7009, Disposition.WONT_PORT, "gfx950 is not a target of this fork"),
        (7020, Disposition.URGENT, "miscompile hit production; picked ahead of the frontier"),
    ):
        notes = write_decision(fork_repo, notes, pr_sha[pr], disposition, reason)
    assert notes is not None
    fork_repo.git("update-ref", "refs/notes/forksync", notes)

    sample = Sample(upstream=up_path, fork=fork_path, base=marks[base_mark], pr_sha=pr_sha)
    for pr, _, _ in UPSTREAM:
        sample.expect[pr] = Disposition.PENDING.value
    for pr in PICKED_BY:
        sample.expect[pr] = Disposition.PICKED.value
    sample.recogniser = dict(PICKED_BY)
    sample.expect[7020] = Disposition.URGENT.value
    sample.expect[7005] = Disposition.DEFERRED.value  # marked deferred
    sample.expect[7009] = Disposition.WONT_PORT.value
    sample.expect[7011] = Disposition.PENDING.value  # pick reverted: an unmarked hole (backlog)
    sample.frontier_pr = 7012
    return sample


def _rewrite_fork_messages(repo: Repository, ref: str, pr_sha: dict[int, str], marks: dict[str, str]) -> None:
    """Replace ``{sha:N}`` / ``{fork:<mark>}`` placeholders in fork messages with real shas.

    The fork's picks must name upstream shas that exist only after the import; rewriting the
    few fork commits (``commit-tree`` with the same trees, authors and dates) keeps it simple.
    """
    import os
    import re

    shas = repo.text("rev-list", "--reverse", "--topo-order", ref, "^refs/heads/main").split()
    rewritten: dict[str, str] = {}
    parent: str | None = None
    for old in shas:
        raw = repo.git("cat-file", "commit", old).decode()
        header, _, message = raw.partition("\n\n")
        fields = dict(line.split(" ", 1) for line in header.splitlines() if not line.startswith("parent "))
        old_parent = next(
            (line.split()[1] for line in header.splitlines() if line.startswith("parent ")), None
        )
        new_parent = rewritten.get(old_parent or "", old_parent) if parent is None else parent

        def fork_sha(m: re.Match[str]) -> str:
            old_sha = marks[m.group(1)]
            return rewritten.get(old_sha, old_sha)

        message = re.sub(r"\{sha:(\d+)\}", lambda m: pr_sha[int(m.group(1))], message)
        message = re.sub(r"\{fork:(:\d+)\}", fork_sha, message)
        author, committer = fields["author"], fields["committer"]
        an, _, rest = author.partition(" <")
        ae, _, adate = rest.partition("> ")
        cn, _, crest = committer.partition(" <")
        ce, _, cdate = crest.partition("> ")
        env = {
            "GIT_AUTHOR_NAME": an,
            "GIT_AUTHOR_EMAIL": ae,
            "GIT_AUTHOR_DATE": adate,
            "GIT_COMMITTER_NAME": cn,
            "GIT_COMMITTER_EMAIL": ce,
            "GIT_COMMITTER_DATE": cdate,
        }
        args = ["commit-tree", fields["tree"]]
        if new_parent:
            args += ["-p", new_parent]
        new = repo.git(*args, input=message.encode(), env={**os.environ, **env}).decode().strip()
        rewritten[old] = new
        parent = new
    if parent:
        repo.git("update-ref", ref, parent)
