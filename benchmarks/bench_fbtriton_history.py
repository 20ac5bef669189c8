"""The ledger's recognition over every fork-side commit message of fbtriton's real history.

    python -m benchmarks.bench_fbtriton_history --mirror /path/to/facebookexperimental/triton.git
        [--branches-only] [--json] [--suspects N] [--dump FILE]

``bench_fbtriton_corpus`` measures the 660 hand-checked messages; this one runs the same pure
core (``compute_ledger``, messages only: no patch-id) over *all* of the fork's own commits the
mirror holds (the ``fetch`` tool brings a bare clone): every commit reachable from any ref
(branches and the fork's ``refs/pull/*/head``) that is not on upstream's own line, against the
real upstream range. Upstream is the mirror's first-parent line from the fork's base
(2ac060b8b955, upstream's "Remove setuptools requirement from setup.py (#7983)", the commit the
fork's main was cut from) to a4ce9c2a223a (upstream's "[AMD] Revert AMD buffer soffset
optimization series (#10715)", the newest upstream commit the mirror holds on that line), as
``tests/data/fbtriton-picks/annotate.py`` defines them; every ancestor of that tip is upstream's.

Each fork commit gets one outcome: ``merge``; ``revert`` (of a fork commit, an un-pick, a
reapply, or of something it cannot name); ``bundle`` (carries more than one upstream commit, or
a bundle title); ``resolved`` (a pick whose title says it was resolved: ``[RESOLVED]``,
``[CONFLICTS]``); ``pick`` (carries one); ``decision`` (carries nothing but records a defer /
won't-port); ``fork-only``. Fork-only messages are then screened by cues that an independent
reader would take for a pick (``suspects``): a pick word or tag in the title, a carry trailer,
``cherry picked from``, an upstream pull or commit link, two trailing ``(#N)``; a cue whose
upstream commit is outside the range (older than the base, or newer than the mirror's upstream
line) is counted apart, since nothing in range can be carried then.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, os.environ.get("FORKSYNC_ROOT") or str(Path(__file__).resolve().parent.parent))

from workers.engine import reverts
from workers.engine.decisions import Decisions
from workers.engine.git import Repository
from workers.engine.history import Commit, read_range
from workers.engine.ledger.compute import compute_ledger
from workers.engine.recognise import recognise
from workers.engine.recognise.index import UpstreamIndex
from workers.engine.recognise.model import NOTHING
from workers.engine.recognise.rules import Rules
from workers.engine.titles import parse_title

BASE = "2ac060b8b955cf4c6412458bea9df554342c1b1a"
UPSTREAM_TIP = "a4ce9c2a223ac11a5c9b1232231933801b437f1d"
UPSTREAM_URL = "https://github.com/triton-lang/triton"
FORK_URL = "https://github.com/facebookexperimental/triton"
OUTCOMES = ("pick", "resolved", "bundle", "revert", "decision", "fork-only", "merge")

# What an independent reader takes for a sign of a pick (not forksync's recognisers).
_SHA = r"[0-9a-f]{7,40}"
CUES: dict[str, re.Pattern[str]] = {
    "pick word or tag in title": re.compile(
        r"(?i)^(?:\[[^\]]*\]\s*)*(?:\[(?:cherry[\s_-]?pick\w*|backport\w*|pick)\]|"
        r"(?:cherry[\s_-]?pick\w*|backport\w*)\b)"
    ),
    "cherry-pick or backport in title": re.compile(r"(?i)^[^\n]*\b(?:cherry[\s_-]?pick\w*|backport\w*)\b"),
    "carry trailer": re.compile(
        rf"(?im)^(?:Reactor (?:Cherry-pick|Backport) Revision|Upstream[- ]Commit|Original Commit):\s*{_SHA}"
    ),
    "cherry picked from": re.compile(rf"(?i)cherry[\s-]?picked from (?:commit\s+)?{_SHA}"),
    "upstream pull link": re.compile(r"(?i)github\.com/(?:triton-lang|openai)/triton/pull/\d+"),
    "upstream commit link": re.compile(rf"(?i)github\.com/(?:triton-lang|openai)/triton/commit/{_SHA}"),
    "two trailing (#N)": re.compile(r"\(#\d+\)\s*\(#\d+\)\s*$", re.M),
    "upstream slug ref": re.compile(r"(?i)\b(?:triton-lang|openai)/triton#\d+"),
}
_CUE_SHAS = re.compile(
    rf"(?im)(?:^(?:Reactor (?:Cherry-pick|Backport) Revision|Upstream[- ]Commit|Original Commit):\s*|"
    rf"cherry[\s-]?picked from (?:commit\s+)?|triton/commit/)({_SHA})"
)


def read(mirror: Path, branches_only: bool) -> tuple[list[Commit], list[Commit], set[str]]:
    repo = Repository(mirror)
    upstream = read_range(repo, UPSTREAM_TIP, [BASE], first_parent=True, messages=False, files=False)
    fork = read_range(
        repo,
        "--branches" if branches_only else "--all",
        [UPSTREAM_TIP],
        first_parent=False,
        messages=True,
        files=False,
    )
    on_branches = set(repo.text("rev-list", "--branches", f"^{UPSTREAM_TIP}").split())
    return upstream, fork, on_branches


def outcome_of(commit: Commit, carried: tuple[str, ...], revert: reverts.Revert | None, decided: bool) -> str:
    if commit.is_merge:
        return "merge"
    if revert is not None:
        return "revert"
    title = parse_title(commit.subject)
    if len(carried) > 1 or (carried and title.bundle):
        return "bundle"
    if carried:
        resolved = any(t.upper() in ("RESOLVED", "CONFLICTS", "CONFLICT") for t in title.process)
        return "resolved" if resolved else "pick"
    return "decision" if decided else "fork-only"


def cues_of(commit: Commit) -> list[str]:
    message = commit.message or commit.subject
    return [
        name
        for name, pattern in CUES.items()
        if pattern.search(commit.subject if "title" in name else message)
    ]


def where_shas_are(mirror: Path, shas: set[str], upstream: set[str]) -> dict[str, str]:
    """Each cue sha → "in range" / "older than the base" / "fork commit" / "not in the mirror"."""
    if not shas:
        return {}
    ordered = sorted(shas)
    out = subprocess.run(
        ["git", "-C", str(mirror), "cat-file", "--batch-check=%(objectname) %(objecttype)"],
        input="\n".join(ordered) + "\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    full: dict[str, str] = {}
    for short, line in zip(ordered, out, strict=True):
        name, _, kind = line.partition(" ")
        if kind == "commit":
            full[short] = name
    older = set()
    if full:
        older = set(
            subprocess.run(
                [
                    "git",
                    "-C",
                    str(mirror),
                    "rev-list",
                    "--no-walk=unsorted",
                    *sorted(set(full.values())),
                    f"^{BASE}",
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
        )
    where = {}
    for short in ordered:
        sha = full.get(short)
        if sha is None:
            where[short] = "not in the mirror"
        elif sha in upstream:
            where[short] = "in range"
        elif sha not in older:
            where[short] = "older than the base"
        else:
            where[short] = "fork or other branch commit"
    return where


def measure(mirror: Path, branches_only: bool = False, suspects: int = 0) -> dict[str, Any]:
    upstream, fork, on_branches = read(mirror, branches_only)
    rules = Rules.build(upstream_url=UPSTREAM_URL, fork_url=FORK_URL)
    started = time.perf_counter()
    ledger = compute_ledger(
        upstream,
        fork,
        Decisions({}),
        rules,
        base=BASE,
        base_time=0,
        upstream_tip=UPSTREAM_TIP,
        fork_tip=fork[-1].sha,
        patch_id=lambda shas: {},
    )
    seconds = time.perf_counter() - started
    carried = {p.sha: p.upstream for p in ledger.picks}
    index = UpstreamIndex(upstream)
    fork_index = reverts.ForkIndex(fork)
    up_shas = {c.sha for c in upstream}
    outcomes: Counter[str] = Counter()
    decisions: Counter[str] = Counter()
    branch_outcomes: Counter[str] = Counter()
    rows = []
    for c in fork:
        revert = None if c.is_merge else reverts.revert_of(c, fork_index, index, rules)
        found = recognise(c, index, rules) if not c.is_merge and revert is None else NOTHING
        kind = outcome_of(c, carried.get(c.sha, ()), revert, bool(found.decided))
        decisions.update(k for _, k, _ in found.decided)
        outcomes[kind] += 1
        if c.sha in on_branches:
            branch_outcomes[kind] += 1
        rows.append((c, kind))
    cue_shas = {m.group(1) for c, kind in rows if kind == "fork-only" for m in _CUE_SHAS.finditer(c.message)}
    where = where_shas_are(mirror, cue_shas, up_shas)
    cue_counts: Counter[str] = Counter()
    out_of_range: Counter[str] = Counter()
    suspect_rows: list[dict[str, Any]] = []
    for c, kind in rows:
        if kind != "fork-only":
            continue
        cues = cues_of(c)
        if not cues:
            continue
        named = {where.get(m.group(1), "?") for m in _CUE_SHAS.finditer(c.message)}
        if named and "in range" not in named:
            out_of_range[" / ".join(sorted(named))] += 1
            continue
        for cue in cues:
            cue_counts[cue] += 1
        suspect_rows.append(
            {"sha": c.sha, "subject": c.subject, "cues": cues, "branches": c.sha in on_branches}
        )
    return {
        "fork_commits": len(fork),
        "on_branches": sum(branch_outcomes.values()),
        "upstream_commits": len(upstream),
        "outcomes": {k: outcomes[k] for k in OUTCOMES},
        "outcomes_on_branches": {k: branch_outcomes[k] for k in OUTCOMES},
        "upstream_carried": sum(1 for e in ledger.entries if e.carriers),
        "references_carried": sum(len(p.upstream) for p in ledger.picks if p.reverted_by is None),
        "decisions_in_messages": dict(sorted(decisions.items())),
        "dispositions": dict(sorted(Counter(e.disposition.value for e in ledger.entries).items())),
        "fork_only_with_cues": len(suspect_rows),
        "fork_only_cues": dict(sorted(cue_counts.items())),
        "fork_only_cues_out_of_range": dict(sorted(out_of_range.items())),
        "seconds": round(seconds, 2),
        "suspects": suspect_rows[:suspects] if suspects else [],
        "_rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mirror", type=Path, required=True)
    parser.add_argument("--branches-only", action="store_true", help="branches only, not refs/pull/*/head")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--suspects", type=int, default=0, help="list the first N fork-only messages with cues"
    )
    parser.add_argument(
        "--dump", type=Path, help="write every fork commit (sha, outcome, subject) as JSON lines"
    )
    args = parser.parse_args(argv)
    result = measure(args.mirror, args.branches_only, args.suspects)
    rows = result.pop("_rows")
    if args.dump:
        with args.dump.open("w") as out:
            for c, kind in rows:
                out.write(json.dumps({"sha": c.sha, "outcome": kind, "subject": c.subject}) + "\n")
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
        return 0
    print(
        f"{result['fork_commits']} fork commits ({result['on_branches']} on branches), "
        f"{result['upstream_commits']} upstream commits in range, "
        f"{result['upstream_carried']} carried ({result['seconds']} s)"
    )
    print(
        f"(fork commit, upstream commit) references carried: {result['references_carried']}; "
        f"decisions in messages: {result['decisions_in_messages']}; ledger: {result['dispositions']}"
    )
    for k in OUTCOMES:
        print(f"  {k:10} {result['outcomes'][k]:6} ({result['outcomes_on_branches'][k]} on branches)")
    print(f"fork-only with pick cues (upstream commit in range or unnamed): {result['fork_only_with_cues']}")
    for cue, n in result["fork_only_cues"].items():
        print(f"  {cue}: {n}")
    print("fork-only with cues naming only out-of-range commits:")
    for where, n in result["fork_only_cues_out_of_range"].items():
        print(f"  {where}: {n}")
    for s in result["suspects"]:
        print(f"  {s['sha'][:10]} {s['subject'][:110]!r} {s['cues']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
