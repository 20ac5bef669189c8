"""Pure builders of the ``forksync / L1`` and ``forksync / coverage`` check-run output.

They read plain records through the Protocols below (workers' ``L1Run``/``SuiteOutcome`` and
``CoverageResult`` satisfy them; bot never imports workers) and return a
:class:`CheckRunOutput` whose ``output()`` is the REST ``output`` object of a check run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from core.render import marker, neutral

L1_CHECK = "forksync / L1"
COVERAGE_CHECK = "forksync / coverage"
POOLS_CHECK = "forksync / L1 pools"

# GitHub's limits: 65,535 characters of summary or text, 50 annotations per request.
MAX_TEXT = 65_000
MAX_ANNOTATIONS = 50

_TRIAGE_LABELS = {"new": "new", "flaky": "flaky", "broken_trunk": "broken trunk"}
_STATUS_ICONS = {
    "passed": "✅ passed",
    "failed": "❌ failed",
    "omitted": "⛔ omitted",
    "timed_out": "⏱️ timed out",
    "infrastructure": "🛠️ infrastructure",
}


class FailureLike(Protocol):
    @property
    def test_id(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def first_lines(self) -> str: ...
    @property
    def file(self) -> str | None: ...
    @property
    def line(self) -> int | None: ...
    @property
    def signature(self) -> str: ...
    @property
    def signature_title(self) -> str: ...
    @property
    def triage(self) -> str: ...


class SuiteLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def passed(self) -> int: ...
    @property
    def failed(self) -> int: ...
    @property
    def skipped(self) -> int: ...
    @property
    def skip_reasons(self) -> str: ...
    @property
    def expected(self) -> int: ...
    @property
    def duration_s(self) -> float: ...
    @property
    def reason(self) -> str: ...
    @property
    def log_path(self) -> str: ...
    @property
    def attempts(self) -> int: ...
    @property
    def owners(self) -> tuple[str, ...]: ...
    @property
    def failures(self) -> Sequence[FailureLike]: ...
    @property
    def log_tail(self) -> str: ...


class CanaryLike(Protocol):
    @property
    def ok(self) -> bool: ...
    def describe(self) -> str: ...


class L1RunLike(Protocol):
    @property
    def sha(self) -> str: ...
    @property
    def conclusion(self) -> str: ...
    @property
    def fail_on(self) -> tuple[str, ...]: ...
    @property
    def merge_base(self) -> str | None: ...
    @property
    def canary(self) -> CanaryLike | None: ...
    @property
    def suites(self) -> Sequence[SuiteLike]: ...


class GapLike(Protocol):
    @property
    def check(self) -> str: ...
    def describe(self) -> str: ...


class CoverageLike(Protocol):
    @property
    def required(self) -> tuple[str, ...]: ...
    @property
    def gaps(self) -> Sequence[GapLike]: ...
    @property
    def present(self) -> tuple[str, ...]: ...
    @property
    def conclusion(self) -> str: ...


@dataclass(frozen=True)
class Annotation:
    path: str
    start_line: int
    end_line: int
    annotation_level: str  # notice, warning, failure
    message: str
    title: str = ""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "annotation_level": self.annotation_level,
            "message": self.message,
        }
        if self.title:
            out["title"] = self.title
        return out


@dataclass(frozen=True)
class CheckRunOutput:
    """A check run to create or update: name, status, conclusion and the REST ``output`` parts."""

    name: str
    head_sha: str
    status: str  # queued, in_progress, completed
    conclusion: str | None
    title: str
    summary: str
    text: str = ""
    annotations: tuple[Annotation, ...] = field(default_factory=tuple)
    details_url: str | None = None

    def output(self) -> dict[str, Any]:
        out: dict[str, Any] = {"title": self.title, "summary": self.summary}
        if self.text:
            out["text"] = self.text
        if self.annotations:
            out["annotations"] = [a.as_dict() for a in self.annotations]
        return out


LogUrl = Callable[[str], str | None] | Mapping[str, str] | None


def l1_in_progress(sha: str, suite_names: Sequence[str], details_url: str | None = None) -> CheckRunOutput:
    """The check run while L1 runs (created first, then updated in place with the results)."""
    listed = ", ".join(f"`{n}`" for n in suite_names) or "no suites"
    return CheckRunOutput(
        name=L1_CHECK,
        head_sha=sha,
        status="in_progress",
        conclusion=None,
        title=f"Running {len(suite_names)} L1 suite(s)",
        summary=f"{marker('l1', sha)}\nRunning {listed} on `{sha[:12]}`.",
        details_url=details_url,
    )


def l1_check_run(run: L1RunLike, *, log_url: LogUrl = None, details_url: str | None = None) -> CheckRunOutput:
    """The completed ``forksync / L1`` check run of an L1 result."""
    title = l1_title(run)
    summary = _truncate("\n".join(_summary_lines(run, log_url)))
    text = _truncate("\n".join(_failure_sections(run)))
    return CheckRunOutput(
        name=L1_CHECK,
        head_sha=run.sha,
        status="completed",
        conclusion=run.conclusion,
        title=title,
        summary=summary,
        text=text,
        annotations=_annotations(run),
        details_url=details_url,
    )


def l1_title(run: L1RunLike) -> str:
    """One line that says what happened and whose problem it is."""
    suites = run.suites
    if not suites:
        return "No L1 suites configured (add l1.suites to .github/forksync.yml)"
    fails = [f for s in suites for f in s.failures]
    blocking = [f for f in fails if f.triage in run.fail_on]
    bad = [s for s in suites if s.status in ("omitted", "timed_out")]
    infra = [s for s in suites if s.status == "infrastructure"]
    parts = []
    if blocking:
        kinds = " or ".join(_TRIAGE_LABELS.get(k, k) for k in run.fail_on)
        parts.append(f"{len(blocking)} {kinds} failure(s)")
    unexplained = [s for s in suites if s.status == "failed" and not s.failures]
    parts += [f"{s.name} failed without a failing test" for s in unexplained]
    parts += [f"{s.name} {s.status.replace('_', ' ')}" for s in bad]
    if parts:
        title = "; ".join(parts)
        if infra:
            title += f"; {len(infra)} suite(s) hit infrastructure problems"
        return title
    if infra:
        return (
            f"Infrastructure problem in {', '.join(s.name for s in infra)}: "
            "not caused by this change, retry on another runner"
        )
    total = sum(s.passed for s in suites)
    skipped = sum(s.skipped for s in suites)
    if fails:
        counts = _triage_counts(fails)
        return f"Passed: {len(fails)} failure(s), none new ({counts})"
    return f"All {len(suites)} suite(s) passed ({total} tests" + (f", {skipped} skipped)" if skipped else ")")


def _triage_counts(fails: Sequence[FailureLike]) -> str:
    counts: dict[str, int] = {}
    for f in fails:
        counts[f.triage] = counts.get(f.triage, 0) + 1
    return ", ".join(f"{n} {_TRIAGE_LABELS.get(k, k)}" for k, n in sorted(counts.items()))


def _log_link(suite: SuiteLike, log_url: LogUrl) -> str:
    url: str | None = None
    if callable(log_url):
        url = log_url(suite.name)
    elif log_url is not None:
        url = log_url.get(suite.name)
    if url:
        return f"[log]({url})"
    return f"`{suite.log_path}` (on the runner)" if suite.log_path else "no log"


def _summary_lines(run: L1RunLike, log_url: LogUrl) -> list[str]:
    lines = [marker("l1", run.sha), f"**{l1_title(run)}** on `{run.sha[:12]}`", ""]
    if run.canary is not None:
        lines += [("✅ " if run.canary.ok else "🛠️ ") + run.canary.describe(), ""]
    if not run.suites:
        return lines
    lines += [
        "| suite | status | passed | failed | skipped | expected | duration | log |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for s in run.suites:
        expected = f"≥ {s.expected}" if s.expected else "–"
        lines.append(
            f"| {_cell(s.name)} | {_STATUS_ICONS.get(s.status, s.status)} | {s.passed} | {s.failed} | {s.skipped} "
            f"| {expected} | {s.duration_s:.1f} s | {_log_link(s, log_url)} |"
        )
    notes = [s for s in run.suites if s.reason and s.status != "passed"]
    skips = [s for s in run.suites if s.skipped and s.skip_reasons and "skipped:" not in s.reason]
    if notes or skips:
        lines.append("")
        for s in notes:
            retry = f" (after {s.attempts} attempts)" if s.attempts > 1 else ""
            owners = (
                f" — owners: {', '.join('@' + o for o in s.owners)}"
                if s.owners and s.status != "infrastructure"
                else ""
            )
            lines.append(f"- **{_cell(s.name)}**: {s.reason}{retry}{owners}")
        for s in skips:
            lines.append(
                f"- **{_cell(s.name)}**: {s.skipped} skipped (not run, not counted): {_cell(s.skip_reasons)}"
            )
    fails = [f for s in run.suites for f in s.failures]
    if fails:
        kinds = " or ".join(_TRIAGE_LABELS.get(k, k) for k in run.fail_on)
        lines += [
            "",
            f"Triage: {_triage_counts(fails)}. This check fails only on {kinds} failures"
            + (
                f" (trunk compared at merge-base `{run.merge_base[:12]}`)."
                if run.merge_base
                else " (no merge-base with trunk was given, so nothing counts as broken trunk)."
            ),
        ]
    return lines


def _failure_sections(run: L1RunLike) -> list[str]:
    """Failures grouped by signature, blocking classes first, with the first lines of each."""
    out: list[str] = []
    for suite in run.suites:
        if suite.log_tail and not suite.failures:
            out += [
                f"### {suite.name}: {suite.status.replace('_', ' ')}, last lines of its log",
                "```",
                _fence_safe(suite.log_tail),
                "```",
                "",
            ]
        if not suite.failures:
            continue
        groups: dict[str, list[FailureLike]] = {}
        for f in suite.failures:
            groups.setdefault(f.signature or f.test_id, []).append(f)
        ordered = sorted(groups.values(), key=lambda g: (g[0].triage not in run.fail_on, -len(g)))
        out.append(f"### {suite.name}: {len(suite.failures)} failure(s) in {len(groups)} group(s)")
        for group in ordered:
            head = group[0]
            label = _TRIAGE_LABELS.get(head.triage, head.triage)
            title = head.signature_title or (head.message.splitlines()[0] if head.message else head.test_id)
            out.append(f"#### {label}: {_cell(title)} ({len(group)} test(s))")
            for f in group[:10]:
                where = f" — `{f.file}:{f.line}`" if f.file and f.line else ""
                out.append(f"- `{f.test_id}` ({_TRIAGE_LABELS.get(f.triage, f.triage)}){where}")
            if len(group) > 10:
                out.append(f"- … and {len(group) - 10} more")
            if head.first_lines:
                out += ["```", _fence_safe(head.first_lines), "```"]
        out.append("")
    return out


def _annotations(run: L1RunLike) -> tuple[Annotation, ...]:
    notes: list[Annotation] = []
    for suite in run.suites:
        for f in suite.failures:
            if not (f.file and f.line):
                continue
            blocking = f.triage in run.fail_on
            notes.append(
                Annotation(
                    path=f.file,
                    start_line=f.line,
                    end_line=f.line,
                    annotation_level="failure" if blocking else "warning",
                    title=f"{suite.name}: {f.test_id} ({_TRIAGE_LABELS.get(f.triage, f.triage)})"[:255],
                    message=(f.first_lines or f.message or "failed")[:4000],
                )
            )
    notes.sort(key=lambda a: a.annotation_level != "failure")
    return tuple(notes[:MAX_ANNOTATIONS])


def coverage_check_run(sha: str, result: CoverageLike) -> CheckRunOutput:
    """The ``forksync / coverage`` check run: which required checks did not produce a verdict."""
    conclusion = result.conclusion
    gaps = list(result.gaps)
    if not result.required:
        title = "No required checks configured (l1.required_checks)"
    elif conclusion == "failure":
        title = "Not covered: " + ", ".join(g.check for g in gaps if "has not finished" not in g.describe())
    elif conclusion == "pending":
        title = "Waiting for " + ", ".join(g.check for g in gaps)
    else:
        title = f"All {len(result.required)} required check(s) ran"
    lines = [marker("coverage", sha), f"**{title}**", ""]
    for g in gaps:
        lines.append(f"- ❌ {g.describe()}")
    for name in result.present:
        lines.append(f"- ✅ `{name}` ran")
    if conclusion == "failure":
        lines += [
            "",
            "A required check that is missing, skipped or neutral tested nothing on this commit: "
            "fix its trigger (paths filters, conditions) or rerun it, or remove it from "
            "`l1.required_checks` in `.github/forksync.yml` if it no longer applies.",
        ]
    return CheckRunOutput(
        name=COVERAGE_CHECK,
        head_sha=sha,
        status="in_progress" if conclusion == "pending" else "completed",
        conclusion=None if conclusion == "pending" else conclusion,
        title=title[:255],
        summary=_truncate("\n".join(lines)),
    )


def infra_issue(cause: str, runner: str, suite: str, sha: str, detail: str) -> tuple[str, str]:
    """Title and body of the infrastructure tracking issue (one per cause and runner, updated in place)."""
    title = f"[infra] {cause} on {runner}"
    body = "\n".join(
        [
            marker("infra", f"{cause}:{runner}"),
            f"L1 suite `{suite}` on `{sha[:12]}` hit **{cause}** on runner `{runner}`.",
            "",
            "```",
            _fence_safe(detail),
            "```",
            "",
            "The PR was not blamed; the job was retried on another runner. Close this issue once the runner is fixed.",
        ]
    )
    return title, body


def _cell(text: str) -> str:
    return neutral(text).replace("|", "\\|").replace("\n", " ")


def _fence_safe(text: str) -> str:
    return neutral(text, refs=False, mentions=False).replace("```", "`\u200b``")


def _truncate(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    return text[: MAX_TEXT - 80] + "\n\n… (truncated: see the full log)"


_CONCLUSION_ICONS = {
    "success": "✅ success",
    "failure": "❌ failure",
    "cancelled": "⚠️ cancelled (infrastructure)",
    "neutral": "➖ neutral",
}


def kept_suites_note(kept: Mapping[str, str]) -> str:
    """After ``/retest SUITE …``: the suites that were not rerun, with the result they keep."""
    if not kept:
        return ""
    rows = ", ".join(f"`{name}` {_CONCLUSION_ICONS.get(c, c)}" for name, c in sorted(kept.items()))
    return (
        f"\n\n**Kept from the earlier run on this commit** (not rerun): {rows}. "
        "The check concludes over every suite; `/retest` alone reruns them all."
    )


def partial_rerun_title(title: str, rerun: Sequence[str], kept: Mapping[str, str]) -> str:
    """The title after a partial rerun: what ran, and what still blocks from the earlier run."""
    head = f"Rerun of {', '.join(rerun)}: {title}"
    failing = sorted(n for n, c in kept.items() if c == "failure")
    broken = sorted(n for n, c in kept.items() if c == "cancelled")
    if failing:
        head += f"; still failing from the earlier run: {', '.join(failing)}"
    if broken:
        head += f"; infrastructure failure earlier: {', '.join(broken)}"
    return head


def infra_recovered_comment(cause: str, runner: str, healthy_runs: int) -> str:
    """Closing comment of an infrastructure issue once its runner ran L1 cleanly again."""
    return (
        f"Runner `{runner}` ran L1 cleanly {healthy_runs} times in a row since **{cause}** was last seen "
        "(`l2.recover_after` in `.github/forksync.yml`), so forksync closes this issue. It reopens if the "
        "cause comes back on this runner."
    )


def suite_changes_note(
    *,
    added: Sequence[str],
    dropped: Sequence[str],
    changed: Sequence[str],
    required_added: Sequence[str] = (),
    required_dropped: Sequence[str] = (),
    approved_by: str | None = None,
) -> str:
    """What a PR's own ``.github/forksync.yml`` changes about its L1 gate (the trunk's config decides)."""

    def names(items: Sequence[str]) -> str:
        return ", ".join(f"`{_cell(n)}`" for n in items)

    lines = [
        "",
        "",
        "**This PR changes the L1 configuration.** What runs is the trunk's (the PR's base) "
        "config plus what this PR adds:",
    ]
    if added:
        lines.append(f"- adds suite(s) {names(added)}: run here too")
    if dropped:
        lines.append(
            f"- drops suite(s) {names(dropped)}: "
            + (
                f"approved by @{approved_by}, not run"
                if approved_by
                else "still run here; dropping a suite needs a maintainer's `/approve` of this head before this check can pass"
            )
        )
    if changed:
        lines.append(
            f"- redefines suite(s) {names(changed)}: the trunk's definition runs until this PR merges"
        )
    if required_added:
        lines.append(f"- adds required check(s) {names(required_added)}")
    if required_dropped:
        lines.append(
            f"- drops required check(s) {names(required_dropped)}: "
            + (
                f"approved by @{approved_by}"
                if approved_by
                else "still required; needs a maintainer's `/approve`"
            )
        )
    return "\n".join(lines)


def unapproved_drop_title(title: str, dropped: Sequence[str]) -> str:
    return f"Drops {', '.join(dropped)} without a maintainer's /approve; {title}"[:255]


def stale_check_title(queue: str) -> str:
    return f"Timed out: no runner finished L1 (waited on the {queue} queue)"


def never_started_title(queue: str) -> str:
    return f"Timed out: L1 never started (no worker took its job from the {queue} queue)"


def stale_queue_issue(queue: str, runs: Sequence[tuple[str, int, str, float]]) -> tuple[str, str]:
    """(title, body) of the infrastructure issue of a queue that left L1 checks unfinished;
    ``runs``: (repo, check run id, head sha, minutes waited) of each."""
    title = f"[infra] L1 queue {queue}: checks never finished"
    rows = "\n".join(
        f"| {_cell(repo)} | {cid} | `{sha[:12]}` | {minutes:.0f} min |" for repo, cid, sha, minutes in runs
    )
    body = (
        f"The L1 staleness watchdog concluded {len(runs)} check run(s) as timed out: they waited on the "
        f"`{queue}` queue past their suites' timeouts plus `l1.stale_margin_minutes`, and no worker finished them "
        "(or, for a PR head that had no L1 check at all, no worker ever started its job).\n\n"
        "| repository | check run | commit | waited |\n| --- | ---: | --- | ---: |\n"
        f"{rows}\n\n"
        f"Check that a worker consumes `{queue}` (`celery -A workers.app.celery_app inspect active_queues`) and "
        "that its runners are up; then `/retest` the affected PRs."
    )
    return title, body


def trunk_silent_issue(
    repo: str, sha: str, waited_minutes: float, last_recorded: str | None
) -> tuple[str, str]:
    """(title, body) of the issue that says trunk L1 results stopped arriving."""
    title = "[infra] trunk L1 results stopped arriving"
    since = f"the last one was recorded {last_recorded}" if last_recorded else "none was ever recorded"
    body = (
        f"Trunk `{sha[:12]}` of `{repo}` was pushed {waited_minutes:.0f} min ago and no trunk L1 result has been "
        f"recorded since ({since}). Without them PR failures cannot be told apart from broken trunk, and suite "
        "baselines go stale. Check the L1 queues' workers (`l1-cpu`, `l1-gpu`) and their logs."
    )
    return title, body


def protection_note(
    branch: str, only_in_protection: Sequence[str], only_in_config: Sequence[str], unreadable: str = ""
) -> str:
    """Where ``l1.required_checks`` and ``branch``'s protection rules disagree (empty when they
    agree); ``unreadable``: GitHub's answer when the protection could not be read at all."""

    def names(items: Sequence[str]) -> str:
        return ", ".join(f"`{_cell(n)}`" for n in items)

    lines = []
    if unreadable:
        lines.append(
            f"- ⚠️ forksync could not read `{branch}`'s branch protection ({_cell(unreadable)[:200]}): "
            "the required checks were not cross-checked, so only `l1.required_checks` are required here. "
            "Grant the App the **Administration: read** repository permission (app.yml, "
            "docs/github-app.md) and accept it on the installation page"
        )
    if only_in_protection:
        lines.append(
            f"- ⚠️ `{branch}`'s branch protection requires {names(only_in_protection)}, which "
            "`l1.required_checks` does not list: required here too; add them to the config"
        )
    if only_in_config:
        lines.append(
            f"- ⚠️ `l1.required_checks` lists {names(only_in_config)}, which `{branch}`'s branch "
            "protection does not require: GitHub would merge without them; require them in the "
            "branch's protection rules"
        )
    return ("\n\n**Required checks vs branch protection**\n" + "\n".join(lines)) if lines else ""


