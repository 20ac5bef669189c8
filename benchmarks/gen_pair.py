"""Generate a synthetic upstream/fork pair at scale (git fast-import: 20,000+ commits in seconds).

Python API (for the ledger, bundling and L2 benchmarks)::

    from benchmarks.gen_pair import PairSpec, generate_pair
    pair = generate_pair(Path("/tmp/pair"), PairSpec(upstream_commits=20_000, fork_commits=2_000))
    pair.upstream, pair.fork        # two repositories (non-bare, branch main)
    pair.expected_picked            # upstream commits the fork carries, by recogniser style

CLI::

    python -m benchmarks.gen_pair OUT [--upstream-commits N] [--fork-commits M] [--files F]
        [--mix trailer=0.3,pr-subject=0.2,...] [--seed S]

The upstream is a Triton-like tree (``lib/Dialect/...cpp``, ``include/...td``, ``python/triton/...py``)
with squash-merge subjects ending ``(#N)``. The fork is cut at the base and made of ``M`` commits:
picks in upstream order (with holes) in each recogniser style, in the proportions of ``mix``
(``trailer`` = ``cherry-pick -x``, ``reactor`` = ``Reactor Backport Revision:``, ``pr-subject`` =
``[Cherry-pick] '<subject> (#N)' (#M)``, ``bundle`` = ``[Cherry-pick][BUNDLE]`` of 2-30 PRs,
``body-link``, ``patch-id`` = no marker at all, ``revert`` = a pick later reverted), the rest
fork-only work. Fork PR numbers deliberately collide with upstream PR numbers (the trap).
Every edit inserts a line in a region only that commit touches, so a pick replays cleanly and
its patch-id equals upstream's. Same spec and seed → same repositories, byte for byte.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from workers.demo.fastimport import Person, Stream
from workers.engine.git import Repository

UPSTREAM_URL = "https://github.com/triton-lang/triton"
FORK_URL = "https://github.com/example-org/triton"
START = 1_600_000_000
DEFAULT_MIX = {
    "trailer": 0.20,
    "reactor": 0.10,
    "pr-subject": 0.20,
    "bundle": 0.05,
    "body-link": 0.05,
    "patch-id": 0.05,
    "revert": 0.02,
}
AREAS = (
    "[BACKEND]",
    "[FRONTEND]",
    "[AMD]",
    "[NVIDIA]",
    "[IR]",
    "[LAYOUTS]",
    "[TESTING]",
    "[RUNTIME]",
    "[Docs]",
)
VERBS = ("Fix", "Add", "Support", "Refactor", "Remove", "Speed up", "Generalize", "Verify")
NOUNS = (
    "buffer loads",
    "tl.dot precision",
    "the pipeliner",
    "MMAv3 layouts",
    "warp specialization",
    "fp8 conversions",
    "the autotuner",
    "reshape verification",
    "descriptor gathers",
    "async copies",
)
DIRS = (
    ("lib/Dialect/TritonGPU/Transforms", "cpp"),
    ("lib/Dialect/Triton/IR", "cpp"),
    ("lib/Conversion/TritonGPUToLLVM", "cpp"),
    ("third_party/amd/lib/TritonAMDGPUToLLVM", "cpp"),
    ("third_party/nvidia/lib/TritonNVIDIAGPUToLLVM", "cpp"),
    ("include/triton/Dialect/TritonGPU/IR", "td"),
    ("include/triton/Dialect/Triton/IR", "td"),
    ("python/triton/language", "py"),
    ("python/triton/runtime", "py"),
    ("python/test/unit/language", "py"),
)


@dataclass(frozen=True)
class PairSpec:
    """What to generate. ``mix`` gives, per recogniser style, the fraction of fork commits."""

    upstream_commits: int = 20_000
    fork_commits: int = 2_000
    files: int = 2_000
    mix: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_MIX))
    hole_rate: float = 0.03  # chance that the fork skips an upstream commit it walks past
    seed: int = 1
    file_lines: int = 120  # static lines per file (realistic blob sizes make diffs cost what they do)
    hunk_lines: int = 6  # lines each edit inserts (a realistic squash-merge diff size)


@dataclass
class GeneratedPair:
    upstream: Path
    fork: Path
    base: str
    upstream_tip: str
    fork_tip: str
    expected_picked: dict[str, int]  # recogniser style → upstream commits it carries
    fork_commit_count: int
    seconds: float


@dataclass
class _Up:
    index: int
    pr: int
    subject: str
    author: Person
    time: int
    edits: list[tuple[int, int]]  # (file index, slot)


class _Files:
    """Files as slots; each commit inserts one line into its own slot (unique context around it)."""

    def __init__(self, paths: list[str], file_lines: int) -> None:
        self.paths = paths
        self.slots: list[list[int]] = [[] for _ in paths]
        self.file_lines = file_lines
        self._header: dict[int, str] = {}

    def header(self, f: int) -> str:
        text = self._header.get(f)
        if text is None:
            text = "".join(
                f"// {self.paths[f]} static line {k}: some code that never changes;\n"
                for k in range(self.file_lines)
            )
            self._header[f] = text
        return text

    def render(self, f: int, inserted: dict[tuple[int, int], str]) -> str:
        out = [self.header(f)]
        for slot in self.slots[f]:
            out.append(f"s{slot}a\ns{slot}b\ns{slot}c\n")
            line = inserted.get((f, slot))
            if line is not None:
                out.append(line + "\n")
            out.append(f"s{slot}d\ns{slot}e\ns{slot}f\n")
        return "".join(out)


def _hunk(index: int, slot: int, lines: int) -> str:
    return "\n".join(
        f"    change {index} slot {slot} line {k}: value = compute({k});" for k in range(max(1, lines))
    )


def generate_pair(root: Path, spec: PairSpec) -> GeneratedPair:
    """Write ``root/upstream`` and ``root/fork``; see the module docstring."""
    started = time.perf_counter()
    rng = random.Random(spec.seed)
    root.mkdir(parents=True, exist_ok=True)
    paths = [f"{DIRS[i % len(DIRS)][0]}/File{i}.{DIRS[i % len(DIRS)][1]}" for i in range(spec.files)]
    files = _Files(paths, spec.file_lines)
    authors = [Person(f"Upstream Dev {i}", f"dev{i}@upstream.example.com") for i in range(40)]
    merger = Person("GitHub", "noreply@github.com")

    ups: list[_Up] = []
    slot = 0
    for i in range(spec.upstream_commits):
        edits = []
        for f in rng.sample(range(spec.files), k=rng.choice((1, 1, 1, 2, 2, 3))):
            files.slots[f].append(slot)
            edits.append((f, slot))
            slot += 1
        subject = f"{rng.choice(AREAS)} {rng.choice(VERBS)} {rng.choice(NOUNS)} ({i})"
        ups.append(
            _Up(
                i,
                10_000 + i,
                f"{subject} (#{10_000 + i})",
                rng.choice(authors),
                START + 3600 + i * 1800,
                edits,
            )
        )

    # Upstream: the base imports the whole tree; then one commit per upstream change.
    up_path, fork_path = root / "upstream", root / "fork"
    stream = Stream(up_path)
    up_inserted: dict[tuple[int, int], str] = {}
    base_mark = stream.commit(
        "refs/heads/main",
        "Initial import (#1)",
        {p: files.render(i, up_inserted) for i, p in enumerate(paths)},
        author=authors[0],
        author_time=START,
    )
    prev = base_mark
    marks_of: list[str] = []
    for u in ups:
        for f, s in u.edits:
            up_inserted[(f, s)] = _hunk(u.index, s, spec.hunk_lines)
        prev = stream.commit(
            "refs/heads/main",
            u.subject,
            {paths[f]: files.render(f, up_inserted) for f, _ in u.edits},
            author=u.author,
            author_time=u.time - 600,
            committer=merger,
            committer_time=u.time,
            parents=[prev],
        )
        marks_of.append(prev)
    marks = stream.run(up_path)
    upstream_repo = Repository(up_path)
    upstream_repo.git("config", "remote.origin.url", f"{UPSTREAM_URL}.git")
    base = marks[base_mark]
    sha_of = [marks[m] for m in marks_of]

    # The fork: walk upstream in order, picking in the mix's styles, with holes and fork work.
    fork_repo = Repository(fork_path)
    fork_path.mkdir(parents=True, exist_ok=True)
    fork_repo.git("init", "--quiet", "-b", "main")
    fork_repo.git("config", "remote.origin.url", f"{FORK_URL}.git")
    upstream_repo.git("update-ref", "refs/heads/gen-pair-base", base)
    fork_repo.git(
        "fetch", "--quiet", "--no-tags", str(up_path), "refs/heads/gen-pair-base:refs/gen-pair/base"
    )
    upstream_repo.git("update-ref", "-d", "refs/heads/gen-pair-base")

    styles = list(spec.mix)
    weights = [spec.mix[s] for s in styles]
    fork_only_weight = max(0.0, 1.0 - sum(weights))
    fstream = Stream(fork_path)
    fork_inserted: dict[tuple[int, int], str] = {}
    fdev = Person("Fork Dev", "dev@fork.example.com")
    bot = Person("forksync", "forksync@localhost")
    fprev: str = base
    ftime = START + 7200
    fork_pr = 10_000  # collides with upstream PR numbers on purpose
    expected: dict[str, int] = {s: 0 for s in styles}
    picked_subjects: list[tuple[str, list[int], str]] = []  # (fork subject, upstream indexes, style)
    cursor = 0
    made = 0
    tlx_files = 0

    def commit(message: str, changes: dict[str, str | None], author: Person, author_time: int) -> None:
        nonlocal fprev, ftime, made
        ftime += 600
        fprev = fstream.commit(
            "refs/heads/main",
            message,
            changes,
            author=author,
            author_time=author_time,
            committer=fdev,
            committer_time=ftime,
            parents=[fprev],
        )
        made += 1

    def apply(indexes: list[int]) -> dict[str, str | None]:
        touched = set()
        for i in indexes:
            for f, s in ups[i].edits:
                fork_inserted[(f, s)] = _hunk(i, s, spec.hunk_lines)
                touched.add(f)
        return {paths[f]: files.render(f, fork_inserted) for f in sorted(touched)}

    def take(n: int) -> list[int]:
        nonlocal cursor
        taken = []
        while len(taken) < n and cursor < len(ups):
            if rng.random() >= spec.hole_rate:
                taken.append(cursor)
            cursor += 1
        return taken

    while made < spec.fork_commits and cursor < len(ups):
        fork_pr += 1
        style = rng.choices([*styles, "fork-only"], weights=[*weights, fork_only_weight])[0]
        if style == "fork-only":
            tlx_files += 1
            path = f"third_party/tlx/language/tlx/feature{tlx_files % 200}.py"
            commit(
                f"[TLX] Fork feature {tlx_files} (#{fork_pr})",
                {path: f"# feature {tlx_files}\n"},
                fdev,
                ftime,
            )
            continue
        if style == "revert":
            if not picked_subjects:
                continue
            subject, indexes, old_style = picked_subjects.pop(rng.randrange(len(picked_subjects)))
            if old_style == "patch-id" or any(
                (f, s) not in fork_inserted for i in indexes for f, s in ups[i].edits
            ):
                continue
            for i in indexes:
                for f, s in ups[i].edits:
                    del fork_inserted[(f, s)]
            touched = sorted({f for i in indexes for f, _ in ups[i].edits})
            commit(
                f'Revert "{subject}" (#{fork_pr})\n\nReverts example-org/triton#{fork_pr - 1}\n',
                {paths[f]: files.render(f, fork_inserted) for f in touched},
                fdev,
                ftime,
            )
            expected[old_style] -= len(indexes)
            expected["revert"] += 0
            continue
        indexes = take(rng.randint(2, 30) if style == "bundle" else 1)
        if not indexes:
            break
        u = ups[indexes[0]]
        sha = sha_of[indexes[0]]
        if style == "trailer":
            message = f"{u.subject}\n\nUpstream change.\n\n(cherry picked from commit {sha})\n"
            author, at = u.author, u.time - 600
        elif style == "reactor":
            message = f"[Backport] {u.subject.rsplit(' (#', 1)[0]} (#{fork_pr})\n\nReactor Backport Revision: {sha}\n"
            author, at = fdev, ftime
        elif style == "pr-subject":
            message = f"[Cherry-pick] '{u.subject}' (#{fork_pr})\n\nSummary: pick of upstream.\n"
            author, at = fdev, ftime
        elif style == "bundle":
            listed = " ".join(f"#{ups[i].pr}" for i in indexes)
            lines = "\n".join(f"- {sha_of[i][:12]} {ups[i].subject}" for i in indexes)
            message = (
                f"[Cherry-pick][BUNDLE] Cherry-pick {len(indexes)} upstream({listed}) (#{fork_pr})\n\n"
                f"Picked:\n{lines}\n"
            )
            author, at = bot, ftime
        elif style == "body-link":
            message = f"Port {u.subject.rsplit(' (#', 1)[0].lower()} (#{fork_pr})\n\nUpstream: {UPSTREAM_URL}/pull/{u.pr}\n"
            author, at = fdev, ftime
        else:  # patch-id: no marker, retitled, another author
            message = f"Fork adoption {fork_pr}: {rng.choice(NOUNS)} (#{fork_pr})\n"
            author, at = fdev, ftime
        subject = message.split("\n", 1)[0]
        commit(message, apply(indexes), author, at)
        expected[style] += len(indexes)
        picked_subjects.append((subject, indexes, style))

    if not made:
        fstream.reset("refs/heads/main", base)
    fmarks = fstream.run(fork_path)
    fork_repo.git("update-ref", "-d", "refs/gen-pair/base")
    fork_tip = fmarks.get(fprev, base) if fprev.startswith(":") else fprev
    expected.pop("revert", None)
    pair = GeneratedPair(
        upstream=up_path,
        fork=fork_path,
        base=base,
        upstream_tip=sha_of[-1] if sha_of else base,
        fork_tip=fork_tip,
        expected_picked=expected,
        fork_commit_count=made,
        seconds=time.perf_counter() - started,
    )
    (root / "pair.json").write_text(
        json.dumps({"spec": _spec_json(spec), "pair": _pair_json(pair)}, indent=1)
    )
    return pair


def _spec_json(spec: PairSpec) -> dict[str, object]:
    return dict(sorted(vars(spec).items()))


def _pair_json(pair: GeneratedPair) -> dict[str, object]:
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(pair).items()}


def load_pair(root: Path, spec: PairSpec) -> GeneratedPair | None:
    """The pair generated earlier under ``root`` from the same spec, or None."""
    try:
        data = json.loads((root / "pair.json").read_text())
    except (OSError, ValueError):
        return None
    if data.get("spec") != json.loads(json.dumps(_spec_json(spec))):
        return None
    d = data["pair"]
    return GeneratedPair(
        upstream=Path(d["upstream"]),
        fork=Path(d["fork"]),
        base=d["base"],
        upstream_tip=d["upstream_tip"],
        fork_tip=d["fork_tip"],
        expected_picked=d["expected_picked"],
        fork_commit_count=d["fork_commit_count"],
        seconds=d["seconds"],
    )


def _mix(text: str) -> dict[str, float]:
    out = {}
    for part in text.split(","):
        if not part.strip():
            continue
        name, _, value = part.partition("=")
        if name.strip() not in DEFAULT_MIX:
            raise SystemExit(f"gen_pair: unknown style {name!r} in --mix (known: {', '.join(DEFAULT_MIX)})")
        out[name.strip()] = float(value)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gen_pair", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="directory to create upstream/ and fork/ in")
    parser.add_argument("--upstream-commits", type=int, default=20_000)
    parser.add_argument("--fork-commits", type=int, default=2_000)
    parser.add_argument("--files", type=int, default=2_000, help="tree size (files)")
    parser.add_argument(
        "--mix", type=_mix, default=None, help="style=fraction,... (fractions of fork commits)"
    )
    parser.add_argument("--hole-rate", type=float, default=0.03)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--file-lines", type=int, default=120, help="static lines per file")
    parser.add_argument("--hunk-lines", type=int, default=6, help="lines each upstream edit inserts")
    args = parser.parse_args(argv)
    spec = PairSpec(
        args.upstream_commits,
        args.fork_commits,
        args.files,
        args.mix or dict(DEFAULT_MIX),
        args.hole_rate,
        args.seed,
        args.file_lines,
        args.hunk_lines,
    )
    pair = generate_pair(args.out, spec)
    print(
        f"upstream {pair.upstream}  fork {pair.fork}  base {pair.base[:12]}  "
        f"fork commits {pair.fork_commit_count}  expected picked {pair.expected_picked}  "
        f"in {pair.seconds:.1f}s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
