"""Recogniser ``bundle``: a bundle body read by its sections: Picked lists carry, Deferred and
Won't-port lists decide, items marked NO-OP are not carried; and the body line that continues a
title GitHub cut."""

from __future__ import annotations

import re
from dataclasses import dataclass

from workers.engine.recognise.body import _EXCLUDED_SECTION, _OWN_REVIEW_LINE, _heading, _is_pin_line
from workers.engine.recognise.index import UpstreamIndex
from workers.engine.recognise.rules import Rules
from workers.engine.recognise.tokens import _LIST_ITEM, _SHA_TOKEN, _TRAILING_PR

_HASH_NUM = re.compile(r"#(\d+)\b")


def _continuation(body: str) -> str:
    """The first body line when it continues a title GitHub cut (``...#9619 #9657)``)."""
    for line in body.splitlines():
        text = line.strip()
        if not text or _OWN_REVIEW_LINE.match(text) or text.lower() == "summary:":
            continue
        return text if text.startswith(("...", "…")) else ""
    return ""


@dataclass(frozen=True)
class BundleSections:
    """What a bundle body's sections name: picks, decisions, items marked as not carried."""

    picked: tuple[str, ...]
    decided: tuple[tuple[str, str, str], ...]  # (sha, "deferred" | "wont_port", "section")
    not_carried: frozenset[str]  # items marked NO-OP / dropped / skipped: not in this bundle
    link_lines: tuple[str, ...]  # lines with links: read only when nothing else names a pick


_DEFERRED_LABEL = re.compile(r"(?i)defer|backlog")
_WONT_LABEL = re.compile(r"(?i)won['’]?t|\bwont\b|not[\s_-]*port")
_PICKED_LABEL = re.compile(
    r"(?i)picked|applied|adopted|satisfied|included|carried|landed|keystone|ported|upstream prs?\b|reactor[\s-]*bundle"
)
# A section whose name comes first on its line with a count and a dash or colon after it:
# "Deferred (8) — recorded in the backlog:", "Won't-port (1): #10054 ...", "Picked (7)".
_SECTION_LEAD = re.compile(
    r"(?i)^\s*(?:#{1,6}\s*|[-*+]\s+)?(?:\*\*|__)?\s*((?:still\s+)?(?:picked|deferred|won['’]?t[\s-]*port(?:ed)?|"
    r"wont[\s-]*port|backlog|not[\s-]*(?:picked|ported|included)|skipped|dropped))\b\s*(?:\([^)]*\))?\s*(?:\*\*|__)?"
    r"\s*(?:[:—–]\s*|-\s+|\.?\s*$)(.*)$"
)
# A list item the bundle says it did not carry: "- [3] 880b4e4d PR #9337 '...' — NO-OP (...)".
_NOT_CARRIED_ITEM = re.compile(
    r"(?i)\bNO-?OPs?\b|\bnot (?:attempted|picked|applied|included)\b|\bdropped from this bundle\b"
)
_ITEM_NUMBERS = re.compile(
    r"^\s*(?:[-*+•]|\d+[.)]|\[\d+\])?\s*(?:\[\d+\]\s*)?(?:[0-9a-f]{7,40}\s+)?(?:PR\s*)?(?:\*\*|__|`)?((?:#\d+\b(?:\*\*|__|`)?[\s,;&/+]*|and\s+)+)"
)


_LEAD_WORDS = ("pick", "defer", "won", "backlog", "not", "skip", "drop")


def _section_kind(label: str) -> str:
    if _DEFERRED_LABEL.search(label):
        return "deferred"
    if _WONT_LABEL.search(label):
        return "wont_port"
    if _PICKED_LABEL.search(label):
        return "picked"
    if _EXCLUDED_SECTION.search(label):
        return "excluded"
    return "neutral"


