"""Webhook fuzz figure: N signed, mutated deliveries from real payloads through the view.

    python benchmarks/bench_webhook_fuzz.py [--count 10000] [--seed 14]

Prints the answers by status, how many were >= 500 (must be 0) or not one line, and the rate.
The deliveries are those of tests/test_webhook_fuzz.py (tests/fixtures/fuzz.py): octokit's
example payloads and the hand-written ones, mutated, then signed so they pass the HMAC check.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fixtures.fuzz import run_fuzz


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        statuses, problems = run_fuzz(Path(tmp), args.count, args.seed)
        elapsed = time.monotonic() - started
    print(f"deliveries: {args.count} in {elapsed:.1f} s ({args.count / elapsed:.0f}/s)")
    print("answers:", ", ".join(f"{code}: {n}" for code, n in sorted(statuses.items())))
    print(f">= 500 or not one line: {len(problems)}")
    for event, body, code, text in problems[:5]:
        print(f"  {code} {event} {text.strip()[:120]!r} body {body[:80]!r}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
