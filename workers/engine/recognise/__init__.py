"""Recognise which upstream commits a fork commit carries, from its message alone.

A fork commit carries the union of what its strong signals name (a bundle carries what its
title, its list items and its trailers name, not what the first of them names):

1. ``trailer``    -- ``Reactor Cherry-pick|Backport Revision: <sha>``, ``(cherry picked from
   commit <sha>)``, ``Upstream-Commit: <sha>``, ``Original Commit: <sha>`` (configurable;
   several per commit are fine); ``change-id``: Gerrit's ``Change-Id: I<40 hex>``, which a
   cherry-pick keeps, names the upstream commit with the same id (``build_ledger`` reads
   upstream's ids only when a fork message has one) (:mod:`.trailers`);
2. ``bundle``     -- a bundle title's list (``Cherry-pick K upstream(#a #b ...)``, ``#a #b (#M)``,
   ``... dependents (#a #b ...)``, lists GitHub cut with ``…`` and continued in the body) plus
   the PRs and shas of the body's Picked lists (not its Deferred / Won't-port sections, whose
   items become decisions, nor items marked NO-OP) (:mod:`.bundles`);
3. ``pr-subject`` -- ``[Cherry-pick] '<upstream subject> (#N)' (#M)`` after any fork prefix
   (titles.py): N is upstream's PR, M is the fork's own and is never read as upstream's
   (:mod:`.picksubject`);
4. ``pr-form``    -- a title or body line that starts by saying it backports upstream PRs, as
   release tooling writes it: MeeseeksDev's ``Backport PR #N on branch B (<subject>) (#M)`` and
   ``Backport PR #N: <subject>``, NumPy's and Electron's ``Backport of #N.`` (``#a, #b, and
   #c``), Kubernetes' ``Automated cherry pick of #N: <subject> #K: <subject>`` and ``Cherry pick
   of #N on release-1.28.``, patchback's ``[PR #N/<short sha> backport][B] <subject> (#M)`` (the
   sha read) and ``This is a backport of PR #N`` (read in the fork's merge commits too, where
   that tooling puts it, with the branch names it gives: ``patchback/backports/B/<sha>/pr-N``).
   N is upstream's when both sides are one GitHub repository (a release branch: one number
   space), else only when the subject beside it reads as upstream's subject of N
   (:mod:`.backports`).

Only when those name nothing: 5. ``subject`` -- the fork subject is an upstream subject
verbatim (optionally + the fork's ``(#M)``, after the fork's own leading tags, or without
upstream's tags with upstream's number kept; CPython's ``(GH-N)`` reads as ``(#N)``), or after
a tag naming the branch or saying backport (``[stable-2.16]``, ``[2.19]``, ``[Backport 2.x]``)
upstream's words with only the fork's ``(#M)`` (no number read) (:mod:`.subjects`); 6.
``pr-pattern`` -- configured regexes with a group ``pr`` (:mod:`.trailers`); 7. ``body-link`` --
``<upstream url>/pull/N`` in the body, outside excluded sections, when the title is a pick, the
link is under a pick label (``Upstream:``) or its sentence says it is picked, and not after
prose that says the PR is only related ("regression from <link>") (:mod:`.bodylinks`).

Text the message quotes from upstream (fenced blocks, ``>`` lines) is never read; a body is read
by its sections (:mod:`.body`). Decisions the message records (``Reactor Defer|WontPort
Revision``, a bundle's Deferred / Won't-port items) come back in :attr:`.model.Recognition.decided`.
What the families share: the recogniser names and the record (:mod:`.model`), the configured
rules (:mod:`.rules`), lookups over the upstream range (:mod:`.index`), the small shapes of a
title and a list line (:mod:`.tokens`). This module runs the families in that order; they never
import it. Reverts are read in ``reverts.py``; patch-id equality (the recogniser of last resort)
needs git and lives in ``patchmatch.py``. Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Iterable

from workers.engine.history import Commit
from workers.engine.recognise.backports import _FORM_HINT, _PARTIAL, _branch_numbers, _branch_shas, _pr_forms
from workers.engine.recognise.body import own_text
from workers.engine.recognise.bodylinks import _TITLE_PICK_PROSE, _body_links, _carried_part, _links_in
from workers.engine.recognise.bundles import _bundle_sections, _continuation
from workers.engine.recognise.index import UpstreamIndex
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
