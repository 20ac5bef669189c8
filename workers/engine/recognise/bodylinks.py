"""Recogniser ``body-link``: upstream PRs and commits linked in a body, read only where the
title, a pick label or the link's own sentence says they are picked (never after prose that says
the PR is only related)."""

from __future__ import annotations

import re

from workers.engine.recognise.body import _included
from workers.engine.recognise.index import UpstreamIndex
from workers.engine.recognise.rules import Rules, _is_upstream
from workers.engine.recognise.tokens import _LIST_ITEM, _SHA_TOKEN

_PULL_LINK = re.compile(r"https?://(?:www\.)?github\.com/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/pull/(\d+)")
_COMMIT_LINK = re.compile(
    r"https?://(?:www\.)?github\.com/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/commit/([0-9a-f]{7,40})"
)
_SLUG_REF = re.compile(r"(?<![\w/.-])([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#(\d+)\b")


def _body_links(body: str, index: UpstreamIndex, rules: Rules, *, title_picks: bool) -> list[str]:
    """Upstream links in the body of a commit no stronger signal names a pick for.

    A link is read when the title says the commit is a pick (``title_picks``), when it sits in a
    list of picks or under a label such as ``Upstream:``, or when its own sentence says it is
    picked ("Cherry-pick of upstream <link>", "Original commit is <link>"; there a bare upstream
    sha counts too: "Port b45acd4b5 / Triton #10194."). A plain fork commit
    names upstream PRs for many other reasons ("Issue introduced by <link>", "to match the new
    API from the LLVM bump in <link>", "Upstream applies the same rule (owner/repo#N)", "PR#913
    cherry-picked upstream commit <link>, which changed ..."): those are not picks. A sentence
    is read whole across the lines it is wrapped on, so prose on one line and the link on the
    next are one sentence; a list item is read with the line that leads into its list."""
    found: list[str] = []
    for text, listed, lead in _link_sentences(body):
        if "/" not in text and not _SHA_TOKEN.search(text):
            continue
        carried = _carried_part(text)
        says = _says_picked(carried) or _says_picked(lead)
        if title_picks or listed or says:
            found.extend(_links_in(carried, index, rules))
        if says:
            # "Port b45acd4b5 / Triton #10194.": an upstream commit named by its bare sha, in a
            # sentence that says it is picked.
            found.extend(s for s in (index.sha(t) for t in _SHA_TOKEN.findall(carried)) if s)
    return found


# A sentence that says its link is picked: a pick verb or noun, or "original/upstream commit".
_PICK_PROSE = re.compile(
    r"(?i)\b(?:cherry[\s_-]?pick\w*|back-?port\w*|ports?\b|ported|porting|pick(?:s|ed|ing)?\b|"
    r"original\s+(?:commit|pr|change)|upstream\s+(?:commit|pr|change)s?\s*:)"
)
# Another change named before the pick word did the picking ("PR#913 cherry-picked <link>").
_OTHER_CHANGE = re.compile(r"(?i)\bPR\s*#?\s*\d+|(?<![\w/&])#\d+\b|\bD\d{6,}\b")
# A title that says the commit ports something: "Port it (#2)", "Add hook (port of <link>)".
_TITLE_PICK_PROSE = re.compile(
    r"(?i)^\s*(?:\[[^\]\n]*\]\s*)*(?:port|back-?port|cherry[\s_-]?pick|pick)\w*\b|"
    r"\b(?:port|back-?port|cherry[\s_-]?pick)\s+of\b"
)
# Labels whose lines name what the commit carries ("Upstream:", "Upstream PRs:", "Picked").
_PICK_LABEL = re.compile(r"(?i)picked|carried|ported|upstream|original|cherry|backport")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=\S)")


def _says_picked(text: str) -> bool:
    m = _PICK_PROSE.search(text)
    return m is not None and not _OTHER_CHANGE.search(text[: m.start()])


def _link_sentences(body: str) -> list[tuple[str, bool, str]]:
    """(sentence, is in a list of picks, the line leading into its list) for the body's
    included text: wrapped prose lines are joined into paragraphs and cut into sentences; each
    list item is one sentence, led by the paragraph sentence that introduced the list."""
    out: list[tuple[str, bool, str]] = []
    paragraph: list[str] = []
    lead = ""

    def flush() -> None:
        nonlocal lead
        if paragraph:
            sentences = _SENTENCE_END.split(" ".join(paragraph))
            out.extend((s, False, "") for s in sentences)
            last = sentences[-1].rstrip()
            lead = last if last.endswith(":") else ""
            paragraph.clear()

    in_list = False
    for text, label in _included(body):
        stripped = text.strip()
        if not stripped:
            flush()
            if in_list:  # the list ended: its lead-in leads nothing after it
                lead, in_list = "", False
            continue
        listed = bool(label) and (bool(_PICK_LABEL.search(label)) or _says_picked(label))
        if listed or _LIST_ITEM.match(text):
            flush()
            out.append((stripped, listed, lead))
            in_list = True
            continue
        paragraph.append(stripped)
        in_list = False
    flush()
    return out


# Prose that names an upstream PR without carrying it: "regression from <link>", "similar to
# <link>", "works around the break caused by <link>" (fork-only work often says so).
_NOT_CARRIED_PROSE = re.compile(
    r"(?i)\b(?:related|similar|like|unlike|follow[\s-]?ups?|regress\w*|introduced|caused|broke\w*|"
    r"break(?:s|ing|age)?|depend\w*|prerequisite|see also|inspired|supersed\w*|revert\w*|"
    r"conflict\w*|workaround|works? around|because|once|until|blocked|waiting|"
    # partial ports and the fork's own work sent upstream ("Port of <link>" stays a pick):
    # "Port the non-LLVM portions of owner/repo#N", "Mirrors the fix from <link>", "upstreaming <link>"
    r"partial\w*|portions?|parts? of|mirror\w*|re-?implement\w*|upstreaming|upstreamed)\b"
)


def _carried_part(line: str) -> str:
    """The part of a body line a body link may be read from: before any such prose."""
    m = _NOT_CARRIED_PROSE.search(line)
    return line[: m.start()] if m else line


def _links_in(line: str, index: UpstreamIndex, rules: Rules) -> list[str]:
    """Upstream PRs and commits a line names: ``.../pull/N``, ``.../commit/<sha>``, ``owner/repo#N``."""
    found: list[str] = []
    if "/" not in line:
        return found  # every form has a slash: most list lines have none
    for slug, number in (*_PULL_LINK.findall(line), *_SLUG_REF.findall(line)):
        if _is_upstream(slug, rules):
            sha = index.pr(int(number))
            if sha:
                found.append(sha)
    for slug, commit in _COMMIT_LINK.findall(line):
        if _is_upstream(slug, rules):
            sha = index.sha(commit)
            if sha:
                found.append(sha)
    return found