def split_note(
    *,
    commits: int,
    runs: int,
    complete: bool,
    rebuilt: bool,
    culprits: Sequence[tuple[str, str, str | None, str | None, Sequence[str]]],
    rebuilt_head: str | None = None,
    retest_conclusion: str | None = None,
    not_rebuilt: str = "",
    overrun_approvals: Sequence[str] = (),
) -> str:
    """What the split of a red bundle found and did (check runs, PR comment and body); ``culprits``:
    (fork sha, subject, upstream sha, chain it went to, the tests it breaks); ``rebuilt_head``:
    the bundle rebuilt without the ejected ones and pushed to the PR, ``retest_conclusion`` its L1;
    ``overrun_approvals``: who had approved the old head (asked to review again)."""
    lines = [
        marker("l1-split", "bundle"),
        f"**Red bundle split**: bisected {commits} commit(s) with {runs} "
        "in-memory build(s) and L1 run(s)" + ("" if complete else " (stopped at the run budget)") + ".",
    ]
    if not culprits:
        lines.append(
            "No single commit makes the failure: it shows only with the whole bundle (flaky, or an "
            "interaction). Nothing was ejected; comment `/chain REF` to move commits by hand."
        )
        return "\n".join(lines)
    for fork_sha, subject, upstream, chain, tests in culprits:
        where = (
            f"ejected into chain `{chain}`"
            if chain
            else (
                "not ejected (no upstream pick trailer)"
                if upstream is None
                else f"not ejected here: comment `/chain {upstream[:12]}`"
            )
        )
        shown = ", ".join(f"`{t}`" for t in list(tests)[:3])
        lines.append(f"- `{fork_sha[:12]}` {_cell(subject)}: breaks {shown}; {where}")
    if rebuilt_head is not None:
        verdict = f" L1 on it: **{retest_conclusion}**." if retest_conclusion else ""
        lines.append(
            f"The bundle is rebuilt without them in this PR: its branch was force-pushed to "
            f"`{rebuilt_head[:12]}` and L1 ran again on it.{verdict} The ejected commits wait in their "
            "chains, each with the failing test as its reason."
        )
        if overrun_approvals:
            who = ", ".join(f"@{login}" for login in overrun_approvals)
            lines.append(
                f"It was **force-pushed over your approval** ({who}): the commits you approved changed: please "
                "review again (forksync re-requested your review)."
            )
    elif not_rebuilt:
        lines.append(f"The bundle was not rebuilt here ({not_rebuilt}).")
    else:
        lines.append(
            "The bundle is rebuilt without them in this PR and L1 runs again."
            if rebuilt
            else "The bundle was not rebuilt here: the next ingest rebuilds it."
        )
    return "\n".join(lines)


