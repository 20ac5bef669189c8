"""Lookups over the upstream range (by sha or prefix, PR number, Change-Id, subject) and whether
a fork's words read as an upstream commit's subject."""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence

from workers.engine.history import Commit
from workers.engine.recognise.tokens import _LEADING_TAGS, _TRAILING_PR


class UpstreamIndex:
    """Lookups over the upstream range: by sha (or unique prefix), PR number, and subject.

    ``side`` maps commits that upstream brought in through merge commits (not on its
    first-parent history) to the first-parent merge that landed them, so a pick of one of
    them counts for that merge.
    """

    def __init__(
        self,
        commits: Sequence[Commit],
        side: Mapping[str, str] | None = None,
        change_ids: Mapping[str, str] | None = None,
    ) -> None:
        self.position = {c.sha: i for i, c in enumerate(commits)}
        self.side = dict(side or {})
        # Gerrit Change-Id → the upstream commit on the line that has it (or landed it).
        self.change_ids = {
            cid: self.side.get(sha, sha)
            for cid, sha in (change_ids or {}).items()
            if self.side.get(sha, sha) in self.position
        }
        self._sorted = sorted({*self.position, *self.side})
        self.by_pr: dict[int, list[str]] = {}
        self.by_subject: dict[str, list[str]] = {}
        self.subjects = {c.sha: c.subject for c in commits}
        self._subjects_sorted: list[str] | None = None
        self._untagged: dict[str, list[str]] | None = None
        self._numberless: dict[str, list[str]] | None = None
        for c in commits:
            pr = c.pr_number
            if pr is not None:
                self.by_pr.setdefault(pr, []).append(c.sha)
            self.by_subject.setdefault(normalise(c.subject), []).append(c.sha)

    def sha(self, text: str) -> str | None:
        """The upstream commit a full or abbreviated sha names, if exactly one."""
        text = text.lower()
        if len(text) == 40:
            found: str | None = text if text in self.position or text in self.side else None
        else:
            i = bisect.bisect_left(self._sorted, text)
            hits = [h for h in self._sorted[i : i + 2] if h.startswith(text)]
            found = hits[0] if len(hits) == 1 else None
        if found is not None and found in self.side:
            return self.side[found]
        return found

    def change(self, change_id: str) -> str | None:
        """The upstream commit of Gerrit change ``change_id`` (``I`` + 40 hex digits), if any."""
        return self.change_ids.get(change_id)

    def pr(self, number: int) -> str | None:
        """The upstream commit of PR ``number``; with several (a re-land), the newest."""
        shas = self.by_pr.get(number)
        return shas[-1] if shas else None

    def subject(self, text: str) -> str | None:
        shas = self.by_subject.get(normalise(text))
        return shas[-1] if shas else None

    def untagged_subject(self, text: str) -> str | None:
        """The one upstream commit whose subject, without its leading ``[tags]``, is ``text``
        (which ends in that commit's own ``(#N)``: a pick retitled without upstream's tags)."""
        if self._untagged is None:
            self._untagged = {}
            for sha, subject in self.subjects.items():
                bare = _LEADING_TAGS.sub("", subject)
                if bare != subject and _TRAILING_PR.search(bare):
                    self._untagged.setdefault(normalise(bare), []).append(sha)
        shas = self._untagged.get(normalise(text))
        if not shas or len(shas) != 1:
            return None
        m = _TRAILING_PR.search(text)
        return shas[0] if m is not None and self.pr(int(m.group(1))) == shas[0] else None

    def numberless_subject(self, text: str) -> str | None:
        """The one upstream commit whose subject, without its own ``(#N)``, is ``text`` (a
        backport titled by its branch keeps upstream's words but only the fork's number)."""
        if self._numberless is None:
            self._numberless = {}
            for sha, subject in self.subjects.items():
                self._numberless.setdefault(normalise(_TRAILING_PR.sub("", subject)), []).append(sha)
        shas = self._numberless.get(normalise(text))
        return shas[0] if shas and len(shas) == 1 else None

    def subject_prefix(self, text: str, minimum: int = 24) -> str | None:
        """The one upstream commit whose subject starts with ``text`` (long enough), if unique."""
        key = normalise(text)
        if len(key) < minimum:
            return None
        if self._subjects_sorted is None:
            self._subjects_sorted = sorted(self.by_subject)
        i = bisect.bisect_left(self._subjects_sorted, key)
        hits = [s for s in self._subjects_sorted[i : i + 2] if s.startswith(key)]
        if len(hits) != 1 or len(self.by_subject[hits[0]]) != 1:
            return None
        return self.by_subject[hits[0]][0]


def normalise(subject: str) -> str:
    return " ".join(subject.split()).casefold()


_WORD = re.compile(r"[a-z0-9_]+")


def _reads_as(index: UpstreamIndex, sha: str, text: str) -> bool:
    """``text`` is upstream's subject of ``sha`` (without its ``(#N)``), retitled a little at
    most: one starts with the other (a cut title), or most of their words are shared."""
    theirs = normalise(_TRAILING_PR.sub("", index.subjects.get(sha, "")))
    ours = normalise(text).rstrip("…. ")
    if not theirs or not ours:
        return False
    if theirs.startswith(ours) or ours.startswith(theirs):
        return True
    a, b = set(_WORD.findall(theirs)), set(_WORD.findall(ours))
    return len(a & b) * 2 >= len(a | b)