def _bundle_sections(body: str, index: UpstreamIndex, rules: Rules) -> BundleSections:
    """Read a bundle body by sections: Picked (and keystone / applied / already-satisfied
    lists, Reactor-Bundle items) carry; Deferred and Won't-port sections decide; other
    sections (conflicts, follow-ups, pins, prose) name nothing. ``#N`` counts only in list
    items and after a section label (in prose it may be a fork PR or an issue); shas in list
    items count; body links are kept aside (see :func:`recognise`)."""
    picked: list[str] = []
    decided: list[tuple[str, str, str]] = []
    not_carried: set[str] = set()
    link_lines: list[str] = []
    kind = "neutral"
    for line in body.splitlines():
        if not line or line.isspace() or _OWN_REVIEW_LINE.match(line) or _is_pin_line(line):
            continue
        head = line[:40].lower()
        lead = _SECTION_LEAD.match(line) if any(w in head for w in _LEAD_WORDS) else None
        stated: int | None = None
        if lead is not None:
            label, after = lead.group(1), lead.group(2).strip()
            count = _STATED_COUNT.search(line, lead.end(1), lead.start(2))
            stated = int(count.group(1)) if count is not None else None
            is_heading = not _HASH_NUM.search(after) and not _BARE_NUMBERS.fullmatch(after)
        elif ":" in line.replace("://", "") or line.lstrip()[:1] in ("#", "*", "_") or len(line) < 48:
            label_or_none, after, is_heading = _heading(line)
            label = label_or_none or ""
        else:
            label, after, is_heading = "", "", False  # a long line without a colon: no heading
        if label:
            this = _section_kind(label)
            if is_heading:
                kind = this
                continue
            items = after
        else:
            this, items = kind, line
        list_item = bool(_LIST_ITEM.match(items))
        # Under a Picked / Deferred / Won't-port heading, a line that starts with a PR number is
        # a list of items too ("#10161 [AMD][CI] Allow ...; #10146 [AMD][CI] Switch ..."); other
        # prose under a heading names nothing.
        numbered = this != "neutral" and not label and bool(_LEADING_NUMBER.match(items))
        listy = bool(label) or list_item or numbered
        shas = (
            [
                s
                for s in (index.pr(int(n)) for n in _section_numbers(items, bool(label) or numbered, stated))
                if s
            ]
            if listy
            else []
        )
        if listy:
            shas += [s for s in (index.sha(t) for t in _SHA_TOKEN.findall(items)) if s]
        if this == "picked" or (this == "neutral" and list_item):
            if _NOT_CARRIED_ITEM.search(items):
                not_carried.update(shas)
                continue
            picked.extend(shas)
        elif this in ("deferred", "wont_port"):
            decided.extend((s, this, "section") for s in shas)
            continue
        elif this != "neutral":
            continue
        if "/" in items:
            link_lines.append(items)
    return BundleSections(tuple(picked), tuple(decided), frozenset(not_carried), tuple(link_lines))


_LEADING_NUMBER = re.compile(r"^\s*(?:\*\*|__)?#\d+\b")
# An inline list of bare PR numbers after a label: "Applied (94): 9720 9725 9605 ... 9739."
_BARE_NUMBERS = re.compile(r"\s*\d{3,6}(?:[\s,]+\d{3,6})*[\s.]*")


def _section_numbers(items: str, inline: bool, stated: int | None = None) -> list[str]:
    """The PR numbers a list line or a label's inline list names. Inline, after a label, the
    list may be bare numbers ("Applied (94): 9720 9725 ..."), items separated by semicolons
    ("Picked (37): #10066 `maskSpanAffineOffset` fix; #10060 small MMAv2 FP64; ...") or by commas
    before the next item's number ("Won't-port (3): #6086 CI only, #6084 CI only, #6033 CI
    only"), each read as a list line of its own. A comma may also separate numbers an item's
    reason names ("Deferred (1): #6114 needs #6000, #6001 first"): so commas split only where the
    label states no count (``stated``) or the split gives as many items as it states."""
    if inline and _BARE_NUMBERS.fullmatch(items):
        return re.findall(r"\d+", items)
    if "#" not in items:
        return []
    if inline and ";" in items:
        return [n for piece in items.split(";") for n in _item_numbers(piece)]
    if inline:
        pieces = _NEXT_ITEM.split(items)
        if len(pieces) > 1 and (stated is None or len(pieces) == stated):
            return [n for piece in pieces for n in _item_numbers(piece)]
    return _item_numbers(line=items)


# A comma before the next inline item's number, and the count a section label states ("(3)").
_NEXT_ITEM = re.compile(r",(?=\s*(?:\*\*|__|`)?#\d)")
_STATED_COUNT = re.compile(r"\(\s*(\d+)\b")


def _item_numbers(line: str) -> list[str]:
    """The PR numbers a list line names: a leading run (``- #1 and #2: ...``, ``- **#9851** ...``,
    ``- [1] <sha> PR #9415 '...'``), else an upstream subject's trailing ``(#N)``, else every
    ``#N`` outside quotes (see :func:`_listed_numbers`)."""
    run = _ITEM_NUMBERS.match(line)
    if run is not None:
        return _HASH_NUM.findall(run.group(1))
    return _listed_numbers(line)


_QUOTED_TEXT = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”")
_NUMBER_RUN = re.compile(r"^\s*(?:[-*+•]|\d+[.)])?\s*((?:#\d+\b[\s,;&]*|and\s+)+)")


def _listed_numbers(line: str) -> list[str]:
    """The PR numbers a list line of picks names. An upstream subject listed with its "(#N)"
    names N only, and a line or table cell that starts with numbers names those: other numbers
    are what a subject reverts or follows up ('Revert "[FRONTEND] X (#7003)" (#7100)',
    '| #7101 | Fix regression from #7002 |')."""
    cells = [c for c in line.strip().strip("|").split("|")] if line.lstrip().startswith("|") else [line]
    found: list[str] = []
    for cell in cells:
        m = _TRAILING_PR.search(cell)
        run = _NUMBER_RUN.match(cell)
        if m is not None:
            found.append(m.group(1))
        elif run is not None:
            found.extend(_HASH_NUM.findall(run.group(1)))
    return found or _HASH_NUM.findall(_QUOTED_TEXT.sub("", line))