def retested_mark(sha: str) -> str:
    """Hidden in the L1 check of a bundle head the split rebuilt and re-tested itself."""
    return f"<!-- forksync:l1-retested:{sha} -->\n"


_SPLIT_SECTION = re.compile(
    r"\n*<!-- forksync:l1-split-section -->.*?<!-- /forksync:l1-split-section -->", re.DOTALL
)


def carry_split_section(old_body: str, new_body: str) -> str:
    """``new_body`` (an ingest's rewrite of a bundle PR's body) keeping the L1 split's section of
    ``old_body``: what was ejected from the bundle, and why, stays said in the PR."""
    found = _SPLIT_SECTION.search(old_body or "")
    if found is None or _SPLIT_SECTION.search(new_body or ""):
        return new_body
    return (new_body or "").rstrip("\n") + "\n\n" + found.group(0).lstrip("\n")


def with_split_section(body: str, note: str) -> str:
    """The PR body with the split's note as its own section, replacing an earlier one."""
    section = f"<!-- forksync:l1-split-section -->\n{note}\n<!-- /forksync:l1-split-section -->"
    return (_SPLIT_SECTION.sub("", body or "").rstrip("\n") + "\n\n" + section).lstrip("\n")


# --------------------------------------------------------------------------- pools


class PoolResultLike(Protocol):
    @property
    def suite(self) -> str: ...
    @property
    def pool(self) -> str: ...
    @property
    def executed(self) -> int: ...
    @property
    def outcome(self) -> str: ...


