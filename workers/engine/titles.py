"""Read a fork commit's title: the fork's prefix, the pick tag, process tags, upstream's subject.

A pick title is ``<fork prefix> <pick tag><process tags> <upstream subject> (#M)``::

    [triton][beta] [Cherry-pick][RESOLVED] '[AMD] Fix the lowering (#8036)' (#846)
    [ROCm] [Cherry-pick] [AMD] Fix the lowering (#8036) (#12)
    [Cherry-pick][BUNDLE] Cherry-pick 3 upstream(#1 #2 #3) (#M)
    [triton][beta] Backport '[AMD] Fix the lowering (#8036)'
    [release/3.4] Cherry-pick upstream layout bundle (#M)

The pick tag is found wherever the prefix puts it: every leading ``[tag]`` before it is the
fork's prefix, whatever it says (``[triton][beta]``, ``[ROCm]``, ``[fork]``, none); the tags
right after it that name the pick's process (``[RESOLVED]``, ``[CONFLICTS]``, ``[BUNDLE]``,
``[URGENT]``, ``[PARTIAL]``...) are process tags; what follows is upstream's subject, quoted or
not, whose own tags (``[AMD]``, ``[Hotfix]``) stay part of it. The pick may also be a word after
the prefix (``Backport '...'``, ``Cherry-pick upstream ... bundle``, ``Pick ...``). A trailing
``(#M)`` is the fork's own PR (GitHub's squash suffix) and never upstream's. Pure: text in,
:class:`Title` out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TAG = re.compile(r"^\s*\[([^\]\n]*)\]\s*")
_PICK_TAG = re.compile(
    r"(?i)^(?:cherry[\s_-]?pick(?:ed)?|backport(?:ed)?|pick(?:ed)?|bundle|reactor[\s_-]?bundle)$"
)
_BUNDLE_TAG = re.compile(r"(?i)^(?:bundle|reactor[\s_-]?bundle)$")
_PROCESS_TAG = re.compile(
    r"(?i)^(?:cherry[\s_-]?pick(?:ed)?|backport(?:ed)?|pick(?:ed)?|bundle|reactor[\s_-]?bundle|resolved|conflicts?|"
    r"urgent|partial|manual|wip|draft|forksync|reland|clean|auto)$"
)
_URGENT_TAG = re.compile(r"(?i)^urgent$")
# A pick named by a word after the prefix: "Backport '...'", "Backport (release/3.8.x) '...'",
# "Cherry-pick upstream reduction bundle", "Pick [TLX] ...".
# Capitalised, as titles start: "[TLX] pick memdesc_reinterpret ..." is a verb in prose.
_PICK_WORD = re.compile(
    r"^((?:Cherry|CHERRY)[\s_-]?(?:pick|Pick|PICK)(?:ed)?|Backport(?:ed)?|BACKPORT|Pick|PICK)\b(?:\s+of\b)?\s*(?:\([^()\n]{1,40}\)\s*)?:?\s*"
)
_BUNDLE_WORDS = re.compile(r"(?i)\bbundle\b|^(?:cherry[\s_-]?pick|backport)\s+\d+\s+upstream\b")
_FORK_SUFFIX = re.compile(r"\s*\(#(\d+)\)\s*$")
# A suffix GitHub cut inside the fork's "(#M)": "... (#17…" or "... (#".
_CUT_SUFFIX = re.compile(r"\s*\(#\d*\s*(?:…|\.\.\.)?\s*$")
_CUT_END = re.compile(r"(?:…|\.\.\.|#)\s*$")
_CUT_AT = re.compile(r"(#\d+)?(…|\.\.\.|#)\s*$")


@dataclass(frozen=True)
class Title:
    """A fork commit title taken apart. ``pick`` is None for titles that name no pick."""

    prefix: tuple[str, ...]  # the fork's own leading tags
    pick: str | None  # the pick tag or word as written ("Cherry-pick", "Backport", "BUNDLE")
    process: tuple[str, ...]  # tags after the pick tag: RESOLVED, CONFLICTS, BUNDLE, URGENT...
    rest: str  # upstream's subject (quoted or not) with the fork's "(#M)" still attached
    bundle: bool
    urgent: bool

    @property
    def is_pick(self) -> bool:
        return self.pick is not None

    @property
    def fork_pr(self) -> int | None:
        m = _FORK_SUFFIX.search(self.rest)
        return int(m.group(1)) if m else None


def parse_title(subject: str) -> Title:
    """Take ``subject`` apart (see the module docstring). Never fails: no pick tag is an answer."""
    text = subject.strip()
    tags: list[str] = []
    spans: list[str] = []
    while (m := _TAG.match(text)) is not None:
        tags.append(m.group(1).strip())
        spans.append(text[: m.end()])
        text = text[m.end() :]
    pick_at = next((i for i, t in enumerate(tags) if _PICK_TAG.match(t)), None)
    if pick_at is not None:
        end = pick_at + 1
        while end < len(tags) and _PROCESS_TAG.match(tags[end]):
            end += 1
        process = tuple(tags[pick_at + 1 : end])
        rest = "".join(spans[end:]) + text
        pick: str | None = tags[pick_at]
        rest = rest.strip()
        word = _PICK_WORD.match(rest)  # "[Cherry-pick] Backport '...'"
        if word is not None and rest[word.end() : word.end() + 1] in ("'", '"', "“", "‘"):
            rest = rest[word.end() :]
        bundle = any(_BUNDLE_TAG.match(t) for t in (tags[pick_at], *process)) or bool(
            _BUNDLE_WORDS.search(rest)
        )
        urgent = any(_URGENT_TAG.match(t) for t in process)
        return Title(tuple(tags[:pick_at]), pick, process, rest.strip(), bundle, urgent)
    word = _PICK_WORD.match(text)
    if word is not None:
        rest = text[word.end() :].strip()
        return Title(tuple(tags), word.group(1), (), rest, bool(_BUNDLE_WORDS.search(text)), False)
    return Title(tuple(tags), None, (), text.strip(), False, False)


def bundle_numbers(rest: str, continuation: str = "") -> list[int]:
    """The upstream PR numbers a bundle title lists, in order: every ``#N`` but the fork's own
    trailing ``(#M)``; when GitHub cut the title (``…``, ``...``, a bare ``#``, or inside the
    ``(#M)``), the number at the cut may be cut too and is dropped, unless the body's first line
    continues the title (``...#9619 #9657)``), which is joined on."""
    text = rest.rstrip()
    had_suffix = _FORK_SUFFIX.search(text)
    if had_suffix is not None:
        text = text[: had_suffix.start()]
    elif _CUT_SUFFIX.search(text) and not _CUT_END.search(text.rstrip("…. ")):
        text = text[: _CUT_SUFFIX.search(text).start()]  # type: ignore[union-attr]
    cut = _CUT_AT.search(text)
    if cut is not None:
        touching = cut.group(1)  # "#10…": the number at the cut may be cut too
        text = text[: cut.start()]
        if continuation:
            text += (touching or "") + continuation.strip().lstrip(".…")
        elif cut.group(2) == "#":
            text += touching or ""
    numbers = [int(n) for n in re.findall(r"#(\d+)\b", text)]
    if had_suffix is not None and not numbers and not cut:
        return []  # "Cherry-pick 3 upstream PRs (#M)": the only number is the fork's own PR
    return list(dict.fromkeys(numbers))


def strip_fork_suffix(text: str) -> str:
    return _FORK_SUFFIX.sub("", text)
