"""Recognise which upstream commits a fork commit carries, from its message alone.

A fork commit carries the union of what its strong signals name (a bundle carries what its
title, its list items and its trailers name, not what the first of them names):

1. ``trailer``    -- ``Reactor Cherry-pick|Backport Revision: <sha>``, ``(cherry picked from
   commit <sha>)``, ``Upstream-Commit: <sha>``, ``Original Commit: <sha>`` (configurable;
   several per commit are fine); ``change-id``: Gerrit's ``Change-Id: I<40 hex>``, which a
   cherry-pick keeps, names the upstream commit with the same id (``build_ledger`` reads
   upstream's ids only when a fork message has one);
2. ``bundle``     -- a bundle title's list (``Cherry-pick K upstream(#a #b ...)``, ``#a #b (#M)``,
   ``... dependents (#a #b ...)``, lists GitHub cut with ``…`` and continued in the body) plus
   the PRs and shas of the body's Picked lists (not its Deferred / Won't-port sections, whose
   items become decisions, nor items marked NO-OP);
3. ``pr-subject`` -- ``[Cherry-pick] '<upstream subject> (#N)' (#M)`` after any fork prefix
   (titles.py): N is upstream's PR, M is the fork's own and is never read as upstream's;
4. ``pr-form``    -- a title or body line that starts by saying it backports upstream PRs, as
   release tooling writes it: MeeseeksDev's ``Backport PR #N on branch B (<subject>) (#M)`` and
   ``Backport PR #N: <subject>``, NumPy's and Electron's ``Backport of #N.`` (``#a, #b, and
   #c``), Kubernetes' ``Automated cherry pick of #N: <subject> #K: <subject>`` and ``Cherry pick
   of #N on release-1.28.``, patchback's ``[PR #N/<short sha> backport][B] <subject> (#M)`` (the
   sha read) and ``This is a backport of PR #N`` (read in the fork's merge commits too, where
   that tooling puts it, with the branch names it gives: ``patchback/backports/B/<sha>/pr-N``).
   N is upstream's when both sides are one GitHub repository (a release branch: one number
   space), else only when the subject beside it reads as upstream's subject of N.

Only when those name nothing: 5. ``subject`` -- the fork subject is an upstream subject
verbatim (optionally + the fork's ``(#M)``, after the fork's own leading tags, or without
upstream's tags with upstream's number kept; CPython's ``(GH-N)`` reads as ``(#N)``), or after
a tag naming the branch or saying backport (``[stable-2.16]``, ``[2.19]``, ``[Backport 2.x]``)
upstream's words with only the fork's ``(#M)`` (no number read); 6.
``pr-pattern`` -- configured regexes with a group ``pr``; 7. ``body-link`` -- ``<upstream
url>/pull/N`` in the body, outside excluded
sections, when the title is a pick, the link is under a pick label (``Upstream:``) or its
sentence says it is picked, and not after prose that says the PR is only related
("regression from <link>").

Text the message quotes from upstream (fenced blocks, ``>`` lines) is never read. Decisions the
message records (``Reactor Defer|WontPort Revision``, a bundle's Deferred / Won't-port items)
come back in :attr:`Recognition.decided`. Reverts are read in ``reverts.py``; patch-id equality
(the recogniser of last resort) needs git and lives in ``ledger.py``. Everything here is pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from workers.engine.history import Commit
from workers.engine.recognise.body import _included, own_text
from workers.engine.recognise.bodylinks import (
    _NOT_CARRIED_PROSE,
    _TITLE_PICK_PROSE,
    _body_links,
    _carried_part,
    _links_in,
)
from workers.engine.recognise.bundles import _bundle_sections, _continuation
from workers.engine.recognise.index import UpstreamIndex, _reads_as
from workers.engine.recognise.model import (
    BODY_LINK,
    BUNDLE,
    CHANGE_ID,
    NOTHING,
    PR_FORM,
    PR_PATTERN,
    PR_SUBJECT,
    SUBJECT,
    TRAILER,
    Recognition,
)
from workers.engine.recognise.picksubject import _pick_subject
from workers.engine.recognise.rules import Rules
from workers.engine.recognise.subjects import _local_numbers, _same_subject
from workers.engine.recognise.tokens import _LEADING_TAGS, _TRAILING_PR
from workers.engine.recognise.trailers import _CHANGE_ID_TRAILER, _markers, _pr_patterns
from workers.engine.titles import bundle_numbers, parse_title

_ORDER = (TRAILER, CHANGE_ID, BUNDLE, PR_SUBJECT, PR_FORM, SUBJECT, PR_PATTERN, BODY_LINK)


def recognise(commit: Commit, index: UpstreamIndex, rules: Rules) -> Recognition:
    """What a fork commit carries: the union of what its trailers, its pick title (a bundle's
    list, or the quoted upstream subject) and, for bundles, its body lists name; then, only
    when those name nothing, an upstream subject verbatim, configured PR patterns, body links.

    Text quoted from upstream (fenced blocks, ``>`` lines: "Upstream commit message: ```> ...```")
    is never read: links and trailers in upstream's own message are not picks of this commit.
    """
    message = commit.message or commit.subject
    subject = _local_numbers(commit.subject, rules)
    title = parse_title(subject)
    body = own_text(message.split("\n", 1)[1] if "\n" in message else "")
    own = f"{subject}\n{body}"
    named: dict[str, str] = {}

    def add(shas: Iterable[str | None], how: str) -> None:
        for sha in shas:
            if sha:
                named.setdefault(sha, how)

    marks = _markers(own, index, rules)
    add((sha for sha, kind in marks if kind == "carry"), TRAILER)
    if index.change_ids and "Change-Id:" in own:
        add((index.change(cid) for cid in _CHANGE_ID_TRAILER.findall(own)), CHANGE_ID)
    decided = tuple((sha, kind, "trailer") for sha, kind in marks if kind != "carry")
    if title.is_pick and title.bundle:
        sections = _bundle_sections(body, index, rules)
        not_carried = sections.not_carried | {sha for sha, _, _ in (*decided, *sections.decided)}
        listed = [index.pr(n) for n in bundle_numbers(title.rest, _continuation(body))]
        add((s for s in listed if s not in not_carried), BUNDLE)
        add((s for s in sections.picked if s not in not_carried), BUNDLE)
        if not named:
            add(
                (s for line in sections.link_lines for s in _links_in(_carried_part(line), index, rules)),
                BUNDLE,
            )
        decided = sections.decided + decided  # a trailer is the more explicit record: it is read last
    elif title.is_pick:
        add(_pick_subject(title.rest, index), PR_SUBJECT)
    if not title.bundle:  # a bundle's body is read by its sections
        add(_pr_forms(subject, body, index, rules), PR_FORM)
    if not named:
        add(_same_subject(subject, index), SUBJECT)
    if not named:
        add(_pr_patterns(own, index, rules), PR_PATTERN)
    if not named:
        title_picks = title.is_pick or bool(_TITLE_PICK_PROSE.search(subject))
        add(_body_links(body, index, rules, title_picks=title_picks), BODY_LINK)
    decided = tuple(d for d in dict.fromkeys(decided) if d[0] not in named)
    if not named:
        return Recognition((), None, title.urgent, (), decided)
    ordered = tuple(sorted(named, key=index.position.__getitem__))
    strongest = min(named.values(), key=_ORDER.index)
    return Recognition(ordered, strongest, title.urgent, tuple(named[s] for s in ordered), decided)


def recognise_merge(commit: Commit, index: UpstreamIndex, rules: Rules) -> Recognition:
    """What a fork merge commit carries: only what its message's PR forms name (Kubernetes'
    ``cherry_pick_pull.sh`` says ``Automated cherry pick of #N: <subject>`` in the merge of its
    PR, whose own commits are upstream's copied without a word); and, where both sides are one
    repository, the numbers the merged branch's name gives in the shape backport tooling names
    it (:func:`_branch_numbers`). Nothing else in a merge's message is read: ``Merge branch
    'main'`` and its conflict lists name no picks."""
    message = commit.message or commit.subject
    body = own_text(message.split("\n", 1)[1] if "\n" in message else "")
    # The merge's subject may be the PR's title itself ("Backport PR #N on branch 8.x (...) (#M)");
    # GitHub's merge body starts with the PR's title: read as a title too ("... (Backport of #3402)").
    title, _, rest = body.strip("\n").partition("\n")
    found = _pr_forms(commit.subject, body, index, rules) + _pr_forms(title, rest, index, rules)
    one_space = rules.upstream_slug is not None and rules.upstream_slug == rules.fork_slug
    # "Partial backport of #12564" on branch backport-12564 carries what it says, not the branch
    # ("API: Partially revert unique" is the PR's own subject: no pick word, not about the pick).
    partial = any(_PARTIAL.search(line) and _FORM_HINT.search(line) for line in body.splitlines())
    if one_space and not partial:
        found += [s for s in (index.pr(n) for n in _branch_numbers(commit.subject)) if s]
    if not partial:  # a sha is upstream's wherever the branch lives
        found += [s for s in (index.sha(t) for t in _branch_shas(commit.subject)) if s]
    if not found:
        return NOTHING
    ordered = tuple(sorted(dict.fromkeys(found), key=index.position.__getitem__))
    return Recognition(ordered, PR_FORM, False, (PR_FORM,) * len(ordered))


_PARTIAL = re.compile(r"(?i)\bpartial(?:ly)?\b|\bparts? of\b|\bportions? of\b|\badapted\b")
_MERGED_BRANCH = re.compile(r"^Merge pull request #\d+ from [\w.-]+/(?P<branch>\S+)\s*$")
# Branch names backport tooling gives: MeeseeksDev "auto-backport-of-pr-13685-on-7.x", NumPy's
# "backport-25971-25972", Kubernetes' "automated-cherry-pick-of-#17745-#17747-upstream-release-1.34",
# a hand-made "release-1.34-cherry-pick-17879". The whole name has the shape, or nothing is read.
_BACKPORT_BRANCH = re.compile(
    r"(?i)^(?:(?:auto-)?backport-(?:of-)?(?:pr-)?(?P<a>\d+(?:-\d+)*)(?:-on-\S+)?|"
    r"automated-cherry-pick-of-(?P<b>#\d+(?:-#\d+)*)-[\w.-]+|"
    r"(?:[\w.]+-)?cherry-pick-(?P<c>\d+(?:-\d+)*))$"
)


# patchback's branch names the upstream commit itself: "patchback/backports/9.0.x/<sha>/pr-14550".
_PATCHBACK_BRANCH = re.compile(r"^patchback/backports/[^/\s]+/(?P<sha>[0-9a-f]{40})/pr-\d+$")


def _merged_branch(subject: str) -> str:
    """The branch a ``Merge pull request #M from owner/<branch>`` subject names ("" for another subject)."""
    m = _MERGED_BRANCH.match(subject)
    return m.group("branch") if m else ""


