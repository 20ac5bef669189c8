"""Replay real upstream history with picks written in all of fbtriton's styles; check the ledger.

    python -m benchmarks.bench_replay_fbtriton --mirror /path/to/facebookexperimental/triton.git
        [--pre-fork-tip REV] [--commits 1000] [--seed 11] [--json]

``--mirror`` is a bare clone of facebookexperimental/triton (the ``fetch`` tool brings one); its
history below the fork's ``[TLX-rebase][1/2]`` base commit is upstream Triton's own. The replay
cuts a fork ``--commits`` first-parent commits before the pre-fork tip (default: the parent of
3931ef6f7, upstream's "Remove setuptools requirement from setup.py (#7983)") and writes fork
commits (git fast-import, objects shared with the mirror through alternates, nothing copied)
that pick those upstream commits in the styles of ``tests/data/fbtriton-picks``:

* ``[triton][beta] [Cherry-pick] '<subject>' (#M)`` with the fenced "Upstream commit message"
  (upstream's real body, links to other PRs included) and ``Reactor Cherry-pick Revision``;
  the same without ``(#M)`` and with ``Reactor Backport Revision``; ``[Cherry-pick][RESOLVED]``
  with a Conflict Resolution section; ``[triton][beta] Backport '<subject>' (#M)``;
* legacy ``[Cherry-pick] <subject> (#M)`` / ``[Cherry-pick][CONFLICTS] ...`` with ``Original
  Commit:``; ``[pick] <subject> (#M)``; an upstream subject + ``(#M)`` with ``(cherry picked from
  commit <sha>)``; ``[H100 core][triton][beta] Backport <text> (#N) (#M)``;
* bundles: ``Cherry-pick K upstream(#a #b ...) (#M)`` with link lists and one trailer each,
  the same with only the last member's trailer and ``[i] <sha> PR #N`` items, titles GitHub cut
  with ``…`` (continued in the body), ``[BUNDLE] Backport K upstream PRs with ... (#M)`` with
  Picked / Deferred (backlog) / Won't-port sections, ``Reactor Defer|WontPort Revision``
  trailers and the two-pin line;
* reverts: ``Back out "<pick title>"`` then ``Revert D<n>: Back out ...`` (a reapply), ``Revert
  D<n>: <pick title>`` of a pick by its Differential Revision, and ``git revert <upstream sha>``
  of one member of a bundle;
* fork-only commits whose ``(#M)`` and prose name upstream PRs they do not carry.

Fork PR numbers ``M`` are upstream PR numbers of commits the fork does *not* carry. Fork
commits change no files (recognition is by message; patch-id is not exercised here). The
generator keeps what it wrote: carried set, decisions, frontier, contiguous pin, backlog, and
the pins the last bundle states; the ledger must match them exactly. Reported: picks
recognised / written, false picks, and whether frontier, pins and backlog are exact.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# FORKSYNC_ROOT=/path/to/checkout measures another checkout's engine (how "before" was taken).
sys.path.insert(0, os.environ.get("FORKSYNC_ROOT") or str(Path(__file__).resolve().parent.parent))

from core.config import load_repo_config
from workers.engine.ledger.build import build_ledger
from workers.engine.pair import open_pair

PRE_FORK_TIP = "3931ef6f7ea3c26aacf2c720d3906e06beba386a^"
UPSTREAM_URL = "https://github.com/triton-lang/triton"
PULL = UPSTREAM_URL + "/pull/"
KEEP = "***Do not remove the following line from this commit***"


@dataclass
class Up:
    sha: str
    subject: str
    body: str
    pr: int | None
    time: int


@dataclass
class Plan:
    """What the generator wrote, to compare the ledger with."""

    messages: list[str] = field(default_factory=list)
    carried: set[str] = field(default_factory=set)
    deferred: set[str] = field(default_factory=set)
    wont_port: set[str] = field(default_factory=set)
    picks_written: int = 0  # (fork commit, upstream commit) pairs a pick names
    styles: dict[str, int] = field(default_factory=dict)


def git(repo: Path, *args: str, data: bytes | None = None) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], input=data, capture_output=True, check=True)
    return out.stdout.decode("utf-8", "replace")


def read_upstream(mirror: Path, tip: str, count: int) -> tuple[str, list[Up]]:
    raw = git(mirror, "log", "--first-parent", f"-{count + 1}", "--format=%x1e%H%x1f%ct%x1f%s%x1f%b", tip)
    commits = []
    for record in raw.split("\x1e")[1:]:
        sha, ct, subject, body = record.split("\x1f", 3)
        m = re.search(r"\(#(\d+)\)\s*$", subject)
        commits.append(Up(sha, subject, body.strip(), int(m.group(1)) if m else None, int(ct)))
    commits.reverse()
    return commits[0].sha, commits[1:]


def quoted(u: Up) -> str:
    lines = [u.subject, "", *u.body.splitlines()[:12]]
    return "Upstream commit message:\n```\n" + "\n".join(f"> {x}" if x else "" for x in lines) + "\n```"


def make_plan(ups: list[Up], seed: int) -> Plan:
    rng = random.Random(seed)
    plan = Plan()
    n = len(ups)
    frontier_at = int(n * 0.9)  # the last 10% stay pending
    holes = {i for i in range(frontier_at) if rng.random() < 0.03}
    deferred = {i for i in range(frontier_at) if i not in holes and rng.random() < 0.02}
    wont = {i for i in range(frontier_at) if i not in holes | deferred and rng.random() < 0.01}
    not_carried = [u.pr for i, u in enumerate(ups) if u.pr and (i in holes or i >= frontier_at)]
    fork_numbers = iter(rng.sample(not_carried, len(not_carried)) * 50)
    diff_numbers = iter(range(90_000_000, 99_999_999))
    for decided in (holes, deferred, wont):
        decided.discard(frontier_at - 1)  # the frontier is carried
    todo = [i for i in range(frontier_at) if i not in holes | deferred | wont]

    def emit(style: str, message: str) -> None:
        plan.messages.append(message)
        plan.styles[style] = plan.styles.get(style, 0) + 1

    def fork_pr() -> int:
        return next(fork_numbers)

    def single(u: Up, style: str) -> str:
        m, subj = fork_pr(), u.subject
        core = subj[: -len(f" (#{u.pr})")] if u.pr else subj
        link = f"This is a cherry-pick of an upstream PR: {PULL}{u.pr}\n\n" if u.pr else ""
        if style == "beta-quoted":
            return f"[triton][beta] [Cherry-pick] '{subj}' (#{m})\n\nSummary:\n{link}{quoted(u)}\n\n{KEEP}\nReactor Cherry-pick Revision: {u.sha}\n"
        if style == "beta-quoted-no-m":
            return f"[triton][beta] [Cherry-pick] '{subj}'\n\nSummary:\n{link}{quoted(u)}\n\n{KEEP}\nReactor Backport Revision: {u.sha}\n"
        if style == "beta-resolved":
            return (
                f"[triton][beta] [Cherry-pick][RESOLVED] '{subj}' (#{m})\n\nSummary:\n{link}Conflict Resolution:\n"
                f"- File: python/triton/knobs.py\n  Action: keep both\n  Reason: fork-only knobs next to upstream's\n\n"
                f"{quoted(u)}\n\n{KEEP}\nReactor Cherry-pick Revision: {u.sha}\n"
            )
        if style == "beta-backport":
            return f"[triton][beta] Backport '{subj}' (#{m})\n\nSummary:\nThis is a backport of an upstream PR: {PULL}{u.pr}\n\n{quoted(u)}\n\n{KEEP}\nReactor Backport Revision: {u.sha}\n"
        if style == "legacy-pick":
            return f"[Cherry-pick] {subj} (#{m})\n\nSummary:\nCherry-picked from upstream OAI repository.\n\nOriginal Commit: {u.sha}\nOriginal Author: Upstream\n\nOriginal commit message:\n```\n{subj}\n\n{u.body[:400]}\n```\n"
        if style == "legacy-conflicts":
            return f"[Cherry-pick][CONFLICTS] {subj} (#{m})\n\nSummary:\nThis cherry-pick contains merge conflicts that require manual resolution.\n\nOriginal Commit: {u.sha}\n"
        if style == "pick-tag" and u.pr:
            return f"[pick] {subj} (#{m})\n\nSummary:\nPull Request resolved: https://github.com/facebookexperimental/triton/pull/{m}\n"
        if style == "cherry-picked-from":
            return f"{subj} (#{m})\n\nThis is a cherry-pick of {u.pr} from the triton oai repo.\n\n(cherry picked from commit {u.sha})\n"
        if style == "h100-backport" and u.pr:
            return f"[H100 core][triton][beta][proton] Backport {core} (#{u.pr}) (#{m})\n\nSummary:\nBackport upstream PR #{u.pr}.\n\nUpstream:\n{PULL}{u.pr}\n"
        return single(u, "beta-quoted")

    singles = (
        "beta-quoted",
        "beta-quoted-no-m",
        "beta-resolved",
        "beta-backport",
        "legacy-pick",
        "legacy-conflicts",
        "pick-tag",
        "cherry-picked-from",
        "h100-backport",
    )
    position = 0
    pending_decided: list[int] = sorted(deferred | wont)
    reverted_member: str | None = None
    while position < len(todo):
        kind = rng.random()
        if kind < 0.12 and position + 2 < len(todo):  # a bundle
            size = min(rng.randint(2, 24), len(todo) - position)
            members = [ups[i] for i in todo[position : position + size] if ups[i].pr]
            if len(members) < 2:
                members = [ups[todo[position]]]
                emit("beta-quoted", single(members[0], "beta-quoted"))
                position += 1
                plan.carried.update(x.sha for x in members)
                plan.picks_written += 1
                continue
            position += size
            decided_here = [i for i in pending_decided if ups[i].pr and ups.index(members[-1]) > i]
            pending_decided = [i for i in pending_decided if i not in decided_here]
            style = rng.choice(("bundle-list", "bundle-last-trailer", "bundle-cut", "bundle-other"))
            emit(style, bundle(style, members, [ups[i] for i in decided_here], deferred, ups, fork_pr()))
            for i in decided_here:
                (plan.deferred if i in deferred else plan.wont_port).add(ups[i].sha)
            plan.carried.update(x.sha for x in members)
            plan.picks_written += len(members)
            if reverted_member is None and style == "bundle-list" and len(members) > 3:
                victim = members[1]
                emit(
                    "revert-in-bundle",
                    f'Revert "{victim.subject}" (#{fork_pr()})\n\nThis reverts commit {victim.sha}.\n',
                )
                plan.carried.discard(victim.sha)
                reverted_member = victim.sha
            continue
        u = ups[todo[position]]
        position += 1
        style = singles[rng.randrange(len(singles))]
        message = single(u, style)
        if kind > 0.9 and style.startswith("beta-quoted"):  # Phabricator back-outs and reverts
            d_pick, d_undo = next(diff_numbers), next(diff_numbers)
            emit(style, message + f"\nDifferential Revision: D{d_pick}\n")
            title = message.split("\n", 1)[0]
            plan.picks_written += 1
            if kind > 0.97:
                emit("revert-d", f"Revert D{d_pick}: {title}\n\nDifferential Revision:\nD{d_pick}\n")
                continue  # reverted: a hole
            emit(
                "back-out",
                f'Back out "{title}"\n\nSummary: trunk breakage\n\nDifferential Revision: D{d_undo}\n',
            )
            if rng.random() < 0.5:  # landed again: a revert of the back-out
                emit(
                    "revert-d-of-back-out",
                    f'Revert D{d_undo}: Back out "{title}"\n\nDifferential Revision:\nD{d_undo}\n',
                )
                plan.carried.add(u.sha)
            continue
        emit(style, message)
        plan.carried.add(u.sha)
        plan.picks_written += 1
        if rng.random() < 0.08:  # fork-only work that names upstream things it does not carry
            other = next(fork_numbers)
            emit(
                "negative",
                f"[triton][tlx] Fix the TLX pipeliner after upstream refactor (#{other}) (#{fork_pr()})\n\n"
                f"This is a regression from {PULL}{other}; upstream PR #{other} changed the API.\n",
            )
    return plan


def bundle(
    style: str, members: list[Up], decided: list[Up], deferred_idx: set[int], ups: list[Up], m: int
) -> str:
    numbers = " ".join(f"#{u.pr}" for u in members)
    k = len(members)
    links = "\n".join(f"- {PULL}{u.pr}" for u in members)
    trailers = "\n".join(f"Reactor Backport Revision: {u.sha}" for u in members)
    deferred_items = [u for u in decided if ups.index(u) in deferred_idx]
    wont_items = [u for u in decided if ups.index(u) not in deferred_idx]
    decision_trailers = "".join(f"\nReactor Defer Revision: {u.sha}" for u in deferred_items)
    decision_trailers += "".join(f"\nReactor WontPort Revision: {u.sha}" for u in wont_items)
    if style == "bundle-list":
        return (
            f"[triton][beta] [Cherry-pick][BUNDLE] Cherry-pick {k} upstream({numbers}) (#{m})\n\nSummary:\n"
            f"Pull Request resolved: https://github.com/facebookexperimental/triton/pull/{m}\n\n"
            f"Reactor bundle: {k} upstream cherry-picks applied together and folded into one diff.\n\n{links}\n\n"
            f"***Do not remove the following lines from this commit***\n{trailers}{decision_trailers}\n"
        )
    if style == "bundle-last-trailer":
        items = "\n".join(
            f"- [{i}] {u.sha[:8]} PR #{u.pr} '{u.subject[:60]}' — CLEAN" for i, u in enumerate(members, 1)
        )
        return (
            f"[triton][beta] [Cherry-pick][BUNDLE] Cherry-pick {k} upstream commits ({', '.join(f'#{u.pr}' for u in members)}) (#{m})\n\n"
            f"Summary:\nFolded bundle of {k} upstream OAI Triton commits.\n\nReactor-Bundle:\n{items}\n\n{KEEP}\n"
            f"Reactor Cherry-pick Revision: {members[-1].sha}{decision_trailers}\n"
        )
    if style == "bundle-cut":
        title = f"[triton][beta] [Cherry-pick][BUNDLE] Cherry-pick {k} upstream({numbers})"
        cut_at = min(len(title) - 1, 200)
        shown, rest = title[:cut_at], title[cut_at:]
        return (
            f"{shown}… (#{m})\n\nSummary:\nPull Request resolved: https://github.com/facebookexperimental/triton/pull/{m}\n\n"
            f"…{rest}\n\nBundle cherry-pick of {k} upstream Triton PR(s): {numbers}.\n\n"
            + "\n".join(f"{PULL}{u.pr}" for u in members)
            + f"\n\n{KEEP}\n{trailers}{decision_trailers}\n"
        )
    picked = ", ".join(f"#{u.pr}" for u in members)
    deferred_list = "\n".join(f"- #{u.pr}: T{u.pr} (needs a dedicated backport)" for u in deferred_items)
    wont_list = ", ".join(f"#{u.pr} CI only" for u in wont_items)
    return (
        f"[triton][beta][BUNDLE] Backport {k} upstream PRs with #{members[-1].pr} repairs (#{m})\n\nSummary:\n"
        f"Bundles the next Reactor frontier batch into one beta backport diff.\n\nPicked ({k}): {picked}.\n\n"
        f"Deferred ({len(deferred_items)}, backlog):\n{deferred_list}\n\n"
        f"Won't-port ({len(wont_items)}){': ' + wont_list if wont_items else '.'}\n\n"
        f"Two-pin invariant: {k} backports and {len(deferred_items)} deferred PRs are recorded.\n"
    )


def expected_state(ups: list[Up], plan: Plan) -> dict[str, Any]:
    frontier = next((u.sha for u in reversed(ups) if u.sha in plan.carried), None)
    fpos = next(i for i, u in enumerate(ups) if u.sha == frontier) if frontier else -1
    backlog = [u.sha for u in ups[:fpos] if u.sha not in plan.carried and u.sha not in plan.wont_port]
    contiguous = None
    for u in ups:
        if u.sha in plan.carried or u.sha in plan.wont_port:
            contiguous = u.sha
        else:
            break
    return {"frontier": frontier, "backlog": backlog, "contiguous_pin": contiguous}


def fast_import(repo: Path, base: str, messages: list[str], start: int) -> str:
    stream = []
    for i, message in enumerate(messages):
        data = message.encode()
        t = start + i * 60
        stream.append(b"commit refs/heads/main\nmark :%d\n" % (i + 1))
        stream.append(b"author Fork Engineer <engineer@fb.example> %d +0000\n" % t)
        stream.append(b"committer GitHub <noreply@github.com> %d +0000\n" % t)
        stream.append(b"data %d\n%s\n" % (len(data), data))
        stream.append(b"from %s\n\n" % (base.encode() if i == 0 else b":%d" % i))
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"], input=b"".join(stream), check=True)
    return git(repo, "rev-parse", "refs/heads/main").strip()


def run(mirror: Path, tip_rev: str, count: int, seed: int, keep: Path | None = None) -> dict[str, Any]:
    tip = git(mirror, "rev-parse", tip_rev).strip()
    base, ups = read_upstream(mirror, tip, count)
    plan = make_plan(ups, seed)
    # The last bundle-other style message states the two pins the fork keeps.
    state = expected_state(ups, plan)
    pin_line = (
        f"\nTwo-pin state: `UPSTREAM_HASH` advanced to `{state['contiguous_pin']}`; "
        f"`UPSTREAM_FRONTIER_HASH` advanced to `{state['frontier']}`.\n"
    )
    plan.messages.append(
        "[triton][beta] Record the Reactor pins (#1)\n\nSummary:\nNo code change." + pin_line
    )
    with tempfile.TemporaryDirectory(prefix="forksync-replay-") as tmp:
        root = Path(tmp) if keep is None else keep
        root.mkdir(parents=True, exist_ok=True)
        for name in ("upstream.git", "fork.git"):
            subprocess.run(["git", "init", "-q", "--bare", str(root / name)], check=True)
            (root / name / "objects" / "info" / "alternates").write_text(str(mirror / "objects") + "\n")
        git(root / "upstream.git", "update-ref", "refs/heads/main", tip)
        start = ups[-1].time + 3600
        fork_tip = fast_import(root / "fork.git", base, plan.messages, start)
        config = load_repo_config(f"upstream:\n  url: {UPSTREAM_URL}\n")
        began = time.perf_counter()
        pair = open_pair(str(root / "upstream.git"), str(root / "fork.git"))
        ledger = build_ledger(pair, config.ledger, upstream_url=config.upstream.url)
        seconds = time.perf_counter() - began
        assert pair.base == base and fork_tip
    found = {e.sha for e in ledger.entries if e.carriers}
    deferred = {e.sha for e in ledger.entries if e.disposition.value == "deferred"}
    wont = {e.sha for e in ledger.entries if e.disposition.value == "wont_port"}
    recognised = len(found & plan.carried)
    m = ledger.metrics
    stated = getattr(ledger, "fork_pins", None)  # an engine from before fork pins reads none
    pins = (stated.frontier_hash, stated.upstream_hash) if stated is not None else (None, None)
    return {
        "upstream_commits": len(ups),
        "fork_commits": len(plan.messages),
        "styles": dict(sorted(plan.styles.items())),
        "carried_expected": len(plan.carried),
        "carried_recognised": recognised,
        "recognised_share": recognised / len(plan.carried) if plan.carried else 1.0,
        "false_picks": len(found - plan.carried),
        "missed": sorted(u.subject[:70] for u in ups if u.sha in plan.carried - found)[:10],
        "invented": sorted(u.subject[:70] for u in ups if u.sha in found - plan.carried)[:10],
        "deferred_exact": deferred == plan.deferred,
        "wont_port_exact": wont == plan.wont_port,
        "frontier_exact": m.frontier == state["frontier"],
        "contiguous_pin_exact": m.contiguous_pin == state["contiguous_pin"],
        "backlog_exact": list(m.backlog_commits) == state["backlog"],
        "backlog": len(m.backlog_commits),
        "fork_pins_exact": pins == (state["frontier"], state["contiguous_pin"]),
        "fork_pins_disagree": stated.disagreements(m.frontier, m.contiguous_pin)
        if stated is not None
        else None,
        "ledger_seconds": round(seconds, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--mirror", type=Path, required=True, help="bare clone of facebookexperimental/triton"
    )
    parser.add_argument("--pre-fork-tip", default=PRE_FORK_TIP)
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="write upstream.git and fork.git here and keep them (bench_status --upstream/--fork)",
    )
    args = parser.parse_args(argv)
    result = run(args.mirror, args.pre_fork_tip, args.commits, args.seed, args.keep)
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        for key, value in result.items():
            print(f"{key:>22}: {value}")
    ok = (
        result["recognised_share"] >= 0.995
        and result["false_picks"] == 0
        and result["frontier_exact"]
        and result["backlog_exact"]
        and result["fork_pins_exact"]
        and result["deferred_exact"]
        and result["wont_port_exact"]
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
