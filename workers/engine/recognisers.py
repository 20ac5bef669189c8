"""Recognise which upstream commits a fork commit carries, from its message alone.

Recognisers run in order and the first that finds something wins, so a weaker signal never
adds to a stronger one (a cherry-picked upstream body that links other upstream PRs must not
make those PRs "picked"):

1. ``trailer``    -- ``(cherry picked from commit <sha>)``, ``Reactor Backport Revision: <sha>``,
   ``Upstream-Commit: <sha>`` (configurable; several per commit are fine);
2. ``bundle``     -- ``[Cherry-pick][BUNDLE] Cherry-pick K upstream(#a #b ...)`` plus the PRs and
   shas listed in the body outside Deferred / Won't-port sections;
3. ``pr-subject`` -- ``[Cherry-pick] '<upstream subject> (#N)' (#M)``: N is upstream's PR, M is
   the fork's own and is never read as an upstream reference;
4. ``subject``    -- the fork subject is an upstream subject verbatim (optionally followed by the
   fork's own ``(#M)``);
5. ``pr-pattern`` -- configured regexes with a group ``pr``;
6. ``body-link``  -- ``<upstream url>/pull/N`` in the body, outside excluded sections and not
   after prose that says the PR is only related ("regression from <link>", "similar to <link>").

A fork's own ``(#M)`` (GitHub's squash-merge suffix, also after a title GitHub cut with ``…``)
is never read as an upstream PR. Fork reverts are named by ``This reverts commit <sha>``, by the
reverted subject, or as GitHub's Revert button writes them (PR title, ``Reverts owner/repo#M``).

Patch-id equality (the recogniser of last resort) needs git and lives in ``ledger.py``.
Everything here is pure: plain strings in, references out.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from core.config import DEFAULT_TRAILER_PATTERNS
from workers.engine.history import Commit

TRAILER = "trailer"
BUNDLE = "bundle"
PR_SUBJECT = "pr-subject"
SUBJECT = "subject"
PR_PATTERN = "pr-pattern"
BODY_LINK = "body-link"
SAME_CHANGE = "same-change"  # same author, author date and subject
PATCH_ID = "patch-id"
MERGE = "merge"

# Leading "[Tag]" groups of a pick subject: "[Cherry-pick][RESOLVED][URGENT] rest".
_PICK_TAG = re.compile(r"(?i)^cherry[\s_-]?pick(?:ed)?$|^backport$|^pick$")
_LEADING_TAG = re.compile(r"^\s*\[([^\]\n]*)\]\s*")
_PROCESS_TAG = re.compile(
    r"(?i)^(cherry[\s_-]?pick(?:ed)?|backport|pick|bundle|resolved|conflicts?|urgent|manual|wip|forksync)$"
)
_BUNDLE_TAG = re.compile(r"(?i)^bundle$")
# "[Hotfix]" is not ours: upstream subjects use it (it stays part of the subject to match).
_URGENT_TAG = re.compile(r"(?i)^urgent$")
# The list ends at its ")"; a title GitHub cut has none, and the "(#M)" merge suffix that follows
# the cut is the fork's own PR, not part of the list.
_BUNDLE_LIST = re.compile(r"(?i)\bupstream[^(]{0,40}?\(([^()]*#\d[^()]*)(\))?")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|\|)\s*")
_CUT_NUMBER = re.compile(r"#\d+\s*(?:…|\.\.\.)?\s*$")
_TRAILING_PR = re.compile(r"\s*\(#(\d+)\)\s*$")
_HASH_NUM = re.compile(r"#(\d+)\b")
_SHA_TOKEN = re.compile(r"(?<![0-9a-zA-Z])([0-9a-f]{7,40})(?![0-9a-zA-Z])")
_PULL_LINK = re.compile(r"https?://(?:www\.)?github\.com/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/pull/(\d+)")
_COMMIT_LINK = re.compile(r"https?://(?:www\.)?github\.com/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/commit/([0-9a-f]{7,40})")
_SLUG_REF = re.compile(r"(?<![\w/.-])([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#(\d+)\b")
_REVERTS_SHA = re.compile(r"This reverts commit ([0-9a-f]{7,40})")
_REVERTS_PR = re.compile(r"(?m)^\s*Reverts ([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#(\d+)\b")
_REVERT_SUBJECT = re.compile(r"^Revert\s+[\"'“‘](.*)[\"'”’]\s*(?:\(#\d+\))?\s*$")
_QUOTES = {"'": "'", '"': '"', "“": "”", "‘": "’", "`": "`"}

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


@dataclass(frozen=True)
class Rules:
    """The configurable part of recognition, compiled once."""

    trailer_patterns: tuple[re.Pattern[str], ...]
    pr_patterns: tuple[re.Pattern[str], ...]
    upstream_slug: str | None  # "owner/repo" of upstream on GitHub, lower case, when known
    fork_slug: str | None

    @classmethod
    def build(
        cls,
        trailer_patterns: Sequence[str] = DEFAULT_TRAILER_PATTERNS,
        pr_patterns: Sequence[str] = (),
        upstream_url: str | None = None,
        fork_url: str | None = None,
    ) -> Rules:
        return cls(
            trailer_patterns=tuple(re.compile(p) for p in trailer_patterns),
            pr_patterns=tuple(re.compile(p) for p in pr_patterns),
            upstream_slug=_slug(upstream_url),
            fork_slug=_slug(fork_url),
        )


def _slug(url: str | None) -> str | None:
    if not url:
        return None
    m = re.search(r"github\.com[/:]([^/]+/[^/]+?)(?:\.git)?/*$", url)
    return m.group(1).lower() if m else None


class UpstreamIndex:
    """Lookups over the upstream range: by sha (or unique prefix), PR number, and subject.

    ``side`` maps commits that upstream brought in through merge commits (not on its
    first-parent history) to the first-parent merge that landed them, so a pick of one of
    them counts for that merge.
    """

    def __init__(self, commits: Sequence[Commit], side: Mapping[str, str] | None = None) -> None:
        self.position = {c.sha: i for i, c in enumerate(commits)}
        self.side = dict(side or {})
        self._sorted = sorted({*self.position, *self.side})
        self.by_pr: dict[int, list[str]] = {}
        self.by_subject: dict[str, list[str]] = {}
        self._subjects_sorted: list[str] | None = None
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

    def pr(self, number: int) -> str | None:
        """The upstream commit of PR ``number``; with several (a re-land), the newest."""
        shas = self.by_pr.get(number)
        return shas[-1] if shas else None

    def subject(self, text: str) -> str | None:
        shas = self.by_subject.get(normalise(text))
        return shas[-1] if shas else None

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


@dataclass(frozen=True)
class Recognition:
    """What one fork commit carries: upstream shas (upstream order) and the recogniser used."""

    upstream: tuple[str, ...]
    recogniser: str | None
    urgent: bool = False


NOTHING = Recognition((), None)


def recognise(commit: Commit, index: UpstreamIndex, rules: Rules) -> Recognition:
    """Apply the recognisers in order to one fork commit; the first that finds something wins."""
    message = commit.message or commit.subject
    subject = commit.subject
    tags, rest = _split_tags(subject)
    urgent = any(_URGENT_TAG.match(t) for t in tags)

    found = _trailers(message, index, rules)
    if found:
        return _result(found, TRAILER, index, urgent)
    is_pick = any(_PICK_TAG.match(t) for t in tags)
    if is_pick and any(_BUNDLE_TAG.match(t) for t in tags):
        found = _bundle(rest, message, index, rules)
        if found:
            return _result(found, BUNDLE, index, urgent)
    if is_pick:
        found = _pick_subject(rest, index)
        if found:
            return _result(found, PR_SUBJECT, index, urgent)
    found = _same_subject(subject, index)
    if found:
        return _result(found, SUBJECT, index, urgent)
    found = _pr_patterns(message, index, rules)
    if found:
        return _result(found, PR_PATTERN, index, urgent)
    found = _body_links(message, index, rules)
    if found:
        return _result(found, BODY_LINK, index, urgent)
    return Recognition((), None, urgent)


def _result(found: Iterable[str], how: str, index: UpstreamIndex, urgent: bool) -> Recognition:
    ordered = tuple(sorted(set(found), key=index.position.__getitem__))
    return Recognition(ordered, how, urgent)


def _split_tags(subject: str) -> tuple[list[str], str]:
    """Leading process tags (``[Cherry-pick]``, ``[BUNDLE]``, ``[RESOLVED]``, ``[URGENT]``) and
    the rest of the subject, which keeps upstream's own tags (``[AMD] ...``) for matching."""
    tags: list[str] = []
    rest = subject.strip()
    while (m := _LEADING_TAG.match(rest)) is not None:
        tag = m.group(1).strip()
        if not _PROCESS_TAG.match(tag):
            break
        tags.append(tag)
        rest = rest[m.end() :]
    return tags, rest.strip()