def _branch_shas(subject: str) -> list[str]:
    """The upstream shas a merge's ``Merge pull request #M from owner/<branch>`` names in its branch."""
    b = _PATCHBACK_BRANCH.match(_merged_branch(subject))
    return [b.group("sha")] if b else []


def _branch_numbers(subject: str) -> list[int]:
    """The PR numbers a merge's ``Merge pull request #M from owner/<branch>`` names in its branch."""
    b = _BACKPORT_BRANCH.match(_merged_branch(subject))
    if b is None:
        return []
    return [int(n) for n in re.findall(r"\d+", b.group("a") or b.group("b") or b.group("c"))]


# The PR numbers a backport form names: "#1", "#1, #2 and #3", "gh-4 & #5".
_NUMBERS = r"(?P<numbers>(?:#|gh-)\d+\b(?:[ \t]*(?:,[ \t]*and|,|&|and)[ \t]*(?:#|gh-)\d+\b)*)"

# A line that starts by saying it backports or cherry-picks upstream PRs (after a title's
# "[tags]" or "DOC: "): the verb, then the numbers at once ("Backport PR #N", "Backport of #a,
# #b, and #c", "Automated cherry pick of #N", "backport gh-N", "Manually backport #N: ...").
# Prose that mentions a backport ("the backport of #N broke ...", "Partial backport of #N")
# does not start so and is not read.
_PR_FORM = (
    r"^[ \t]*(?:\*\*|__)?(?:\[[^\]\n]*\][ \t]*)*(?-i:[A-Z][A-Za-z]{1,11}:[ \t]+)?"
    r"(?:this[ \t]+(?:is|was)[ \t]+an?[ \t]+)?(?:manual(?:ly)?[ \t]+)?(?P<verb>back-?port(?:ed)?|(?P<k8s>automated[ \t]+)?cherry[ \t_-]?pick(?:ed)?)"
    r"(?:[ \t]+of)?(?:[ \t]+PRs?)?[ \t]+" + _NUMBERS + r"(?P<tail>.*)$"
)
_PR_FORM_LINE = re.compile("(?i)" + _PR_FORM)


