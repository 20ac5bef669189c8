"""Conflict resolutions as users see them: fbtriton's ``Conflict Resolution:`` section, PR titles and bodies.

Pure builders over plain records (anything shaped like ``workers.engine.resolve.model``'s
ResolveOutcome / FileEntry / Waiting: the Protocols below say what is read). The section is::

    Conflict Resolution:
    - File: include/triton/Analysis/Utility.h
      Action: Merged both sides' additions additively (hunk 1)
      Reason: both sides only add independent include entries ...
      Resolved by: forksync `list-union` (deterministic)

then, per file, the raw conflict (zdiff3) and the resolution diff collapsed in ``<details>``,
and the files still waiting for a human with the rail that refused them. The chain PR builder
includes resolved members with :func:`member_section`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from core.render import marker

MAX_DETAILS = 20_000  # characters of raw conflict + diff shown per file; the rest is cut with a note
MAX_SECTION = 50_000
APPROVAL_NOTE = (
    "A maintainer's approval is required before this merges: a review approving it, or `/approve` in a comment. "
    "`/resolve` tries again (`/resolve agent` with the configured agent); `/resolve show FILE` shows one file's "
    "conflict and resolution. Push your own resolution onto this branch and forksync keeps it (it never "
    "force-pushes over a human commit) and remembers it once merged."
)


class RailFailureLike(Protocol):
    @property
    def rail(self) -> str: ...
    @property
    def detail(self) -> str: ...


class EntryLike(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def strategy(self) -> str: ...
    @property
    def action(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def diff3(self) -> str: ...
    @property
    def resolution_diff(self) -> str: ...


class WaitingLike(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def rails(self) -> Sequence[RailFailureLike]: ...
    @property
    def diff3(self) -> str: ...


class OutcomeLike(Protocol):
    @property
    def commit(self) -> str: ...
    @property
    def resolved(self) -> bool: ...
    @property
    def entries(self) -> Sequence[EntryLike]: ...
    @property
    def waiting(self) -> Sequence[WaitingLike]: ...


_WHO = {
    "memory": "a maintainer's earlier resolution of the same conflict (resolution memory)",
    "fork-lacks-file": "forksync (the fork has no such file)",
    "git-merge": "git's own merge",
    "human": "a maintainer (pushed to this branch)",
}


def produced_by(strategy: str) -> str:
    """Who or what produced a resolution, for the ``Resolved by:`` line."""
    if strategy.startswith("agent:"):
        return f"the agent `{strategy.split(':', 1)[1]}` (checked by the rails)"
    if strategy in _WHO:
        return _WHO[strategy]
    parts = strategy.split("+")
    return "forksync " + ", ".join(f"`{p}`" for p in parts) + " (deterministic)"


def _quiet(text: str) -> str:
    """No pings, no links to the fork's own issues from text that came from elsewhere."""
    text = re.sub(r"@(?=[A-Za-z0-9-])", "@\u200b", text)
    return re.sub(r"(?<![\w/])#(?=\d)", "#\u200b", text)


