"""Recogniser ``pr-form``: the lines backport tooling writes (MeeseeksDev, NumPy, Kubernetes'
``cherry_pick_pull.sh``, patchback) in titles and bodies, and the branch names it gives the
merges of its PRs (``auto-backport-of-pr-N-on-B``, ``patchback/backports/B/<sha>/pr-N``)."""

from __future__ import annotations

import re

from workers.engine.recognise.body import _included
from workers.engine.recognise.bodylinks import _NOT_CARRIED_PROSE
from workers.engine.recognise.index import UpstreamIndex, _reads_as
from workers.engine.recognise.rules import Rules
from workers.engine.recognise.tokens import _LEADING_TAGS, _TRAILING_PR

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