def _form_line_in(body: str) -> bool:
    """Whether some line of ``body`` starts with a PR form: only the lines with the verb are tried."""
    low = body.lower()  # a case-sensitive scan of it is several times faster
    if "pick" not in low and "backport" not in low and "back-port" not in low:
        return False
    words = _FORM_WORD.finditer(low) if len(low) == len(body) else _FORM_HINT.finditer(body)
    for m in words:  # offsets into body (lower() kept its length, or body was scanned itself)
        start = body.rfind("\n", 0, m.start()) + 1
        end = body.find("\n", m.end())
        line = body[start : len(body) if end < 0 else end]
        if _PR_FORM_LINE.match(line) or _PATCHBACK_TAG.match(line):  # "^" holds at a slice's start
            return True
    return False


# A title that ends by saying so: "Update Li thresholding (Backport of #3402)", "... (backport
# of #10401) (#10420)"; a partial or adapted backport says more and is not read.
_PR_FORM_SUFFIX = re.compile(
    r"(?i)\((?:back-?port(?:ed)?|cherry[ \t_-]?pick(?:ed)?)(?:[ \t]+of)?(?:[ \t]+PRs?)?[ \t]+"
    + _NUMBERS
    + r"[ \t]*\)"
    r"(?:[ \t]*\(#\d+\))?[ \t]*$"
)
# patchback's title tag (aiohttp, pytest, ansible collections): "[PR #13275/b2b7b50c backport][3.15]
# Move flaky perf test to codspeed (#13276)", the upstream PR and its merged commit's short sha.
_PATCHBACK_TAG = re.compile(r"(?i)^\s*\[PR[ \t]+#(?P<number>\d+)/(?P<sha>[0-9a-f]{7,40})[ \t]+back-?port\]")
_FORM_HINT = re.compile(r"(?i)back-?port|cherry[ \t_-]?pick")
_FORM_WORD = re.compile(r"back-?port|cherry[ \t_-]?pick")  # _FORM_HINT on lower-cased text
_FORM_NUMBER = re.compile(r"(?i)(?:#|gh-)(\d+)\b")
# What follows the numbers: MeeseeksDev's " on branch v3.7.x (<subject>)" or ": <subject>".
_ON_BRANCH = re.compile(r"(?i)^\s+on\s+(?:branch\s+)?\S+\s+\((?P<subject>.*)\)\s*(?:\(#\d+\)\s*)?$")
_COLON_SUBJECT = re.compile(r"^\s*:\s*(?P<subject>.*?)\s*$")
# Kubernetes joins several picks into one title: "#15602: gce: Add bastions#15332: gce: Update ...",
# and in a merge's body puts each one after the first on a line of its own: "#17747: Skip ...".
_K8S_MORE = re.compile(r"#(\d+):\s")
_K8S_NEXT = re.compile(r"^\s*#(\d+):\s")


