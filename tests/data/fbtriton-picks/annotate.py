"""How ``expected.jsonl`` and ``upstream.jsonl`` were made (kept for provenance; not run by tests).

The expected parse is independent of forksync's recognisers: it was seeded from *upstream's
real history* and then checked by hand, message by message.

1. Seed (mechanical, from the facts, not from forksync): every sha a message names in a carry
   trailer (``Reactor Cherry-pick|Backport Revision``, ``Original Commit:``, ``(cherry picked
   from commit ...)``, ``Upstream commit:``) was resolved in a mirror of
   facebookexperimental/triton, whose branches hold upstream's first-parent line; the upstream
   PR of that commit is the ``(#N)`` its real subject ends in. For quoted picks the PR inside
   the quotes was read as a cross-check. 482 of the 660 messages have trailer PRs equal to the
   quoted / listed PR and needed no further decision.
2. Every other message (178: bundles, reverts, other pick shapes, fork-picks, partial ports,
   mentions, negatives, picks whose upstream sha is missing from the mirror) was read by hand;
   ``HAND`` below is the result, with the reason for each non-obvious decision.
3. ``upstream.jsonl`` is the synthetic upstream for the replay: each PR number the corpus names
   (carried, deferred, won't-port or only mentioned) that upstream's real first-parent line has,
   with its real sha and subject, in upstream order; PRs newer than the mirror's upstream line
   get the subject the message quotes and no sha. Then one commit per fork PR number ``(#M)``
   (the fork's own squash suffix) that upstream does not already name, titled
   ``Upstream change <M> (#M)`` and placed oldest: upstream PRs whose numbers collide with the
   fork's, which no message may be read as carrying.

Run: ``python tests/data/fbtriton-picks/annotate.py MIRROR_GIT_DIR UPSTREAM_TIP BASE`` (here
a4ce9c2a223a, upstream's "[AMD] Revert AMD buffer soffset optimization series (#10715)", and
2ac060b8b955, the upstream commit the fork was cut from: only commits after it are in range).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
SHA = r"([0-9a-f]{7,40})"
CARRY = (
    r"Reactor (?:Cherry-pick|Backport) Revision:\s*" + SHA,
    r"Original Commit:\s*" + SHA,
    r"cherry picked from commit " + SHA,
    r"Upstream commit:\s*" + SHA,
)

# Hand decisions, by position in the corpus: (format, carried PRs, deferred, wont_port, note).
# Messages not listed here carry what their trailers name (the seed), which equals the PR the
# quoted / listed title names.
BUNDLE_542_CARRIED = [9851, 9984, 9792, 9941, 9989, 9987, 10014, 9982, 9883]
BUNDLE_545_PICKED = [
    10211,
    10230,
    10220,
    10236,
    10232,
    10245,
    10252,
    10249,
    10237,
    10224,
    10253,
    10243,
    10242,
    10238,
    9886,
    10214,
    10259,
    10216,
    10233,
    10247,
    10235,
    9662,
    10225,
    10258,
    10263,
    9572,
    10268,
    10270,
    10272,
    10200,
    10129,
    10280,
    10271,
    10275,
    10282,
    10269,
    9201,
    10276,
    9260,
    10189,
    9929,
    10204,
    10294,
    10173,
    10300,
    10299,
    10301,
    10234,
    10303,
    10304,
    10306,
    10286,
    10311,
    10293,
    10855,
    10169,
]
NEG = ("negative", [], [], [], "")
HAND: dict[int, tuple[str, list[int], list[int], list[int], str]] = {
    0: (
        "partial-port",
        [],
        [],
        [],
        "fork rebase commit; 'Partially pick <pull/7001> (only ...)' inside a quoted old message",
    ),
    1: ("fork-pick", [], [], [], "pick of the fork's own tlx-branch PR #227"),
    2: ("fork-pick", [], [], [], "pick of the fork's own PR #240"),
    6: ("fork-pick", [], [], [], "pick of the fork's own [TLX] PR #260"),
    12: ("mention", [], [], [], "'upstreaming <pull/6802/commits/...>': the fork sends it upstream"),
    25: ("revert", [], [], [], "Revert D85686892: a fork diff"),
    56: ("revert", [], [], [], "Back out of a revert of a fork diff"),
    57: (
        "other-pick",
        [7592],
        [],
        [],
        "upstream subject + fork (#667), body 'This is a cherry-pick of <pull/7592>'",
    ),
    64: ("other-pick", [8121], [], [], "[pick] tag, unquoted upstream subject (#N) (#M)"),
    67: (
        "other-pick",
        [7633],
        [],
        [],
        "upstream subject with fork (#365), (cherry picked from commit <sha>)",
    ),
    76: ("revert", [], [], [], "Revert D<n>: <pick subject>: un-picks, carries nothing"),
    79: ("revert", [], [], [], "Revert D92486154: no subject"),
    138: ("revert", [], [], [], "Revert D<n>: <pick subject>"),
    139: ("revert", [], [], [], "Revert D<n>: <pick subject>"),
    140: ("revert", [8275], [], [], "Revert of a revert of a pick: a reapply, carries the pick again"),
    141: ("revert", [8262], [], [], "Revert of a revert of a pick: a reapply"),
    142: ("revert", [8284], [], [], "Revert of a revert of a pick: a reapply"),
    344: ("revert", [], [], [], "Revert D100485231: no subject"),
    425: (
        "mention",
        [],
        [],
        [],
        "fork fix 'after upstream refactor (#9133) (#1380)': #9133 is named, not carried",
    ),
    470: ("revert", [], [], [], 'Back out "<pick subject>"'),
    471: ("revert", [], [], [], 'Back out "<pick subject>"'),
    485: ("fork-pick", [], [], [], "port of the fork's tlx-amd-meta PR #1532"),
    488: ("revert", [], [], [], "Revert D<n>: a fork-only change"),
    492: ("bundle-other", [9336, 9342, 9356], [], [], "[BUNDLE] #a #b #c (#M)"),
    497: ("fork-pick", [], [], [], "port of tlx-amd-meta #1407"),
    498: ("fork-pick", [], [], [], "port of tlx-amd-meta #1442"),
    499: (
        "bundle-list",
        [9361, 9396, 9392],
        [],
        [],
        "title lists 10, body: 7 are 'NO-OP (reverted to beta)', only #9361 #9396 #9392 ADOPTED; "
        "decision: a NO-OP item is not carried (5 of them are picked again by a later bundle)",
    ),
    500: (
        "bundle-list",
        [9415, 9416, 9281, 9419, 9423, 9413, 9424, 9347],
        [],
        [],
        "title lists 8, one trailer (the last); every Reactor-Bundle item is CLEAN or RESOLVED",
    ),
    501: ("revert", [], [], [], 'Back out D<n> "<fork subject>"'),
    502: ("fork-pick", [], [], [], "[Backport][TLX][AMD] ... (#1364) (#1787): the fork's own PR"),
    503: ("other-pick", [9936], [], [], "[Triton][Cherry-pick] ... (#9936) (#1788), Upstream PR link"),
    504: ("fork-pick", [], [], [], "[Backport][TLX][AMD] ... (#1690) (#1789): the fork's own PR"),
    506: (
        "fork-pick",
        [],
        [],
        [],
        "[Backport][TLX][AMD] (#1581): TLX is fork-only; the body calls tlx-amd-meta 'upstream'",
    ),
    511: ("other-pick", [8464], [], [], "[triton][Cherry-pick][AMD] ... (#8464) (#1805)"),
    512: ("other-pick", [9883], [], [], "[Backport][AMD][gfx9] ... (#9883) (#1806), Upstream PR link"),
    542: (
        "bundle-other",
        BUNDLE_542_CARRIED,
        [9974],
        [],
        "keystone + applied dependents + 'already satisfied in beta (frontier advance only)'; "
        "'Still deferred' #9974; prose numbers (#9954 #10031 #10013 #9977 #9615) are not carried",
    ),
    545: (
        "bundle-other",
        BUNDLE_545_PICKED,
        [10261, 10212, 10297, 10142, 10287, 10056],
        [],
        "Picked (56) list; Deferred (6, backlog) items",
    ),
    553: (
        "bundle-other",
        [9220, 9221, 9317, 9318, 9327],
        [],
        [],
        "'Cherry-pick upstream ... bundle', Upstream PRs links + trailers",
    ),
    572: ("bundle-list", [9812, 9692, 9856, 9843, 9958, 9934, 10035], [], [], "title list, no trailers"),
    583: ("other-pick", [10899], [], [], "[H100 core]... Backport ... (#10899) (#2596)"),
    647: ("partial-port", [], [], [], "'Mirrors the fix from <pull/11252>'"),
    658: ("mention", [], [], [], "[backport-needed]: to be sent upstream"),
    659: ("mention", [], [], [], "'Sync upstream commit 5900ea6b2 by dropping ...': a fork CI fix"),
}
# Bundles whose carried set is the union of title list, stated list and trailers; body link
# lists that name PRs nothing else names are not counted (they name earlier picks).
UNION_BUNDLES = (495, 496, 508, 509, 514, 521, 529, 530)
BUNDLE_530_DEFERRED = [9717, 9977, 10015, 10058, 10053, 9854, 10069, 10052]


def main(mirror: str, tip: str, base: str) -> None:
    rows = [json.loads(line) for line in (HERE / "fbtriton-picks.jsonl").open()]
    fp = subprocess.run(
        ["git", "-C", mirror, "log", "--first-parent", "--format=%H%x1f%s", f"{base}..{tip}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()[::-1]
    line = [tuple(x.split("\x1f", 1)) for x in fp]
    older = subprocess.run(
        ["git", "-C", mirror, "log", "--first-parent", "--format=%s", base],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    # PRs upstream merged before the base: the fork has them already, so a pick of one carries
    # nothing in range (two legacy picks re-picked such commits after a rebase).
    pre_base = {int(m.group(1)) for subject in older if (m := re.search(r"\(#(\d+)\)\s*$", subject))}
    by_sha = {sha: subject for sha, subject in line}
    by_pr: dict[int, tuple[str, str]] = {}
    order: dict[int, int] = {}
    for i, (sha, subject) in enumerate(line):
        m = re.search(r"\(#(\d+)\)\s*$", subject)
        if m:
            by_pr[int(m.group(1))] = (sha, subject)
            order[int(m.group(1))] = i

    def resolve(prefix: str) -> int | None:
        hits = [s for s in by_sha if s.startswith(prefix)]
        if len(hits) != 1:
            return None
        m = re.search(r"\(#(\d+)\)\s*$", by_sha[hits[0]])
        return int(m.group(1)) if m else None

    out = []
    quoted_subjects: dict[int, str] = {}
    for i, r in enumerate(rows):
        msg, subject = r["message"], r["subject"]
        q = re.search(r"'(.*\(#(\d+)\))'", subject)
        if q:
            quoted_subjects.setdefault(int(q.group(2)), q.group(1))
        if i in HAND:
            fmt, carried, deferred, wont, note = HAND[i]
        else:
            trail = [resolve(s) for p in CARRY for s in re.findall(p, msg)]
            carried = [p for p in dict.fromkeys(trail) if p is not None]
            if not carried and q and int(q.group(2)) not in pre_base:
                carried = [int(q.group(2))]  # the upstream sha is missing from the mirror
            deferred, wont, note = [], [], ""
            fmt = "pick" if carried else "negative"
            if i in UNION_BUNDLES:
                fmt = "bundle-list"
                title = [int(n) for n in re.findall(r"#(\d+)", re.sub(r"\s*\(#\d+\)\s*$", "", subject))]
                stated = re.search(r"Bundle cherry-pick of \d+ upstream Triton PR\(s\)[^:]*: ([^\n]*)", msg)
                listed = [int(n) for n in re.findall(r"#(\d+)", stated.group(1))] if stated else []
                cut = subject.rstrip().endswith(("…", "...")) or re.search(
                    r"(…|\.\.\.)\s*\(#\d+\)\s*$", subject
                )
                if cut:
                    title = title[:-1]
                carried = list(dict.fromkeys([*title, *listed, *carried]))
                if i == 530:
                    deferred, wont = BUNDLE_530_DEFERRED, [10054]
                note = "union of title list, stated list and trailers"
        if any(p in pre_base and p not in by_pr for p in carried):
            note = "picks an upstream commit that is older than the base: nothing in range"
            carried = [p for p in carried if p in by_pr or p not in pre_base]
        out.append(
            {
                "sha": r["sha"],
                "format": fmt,
                "carries": carried,
                "deferred": deferred,
                "wont_port": wont,
                "note": note,
            }
        )
    (HERE / "expected.jsonl").write_text("".join(json.dumps(o, sort_keys=True) + "\n" for o in out))

    named: set[int] = set()
    for r in rows:
        named.update(int(n) for n in re.findall(r"(?:#|/pull/)(\d{4,5})\b", r["message"]))
    for o in out:
        named.update(o["carries"], o["deferred"], o["wont_port"])
    fork_prs = sorted({int(m.group(1)) for r in rows if (m := re.search(r"\(#(\d+)\)\s*$", r["subject"]))})
    upstream = []
    for n in sorted(fork_prs):
        if n not in by_pr:
            upstream.append(
                {"pr": n, "sha": None, "subject": f"Upstream change {n} (#{n})", "collides": True}
            )
    known = sorted((p for p in named if p in by_pr), key=order.__getitem__)
    for p in known:
        upstream.append({"pr": p, "sha": by_pr[p][0], "subject": by_pr[p][1], "collides": p in fork_prs})
    for p in sorted(named - set(by_pr) - pre_base):
        if p in quoted_subjects:
            upstream.append(
                {"pr": p, "sha": None, "subject": f"{quoted_subjects[p]}", "collides": p in fork_prs}
            )
        elif p not in fork_prs and any(p in o["carries"] + o["deferred"] + o["wont_port"] for o in out):
            upstream.append({"pr": p, "sha": None, "subject": f"Upstream PR {p} (#{p})", "collides": False})
    (HERE / "upstream.jsonl").write_text("".join(json.dumps(u, sort_keys=True) + "\n" for u in upstream))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
