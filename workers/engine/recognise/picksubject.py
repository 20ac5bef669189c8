"""Recogniser ``pr-subject``: the upstream subject a pick title quotes (``[Cherry-pick]
'<upstream subject> (#N)' (#M)``, unquoted, cut by GitHub), never taking the fork's ``(#M)`` for
upstream's."""

from __future__ import annotations

from workers.engine.recognise.index import UpstreamIndex, _reads_as
from workers.engine.recognise.tokens import _LEADING_TAG, _QUOTES, _TRAILING_PR


def _pick_subject(rest: str, index: UpstreamIndex) -> list[str]:
    """``'<upstream subject> (#N)' (#M)`` or unquoted forms; never takes M for upstream."""
    # Extra tags between the pick tag and the quote ("[Cherry-pick][PARTIAL] '...'") are skipped.
    quoted = rest
    while quoted[:1] not in _QUOTES and (m := _LEADING_TAG.match(quoted)) is not None:
        quoted = quoted[m.end() :]
    if quoted[:1] in _QUOTES:
        return _quoted_pick(quoted, index)
    exact = index.subject(rest) or index.subject(_TRAILING_PR.sub("", rest))
    if exact:
        return [exact]
    numbers = []
    text = rest
    while (m := _TRAILING_PR.search(text)) is not None:
        numbers.append(int(m.group(1)))
        text = text[: m.start()]
    # Two trailing numbers: the last is the fork's own PR, the one before it upstream's.
    # One alone is ambiguous (upstream's N, or the fork's M on a retitled pick): only the
    # subject match above may accept it.
    # The text before them must read as upstream's subject of N, so a fork-pick of the fork's own
    # PR ("[Backport][TLX] Add kernels (#1364) (#1787)") never takes an upstream #1364.
    if len(numbers) >= 2:
        sha = index.pr(numbers[1])
        return [sha] if sha and _reads_as(index, sha, text) else []
    return []


def _quoted_pick(quoted: str, index: UpstreamIndex) -> list[str]:
    close = quoted.rfind(_QUOTES[quoted[0]])
    # The closing quote is the one only the fork's "(#M)" follows: a quote inside a cut title
    # ("'[Docs] Explain 'quotes' in the lo… (#M)") closes nothing.
    if close <= 0 or _TRAILING_PR.sub("", quoted[close + 1 :]).strip():
        return _unclosed_pick(quoted[1:], index)
    inner = quoted[1:close]
    exact = index.subject(inner)
    if exact:
        return [exact]
    m = _TRAILING_PR.search(inner)
    if m:
        sha = index.pr(int(m.group(1)))
        return [sha] if sha else []
    return _cut_subject(inner, index)


def _unclosed_pick(text: str, index: UpstreamIndex) -> list[str]:
    """A quote that never closes: GitHub cut the title (``'[AMD] Fix the lo…' (#M)`` arrives as
    ``'[AMD] Fix the lo… (#M)``) or the quote was forgotten. A trailing number here is the
    fork's own PR unless two are left, as in an unquoted pick subject."""
    exact = index.subject(text) or index.subject(_TRAILING_PR.sub("", text))
    if exact:
        return [exact]
    m = _TRAILING_PR.search(text)
    if m is not None:
        before = text[: m.start()]
        n = _TRAILING_PR.search(before)
        if n is not None:
            sha = index.pr(int(n.group(1)))
            return [sha] if sha and _reads_as(index, sha, before[: n.start()]) else []
        text = before
    return _cut_subject(text, index)


def _cut_subject(inner: str, index: UpstreamIndex) -> list[str]:
    # A title cut short by GitHub ("'[AMD] Fix the long ...…' (#M)"): a unique upstream subject
    # that starts with what is left, when enough is left to be sure.
    cut = inner.rstrip()
    for ellipsis in ("…", "..."):
        if cut.endswith(ellipsis):
            sha = index.subject_prefix(cut[: -len(ellipsis)])
            return [sha] if sha else []
    return []
