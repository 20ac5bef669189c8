"""How ``messages.jsonl`` and ``upstream.jsonl`` were made (kept for provenance; not run by tests).

``messages.jsonl``: real fork-side commit messages of facebookexperimental/triton, verbatim
(``git log -1 --format=%B``), one per form that ``benchmarks/bench_fbtriton_history.py`` found
read wrongly over the fork's whole history; ``upstream.jsonl``: every commit of upstream's
first-parent line (base 2ac060b8b955 .. a4ce9c2a223a, as ``tests/data/fbtriton-picks/annotate.py``
defines the range) that those messages name by ``#N``, ``/pull/N``, a bare number of an
``Applied (K):`` list, or a sha (trailers, commit links), with its real sha and subject, in
upstream order, after the two older upstream commits (``OLDER``) two release picks name.

Run: ``python tests/data/fbtriton-history/vendor.py MIRROR_GIT_DIR``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
BASE = "2ac060b8b955cf4c6412458bea9df554342c1b1a"
TIP = "a4ce9c2a223ac11a5c9b1232231933801b437f1d"
MESSAGES = (
    "995ec89f9d",  # (triton-lang/triton#8557) for (#8557)
    "eff8c521b9",  # [release/3.5.x] + upstream subject + (#M)
    "fc15d21079",  # [TLX][AMD] + upstream subject + (#M)
    "01f3f2cbc2",  # upstream subject without upstream's [BACKEND][NVIDIA], number kept
    "4e02fa892b",  # Picked (37): #a desc; #b desc; ...  Deferred (7, backlog): #a + #b ...
    "a37952a204",  # Applied (94): 9720 9725 ...
    "6496304b51",  # Issue introduced by\n<link>
    "25678e7df8",  # PR#913 cherry-picked upstream commit <link> which changed ...
    "b0490dc4b0",  # ... the new MLIR API from the LLVM bump in <link>
    "422bcde23e",  # ... has been removed in\nWith <link>
    "5efe85cf52",  # previously disabled for sm80 in\n<commit link>
    "be526cb4a0",  # Upstream applies the same ... rule ... (triton-lang/triton#10571)
    "da0e296130",  # It follows the gluon implementation in the upstream triton PR: triton-lang/triton#8480
    "3b806e685b",  # Cherry-pick of upstream <link>. (still a pick)
    "f673b3d738",  # - cherry-pick of the upstream triton [PR#8480](<link>) (still a pick)
    "744a5de206",  # This PR ports two fixes ...:\n- `b45acd4b5` / [Triton #10194 ...](<link>) (still a pick)
    "8a1cdc2c52",  # [triton] Backport ...: Original commit is <commit link> (still a pick)
    "90a4bb12eb",  # Add extension hook (port of <link>) (#992): Backport of upstream commit <link>
    "b1ea7ccddf",  # [triton][beta] [Cherry-pick][RESOLVED] '[Frontend] Avoid using find_paths_if (#8846)'
    "11ae943bb0",  # Back out "[triton][beta] [RESOLVED] '...(#8846)'" + Original Phabricator Diff: D99796020
    "6e1bafc22c",  # [Triton beta] Do not use different ptxas for blackwell
    "253d2b0e67",  # Back out "[triton][PR] [Triton beta] Do not use different ptxas for blackwell"
    "f81f19a7f6",  # [release/3.4] "<upstream subject (#7343)>" (#7346): upstream's own release pick
    "4972f45a57",  # [release 3.4] "<upstream subject (#7219)>" (#7316)
    "e5e3a6b009",  # [AMD] Fix mi350 BlockPingpong update waits: "Port b45acd4b5 / Triton #10194."
    "98ddb93f88",  # ### Won't-port (2) — ...\n#10161 <what>; #10146 <what>. (a heading, then one line of items)
)
# Upstream commits older than the base that the release-branch picks above name (upstream's
# release/3.4 was cut before the fork's base): kept first, in upstream order.
OLDER = ("76b6977d5", "de7301e28")


def git(mirror: str, *args: str) -> str:
    return subprocess.run(["git", "-C", mirror, *args], capture_output=True, text=True, check=True).stdout


def main(mirror: str) -> None:
    line = [
        tuple(x.split("\x1f", 1))
        for x in git(mirror, "log", "--first-parent", "--format=%H%x1f%s", f"{BASE}..{TIP}").splitlines()[
            ::-1
        ]
    ]
    rows = []
    named_numbers: set[int] = set()
    named_shas: set[str] = set()
    for short in MESSAGES:
        sha = git(mirror, "rev-parse", short).strip()
        message = git(mirror, "log", "-1", "--format=%B", sha).rstrip("\n")
        rows.append({"sha": sha, "subject": message.split("\n", 1)[0], "message": message})
        named_numbers.update(int(n) for n in re.findall(r"(?:#|/pull/)(\d{4,5})\b", message))
        for applied in re.findall(r"(?m)^Applied \(\d+\):([\d\s.]+)$", message):
            named_numbers.update(int(n) for n in re.findall(r"\d+", applied))
        named_shas.update(re.findall(r"\b[0-9a-f]{7,40}\b", message))
    upstream = [
        {"sha": sha, "subject": subject}
        for sha, subject in (
            git(mirror, "log", "-1", "--format=%H%x1f%s", o).strip().split("\x1f", 1) for o in OLDER
        )
    ]
    for sha, subject in line:
        m = re.search(r"\(#(\d+)\)\s*$", subject)
        if (m and int(m.group(1)) in named_numbers) or any(sha.startswith(s) for s in named_shas):
            upstream.append({"sha": sha, "subject": subject})
    (HERE / "messages.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    (HERE / "upstream.jsonl").write_text("".join(json.dumps(u, ensure_ascii=False) + "\n" for u in upstream))


if __name__ == "__main__":
    main(sys.argv[1])
