"""Tracking issues for trunk failures, decided from plain data: ``plan(known, report) -> list[Action]``.

One open issue per failure signature, found by its hidden marker. A new signature opens an
issue; the same signature again edits it in place (occurrences, last seen), never a comment;
``recover_after`` consecutive clean runs of the same benchmark or suite close it with a
comment; a recurrence reopens it. Infrastructure failures get their own issues (label
``infrastructure``), never mixed with code regressions. :func:`execute` applies the actions
through a narrow issues Protocol (the GitHub adapter in production).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from core.config import Benchmark
from core.github.roles import Comments, Issues
from core.render import leading_markers, marker
from core.render.tracking import (
    LABEL,
    IssueFacts,
    SuspectFacts,
    duplicate_comment,
    issue_body,
    issue_labels,
    issue_title,
    parse_facts,
    recovered_comment,
    reopened_comment,
)
from workers.testing.bisect import Suspect
from workers.testing.l2 import BenchmarkOutcome
from workers.testing.regression import FAILED, INFRA, REGRESSED, SKIPPED, TIMEOUT
from workers.testing.signatures import Failure, Signature, group, signature
from workers.testing.suites import SuiteOutcome

# The failure output kept in an issue (shown, and again in the hidden facts): GitHub caps a body
# at 65,536 characters, and the tail is where the failure is.
EXCERPT_CHARS = 3000
# Tests listed per issue in the facts (the body shows 20).
MAX_TESTS = 200

_KEY = re.compile(r"<!-- forksync:signature:(?P<key>[0-9a-f]+) -->")


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Sighting:
    """One failure signature seen in one trunk run, with what is known about its cause."""

    signature: Signature
    tests: tuple[str, ...] = ()
    detail: str = ""
    excerpt: str = ""
    first_bad: str | None = None
    culprit: str | None = None
    culprit_subject: str = ""
    suspects: tuple[Suspect, ...] = ()
    bisect_note: str = ""


@dataclass(frozen=True)
class TrunkReport:
    """What one run of one benchmark or suite at one trunk commit found."""

    source: str
    sha: str
    at: str
    sightings: tuple[Sighting, ...] = ()
    # False when the run said nothing about the code (skipped, infra): code issues do not recover.
    judged: bool = True
    owners: tuple[str, ...] = ()


@dataclass(frozen=True)
class KnownIssue:
    """An existing issue as GitHub lists it (only its number, state, title and body matter)."""

    number: int
    state: str  # open | closed
    title: str
    body: str

    @property
    def key(self) -> str | None:
        m = next(filter(None, (_KEY.fullmatch(line) for line in leading_markers(self.body or ""))), None)
        return m.group("key") if m else None


# --------------------------------------------------------------------------- actions


@dataclass(frozen=True)
class OpenIssue:
    key: str
    title: str
    body: str
    labels: tuple[str, ...]


@dataclass(frozen=True)
class EditIssue:
    number: int
    title: str
    body: str


@dataclass(frozen=True)
class CloseIssue:
    number: int
    body: str
    comment: str


@dataclass(frozen=True)
class ReopenIssue:
    number: int
    title: str
    body: str
    comment: str


Action = OpenIssue | EditIssue | CloseIssue | ReopenIssue


# --------------------------------------------------------------------------- planning


def plan(known: Sequence[KnownIssue], report: TrunkReport, recover_after: int) -> list[Action]:
    """The issue actions for one trunk report, given every tracking issue that exists (open or closed)."""
    actions: list[Action] = []
    by_key: dict[str, list[KnownIssue]] = {}
    for issue in sorted(known, key=lambda i: i.number):
        if issue.key:
            by_key.setdefault(issue.key, []).append(issue)
    # Duplicates (two open issues for one key, e.g. filed by hand): keep the oldest, close the rest.
    current: dict[str, KnownIssue] = {}
    for key, issues in by_key.items():
        open_ones = [i for i in issues if i.state == "open"]
        if open_ones:
            current[key] = open_ones[0]
            for dup in open_ones[1:]:
                actions.append(CloseIssue(dup.number, dup.body, duplicate_comment(open_ones[0].number)))
        else:
            current[key] = issues[-1]  # the most recent closed one is reopened on recurrence

    seen: set[str] = set()
    for sighting in _merge(report.sightings):
        key = sighting.signature.key
        seen.add(key)
        found = current.get(key)
        old = parse_facts(found.body) if found else None
        # Closed by a maintainer before it recovered ("known, leave it"): kept up to date, closed.
        by_hand = found is not None and found.state == "closed" and _closed_by_hand(old)
        reopening = found is not None and found.state == "closed" and not by_hand
        facts = _sighted(old, sighting, report, recover_after, reopening=reopening)
        if found is None:
            actions.append(OpenIssue(key, issue_title(facts), issue_body(facts), issue_labels(facts)))
        elif reopening:
            facts = replace(facts, reopened=facts.reopened + 1)
            actions.append(
                ReopenIssue(found.number, issue_title(facts), issue_body(facts), reopened_comment(facts))
            )
        else:
            actions.append(EditIssue(found.number, issue_title(facts), issue_body(facts)))

    for key, issue in sorted(current.items(), key=lambda kv: kv[1].number):
        if key in seen:
            continue
        stored = parse_facts(issue.body)
        if stored is None or stored.source != report.source:
            continue  # another benchmark's issue, or one we cannot read: leave it alone
        if issue.state != "open" and not _closed_by_hand(stored):
            continue  # recovered and closed: nothing to count until it comes back
        if not report.judged and not stored.infra:
            continue  # a skipped run says nothing about whether the code recovered
        clean = replace(stored, clean_runs=stored.clean_runs + 1, recover_after=recover_after)
        if issue.state != "open":
            # A maintainer's close stands; counting on lets a later recurrence reopen it.
            actions.append(EditIssue(issue.number, issue_title(clean), issue_body(clean)))
        elif clean.clean_runs >= recover_after:
            actions.append(CloseIssue(issue.number, issue_body(clean), recovered_comment(clean)))
        else:
            actions.append(EditIssue(issue.number, issue_title(clean), issue_body(clean)))
    return actions


def _closed_by_hand(facts: IssueFacts | None) -> bool:
    """Closed before ``recover_after`` clean runs: a maintainer closed it, forksync did not."""
    return facts is not None and facts.clean_runs < facts.recover_after


def _merge(sightings: Sequence[Sighting]) -> list[Sighting]:
    """One sighting per signature key (tests united), in first-seen order."""
    merged: dict[str, Sighting] = {}
    for s in sightings:
        prev = merged.get(s.signature.key)
        if prev is None:
            merged[s.signature.key] = s
        else:
            tests = tuple(dict.fromkeys(prev.tests + s.tests))
            merged[s.signature.key] = replace(prev, tests=tests)
    return list(merged.values())


def _sighted(
    old: IssueFacts | None, s: Sighting, report: TrunkReport, recover_after: int, *, reopening: bool
) -> IssueFacts:
    suspects = tuple(SuspectFacts(x.sha, x.subject, x.score, x.files) for x in s.suspects)
    if old is None:
        return IssueFacts(
            key=s.signature.key,
            kind=s.signature.kind,
            title=s.signature.title,
            source=report.source,
            first_bad=s.culprit or s.first_bad or report.sha,
            first_seen_at=report.at,
            last_seen=report.sha,
            last_seen_at=report.at,
            tests=s.tests[:MAX_TESTS],
            tests_total=len(s.tests),
            detail=s.detail,
            excerpt=s.excerpt[-EXCERPT_CHARS:],
            culprit=s.culprit,
            culprit_subject=s.culprit_subject,
            suspects=suspects,
            bisect_note=s.bisect_note,
            owners=report.owners,
            infra_reason=s.signature.infra_reason,
            recover_after=recover_after,
        )
    # Seen before: count it, keep the first-bad commit and a culprit once found, refresh the rest.
    # A recurrence after closing is a new break: its first-bad commit and culprit start afresh.
    if reopening:
        old = replace(
            old,
            culprit=None,
            culprit_subject="",
            suspects=(),
            bisect_note="",
            first_bad=s.first_bad or report.sha,
        )
    return replace(
        old,
        last_seen=report.sha,
        last_seen_at=report.at,
        occurrences=old.occurrences + 1,
        clean_runs=0,
        tests=tuple(dict.fromkeys(old.tests + s.tests))[:MAX_TESTS],
        tests_total=max(old.tests_total, len(set(old.tests) | set(s.tests)), len(s.tests)),
        detail=s.detail or old.detail,
        excerpt=s.excerpt[-EXCERPT_CHARS:] or old.excerpt,
        culprit=s.culprit or old.culprit,
        culprit_subject=s.culprit_subject if s.culprit else old.culprit_subject,
        suspects=suspects or old.suspects,
        bisect_note=s.bisect_note if (s.culprit or s.bisect_note) else old.bisect_note,
        owners=report.owners or old.owners,
        recover_after=recover_after,
        first_bad=s.culprit or old.first_bad,
    )


# --------------------------------------------------------------------------- from L2 outcomes


def metric_signature(benchmark: str, metric: str) -> Signature:
    """The signature of a metric regression: one issue per benchmark metric."""
    key = hashlib.sha1(f"regression\0{benchmark}\0{metric}".encode()).hexdigest()[:12]
    return Signature(key, f"{metric} regressed", "regression", f"{benchmark}:{metric}", None)


def report_from_l2(outcome: BenchmarkOutcome, bench: Benchmark, at: str) -> TrunkReport:
    """Turn one L2 benchmark outcome into the sightings the planner files."""
    run, verdict = outcome.run, outcome.verdict
    culprit = outcome.bisect.culprit if outcome.bisect else None
    subject = outcome.bisect.culprit_subject if outcome.bisect else ""

    def sighting(sig: Signature, detail: str, tests: tuple[str, ...] = (), excerpt: str = "") -> Sighting:
        return Sighting(
            sig,
            tests,
            detail,
            excerpt,
            outcome.first_bad,
            culprit,
            subject,
            outcome.suspects,
            outcome.note if outcome.new_break else "",
        )

    sightings: list[Sighting] = []
    if verdict.status == REGRESSED:
        for check in verdict.regressed_metrics:
            sightings.append(sighting(metric_signature(bench.name, check.metric), check.reason))
    elif verdict.status == FAILED:
        for g in group(run.failures):
            tests = tuple(t for t in g.tests if t != bench.name)
            sightings.append(sighting(g.signature, run.reason, tests, g.failures[0].text))
    elif run.status in (INFRA, TIMEOUT):
        sig = signature(run.output_tail, None) if run.status == INFRA else _infra_signature(run.reason)
        if sig.kind != "infra":
            sig = _infra_signature(run.reason)
        sightings.append(Sighting(sig, detail=run.reason, excerpt=run.output_tail))
    return TrunkReport(
        bench.name, run.sha, at, tuple(sightings), judged=verdict.status != SKIPPED, owners=bench.owners
    )


def _infra_signature(reason: str) -> Signature:
    key = hashlib.sha1(f"infra\0\0{reason}".encode()).hexdigest()[:12]
    return Signature(key, f"infrastructure: {reason}", "infra", reason, None, reason)


# --------------------------------------------------------------------------- executing


class IssuesPort(Issues, Comments, Protocol):
    """The roles of :class:`core.github.roles.GitHubPort` the executor uses (a recording fake fits too)."""


def known_issues(port: IssuesPort, repo: str) -> list[KnownIssue]:
    """Every tracking issue of ``repo``, open and closed (found by the label, keyed by the marker)."""
    issues = [
        KnownIssue(i.number, i.state, i.title, i.body)
        for i in port.list_issues(repo, labels=[LABEL], state="all")
    ]
    return [i for i in issues if i.key]


def execute(port: IssuesPort, repo: str, actions: Sequence[Action]) -> list[int]:
    """Apply ``actions`` in order; returns the issue numbers touched.

    A recovery comment goes before the close and a recurrence comment after the reopen, so the
    issue's timeline reads in order.
    """
    touched = []
    for action in actions:
        if isinstance(action, OpenIssue):
            # ensure_issue looks for the marker again: a racing worker's issue is updated, not doubled.
            info, _ = port.ensure_issue(
                repo,
                marker=marker("signature", action.key),
                title=action.title,
                body=action.body,
                labels=action.labels,
            )
            touched.append(info.number)
        elif isinstance(action, EditIssue):
            port.update_issue(repo, action.number, title=action.title, body=action.body)
            touched.append(action.number)
        elif isinstance(action, CloseIssue):
            port.update_issue(repo, action.number, body=action.body)
            port.close_issue(repo, action.number, comment=action.comment)
            touched.append(action.number)
        else:
            port.update_issue(repo, action.number, title=action.title, body=action.body)
            port.reopen_issue(repo, action.number)
            port.create_comment(repo, action.number, action.comment)
            touched.append(action.number)
    return touched


def track(port: IssuesPort, repo: str, report: TrunkReport, recover_after: int) -> list[Action]:
    """Read the tracking issues, plan for ``report``, apply; returns what was done."""
    actions = plan(known_issues(port, repo), report, recover_after)
    execute(port, repo, actions)
    return actions


# --------------------------------------------------------------------------- from L1 trunk suites


def report_from_suite(outcome: SuiteOutcome, sha: str, at: str) -> TrunkReport:
    """Turn one L1 suite run on a trunk commit into sightings (for a nightly or trunk-push L1 run).

    Failures are regrouped by signature here (the suite's own keys come from the same function);
    an infrastructure run files the infra issue and says nothing about the code; an omitted or
    timed-out suite is one failure of the suite itself, with its log tail.
    """
    if outcome.status == "passed":
        return TrunkReport(outcome.name, sha, at, (), owners=outcome.owners)
    if outcome.status == "infrastructure":
        sig = signature(outcome.log_tail or outcome.reason, None)
        if sig.kind != "infra":
            sig = _infra_signature(outcome.infra_cause or outcome.reason)
        return TrunkReport(
            outcome.name,
            sha,
            at,
            (Sighting(sig, detail=outcome.reason, excerpt=outcome.log_tail),),
            judged=False,
            owners=outcome.owners,
        )
    failures = [Failure(f.test_id, f"{f.message}\n{f.first_lines}".strip()) for f in outcome.failures]
    if not failures:
        failures = [Failure(outcome.name, outcome.log_tail or outcome.reason)]
    sightings = tuple(
        Sighting(
            g.signature,
            tests=tuple(t for t in g.tests if t != outcome.name),
            detail=outcome.reason,
            excerpt=g.failures[0].text,
        )
        for g in group(failures)
    )
    return TrunkReport(outcome.name, sha, at, sightings, owners=outcome.owners)
