"""A message body as the recognisers read it: without what it quotes from upstream (fenced
blocks, ``>`` lines), by sections (Deferred, Won't-port, Related... left out, each kept line with
the label it is under), without the fork's own review lines and a bundle's pin lines."""

from __future__ import annotations

import re

from workers.engine.recognise.tokens import _TRAILING_PR

# Section headings in pick bodies whose references are NOT picks.
_EXCLUDED_SECTION = re.compile(
    r"(?i)defer|backlog|won['’]?t|wont|not[\s_-]*(?:picked|ported|included)|skip|exclud|eject|hole|"
    r"pending|remaining|conflict|depend|prerequisite|follow[\s-]?up|related|see also|supersed|revert|"
    # status lines that name commits without picking them ("Upstream tip: <sha>")
    r"\btip\b|\brange\b|\bhead\b|\bbase\b|\bpins?\b|frontier|contiguous|behind|metrics?\b|status|next"
)
_INCLUDED_SECTION = re.compile(r"(?i)picked|included|commits|changes|upstream|summary|carried|ported")
# Lines that name the fork's own review, never upstream (ghstack / Phabricator exports).
_OWN_REVIEW_LINE = re.compile(r"(?i)^\s*(pull request resolved|differential revision|reviewed by)\s*:")

_FENCE = re.compile(r"(?ms)^[ \t]*(```|~~~).*?(?:^[ \t]*\1[ \t]*$|\Z)")


def own_text(body: str) -> str:
    """The body without what it quotes: fenced blocks and ``>`` lines (upstream's own message)."""
    if "```" not in body and "~~~" not in body and ">" not in body:
        return body
    body = _FENCE.sub("", body)
    return "\n".join(line for line in body.splitlines() if not line.lstrip().startswith(">"))


def _included(body: str, *, pins: bool = False) -> list[tuple[str, str]]:
    """(text, the label it is under) for body lines outside excluded sections ("Deferred
    (backlog)", "Won't port"): the label of the heading above the line ("Upstream PRs", "This PR
    ports two fixes"), or of the inline label it follows ("Upstream: <link>"), "" when none.
    A bundle body's pin lines are left out unless ``pins`` (a PR form's subject may say "Pin")."""
    kept: list[tuple[str, str]] = []
    excluded = False
    section = ""
    for line in body.splitlines():
        if _OWN_REVIEW_LINE.match(line) or (not pins and _is_pin_line(line)):
            continue
        label, after, is_heading = _heading(line)
        if label is not None:
            label_excluded = bool(_EXCLUDED_SECTION.search(label))
            label_picked = bool(_INCLUDED_SECTION.search(label)) and not label_excluded
            if is_heading:
                if label_excluded:
                    excluded, section = True, ""
                elif label_picked or not after:
                    excluded, section = False, label
            if label_excluded:
                continue  # "Deferred: #12 #13" excludes its own line too
            if after and not excluded:
                kept.append((after, label))
            continue
        if not excluded:
            kept.append((line, section))
    return kept


# Words of the pin lines a bundle body keeps ("The frontier moves to <sha> (#N)", "| contiguous
# pin | <sha> |"): whatever such a line names is a position, not a pick. A listed upstream
# subject that happens to use one of the words ends in its "(#N)" and is kept.
_PIN_WORDS = re.compile(r"(?i)\bfrontier\b|\bcontiguous[\s_-]+pin|\bpin(?:s|ned)?\b")


def _is_pin_line(line: str) -> bool:
    return bool(_PIN_WORDS.search(line)) and not _TRAILING_PR.search(line.rstrip(" \t|"))


_HEADING = re.compile(
    r"^\s*(#{1,6}\s+|[-*+]\s+)?(?:\*\*|__)?\s*([A-Za-z][A-Za-z'’ /&_-]{1,40}?)\s*((?:\([^)]*\)\s*)*)(?:\*\*|__)?\s*:(?!//)\s*(?:\*\*|__)?\s*(.*)$"
)
# A section name alone on its line, without a colon or markdown ("Deferred (backlog)", "Won't-port
# (2)"): only the names bundle bodies use, so a short line of prose never opens a section.
_BARE_SECTION = re.compile(
    r"(?i)\s*(picked|included|carried|deferred(?:\s+\(backlog\))?|backlog|won['’]?t[\s-]*port(?:ed)?|"
    r"not[\s-]*(?:picked|ported|included)|skipped|excluded|pins?)\s*(?:\(\d+\)\s*)?:?\s*"
)
_MD_HEADING = re.compile(r"^\s*(?:#{1,6}\s+(.+?)|(?:\*\*|__)(.+?)(?:\*\*|__))\s*:?\s*$")


def _heading(line: str) -> tuple[str | None, str, bool]:
    """(label, text after the label, starts a section) or (None, "", False) for plain lines."""
    m = _MD_HEADING.match(line)
    if m:
        return (m.group(1) or m.group(2) or "").strip(), "", True
    m = _BARE_SECTION.fullmatch(line)
    if m:
        return m.group(1), "", True
    m = _HEADING.match(line)
    if m and len(m.group(2).split()) <= 5:
        after = m.group(4).strip()
        return m.group(2).strip(), after, not after
    return None, "", False