class DisagreementLike(Protocol):
    @property
    def suite(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def pool(self) -> str: ...
    @property
    def other(self) -> str: ...
    @property
    def pool_executed(self) -> int: ...
    @property
    def other_executed(self) -> int: ...
    @property
    def pool_outcome(self) -> str: ...
    @property
    def other_outcome(self) -> str: ...


class PoolComparisonLike(Protocol):
    @property
    def conclusion(self) -> str: ...
    @property
    def missing(self) -> Sequence[tuple[str, str]]: ...
    @property
    def disagreements(self) -> Sequence[DisagreementLike]: ...
    @property
    def results(self) -> Sequence[PoolResultLike]: ...


def pool_disagreement(d: DisagreementLike) -> str:
    """One omission in words, naming both pools and their counts."""
    if d.kind == "fewer":
        return (
            f"`{d.suite}`: pool `{d.pool}` executed {d.pool_executed} test(s), pool `{d.other}` "
            f"executed {d.other_executed}: {d.pool} omitted {d.other_executed - d.pool_executed}"
        )
    return (
        f"`{d.suite}`: pool `{d.pool}` concluded {d.pool_outcome} ({d.pool_executed} executed), "
        f"pool `{d.other}` concluded {d.other_outcome} ({d.other_executed} executed)"
    )


def pooled_suites_note(title: str, suites: Sequence[str], ran_here: int) -> tuple[str, str]:
    """(title, summary note) of ``forksync / L1`` when some suites run on pools instead of here."""
    listed = ", ".join(f"`{s}`" for s in suites)
    note = f"\n\nRun on several pools and compared in `{POOLS_CHECK}`: {listed}."
    return (title if ran_here else f"{len(suites)} suite(s) run on pools: see {POOLS_CHECK}"), note


def pools_check_run(sha: str, comparison: PoolComparisonLike) -> CheckRunOutput:
    """``forksync / L1 pools``: in progress until every pool reported, then the comparison."""
    lines = [marker("l1-pools", sha), "| suite | pool | executed | outcome |", "| --- | --- | --- | --- |"]
    lines += [
        f"| {_cell(r.suite)} | {_cell(r.pool)} | {r.executed} | {r.outcome} |" for r in comparison.results
    ]
    lines += [f"| {_cell(s)} | {_cell(p)} | – | waiting |" for s, p in comparison.missing]
    if comparison.missing:
        waiting = ", ".join(p for _, p in comparison.missing)
        return CheckRunOutput(
            POOLS_CHECK,
            sha,
            "in_progress",
            None,
            f"Waiting on {len(comparison.missing)} pool(s): {waiting}",
            "\n".join(lines),
        )
    if comparison.disagreements:
        first = comparison.disagreements[0]
        title = (
            f"Pools disagree: {first.pool} ran {first.pool_executed}, {first.other} ran {first.other_executed}"
            if first.kind == "fewer"
            else f"Pools disagree: {first.pool} {first.pool_outcome}, {first.other} {first.other_outcome}"
        )
        lines += [
            "",
            "A pool that ran fewer tests than another, or concluded otherwise, omitted tests: not a pass.",
            *(f"- {neutral(pool_disagreement(d))}" for d in comparison.disagreements),
        ]
    elif comparison.conclusion == "success":
        title = f"All {len({r.pool for r in comparison.results})} pool(s) agree"
    else:
        title = f"Every pool concluded {comparison.conclusion}"
    return CheckRunOutput(POOLS_CHECK, sha, "completed", comparison.conclusion, title, "\n".join(lines))


# --------------------------------------------------------------------------- the PR gate (before L1 runs)


def gate_moved(number: int, now_sha: str) -> tuple[str, str]:
    """(title, summary) of an outside PR's L1 check whose head was replaced by a newer push."""
    return (
        f"L1 not run: PR #{number} has moved to {now_sha[:12]}",
        "A newer push replaced this commit; its own L1 run reports there.",
    )


def gate_needs_approval(head_repo: str | None, author: str, association: str, sha: str) -> tuple[str, str]:
    """(title, summary) of an outside PR's L1 check that waits for a maintainer's /approve."""
    return (
        "Waiting for a maintainer: outside PRs need /approve before L1 runs",
        f"This PR comes from `{head_repo or 'a deleted fork'}` (author @{author}, "
        f"{association.lower()}). L1 runs on self-hosted runners, so nothing ran: a maintainer "
        f"must review head `{sha[:12]}` and comment `/approve`, then `/retest` (or re-run this "
        "check). A later push needs a new `/approve`.",
    )


def gate_stacked(base_ref: str, base_number: int | None) -> tuple[str, str]:
    """(title, summary) of a stacked bundle PR's L1 check: it waits until its base lands."""
    base = f"#{base_number}" if base_number is not None else f"the PR of `{base_ref}`"
    title = (
        f"Waiting: lands after {base} (base branch {base_ref}); re-targeted to the trunk when {base} lands"
    )
    summary = (
        f"This is a stacked bundle: it is based on `{base_ref}`, the branch of the bundle whose commits it "
        f"needs, so merging it now would merge it into that branch, not into the trunk. It lands after "
        f"{base}: when {base} lands, forksync re-targets this PR to the trunk (the same PR), rebuilds it there, "
        "and L1 runs then. Nothing ran on this head; branch protection that requires this check keeps it "
        "from being merged early."
    )
    if base_number is None:
        summary += f" (`{base_ref}` has no open PR now: the next ingest re-targets this one.)"
    return title, summary


def gate_not_fetched(sha: str, number: int) -> tuple[str, str]:
    return (
        f"L1 not run: {sha[:12]} could not be fetched",
        f"`{sha[:12]}` was not found in PR #{number}'s head.",
    )


def gate_not_on_branch(sha: str, repo: str) -> tuple[str, str]:
    return (
        "L1 not run: this commit is not on a branch of the repository",
        f"`{sha[:12]}` is on no branch of `{repo}` and no pull request was named. "
        "Self-hosted runners test branches of this repository, or an outside PR's head once a "
        "maintainer approves it: comment `/approve`, then `/retest`, on the PR.",
    )


def pool_run_mark(run_id: str) -> str:
    """The hidden line of ``forksync / L1 pools`` naming the pool run its reports belong to."""
    return f"<!-- forksync:l1-pools-run:{run_id} -->\n"


_POOL_RUN_MARK = re.compile(r"<!-- forksync:l1-pools-run:(?P<id>[0-9a-f]+) -->")


def pool_run_of(summary: str | None) -> str | None:
    """The pool run a ``forksync / L1 pools`` summary names (:func:`pool_run_mark`), if any."""
    found = _POOL_RUN_MARK.search(summary or "")
    return None if found is None else found.group("id")
