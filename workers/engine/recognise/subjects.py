"""Recogniser ``subject``: a fork subject that is an upstream subject verbatim (after the
fork's tags, quoted, without upstream's tags, CPython's ``(GH-N)``), or upstream's words after a
tag naming the branch or saying backport (``[stable-2.16]``, ``[Backport 2.x]``); and
upstream's ``(owner/repo#N)`` written back as ``(#N)`` before any title is read."""

from __future__ import annotations

import functools
import re

from workers.engine.recognise.index import UpstreamIndex
from workers.engine.recognise.rules import Rules, _is_upstream
from workers.engine.recognise.tokens import _LEADING_TAG, _QUOTES, _TRAILING_PR

_SLUG_SUFFIX = re.compile(r"\((?P<slug>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#(?P<number>\d+)\)")


def _local_numbers(subject: str, rules: Rules) -> str:
    """The subject with upstream's ``(owner/repo#N)`` written back as ``(#N)``: an upstream
    title copied into another repository gets its squash suffix qualified ("[BACKEND] Don't
    flush denorms for precise div/sqrt (triton-lang/triton#8557) (#870)"), and it is still
    upstream's subject. Other repositories' references stay as they are."""
    if "#" not in subject or "/" not in subject:
        return subject
    return _SLUG_SUFFIX.sub(
        lambda m: f"(#{m.group('number')})" if _is_upstream(m.group("slug"), rules) else m.group(0), subject
    )


def _same_subject(subject: str, index: UpstreamIndex) -> list[str]:
    """The fork subject is an upstream subject that carries a PR number, optionally + the fork's
    (#M), optionally after the fork's own leading tags: a release or side branch takes upstream's
    commit with its title kept and its prefix added ("[release/3.5.x][AMD] Refactor llStore and
    llLoad to use proper ops (#8036) (#8118)", "[TLX][AMD][Backend] Use latest build for ...
    (#10523) (#1652)"), quoted or not (``[release/3.4] "<subject (#N)>" (#M)``, upstream's own
    release picks); last, upstream's subject without upstream's own tags, when its number
    is kept (a pick retitled). The upstream number is always part of what is compared, so a
    subject that only resembles upstream's is no match."""
    text = _GH_SUFFIX.sub(r"(#\1)", subject.strip())
    while True:
        for candidate in (text, _TRAILING_PR.sub("", text)):
            sha = index.subject(_unquoted(candidate))
            if sha and _TRAILING_PR.search(_unquoted(candidate)):
                return [sha]
        m = _LEADING_TAG.match(text)
        if m is None or m.end() >= len(text):
            break
        text = text[m.end() :]
    # Retitled without upstream's own tags, its number kept: "Update ptxas_options knobs
    # default value (#8121)" for "[BACKEND][NVIDIA] Update ptxas_options knobs default value (#8121)".
    for candidate in (text, _TRAILING_PR.sub("", text)):
        sha = index.untagged_subject(candidate)
        if sha:
            return [sha]
    return _branch_tagged(subject, index)


# A leading tag that says the commit is a backport or names the release branch it was made for:
# "[Backport]", "[backport/2.16]", "[Backport 2.x]", "[Backport v3.5-branch]", patchback's
# "[PR #13275/b2b7b50c backport]", a version ("[stable-2.16]", "[2.16]", "[bp-2.16]", "[8.3.x]",
# "[v0.19.x]", "[release/3.5.x]", "[maintenance/2.0.x]"), "[release-1.28]". A component tag
# ("[AMD]", "[mypyc]", "[Docs]") is none of these.
_BRANCH_TAG = re.compile(
    r"(?i)^(?:(?:back-?port(?:ed)?|cherry[\s_-]?pick(?:ed)?)(?:[\s/:_-]+[\w./-]+)?|"
    r"PR\s+#\d+/[0-9a-f]{7,40}\s+back-?port|"
    r"[\w/ -]*?\bv?\d+\.(?:\d+|x)[\w./-]*|"
    r"(?:stable|release|maint(?:enance)?)[/_-][\w./-]+)$"
)


@functools.lru_cache(maxsize=4096)
def _is_branch_tag(text: str) -> bool:
    """Whether a leading tag's text is a branch tag; a fork's few tags ("AMD", "TLX") recur in
    thousands of titles, so each is matched once."""
    return bool(_BRANCH_TAG.match(text))


def _branch_tagged(subject: str, index: UpstreamIndex) -> list[str]:
    """A backport its branch tag says is one, titled with upstream's subject and only the
    fork's own number: "[stable-2.16] assemble: fixed missing parameter error (#83124)" carries
    upstream's "assemble: fixed missing parameter error (#82360)", "[2.19] Change X (#888)"
    upstream's "Change X (#880)". No number is read, so the fork's (#M) is never taken for
    upstream's; the words must be one upstream subject's exactly (one commit's alone), and a
    title that still ends in a number after the fork's is left to the rules above."""
    text = subject.strip()
    tagged = False
    while (m := _LEADING_TAG.match(text)) is not None and m.end() < len(text):
        tagged = tagged or _is_branch_tag(m.group(1).strip())
        text = text[m.end() :]
        if tagged:
            break
    if not tagged:
        return []
    while True:
        words = _TRAILING_PR.sub("", text, count=1)
        if not _TRAILING_PR.search(words):
            sha = index.numberless_subject(_unquoted(words))
            if sha:
                return [sha]
        m = _LEADING_TAG.match(text)  # the fork's tags after the branch's: "[2.16][ci] ..."
        if m is None or m.end() >= len(text):
            return []
        text = text[m.end() :]


# CPython's backports ("[3.12] gh-112345: Fix the tokenizer (GH-112346) (#112400)") write
# upstream's squash suffix "(#112346)" as "(GH-112346)"; only at the end, before the fork's (#M).
_GH_SUFFIX = re.compile(r"\(GH-(\d+)\)(?=\s*(?:\(#\d+\)\s*)?$)")


def _unquoted(text: str) -> str:
    """``text`` without one pair of quotes around all of it: upstream's own release branches
    title a pick ``[release/3.4] "<upstream subject (#N)>" (#M)``, with no pick tag."""
    text = text.strip()
    if len(text) > 2 and text[0] in _QUOTES and text[-1] == _QUOTES[text[0]]:
        return text[1:-1].strip()
    return text