def _pr_forms(subject: str, body: str, index: UpstreamIndex, rules: Rules) -> list[str]:
    """Upstream commits the title's and the body's PR-form lines name (see the module docstring).

    The fork's own ``(#M)`` after the form is never read. Body lines in excluded sections
    (Deferred, Related, ...) are skipped as for body links; a line whose words right after the
    numbers say the PR is not carried ("Backport of #N partially", "... is related") counts
    nothing. Where the two sides are different repositories a fork's ``#N`` may be its own PR:
    N is read only when the subject the form gives (or the commit's own) reads as upstream's."""
    suffix = _PR_FORM_SUFFIX.search(subject) if _FORM_HINT.search(subject) else None
    if (
        suffix is None
        and not _PR_FORM_LINE.match(subject)
        and not _PATCHBACK_TAG.match(subject)
        and not _form_line_in(body)
    ):
        return []  # no line starts with a form (most messages): the sections need no reading
    one_space = rules.upstream_slug is not None and rules.upstream_slug == rules.fork_slug
    found: list[str] = []
    lines = [subject] + [text for text, _ in _included(body, pins=True)]
    if suffix is not None:
        beside = _bare_subject(subject[: suffix.start()])
        for number in (int(n) for n in _FORM_NUMBER.findall(suffix.group("numbers"))):
            sha = index.pr(number)
            if sha and (one_space or _reads_as(index, sha, beside)):
                found.append(sha)
    for at, line in enumerate(lines):
        tag = _PATCHBACK_TAG.match(line)
        if tag is not None:
            # The tag names upstream's commit by its sha: read it (no number to mistake for the
            # fork's); its number only where the sha is not upstream's (as another form's number).
            sha = index.sha(tag.group("sha"))
            if sha is None:
                sha = index.pr(int(tag.group("number")))
                sha = sha if sha and (one_space or _reads_as(index, sha, _bare_subject(line))) else None
            if sha:
                found.append(sha)
            continue
        m = _PR_FORM_LINE.match(line)
        if m is None:
            continue
        tail = m.group("tail")
        numbers = [int(n) for n in _FORM_NUMBER.findall(m.group("numbers"))]
        if m.group("k8s"):
            numbers += [int(n) for n in _K8S_MORE.findall(tail)]
            for more in lines[at + 1 :]:
                k = _K8S_NEXT.match(more)
                if k is None:
                    break
                numbers.append(int(k.group(1)))
        said = _ON_BRANCH.match(tail) or _COLON_SUBJECT.match(tail)
        lead = re.split(r"[:(]", tail, maxsplit=1)[0]
        if said is None and _NOT_CARRIED_PROSE.search(lead):
            continue
        beside = said.group("subject") if said is not None else _bare_subject(subject)
        for number in numbers:
            sha = index.pr(number)
            if sha and (one_space or _reads_as(index, sha, _TRAILING_PR.sub("", beside))):
                found.append(sha)
    return found


def _bare_subject(subject: str) -> str:
    """The commit's subject without its leading ``[tags]`` and the fork's ``(#M)``."""
    return _TRAILING_PR.sub("", _LEADING_TAGS.sub("", subject))
