"""The readable ``forksync plan``: summary first (sizes, what blocks, what to do next), details after.

Pure: a plan, the subjects of its commits and the healing notes in, text out. No line is longer
than :data:`WIDTH`; long file lists are summarised ("19 files in lib/Dialect/…, test/…").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Protocol

WIDTH = 160
_PATH_LIST = re.compile(r"(?:[\w.+-]+/)*[\w.+-]+\.?[\w+-]*(?:, (?:[\w.+-]+/)*[\w.+-]+\.?[\w+-]*){3,}")


class _Reason(Protocol):
    @property
    def commit(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def detail(self) -> str: ...


class _Chain(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def commits(self) -> tuple[str, ...]: ...
    @property
    def reasons(self) -> tuple[_Reason, ...]: ...


class _Bundle(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def commits(self) -> tuple[str, ...]: ...
    @property
    def lines(self) -> int: ...
    @property
    def stacked_on(self) -> str | None: ...


class _Urgent(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def commit(self) -> str: ...
    @property
    def conflicts(self) -> tuple[str, ...]: ...


class _Plan(Protocol):
    @property
    def bundles(self) -> tuple[_Bundle, ...]: ...
    @property
    def chains(self) -> tuple[_Chain, ...]: ...
    @property
    def deferred(self) -> tuple[str, ...]: ...
    @property
    def urgent(self) -> tuple[_Urgent, ...]: ...


def summarise_paths(paths: Sequence[str], shown: int = 3) -> str:
    """``a, b`` when short; else "19 files in lib/Dialect/…, test/…" (the busiest folders first)."""
    if len(paths) <= shown:
        return ", ".join(paths)
    folders = Counter(
        "/".join(p.split("/")[:2]) + "/…"
        if p.count("/") >= 2
        else (p.split("/")[0] + "/…" if "/" in p else p)
        for p in paths
    )
    top = [f for f, _ in sorted(folders.items(), key=lambda kv: (-kv[1], kv[0]))[:2]]
    more = ", …" if len(folders) > 2 else ""
    return f"{len(paths)} files in {', '.join(top)}{more}"


def fit(text: str, width: int = WIDTH) -> str:
    """One line of at most ``width`` characters: path lists summarised first, then cut with …."""
    text = _PATH_LIST.sub(lambda m: summarise_paths(m.group(0).split(", ")), text)
    return text if len(text) <= width else text[: width - 1] + "…"


def _conflict_files(detail: str) -> list[str]:
    tail = detail.split(" conflicts in ", 1)
    return tail[1].split(", ") if len(tail) == 2 else []


def plan_text(plan: _Plan, subjects: Mapping[str, str], notes: Sequence[str] = ()) -> str:
    """The whole readable plan (module docstring)."""
    bundled = sum(len(b.commits) for b in plan.bundles)
    chained = sum(len(c.commits) for c in plan.chains)
    placed = bundled + chained + len(plan.urgent)
    out: list[str] = []
    if not placed and not plan.deferred:
        return "nothing to place: every upstream commit is picked, deferred or won't port"
    share = f" ({100 * bundled // placed}% bundled)" if placed else ""
    extra = (f", {len(plan.urgent)} urgent" if plan.urgent else "") + (
        f", {len(plan.deferred)} deferred" if plan.deferred else ""
    )
    out.append(
        fit(
            f"Plan: {placed} commit(s) to place{share}: {len(plan.bundles)} bundle(s) of {bundled}, "
            f"{len(plan.chains)} risky chain(s) of {chained}{extra}"
        )
    )
    if plan.bundles:
        out.append(fit("  bundles: " + ", ".join(f"{b.id} {len(b.commits)}" for b in plan.bundles)))
        stacked = [b for b in plan.bundles if b.stacked_on is not None]
        if stacked:
            out.append(
                fit(
                    f"  stacked (each lands after the bundle it needs): {len(stacked)}: "
                    + ", ".join(f"{b.id} on {b.stacked_on}" for b in stacked)
                )
            )
    blocking = []
    for chain in plan.chains:
        seeds = [r for r in chain.reasons if r.kind == "conflict"]
        out.append(
            fit(
                f"  {chain.id}: {len(chain.commits)} commit(s), {len(seeds)} conflicting pick(s)"
                + (f", first at {seeds[0].commit[:12]}" if seeds else "")
            )
        )
        blocking += [(chain.id, r) for r in seeds]
    for hurried in plan.urgent:
        state = f"conflicts in {summarise_paths(hurried.conflicts)}" if hurried.conflicts else "picks cleanly"
        out.append(fit(f"  {hurried.id}: urgent, alone on the fork tip, {state}"))
    if blocking:
        out.append("Conflicts that block (each waits for a resolution when its chain is built through):")
        for chain_id, reason in blocking[:10]:
            files = _conflict_files(reason.detail)
            out.append(
                fit(
                    f"  {reason.commit[:12]} ({chain_id}) in {summarise_paths(files)}  {subjects.get(reason.commit, '')[:60]}"
                )
            )
        if len(blocking) > 10:
            out.append(f"  … and {len(blocking) - 10} more (details below)")
    for note in notes:
        out.append(fit(f"Healed: {note}"))
    out.append(
        "Next: `forksync bundle` builds the bundle branches (landable in any order, a stacked one after its base) and builds chains "
        "through their conflicts;"
    )
    out.append(
        "      `forksync chain REF remove` or `forksync chain ID dissolve` when a chain holds what does not belong."
    )
    out.append("")
    out.append("Details")
    for hurried in plan.urgent:
        out.append(fit(f"{hurried.id}  urgent"))
        out.append(fit(f"  {hurried.commit[:12]}  {subjects.get(hurried.commit, '')}"))
    for bundle in plan.bundles:
        on = f", stacked on {bundle.stacked_on}" if bundle.stacked_on is not None else ""
        out.append(f"{bundle.id}  {len(bundle.commits)} commit(s), {bundle.lines} changed lines{on}")
        out.extend(fit(f"  {sha[:12]}  {subjects.get(sha, '')}") for sha in bundle.commits)
    for chain in plan.chains:
        out.append(f"{chain.id}  {len(chain.commits)} commit(s), risky chain")
        for reason in chain.reasons:
            out.append(fit(f"  {reason.commit[:12]}  {subjects.get(reason.commit, '')}"))
            out.append(fit(f"      {reason.kind}: {reason.detail}"))
    if plan.deferred:
        out.append(f"deferred (backlog, in no bundle or chain): {len(plan.deferred)}")
        out.extend(fit(f"  {sha[:12]}  {subjects.get(sha, '')}") for sha in plan.deferred)
    out.append(
        f"{placed} commit(s): {len(plan.bundles)} bundle(s), {len(plan.chains)} chain(s)"
        + (f", {len(plan.urgent)} urgent" if plan.urgent else "")
    )
    return "\n".join(out)