def fenced(text: str, info: str = "diff") -> str:
    """``text`` in a code fence longer than any backtick run inside it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{fence}{info}\n{body}{fence}"


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit].rsplit("\n", 1)[0] + f"\n... ({len(text) - limit} more characters)\n"


def entry_lines(entry: EntryLike) -> list[str]:
    """One fbtriton-style entry: File, Action, Reason, and who resolved it."""
    return [
        f"- File: {entry.path}",
        f"  Action: {_quiet(entry.action)}",
        f"  Reason: {_quiet(entry.reason)}",
        f"  Resolved by: {produced_by(entry.strategy)}",
    ]


def details(entry: EntryLike) -> str:
    """The raw conflict and the resolution diff of one file, collapsed."""
    if not entry.diff3 and not entry.resolution_diff:
        return ""
    half = MAX_DETAILS // 2
    parts = [f"<details><summary>Raw conflict and resolution diff: <code>{entry.path}</code></summary>", ""]
    if entry.diff3:
        parts += ["Raw conflict (git, zdiff3):", "", fenced(_cut(entry.diff3, half)), ""]
    if entry.resolution_diff:
        parts += ["Resolution diff:", "", fenced(_cut(entry.resolution_diff, half)), ""]
    parts.append("</details>")
    return "\n".join(parts)


def waiting_lines(waiting: Sequence[WaitingLike]) -> list[str]:
    lines = ["Waiting for a human:"]
    for w in waiting:
        lines.append(f"- File: {w.path}")
        lines.append(f"  Why: {_quiet(w.reason)}")
        for failure in w.rails:
            lines.append(f"  Rail `{failure.rail}`: {_quiet(failure.detail)}")
    return lines


def end_marker(commit: str) -> str:
    return f"<!-- /forksync:resolution:{commit[:12]} -->"


def conflict_resolution_section(outcome: OutcomeLike, *, with_details: bool = True) -> str:
    """The ``Conflict Resolution:`` section of a pick (between markers, so it is edited in place)."""
    lines = [marker("resolution", outcome.commit[:12])]
    if outcome.entries:
        lines.append("Conflict Resolution:")
        for entry in outcome.entries:
            lines += entry_lines(entry)
        lines.append("")
    if outcome.waiting:
        lines += waiting_lines(outcome.waiting)
        lines.append("")
    text = "\n".join(lines)
    if with_details:
        blocks = [d for d in (details(e) for e in outcome.entries) if d]
        blocks += [details_waiting(w) for w in outcome.waiting if w.diff3]
        for block in blocks:
            if len(text) + len(block) > MAX_SECTION:
                text += "\n(more conflicts and diffs left out: `/resolve show FILE` shows one)\n"
                break
            text += "\n" + block + "\n"
    return text.rstrip("\n") + "\n" + end_marker(outcome.commit) + "\n"


def replace_section(body: str, section: str, commit: str) -> str:
    """``body`` with the pick's section replaced in place (or added at the end when it has none)."""
    start, end = marker("resolution", commit[:12]), end_marker(commit)
    i = body.find(start)
    j = body.find(end, i) if i >= 0 else -1
    if i >= 0 and j >= 0:
        return body[:i] + section.rstrip("\n") + body[j + len(end) :]
    return body.rstrip("\n") + ("\n\n" if body.strip() else "") + section


def retitle_resolved(title: str) -> str:
    """``[Cherry-pick][CONFLICTS] …`` becomes ``[Cherry-pick][RESOLVED] …`` (other titles unchanged)."""
    return title.replace("[Cherry-pick][CONFLICTS]", "[Cherry-pick][RESOLVED]", 1)


def details_waiting(w: WaitingLike) -> str:
    return "\n".join(
        [
            f"<details><summary>Raw conflict: <code>{w.path}</code> (waiting)</summary>",
            "",
            fenced(_cut(w.diff3, MAX_DETAILS)),
            "",
            "</details>",
        ]
    )


def resolved_title(subject: str, prefix: str = "") -> str:
    """``[Cherry-pick][RESOLVED] '<upstream subject>'`` (with the fork's own prefix first, if any)."""
    lead = f"{prefix.strip()} " if prefix.strip() else ""
    return f"{lead}[Cherry-pick][RESOLVED] '{subject}'"


def conflicts_title(subject: str, prefix: str = "") -> str:
    """The title while files still wait for a human (retitled RESOLVED once they are resolved)."""
    lead = f"{prefix.strip()} " if prefix.strip() else ""
    return f"{lead}[Cherry-pick][CONFLICTS] '{subject}'"


def pick_body(
    outcome: OutcomeLike,
    *,
    upstream_link: str | None,
    message: str,
    trailer: str,
) -> str:
    """A resolved single pick's PR body: the upstream link and message, the section, approval note, trailer."""
    quoted = "\n".join(f"> {line}" if line else ">" for line in message.rstrip("\n").splitlines())
    parts = []
    if upstream_link:
        parts.append(f"This is a cherry-pick of an upstream commit: {upstream_link}")
    parts += [
        "",
        "Upstream commit message:",
        fenced(_quiet(quoted), ""),
        "",
        conflict_resolution_section(outcome),
    ]
    parts += [APPROVAL_NOTE, "", trailer]
    return "\n".join(parts).strip("\n") + "\n"


def member_section(outcome: OutcomeLike, subject: str) -> str:
    """A resolved member of a chain PR: its subject, then its section (details included)."""
    return f"#### {_quiet(subject)} (`{outcome.commit[:12]}`)\n\n" + conflict_resolution_section(outcome)


def show_file(outcome: OutcomeLike, path: str) -> str | None:
    """``/resolve show FILE``: one file's entry or waiting note with its conflict and diff; None if not there."""
    for entry in outcome.entries:
        if entry.path == path:
            return (
                "\n".join(entry_lines(entry))
                + "\n\n"
                + details(entry).replace("<details>", "<details open>")
                + "\n"
            )
    for w in outcome.waiting:
        if w.path == path:
            text = "\n".join(waiting_lines([w]))
            return text + ("\n\n" + fenced(_cut(w.diff3, MAX_DETAILS)) if w.diff3 else "") + "\n"
    return None
