"""The pin-update digest issue (pure): what landed by area, what is stuck, what was deferred or
resolved by hand, L2 changes, and who should look.

Owners are @-mentioned once, in "Who should look", and only for areas with changes; area sections
name them without the @ so that one digest never pings anyone twice. The hidden markers identify
the period's issue (edited in place) and record who was already mentioned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from core.render import marker

MAX_ROWS = 60  # per section; the rest is counted, GitHub bodies have a size limit


@dataclass(frozen=True)
class Change:
    sha: str
    subject: str
    pr: int | None = None
    resolved: bool = False
    resolver: str | None = None
    fork_sha: str = ""


@dataclass(frozen=True)
class Area:
    pattern: str  # the owners: / CODEOWNERS pattern; "" for files no one owns
    owners: tuple[str, ...]
    changes: tuple[Change, ...]


@dataclass(frozen=True)
class Stuck:
    kind: str  # chain | urgent | bundle
    title: str
    number: int | None
    why: str


@dataclass(frozen=True)
class L2Change:
    benchmark: str
    metric: str  # "" for a failed run
    delta_pct: float | None  # None for a failed run
    sha: str
    culprit: str | None = None
    issue_url: str | None = None


@dataclass(frozen=True)
class DigestView:
    repo: str
    key: str  # the period's first day, YYYY-MM-DD
    start: float
    end: float
    upstream_url: str | None
    fork_url: str
    areas: tuple[Area, ...] = ()
    stuck: tuple[Stuck, ...] = ()
    deferred: tuple[tuple[str, str, int | None, str], ...] = ()  # sha, subject, pr, reason
    l2: tuple[L2Change, ...] = ()
    figures: tuple[tuple[str, str, str], ...] = ()  # label, at start, now
    owners: tuple[str, ...] = field(default=())  # who should look: every owner of a touched area

    @property
    def by_hand(self) -> tuple[Change, ...]:
        seen: dict[str, Change] = {}
        for area in self.areas:
            for c in area.changes:
                if c.resolved and (c.resolver or "human") == "human":
                    seen.setdefault(c.sha, c)
        return tuple(seen.values())

    def landed(self) -> int:
        return len({c.sha for a in self.areas for c in a.changes})


def digest_marker(key: str) -> str:
    return marker("digest", key)


def notified_marker(owners: Sequence[str]) -> str:
    return f"<!-- forksync:digest-notified:{','.join(sorted(set(owners)))} -->"


def notified_in(body: str) -> frozenset[str]:
    """Who a digest body says was already mentioned."""
    start = body.find("<!-- forksync:digest-notified:")
    if start < 0:
        return frozenset()
    rest = body[start + len("<!-- forksync:digest-notified:") :]
    names = rest.split(" -->", 1)[0]
    return frozenset(n for n in names.split(",") if n)


def _day(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d")


def digest_title(view: DigestView) -> str:
    return f"[forksync] Pin-update digest {view.key} – {_day(view.end - 1)}: {view.landed()} upstream commits landed"


def _pr(view: DigestView, number: int | None) -> str:
    if number is None:
        return ""
    return f"[#{number}]({view.upstream_url}/pull/{number})" if view.upstream_url else f"#{number}"


def _sha(view: DigestView, sha: str, base: str | None) -> str:
    return f"[`{sha[:10]}`]({base}/commit/{sha})" if base else f"`{sha[:10]}`"


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def _mention(owner: str) -> str:
    return "@" + owner.lstrip("@")


def digest_body(view: DigestView, notified: Sequence[str] = ()) -> str:
    lines = [
        digest_marker(view.key),
        f"Everything that landed from upstream in **{view.repo}** from {_day(view.start)} to {_day(view.end - 1)} (UTC), "
        "what is stuck, and who should look. forksync edits this issue in place until the period ends; `/digest` "
        "refreshes it now.",
        "",
    ]
    if view.figures:
        lines += ["| figure | at the start | now |", "| --- | ---: | ---: |"]
        lines += [f"| {label} | {a} | {b} |" for label, a, b in view.figures]
        lines.append("")
    lines.append(f"## What landed ({view.landed()} upstream commits)")
    if not view.areas:
        lines.append("Nothing landed in this period.")
    for area in view.areas:
        owners = ", ".join(f"`{o.lstrip('@')}`" for o in area.owners) or "no owner"
        title = f"`{area.pattern}`" if area.pattern else "elsewhere"
        lines += ["", f"### {title} ({len(area.changes)}; owners: {owners})", ""]
        for c in area.changes[:MAX_ROWS]:
            tag = f" (resolved: {c.resolver or 'human'})" if c.resolved else ""
            lines.append(
                f"- {_sha(view, c.sha, view.upstream_url)} {_cell(c.subject)} {_pr(view, c.pr)}{tag}".rstrip()
            )
        if len(area.changes) > MAX_ROWS:
            lines.append(f"- … and {len(area.changes) - MAX_ROWS} more")
    lines += ["", "## Stuck"]
    if not view.stuck:
        lines.append("Nothing is stuck.")
    for s in view.stuck[:MAX_ROWS]:
        ref = f"#{s.number} " if s.number else ""
        lines.append(f"- {s.kind}: {ref}{_cell(s.title)}: {_cell(s.why)}")
    lines += ["", "## Deferred, and resolved by hand"]
    if not view.deferred and not view.by_hand:
        lines.append("Nothing deferred; no conflict needed a human.")
    for sha, subject, pr, reason in view.deferred[:MAX_ROWS]:
        lines.append(
            f"- deferred {_sha(view, sha, view.upstream_url)} {_cell(subject)} {_pr(view, pr)}: {_cell(reason or 'no reason recorded')}"
        )
    for c in view.by_hand[:MAX_ROWS]:
        lines.append(
            f"- resolved by hand {_sha(view, c.sha, view.upstream_url)} {_cell(c.subject)} {_pr(view, c.pr)} "
            f"in {_sha(view, c.fork_sha, view.fork_url)}"
        )
    lines += ["", "## L2 changes"]
    if not view.l2:
        lines.append("No L2 regression found in this period.")
    for r in view.l2:
        culprit = f", culprit {_sha(view, r.culprit, view.fork_url)}" if r.culprit else ", bisecting"
        issue = f" ([tracking issue]({r.issue_url}))" if r.issue_url else ""
        if r.delta_pct is not None:
            change = f"{r.metric} {r.delta_pct:+.1f}%"
        else:
            change = f"{r.metric} regressed" if r.metric else "failed"
        lines.append(f"- `{r.benchmark}` {change} from {_sha(view, r.sha, view.fork_url)}{culprit}{issue}")
    lines += ["", "## Who should look"]
    if not view.owners:
        lines.append("No owned area was touched.")
    else:
        for owner in view.owners:
            areas = [f"`{a.pattern}`" for a in view.areas if owner in a.owners]
            lines.append(f"- {_mention(owner)}: {', '.join(areas)}")
    lines += ["", notified_marker([*notified, *view.owners])]
    return "\n".join(lines).rstrip() + "\n"


def mention_comment(view: DigestView, owners: Sequence[str]) -> str:
    """One comment for owners whose areas were touched after the issue was opened."""
    parts = []
    for owner in owners:
        areas = [f"`{a.pattern}`" for a in view.areas if owner in a.owners]
        parts.append(f"{_mention(owner)} ({', '.join(areas)})")
    return "Changes landed in your area since this digest was opened: " + "; ".join(parts) + "."


def slack_text(view: DigestView, issue_url: str | None) -> str:
    """The digest as one Slack-compatible message (``{"text": ...}``)."""
    head = f"*{view.repo}* pin-update digest {view.key}: {view.landed()} upstream commits landed"
    bits = [
        f"{len(view.stuck)} stuck",
        f"{len(view.deferred)} deferred",
        f"{len(view.by_hand)} resolved by hand",
    ]
    if view.l2:
        bits.append(f"{len(view.l2)} L2 regression(s)")
    link = f" <{issue_url}|digest>" if issue_url else ""
    return f"{head} ({', '.join(bits)}).{link}"