def _trailers(message: str, index: UpstreamIndex, rules: Rules) -> list[str]:
    found = []
    for pattern in rules.trailer_patterns:
        for m in pattern.finditer(message):
            sha = index.sha(m.group("sha"))
            if sha:
                found.append(sha)
    return found


def _bundle(rest: str, message: str, index: UpstreamIndex, rules: Rules) -> list[str]:
    found: list[str] = []
    m = _BUNDLE_LIST.search(rest)
    suffix = _TRAILING_PR.search(rest)
    if m and suffix and suffix.group(0)[0].isspace() and m.start(1) - 1 == rest.index("(", suffix.start()):
        m = None  # "Cherry-pick 3 upstream PRs (#M)": GitHub's merge suffix, the fork's own PR, is no list
    if m:
        listed = m.group(1)
        if not m.group(2):  # a title cut short: its last number may be cut too
            listed = _CUT_NUMBER.sub("", listed)
        found.extend(s for s in (index.pr(int(n)) for n in _HASH_NUM.findall(listed)) if s)
    body = message.split("\n", 1)[1] if "\n" in message else ""
    for line, listy in _included(body):
        # "#N" only in lists of picks ("- #123 ...", "Picked: #1 #2", table rows): in prose it
        # may be a fork PR or an issue ("follows #1870"). Links and shas are unambiguous anywhere.
        for n in _listed_numbers(line) if listy else ():
            sha = index.pr(int(n))
            if sha:
                found.append(sha)
        for token in _SHA_TOKEN.findall(line):
            sha = index.sha(token)
            if sha:
                found.append(sha)
        found.extend(_links_in(line, index, rules))
    return found


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
    if len(numbers) >= 2:
        sha = index.pr(numbers[1])
        return [sha] if sha else []
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
            return [sha] if sha else []
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


