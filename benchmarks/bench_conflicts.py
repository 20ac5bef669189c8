"""Benchmark: forksync's deterministic conflict pipeline on real backport conflicts, against git's trivial strategies.

    python -m benchmarks.bench_conflicts [SETDIR] [--json OUT] [--write-resolved DIR] [--memory] [--off RULE ...]

SETDIR is a conflict set laid out like ../shared/conflict-bench (case-NNN/meta.json with
base/ours/theirs/expected per file; default ../shared/conflict-bench beside the repository; the tests use the
vendored subset in tests/data/conflict-bench). Per conflicted file:

* exact: the output equals the human's committed file after stripping trailing whitespace per
  line and trailing blank lines (the set's own baselines.py rule);
* loose: equal after removing all whitespace and blank lines and sorting each run of
  import/include lines ("same after whitespace and import order");
* forksync's pipeline either proposes a file (right or "wrong and proposed") or declines;
* baselines: ``git merge-file --ours``, ``--theirs``, ``--union``, and the per-file oracle that
  picks whichever of those (or the whole ours/theirs file) matches, in hindsight.

Cases are split into halves by case number (odd: design half, even: held out) and reported
for each half and in all.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from core.config import DEFAULT_RULES_OFF
from workers.engine.resolve.memory import MemoryIndex, MemoryRecord, learn
from workers.engine.resolve.pipeline import Conflict, resolve_text
from workers.engine.resolve.strategies import enabled

DEFAULT_SET = Path(__file__).resolve().parents[2] / "shared" / "conflict-bench"  # ../shared beside the repo
_IMPORT = re.compile(r"^\s*(import\s|from\s+\S+\s+import\s|#\s*include\s)")


def norm_exact(data: str) -> list[str]:
    lines = [line.rstrip() for line in data.split("\n")]
    while lines and lines[-1] == "":
        lines.pop()
    return lines


def norm_loose(data: str) -> list[str]:
    lines = ["".join(line.split()) for line in data.split("\n")]
    raw = [line for line in data.split("\n") if line.strip()]
    out: list[str] = []
    run: list[str] = []
    squashed = [x for x in lines if x]
    for original, line in zip(raw, squashed, strict=True):
        if _IMPORT.match(original):
            run.append(line)
            continue
        out.extend(sorted(run))
        run = []
        out.append(line)
    out.extend(sorted(run))
    return out


def git_merge_file(ours: Path, base: Path, theirs: Path, how: str) -> str:
    proc = subprocess.run(
        ["git", "merge-file", "-p", f"--{how}", str(ours), str(base), str(theirs)],
        capture_output=True,
        check=False,
    )
    return proc.stdout.decode("utf-8", "surrogateescape")


@dataclass
class FileResult:
    case: str
    path: str
    half: str
    proposed: bool
    exact: bool
    loose: bool
    strategy: str
    baselines: dict[str, bool] = field(default_factory=dict)
    blocks_only: bool | None = (
        None  # the human only rewrote the conflict blocks (the set's meta; None: unknown)
    )


def run_case(
    case_dir: Path, write_to: Path | None = None, memory: MemoryIndex | None = None, off: tuple[str, ...] = ()
) -> list[FileResult]:
    """Score one case (``off``: rules switched off, as ``resolve.rules_off``); with ``memory``, lookups see what
    earlier cases taught and this case is learned after."""
    meta = json.loads((case_dir / "meta.json").read_text())
    number = int(meta["case"].split("-")[1])
    half = "design (odd)" if number % 2 else "held out (even)"
    results = []
    learned: list[MemoryRecord] = []
    for f in meta["files"]:
        names = f["files"]
        paths = {k: case_dir / names[k] for k in ("base", "ours", "theirs", "expected")}
        text = {k: p.read_bytes().decode("utf-8", "surrogateescape") for k, p in paths.items()}
        conflict = Conflict(f["path"], text["base"], text["ours"], text["theirs"])
        outcome, merged = resolve_text(conflict, memory=memory, strategies=enabled(off))
        expected = text["expected"]
        if memory is not None and merged is not None:
            learned.extend(
                learn(f["path"], merged, expected, f"{meta['case']} ({meta['backport_sha'][:10]})")
            )
        proposed = outcome.entry is not None and outcome.entry.content is not None
        got = (
            outcome.entry.content.decode("utf-8", "surrogateescape")
            if proposed and outcome.entry and outcome.entry.content
            else ""
        )
        if proposed and write_to is not None:
            target = write_to / meta["case"] / (names["expected"][: -len(".expected")] + ".resolved")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(got.encode("utf-8", "surrogateescape"))
        want = norm_exact(expected)

        def same(s: str, want: list[str] = want) -> bool:
            return norm_exact(s) == want

        baselines = {
            how: same(git_merge_file(paths["ours"], paths["base"], paths["theirs"], how))
            for how in ("ours", "theirs", "union")
        }
        baselines["oracle"] = any(baselines.values()) or same(text["ours"]) or same(text["theirs"])
        results.append(
            FileResult(
                meta["case"],
                f["path"],
                half,
                proposed,
                exact=proposed and same(got),
                loose=proposed and norm_loose(got) == norm_loose(expected),
                strategy=outcome.entry.strategy if outcome.entry else "",
                baselines=baselines,
                blocks_only=f.get("expected_keeps_all_non_conflicting_lines"),
            )
        )
    if memory is not None:
        memory.add(learned)  # after the whole case: a case never answers itself
    return results


def table(results: list[FileResult]) -> str:
    groups = {"design (odd)": [], "held out (even)": [], "all": results}  # type: dict[str, list[FileResult]]
    for r in results:
        groups[r.half].append(r)
    head = "| | " + " | ".join(f"{g} ({len(rs)} files)" for g, rs in groups.items()) + " |"
    rows = [head, "|---" * (len(groups) + 1) + "|"]

    def pct(n: int, d: int) -> str:
        return f"{n} ({100 * n / max(d, 1):.1f}%)"

    def row(label: str, fn: Callable[[FileResult], bool]) -> None:
        rows.append(
            f"| {label} | "
            + " | ".join(pct(sum(fn(r) for r in rs), len(rs)) for rs in groups.values())
            + " |"
        )

    row("forksync: exact", lambda r: r.exact)
    row("forksync: same after whitespace + import order", lambda r: r.loose)
    row("forksync: declined (left to a human)", lambda r: not r.proposed)
    row("forksync: **wrong and proposed** (exact)", lambda r: r.proposed and not r.exact)
    row("forksync: wrong and proposed (loose)", lambda r: r.proposed and not r.loose)
    if all(r.blocks_only is not None for r in results):
        row(
            "  of which the human also edited outside the conflict blocks (no hunk answer can match)",
            lambda r: r.proposed and not r.exact and not r.blocks_only,
        )
        row("files the human edited outside the conflict blocks", lambda r: not r.blocks_only)
    for how in ("ours", "theirs", "union"):
        row(f"git merge-file --{how}: exact", functools.partial(lambda h, r: r.baselines[h], how))
    row("oracle, best trivial per file (hindsight): exact", lambda r: r.baselines["oracle"])
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("setdir", nargs="?", default=str(DEFAULT_SET))
    parser.add_argument("--json", metavar="OUT", help="per-file results as JSON")
    parser.add_argument(
        "--write-resolved", metavar="DIR", help="write proposed files for the set's baselines.py --resolved"
    )
    parser.add_argument(
        "--memory",
        action="store_true",
        help="also run with resolution memory learned chronologically: each case (by backport date) "
        "sees only what the humans committed in earlier cases",
    )
    parser.add_argument(
        "--off",
        action="append",
        default=[],
        metavar="RULE",
        help="switch a deterministic rule off, as resolve.rules_off does (repeatable; replaces the "
        f"default list, {', '.join(DEFAULT_RULES_OFF)})",
    )
    parser.add_argument(
        "--all-rules", action="store_true", help="switch no rule off by default, as rules_off: [] does"
    )
    args = parser.parse_args(argv)
    off = tuple(args.off) if args.off or args.all_rules else DEFAULT_RULES_OFF
    setdir = Path(args.setdir)
    cases = sorted(p for p in setdir.iterdir() if p.name.startswith("case-") and (p / "meta.json").exists())
    if not cases:
        print(f"bench_conflicts: error: no case-NNN/meta.json under {setdir}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    with tempfile.TemporaryDirectory():
        results = [
            r
            for c in cases
            for r in run_case(c, Path(args.write_resolved) if args.write_resolved else None, off=off)
        ]
    elapsed = time.perf_counter() - start
    print(table(results))
    by_strategy: dict[str, list[int]] = {}
    for r in results:
        if r.proposed:
            by_strategy.setdefault(r.strategy, [0, 0])[0 if r.exact else 1] += 1
    print(
        "\nproposed files by strategy (exact / wrong): "
        + ", ".join(f"{s} {ok}/{bad}" for s, (ok, bad) in sorted(by_strategy.items()))
    )
    print(f"{len(results)} files in {len(cases)} cases, {elapsed:.1f}s")
    if args.memory:
        memory = MemoryIndex()
        dated = sorted(
            cases, key=lambda c: (json.loads((c / "meta.json").read_text())["backport_date"], c.name)
        )
        with_memory = [r for c in dated for r in run_case(c, None, memory, off=off)]
        with_memory.sort(key=lambda r: (r.case, r.path))
        print(
            "\nWith resolution memory learned chronologically from earlier cases' human resolutions "
            f"({len(memory)} hunk records at the end):\n"
        )
        print(table(with_memory))
        used = sum(1 for r in with_memory if r.proposed and "memory" in r.strategy)
        print(f"\nfiles where memory answered at least one hunk: {used}")
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ for r in results], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
