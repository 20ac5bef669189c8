"""Read what a fork revert undoes: a whole fork commit, or some upstream commits it carried.

Forms read (and nested: a revert of a revert is a reapply):

* ``This reverts commit <sha>`` -- of a fork commit (the whole pick or bundle), or of an
  upstream commit (``git revert <upstream sha>`` inside the fork: un-picks that one commit,
  whichever pick or bundle carried it);
* ``Revert "<subject>"`` -- the fork commit with that subject, or GitHub's Revert button on a
  fork PR (``Revert "<PR title>"``, body ``Reverts owner/fork#M``: the whole squashed PR, a
  bundle included); else the upstream commits ``<subject>`` names (a pick title or an upstream
  subject: un-picks those);
* Phabricator's ``Revert D<n>: <subject>``, ``Revert D<n>``, ``Back out "<subject>"`` and
  ``Back out D<n> "<subject>"``: ``D<n>`` is the fork commit whose ``Differential Revision:
  D<n>`` line names it, else the subject decides as above, else (one layer) the body's
  ``Original Phabricator Diff: D<n>`` line;

A commit that is a *pick* of an upstream revert (its trailer names an upstream commit, or its
subject is an upstream subject verbatim) is no fork revert. A revert whose target cannot be
named undoes what its innermost subject names, or, for a revert of a revert, re-carries it.
Pure: typed records in, :class:`Revert` out.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

from workers.engine.history import Commit
from workers.engine.recognise import recognise
from workers.engine.recognise.body import own_text
from workers.engine.recognise.index import UpstreamIndex, normalise
from workers.engine.recognise.rules import Rules
from workers.engine.recognise.subjects import _same_subject
from workers.engine.recognise.trailers import _trailers

_REVERTS_SHA = re.compile(r"This reverts commit ([0-9a-f]{7,40})")
_REVERTS_PR = re.compile(r"(?m)^\s*Reverts ([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#(\d+)\b")
_OWN_DIFF = re.compile(r"(?m)^\s*Differential Revision:[ \t]*(?:https?://\S*/)?(D\d+)\b")
_TRAILING_PR = re.compile(r"\s*\(#(\d+)\)\s*$")
_LEADING_TAG = re.compile(r"^\s*\[[^\]\n]*\]\s*")
_ORIGINAL_DIFF = re.compile(r"(?m)^\s*Original Phabricator Diff:[ \t]*(D\d+)\b")
# One layer of a revert subject: (D number or None, what is left).
_LAYERS = (
    re.compile(r"^Revert\s+[\"“](?P<inner>.*)[\"”]\s*(?:\(#\d+\))?\s*$"),
    re.compile(r"^Revert\s+'(?P<inner>.*)'\s*(?:\(#\d+\))?\s*$"),
    re.compile(r"^Revert\s+(?P<diff>D\d+)\s*(?::\s*(?P<inner>.+?))?\s*(?:\(#\d+\))?\s*$"),
    re.compile(r"^Back\s+out\s+(?:(?P<diff>D\d+)\s*)?[\"“](?P<inner>.*)[\"”]\s*(?:\(#\d+\))?\s*$"),
    re.compile(r"^Back\s+out\s+(?P<diff>D\d+)\s*(?:\(#\d+\))?\s*$"),
)
REAPPLY = "reapply"
_MAYBE = re.compile(r"(?i)^(?:revert|back\s+out)\b")


@dataclass(frozen=True)
class Revert:
    """What one fork revert undoes. All empty: a revert of something that cannot be named."""

    fork: str | None = None  # the fork commit it reverts, whole
    upstream: tuple[str, ...] = ()  # upstream commits it un-picks (from whatever carried them)
    reapplies: tuple[str, ...] = ()  # a revert of a revert nobody can name: re-carries these
    how: str = ""  # what named the target: sha, subject, diff, revert-button, upstream-sha, ...


class ForkIndex:
    """Lookups over fork commits for revert resolution: by sha prefix, subject, PR, D number."""

    def __init__(self, commits: Sequence[Commit]) -> None:
        self.position = {c.sha: i for i, c in enumerate(commits)}
        self._sorted = sorted(self.position)
        self.by_subject: dict[str, list[str]] = {}
        # A squash-merged fork PR is "<PR title> (#M)", and GitHub's Revert button titles its
        # revert after the PR title: 'Revert "<PR title>"', with a body "Reverts owner/repo#M".
        self.by_title: dict[str, list[str]] = {}
        self.by_number: dict[int, list[str]] = {}
        self.by_diff: dict[str, str] = {}  # Phabricator "Differential Revision: D<n>" of a non-revert
        for c in commits:
            self.by_subject.setdefault(normalise(c.subject), []).append(c.sha)
            m = _TRAILING_PR.search(c.subject)
            if m is not None:
                self.by_title.setdefault(normalise(c.subject[: m.start()]), []).append(c.sha)
                self.by_number.setdefault(int(m.group(1)), []).append(c.sha)
            if c.message and "Differential Revision:" in c.message:
                d = _OWN_DIFF.search(c.message)
                if d is not None:
                    self.by_diff.setdefault(d.group(1), c.sha)

    def sha(self, text: str) -> str | None:
        i = bisect.bisect_left(self._sorted, text.lower())
        hits = [h for h in self._sorted[i : i + 2] if h.startswith(text.lower())]
        return hits[0] if len(hits) == 1 else None


def layers(subject: str) -> tuple[list[str | None], str]:
    """Peel revert layers off a subject: the D numbers (outermost first; None where a layer
    names none) and the innermost text ("" when the innermost layer names no subject)."""
    diffs: list[str | None] = []
    text = subject.strip()
    while True:
        for pattern in _LAYERS:
            m = pattern.match(text)
            if m is not None:
                diffs.append(m.groupdict().get("diff"))
                text = (m.groupdict().get("inner") or "").strip()
                break
        else:
            return diffs, text
        if not text:
            return diffs, ""


def revert_of(commit: Commit, fork: ForkIndex, index: UpstreamIndex, rules: Rules) -> Revert | None:
    """What ``commit`` reverts, or None when it is no revert (it may be a pick)."""
    message = commit.message or commit.subject
    if not _MAYBE.match(commit.subject) and "This reverts commit" not in message:
        return None  # the cold path: most fork commits are no revert
    own = commit.subject + "\n" + own_text(message.split("\n", 1)[1] if "\n" in message else "")
    is_upstream_pick = bool(_trailers(own, index, rules) or _same_subject(commit.subject, index))
    here = fork.position.get(commit.sha, len(fork.position))

    def earlier(shas: Sequence[str] | None) -> str | None:
        before = [s for s in shas or () if fork.position[s] < here]
        return before[-1] if before else None

    for m in _REVERTS_SHA.finditer(own):
        target = fork.sha(m.group(1))
        if target and target != commit.sha and fork.position[target] < here:
            return Revert(fork=target, how="sha")
        up = index.sha(m.group(1))
        if up:
            return None if is_upstream_pick else Revert(upstream=(up,), how="upstream-sha")
    diffs, inner = layers(commit.subject)
    if not diffs or is_upstream_pick:
        return None
    if diffs[0] is not None:
        target = fork.by_diff.get(diffs[0])
        if target and target != commit.sha and fork.position[target] < here:
            return Revert(fork=target, how="diff")
    first = _first_inner(commit.subject)
    for text in (first, _TRAILING_PR.sub("", first)):
        target = earlier(fork.by_subject.get(normalise(text))) if text else None
        if target:
            return Revert(fork=target, how="subject")
    target = earlier(fork.by_title.get(normalise(first))) if first else None
    if target:
        return Revert(fork=target, how="revert-button")
    # A Phabricator diff imported from a fork PR is titled "[triton][PR] <PR title>", and its
    # back-out quotes that title: the fork commit is the PR's, without the import's leading tags.
    tail = first
    while (tag := _LEADING_TAG.match(tail)) is not None and tag.end() < len(tail):
        tail = tail[tag.end() :]
        for text in (tail, _TRAILING_PR.sub("", tail)):
            target = earlier(fork.by_subject.get(normalise(text)) or fork.by_title.get(normalise(text)))
            if target:
                return Revert(fork=target, how="subject")
    for slug, number in _REVERTS_PR.findall(own):
        if not (rules.upstream_slug and slug.lower() == rules.upstream_slug):
            own_prs = [
                s
                for s in fork.by_number.get(int(number), ())
                if s not in index.position and s not in index.side
            ]
            target = earlier(own_prs)
            if target:
                return Revert(fork=target, how="revert-button")
    if len(diffs) == 1 and diffs[0] is None:
        # Phabricator's back-out keeps the diff it backs out in its body ("Original Phabricator
        # Diff: D99796020") when the quoted title is not the commit's (a tag dropped). Only for one
        # layer: on a revert of a revert the line names the first diff, not the one reverted.
        for d in _ORIGINAL_DIFF.findall(own):
            target = fork.by_diff.get(d)
            if target and target != commit.sha and fork.position[target] < here:
                return Revert(fork=target, how="original-diff")
    # Nothing in the fork matches: the innermost subject says what the chain is about.
    named = (
        recognise(Commit(commit.sha, commit.parents, "", "", 0, 0, inner, ()), index, rules)
        if inner
        else None
    )
    found = named.upstream if named is not None else ()
    if len(diffs) % 2 == 0:
        return Revert(reapplies=found, how="subject") if found else Revert()
    return Revert(upstream=found, how="upstream-subject") if found else Revert()


def _first_inner(subject: str) -> str:
    """The text one revert layer wraps ("Revert D1: Revert D2: X" -> "Revert D2: X")."""
    text = subject.strip()
    for pattern in _LAYERS:
        m = pattern.match(text)
        if m is not None:
            return (m.groupdict().get("inner") or "").strip()
    return ""