def _same_subject(subject: str, index: UpstreamIndex) -> list[str]:
    """The fork subject equals an upstream subject that carries a PR number, optionally + (#M)."""
    for text in (subject, _TRAILING_PR.sub("", subject)):
        sha = index.subject(text)
        if sha and _TRAILING_PR.search(text):
            return [sha]
    return []


def _pr_patterns(message: str, index: UpstreamIndex, rules: Rules) -> list[str]:
    found = []
    for pattern in rules.pr_patterns:
        for m in pattern.finditer(message):
            sha = index.pr(int(m.group("pr")))
            if sha:
                found.append(sha)
    return found


def _body_links(message: str, index: UpstreamIndex, rules: Rules) -> list[str]:
    body = message.split("\n", 1)[1] if "\n" in message else ""
    found: list[str] = []
    for line in _included_lines(body):
        found.extend(_links_in(_carried_part(line), index, rules))
    return found


# Prose that names an upstream PR without carrying it: "regression from <link>", "similar to
# <link>", "works around the break caused by <link>" (fork-only work often says so).
_NOT_CARRIED_PROSE = re.compile(
    r"(?i)\b(?:related|similar|like|unlike|follow[\s-]?ups?|regress\w*|introduced|caused|broke\w*|"
    r"break(?:s|ing|age)?|depend\w*|prerequisite|see also|inspired|supersed\w*|revert\w*|"
    r"conflict\w*|workaround|works? around|because|once|until|blocked|waiting)\b"
)


def _carried_part(line: str) -> str:
    """The part of a body line a body link may be read from: before any such prose."""
    m = _NOT_CARRIED_PROSE.search(line)
    return line[: m.start()] if m else line


def _links_in(line: str, index: UpstreamIndex, rules: Rules) -> list[str]:
    """Upstream PRs and commits a line names: ``.../pull/N``, ``.../commit/<sha>``, ``owner/repo#N``."""
    found = []
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


def _is_upstream(slug: str, rules: Rules) -> bool:
    slug = slug.lower()
    if rules.upstream_slug is not None:
        return slug == rules.upstream_slug
    return rules.fork_slug is None or slug != rules.fork_slug


def _included_lines(body: str) -> list[str]:
    """Body lines outside sections such as "Deferred (backlog)" or "Won't port"."""
    return [text for text, _ in _included(body)]


def _included(body: str) -> list[tuple[str, bool]]:
    """(text, is a list of picks) for body lines outside excluded sections.

    A line is a list of picks when it is a list item or table row, sits under a heading such
    as "Picked", or follows such a label inline ("Picked: #1 #2").
    """
    kept: list[tuple[str, bool]] = []
    excluded = False
    picked_section = False
    for line in body.splitlines():
        if _OWN_REVIEW_LINE.match(line) or _is_pin_line(line):
            continue
        label, after, is_heading = _heading(line)
        if label is not None:
            label_excluded = bool(_EXCLUDED_SECTION.search(label))
            label_picked = bool(_INCLUDED_SECTION.search(label)) and not label_excluded
            if is_heading:
                if label_excluded:
                    excluded, picked_section = True, False
                elif label_picked or not after:
                    excluded, picked_section = False, label_picked
            if label_excluded:
                continue  # "Deferred: #12 #13" excludes its own line too
            if after and not excluded:
                kept.append((after, label_picked or picked_section or bool(_LIST_ITEM.match(after))))
            continue
        if not excluded:
            kept.append((line, picked_section or bool(_LIST_ITEM.match(line))))
    return kept


