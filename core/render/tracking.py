"""Tracking issues for trunk failures: title, body, and the comments on recovery and recurrence.

A tracking issue is one failure signature. Its body is rebuilt from :class:`IssueFacts` each
time the signature is seen (edited in place, never a new comment), and carries two hidden
markers: ``marker("signature", key)`` to find it, and the facts themselves as JSON so the next
run can carry them on (occurrences, first bad commit, culprit) from GitHub alone.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from core.render import marker

LABEL = "forksync:tracking"
LABEL_REGRESSION = "regression"
LABEL_INFRA = "infrastructure"

_DATA = re.compile(r"<!-- forksync:tracking-data (?P<json>\{.*?\}) -->", re.DOTALL)
_EXCERPT_LINES = 40


@dataclass(frozen=True)
class SuspectFacts:
    sha: str
    subject: str
    score: int
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class IssueFacts:
    """Everything a tracking issue says, as plain data (also stored, hidden, in its body)."""

    key: str
    kind: str  # python | lit | crash | assertion | regression | infra | ...
    title: str  # the signature's human title
    source: str  # the benchmark or suite it comes from
    first_bad: str  # the trunk commit it was first seen at (or bisected to)
    first_seen_at: str
    last_seen: str
    last_seen_at: str
    occurrences: int = 1
    clean_runs: int = 0  # consecutive runs of ``source`` without it, since it was last seen
    tests: tuple[str, ...] = ()
    tests_total: int = 0  # distinct failing tests seen, when more than ``tests`` keeps
    detail: str = ""  # the metric change, or the failure reason
    excerpt: str = ""
    culprit: str | None = None
    culprit_subject: str = ""
    suspects: tuple[SuspectFacts, ...] = ()
    bisect_note: str = ""  # why there is no culprit
    owners: tuple[str, ...] = ()
    infra_reason: str = ""
    recover_after: int = 3
    reopened: int = 0
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def infra(self) -> bool:
        return self.kind == "infra"


def issue_title(facts: IssueFacts) -> str:
    prefix = "[infra]" if facts.infra else "[trunk]"
    text = f"{prefix} {facts.source}: {facts.title}"
    return text if len(text) <= 200 else text[:199] + "…"


def issue_labels(facts: IssueFacts) -> tuple[str, ...]:
    return (LABEL, LABEL_INFRA) if facts.infra else (LABEL, LABEL_REGRESSION)


def _sha(sha: str | None) -> str:
    return sha[:12] if sha else "unknown"


def _mentions(owners: tuple[str, ...]) -> str:
    return ", ".join(f"@{o.lstrip('@')}" for o in owners)


def proposed_fix(facts: IssueFacts) -> str:
    """What to do about it, from what is known: infra remedy, culprit, or suspects and owners."""
    owners = _mentions(facts.owners)
    if facts.infra:
        return (
            f"Not a code regression: the runner failed ({facts.infra_reason or 'infrastructure'}). "
            "Check the machine (disk, network, GPU); no commit is blamed and bisection skips these runs."
        )
    if facts.culprit:
        lines = [
            f"Bisection found the culprit: {_sha(facts.culprit)} {facts.culprit_subject}".rstrip(),
            "",
            f"- revert it: `git revert {_sha(facts.culprit)}` on the fork trunk, or",
            "- eject it into a risky chain (`/chain` on its bundle PR) so the rest can land without it",
        ]
        if owners:
            lines.append(f"- owners to decide: {owners}")
        return "\n".join(lines)
    lines = [f"No culprit: {facts.bisect_note or 'bisection has not run'}."]
    if facts.suspects:
        lines.append("Suspects, ranked by how much their files overlap the failing test:")
    if owners:
        lines.append(f"Owners to look: {owners}")
    elif not facts.suspects:
        lines.append(
            "No owners are configured for this benchmark or suite: add `owners:` in .github/forksync.yml."
        )
    return "\n".join(lines)


def issue_body(facts: IssueFacts) -> str:
    """The whole body, rebuilt from facts; edited in place on every sighting."""
    out = [
        marker("signature", facts.key),
        f"**{'Infrastructure failure' if facts.infra else 'Trunk failure'}** in `{facts.source}`: {facts.title}",
        "",
        "| | |",
        "| --- | --- |",
        f"| signature | `{facts.key}` ({facts.kind}) |",
        f"| since trunk commit | {_sha(facts.first_bad)} (first seen {facts.first_seen_at}) |",
        f"| last seen | {_sha(facts.last_seen)} at {facts.last_seen_at} |",
        f"| occurrences | {facts.occurrences} |",
    ]
    if facts.clean_runs:
        out.append(
            f"| recovering | not seen in {facts.clean_runs} of {facts.recover_after} runs needed to close |"
        )
    if facts.reopened:
        out.append(f"| reopened | {facts.reopened} time{'s' if facts.reopened > 1 else ''} |")
    if facts.owners:
        out.append(f"| owners | {_mentions(facts.owners)} |")
    if facts.detail:
        out += ["", f"**What broke:** {facts.detail}"]
    if facts.tests:
        shown = facts.tests[:20]
        total = max(len(facts.tests), facts.tests_total)
        out += ["", f"**Tests** ({total}):"] + [f"- `{t}`" for t in shown]
        if total > len(shown):
            out.append(f"- … and {total - len(shown)} more")
    out += ["", "### Proposed fix", "", proposed_fix(facts)]
    if facts.suspects and not facts.culprit:
        out += ["", "| rank | commit | score | overlapping files |", "| --- | --- | --- | --- |"]
        for i, s in enumerate(facts.suspects, 1):
            files = ", ".join(f"`{f}`" for f in s.files[:3]) or "none"
            out.append(f"| {i} | {_sha(s.sha)} {_cell(s.subject)} | {s.score} | {files} |")
    if facts.excerpt:
        excerpt = "\n".join(facts.excerpt.splitlines()[-_EXCERPT_LINES:]).replace("```", "ʼʼʼ")
        out += [
            "",
            "<details><summary>Failure output (tail)</summary>",
            "",
            "```",
            excerpt,
            "```",
            "",
            "</details>",
        ]
    out += [
        "",
        "_Filed and kept up to date by forksync; it closes itself after "
        f"{facts.recover_after} clean runs and reopens if the failure comes back._",
        "",
        _data_block(facts),
    ]
    return "\n".join(out)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def recovered_comment(facts: IssueFacts) -> str:
    return (
        f"Recovered: `{facts.source}` ran {facts.clean_runs} times in a row without this failure "
        f"(last seen at {_sha(facts.last_seen)}, {facts.last_seen_at}). Closing; forksync reopens it if it comes back."
    )


def reopened_comment(facts: IssueFacts) -> str:
    return (
        f"It is back: seen again at trunk commit {_sha(facts.last_seen)} ({facts.last_seen_at}) in "
        f"`{facts.source}`. Reopening (occurrences: {facts.occurrences})."
    )


def duplicate_comment(number: int) -> str:
    return f"Duplicate of #{number}, which tracks the same failure signature. Closing this one."


def _data_block(facts: IssueFacts) -> str:
    # ">" is escaped so that no value can end the HTML comment early.
    text = json.dumps(asdict(facts), sort_keys=True, separators=(",", ":")).replace(">", "\\u003e")
    return f"<!-- forksync:tracking-data {text} -->"


def parse_facts(body: str | None) -> IssueFacts | None:
    """The facts hidden in a tracking issue body, or None when absent or unreadable (hand-edited)."""
    m = _DATA.search(body or "")
    if not m:
        return None
    try:
        raw: Any = json.loads(m.group("json"))
    except ValueError:
        return None
    if not isinstance(raw, dict):
        return None
    known = {f.name for f in fields(IssueFacts)}
    data = {k: v for k, v in raw.items() if k in known}
    try:
        data["tests"] = tuple(data.get("tests", ()))
        data["owners"] = tuple(data.get("owners", ()))
        data["suspects"] = tuple(
            SuspectFacts(s["sha"], s["subject"], int(s["score"]), tuple(s.get("files", ())))
            for s in data.get("suspects", ())
        )
        return IssueFacts(**data)
    except (TypeError, KeyError, ValueError):
        return None


def cannot_bisect(benchmark: str, why: str) -> str:
    """The reply to ``/bisect`` when it cannot start: why, and how to ask."""
    return f"Cannot bisect `{benchmark}`: {why}"


def bisect_not_configured(benchmark: str, config_path: str) -> str:
    return cannot_bisect(benchmark, f"no L2 benchmark named `{benchmark}` in {config_path}.")


def bisect_without_runs(benchmark: str) -> str:
    return cannot_bisect(
        benchmark,
        "no good and bad trunk runs recorded yet; give both commits: `/bisect BENCHMARK GOOD BAD`.",
    )


def bisect_comment(
    benchmark: str,
    good: str,
    bad: str,
    culprit: str | None,
    culprit_subject: str,
    runs: int,
    skipped: int,
    reason: str,
    suspects: tuple[SuspectFacts, ...] = (),
) -> str:
    """The reply to an on-demand bisection (``/bisect``): the culprit, or why not and the suspects."""
    head = f"Bisection of `{benchmark}` over {good[:12]}..{bad[:12]}: {runs} run{'s' if runs != 1 else ''}"
    head += f", {skipped} skipped." if skipped else "."
    if culprit:
        return "\n".join(
            [
                head,
                "",
                f"**Culprit:** {culprit[:12]} {culprit_subject}".rstrip(),
                "",
                f"Proposed fix: revert it (`git revert {culprit[:12]}`), or eject it into a risky chain.",
            ]
        )
    out = [head, "", f"**No culprit:** {reason}."]
    if suspects:
        out += ["", "| rank | commit | score | overlapping files |", "| --- | --- | --- | --- |"]
        for i, s in enumerate(suspects, 1):
            files = ", ".join(f"`{f}`" for f in s.files[:3]) or "none"
            out.append(f"| {i} | {s.sha[:12]} {_cell(s.subject)} | {s.score} | {files} |")
    return "\n".join(out)
