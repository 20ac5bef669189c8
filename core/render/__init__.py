"""Pure builders of bot-written text (PR bodies, check-run output, issue bodies, replies).

One module per domain; bot-owned sections carry hidden HTML markers so they are edited in
place, never duplicated. Builders take plain data and return strings: no I/O here.
"""

from __future__ import annotations

import re

# A bot-written body starts with its markers, one a line: the only place a marker counts.
_MARKER_LINE = re.compile(r"^<!-- forksync:[^\n]*? -->$")


def marker(kind: str, key: str) -> str:
    """The hidden HTML comment that identifies a bot-owned PR, issue or comment."""
    return f"<!-- forksync:{kind}:{key} -->"


def leading_markers(body: str) -> list[str]:
    """The marker lines a bot-written body starts with (blank lines between them allowed)."""
    found: list[str] = []
    for line in body.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if not _MARKER_LINE.match(stripped):
            break
        found.append(stripped)
    return found


def carries_marker(body: str, mark: str) -> bool:
    """True when ``mark`` is one of the markers ``body`` starts with; a marker further down (text
    copied or echoed from outside) never counts."""
    return mark.strip() in leading_markers(body)


def neutral(text: str, *, refs: bool = True, mentions: bool = True) -> str:
    """Outside text made inert for any bot-written body: no HTML comment can open in it (so no
    hidden marker), no ``@name`` pings, and (``refs``) no ``#N`` links a fork issue. Zero-width
    characters keep it readable, in code spans too. PR bodies keep ``#N`` (``refs=False``): the
    ledger reads upstream PR numbers from landed bundle messages. Code spans and blocks need only
    the markers broken (GitHub links and pings nothing inside them): ``mentions=False, refs=False``."""
    text = text.replace("<!--", "<\u200b!--").replace("-->", "--\u200b>")
    if mentions:
        text = re.sub(r"@(?=[A-Za-z0-9])", "@\u200d", text)
    return re.sub(r"(?<![\w&/])#(?=\d)", "#\u200d", text) if refs else text
