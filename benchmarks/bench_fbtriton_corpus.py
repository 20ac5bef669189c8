"""Recognition on fbtriton's real messages: recall and precision over carried upstream references.

Replays the 660 real fork messages of ``tests/data/fbtriton-picks`` (oldest first, as one fork
history) against the synthetic upstream of ``upstream.jsonl`` (the upstream commits they name,
with real shas and subjects, plus upstream PRs numbered like the fork's own PRs) through the
ledger's pure core, and compares what each fork commit is recorded as carrying with the
hand-checked ``expected.jsonl`` (see ``annotate.py`` there for how it was made).

    python -m benchmarks.bench_fbtriton_corpus [--json] [--misses]

``FORKSYNC_ROOT=/path/to/checkout`` measures another checkout's engine with the same data
(how the "before" figure was taken). Reported: recall = expected references found / expected;
precision = found references that are expected / found; fork PR numbers read as upstream;
deferred / won't-port decisions read from the messages (when the engine reads them).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(os.environ.get("FORKSYNC_ROOT") or Path(__file__).resolve().parent.parent)
sys.path.insert(0, str(ROOT))
DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "fbtriton-picks"

from workers.engine.decisions import Decisions  # noqa: E402
from workers.engine.history import Commit  # noqa: E402
from workers.engine.ledger.compute import compute_ledger  # noqa: E402
from workers.engine.recognise.rules import Rules  # noqa: E402


def fake_sha(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def load(data: Path = DATA) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    rows = [json.loads(line) for line in (data / "fbtriton-picks.jsonl").read_text().splitlines()]
    expected = [json.loads(line) for line in (data / "expected.jsonl").read_text().splitlines()]
    upstream = [json.loads(line) for line in (data / "upstream.jsonl").read_text().splitlines()]
    return rows, expected, upstream


def histories(
    rows: list[dict[str, Any]], upstream: list[dict[str, Any]]
) -> tuple[list[Commit], list[Commit], str]:
    base = fake_sha("base")
    up: list[Commit] = []
    parent = base
    for i, u in enumerate(upstream):
        sha = u["sha"] or fake_sha(f"upstream PR {u['pr']}")
        up.append(
            Commit(
                sha, (parent,), "Upstream", "up@example.com", 1_000_000 + i, 1_000_000 + i, u["subject"], ()
            )
        )
        parent = sha
    fork: list[Commit] = []
    parent = base
    for i, r in enumerate(rows):
        t = 2_000_000 + i
        fork.append(
            Commit(r["sha"], (parent,), "Fork", "fork@example.com", t, t, r["subject"], (), r["message"])
        )
        parent = r["sha"]
    return up, fork, base


def measure(data: Path = DATA) -> dict[str, Any]:
    rows, expected, upstream = load(data)
    up, fork, base = histories(rows, upstream)
    pr_of = {c.sha: u["pr"] for c, u in zip(up, upstream, strict=True)}
    collides = {u["pr"] for u in upstream if u["collides"]}
    rules = Rules.build(
        upstream_url="https://github.com/triton-lang/triton",
        fork_url="https://github.com/facebookexperimental/triton",
    )
    started = time.perf_counter()
    ledger = compute_ledger(
        up,
        fork,
        Decisions({}),
        rules,
        base=base,
        base_time=0,
        upstream_tip=up[-1].sha,
        fork_tip=fork[-1].sha,
        patch_id=lambda shas: {},
    )
    seconds = time.perf_counter() - started
    got = {p.sha: {pr_of[u] for u in p.upstream} for p in ledger.picks}
    tp = fn = fp = fork_numbers = 0
    misses: list[str] = []
    for row, exp in zip(rows, expected, strict=True):
        want, have = set(exp["carries"]), got.get(row["sha"], set())
        tp += len(want & have)
        fn += len(want - have)
        fp += len(have - want)
        fork_numbers += len({n for n in have - want if n in collides})
        if want != have:
            misses.append(
                f"{row['sha'][:10]} {row['subject'][:90]!r}: expected {sorted(want)} got {sorted(have)}"
            )
    decided = _decisions(ledger, pr_of, expected)
    return {
        "messages": len(rows),
        "expected_references": tp + fn,
        "found_references": tp + fp,
        "recall": tp / (tp + fn) if tp + fn else 1.0,
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "fork_prs_read_as_upstream": fork_numbers,
        "messages_wrong": len(misses),
        "seconds": round(seconds, 3),
        **decided,
        "misses": misses,
    }


def _decisions(ledger: Any, pr_of: dict[str, int], expected: list[dict[str, Any]]) -> dict[str, Any]:
    want_deferred = {n for e in expected for n in e["deferred"]}
    want_wont = {n for e in expected for n in e["wont_port"]}
    carried = {n for e in expected for n in e["carries"]}
    have = {pr_of[e.sha]: e.disposition.value for e in ledger.entries}
    # A decision on a commit the fork carries later is overridden by the carrying (it is picked).
    deferred_ok = sum(1 for n in want_deferred - carried if have.get(n) == "deferred")
    wont_ok = sum(1 for n in want_wont - carried if have.get(n) == "wont_port")
    return {
        "deferred_expected": len(want_deferred - carried),
        "deferred_read": deferred_ok,
        "wont_port_expected": len(want_wont - carried),
        "wont_port_read": wont_ok,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--misses", action="store_true", help="list every message whose carried set differs")
    args = parser.parse_args(argv)
    result = measure()
    if args.json:
        print(
            json.dumps(
                {k: v for k, v in result.items() if args.misses or k != "misses"}, indent=2, sort_keys=True
            )
        )
        return 0
    print(
        f"{result['messages']} messages, {result['expected_references']} carried upstream references: "
        f"recall {result['recall']:.2%}, precision {result['precision']:.2%}, "
        f"fork PR numbers read as upstream {result['fork_prs_read_as_upstream']}, "
        f"messages wrong {result['messages_wrong']}, "
        f"deferred read {result['deferred_read']}/{result['deferred_expected']}, "
        f"won't-port read {result['wont_port_read']}/{result['wont_port_expected']} "
        f"({result['seconds']} s)"
    )
    if args.misses:
        print("\n".join(result["misses"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