# Words of the pin lines a bundle body keeps ("The frontier moves to <sha> (#N)", "| contiguous
# pin | <sha> |"): whatever such a line names is a position, not a pick. A listed upstream
# subject that happens to use one of the words ends in its "(#N)" and is kept.
_PIN_WORDS = re.compile(r"(?i)\bfrontier\b|\bcontiguous[\s_-]+pin|\bpin(?:s|ned)?\b")


def _is_pin_line(line: str) -> bool:
    return bool(_PIN_WORDS.search(line)) and not _TRAILING_PR.search(line.rstrip(" \t|"))


_HEADING = re.compile(r"^\s*(#{1,6}\s+|[-*+]\s+)?(?:\*\*|__)?\s*([A-Za-z][A-Za-z'’ /&_-]{1,40}?)\s*((?:\([^)]*\)\s*)*)(?:\*\*|__)?\s*:(?!//)\s*(?:\*\*|__)?\s*(.*)$")
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


# --------------------------------------------------------------------------- reverts


class ForkIndex:
    """Lookups over fork commits for revert resolution: by sha prefix and by subject."""

    def __init__(self, commits: Sequence[Commit]) -> None:
        self.position = {c.sha: i for i, c in enumerate(commits)}
        self._sorted = sorted(self.position)
        self.by_subject: dict[str, list[str]] = {}
        # A squash-merged fork PR is "<PR title> (#M)", and GitHub's Revert button titles its
        # revert after the PR title: 'Revert "<PR title>"', with a body "Reverts owner/repo#M".
        self.by_title: dict[str, list[str]] = {}
        self.by_number: dict[int, list[str]] = {}
        for c in commits:
            self.by_subject.setdefault(normalise(c.subject), []).append(c.sha)
            m = _TRAILING_PR.search(c.subject)
            if m is not None:
                self.by_title.setdefault(normalise(c.subject[: m.start()]), []).append(c.sha)
                self.by_number.setdefault(int(m.group(1)), []).append(c.sha)

    def sha(self, text: str) -> str | None:
        i = bisect.bisect_left(self._sorted, text.lower())
        hits = [h for h in self._sorted[i : i + 2] if h.startswith(text.lower())]
        return hits[0] if len(hits) == 1 else None


def revert_target(commit: Commit, fork: ForkIndex, index: UpstreamIndex, rules: Rules) -> str | bool | None:
    """The fork commit that ``commit`` reverts; True when it is a revert of something unknown.

    A revert of an *upstream* commit (``This reverts commit <upstream sha>``, or a subject that
    is an upstream revert's subject) is not a fork revert: it may be a pick of that revert.
    """
    message = commit.message or commit.subject
    for m in _REVERTS_SHA.finditer(message):
        target = fork.sha(m.group(1))
        if target and target != commit.sha:
            return target
        if index.sha(m.group(1)):
            return None
    subj = _REVERT_SUBJECT.match(commit.subject)
    if not subj:
        return None
    if _trailers(message, index, rules) or _same_subject(commit.subject, index):
        return None
    inner = subj.group(1)
    here = fork.position.get(commit.sha, len(fork.position))

    def newest_before(shas: Sequence[str] | None) -> str | None:
        earlier = [s for s in shas or () if fork.position[s] < here]
        return earlier[-1] if earlier else None

    for text in (inner, _TRAILING_PR.sub("", inner)):
        target = newest_before(fork.by_subject.get(normalise(text)))
        if target:
            return target
    # GitHub's Revert button: the inner text is the fork PR's title, and "Reverts <fork>#M" its
    # number (an upstream commit the fork merged may end in the same number: never a target).
    target = newest_before(fork.by_title.get(normalise(inner)))
    if target:
        return target
    for slug, number in _REVERTS_PR.findall(message):
        if not (rules.upstream_slug and slug.lower() == rules.upstream_slug):
            own = [s for s in fork.by_number.get(int(number), ()) if s not in index.position and s not in index.side]
            target = newest_before(own)
            if target:
                return target
    return True
