"""Replies to comment commands: one outcome per command, then one comment and its reactions.

Pure builders: plain records in, Markdown out. Every failure says why and what to do;
nothing here ever shows a stack trace (an unexpected error becomes :func:`internal_error`).
Text that comes from elsewhere (commit subjects, user arguments) is neutralised so that a
reply never pings people (``@name``) or links the fork's own issues by mistake (``#N``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from core.commands import SPECS, Command, Spec
from core.render import marker, neutral

OK = "ok"  # done: 👍
STARTED = "started"  # accepted, work queued or running: 🚀
FAILED = "failed"  # refused or failed: 😕

REACTION = {OK: "+1", STARTED: "rocket", FAILED: "confused"}
EMOJI = {OK: "👍", STARTED: "🚀", FAILED: "😕"}
SEEN_REACTION = "eyes"

# Backlog and plan lists are cut here so that a reply stays readable (GitHub's limit is 65,536).
MAX_LISTED = 25
MAX_BODY = 60_000


@dataclass(frozen=True)
class Outcome:
    """What one command did: ``status`` is OK, STARTED or FAILED; ``remedy`` only for failures."""

    command: str
    status: str
    message: str
    remedy: str = ""
    details: str = ""  # a block of Markdown shown below the line (tables for /status, /help, plans)


@dataclass(frozen=True)
class CommitLine:
    """An upstream commit as shown in replies."""

    sha: str
    subject: str = ""
    pr: int | None = None


@dataclass(frozen=True)
class OpenItem:
    """An open bundle PR or chain (issue or draft PR), as shown by /status."""

    id: str
    commits: int | None  # None when not known (a branch without its PR)
    url: str | None = None
    title: str = ""


@dataclass(frozen=True)
class StatusView:
    """What /status shows; built by the handler from the ledger and the open PRs."""

    upstream_url: str | None
    upstream_tip: str | None
    frontier: str | None
    contiguous_pin: str | None
    days_behind: float
    backlog: tuple[CommitLine, ...]
    pending: int
    picked: int
    wont_port: int
    deferred: tuple[CommitLine, ...] = ()
    urgent: tuple[str, ...] = ()
    bundles: tuple[OpenItem, ...] = ()
    chains: tuple[OpenItem, ...] = ()


@dataclass(frozen=True)
class PlannedGroup:
    """A bundle or chain of a plan, for the /bundle dry-run table."""

    kind: str  # "bundle" or "chain"
    id: str
    commits: tuple[CommitLine, ...]
    reasons: tuple[str, ...] = ()  # chains: one short line per reason


# --------------------------------------------------------------------------- safe text


def code(text: str) -> str:
    """``text`` as an inline code span, whatever backticks it contains (and no marker can hide in it)."""
    text = neutral(" ".join(text.split()), refs=False, mentions=False)
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def fenced(text: str) -> str:
    """``text`` as a code block whose fence no line inside can close (and no marker can hide in it)."""
    text = neutral(text, refs=False, mentions=False)
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def inline(text: str, upstream_url: str | None = None) -> str:
    """One line of outside text made safe for a reply: no pings, no fork-relative #N, no tables broken."""
    text = " ".join(text.split())
    text = text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
    # A zero-width joiner after @ keeps the name readable but stops the notification.
    text = re.sub(r"@(?=[A-Za-z0-9])", "@\u200d", text)

    def pr_link(m: re.Match[str]) -> str:
        number = m.group(1)
        if upstream_url:
            return f"[#{number}]({upstream_url.rstrip('/')}/pull/{number})"
        return f"#\u200d{number}"

    return re.sub(r"(?<![\w&/])#(\d+)\b", pr_link, text)


def short(sha: str | None) -> str:
    return sha[:10] if sha else "—"


def commit_link(sha: str | None, upstream_url: str | None) -> str:
    if not sha:
        return "—"
    if upstream_url and upstream_url.startswith(("http://", "https://")):
        return f"[`{short(sha)}`]({upstream_url.rstrip('/')}/commit/{sha})"
    return f"`{short(sha)}`"


def commit_line(commit: CommitLine, upstream_url: str | None) -> str:
    subject = inline(commit.subject, upstream_url) if commit.subject else ""
    if commit.pr is not None and f"#{commit.pr}" not in commit.subject:
        subject = f"{subject} ({inline(f'#{commit.pr}', upstream_url)})".strip()
    return f"{commit_link(commit.sha, upstream_url)} {subject}".rstrip()


# --------------------------------------------------------------------------- outcomes


def done(command: Command | str, message: str, details: str = "") -> Outcome:
    return Outcome(_text(command), OK, message, details=details)


def started(command: Command | str, message: str, details: str = "") -> Outcome:
    return Outcome(_text(command), STARTED, message, details=details)


def failed(command: Command | str, message: str, remedy: str, details: str = "") -> Outcome:
    return Outcome(_text(command), FAILED, message, remedy, details)


def _text(command: Command | str) -> str:
    if isinstance(command, str):
        return command
    return command.text() if command.ok else command.raw


def bad_command(command: Command) -> Outcome:
    """A command the parser refused (unknown name or bad arguments): its error and the usage."""
    spec = command.spec
    if spec is None:
        remedy = f"did you mean `/{command.suggestion}`? " if command.suggestion else ""
        remedy += "`/help` lists every command"
        return failed(command, f"unknown command {code('/' + command.name)}", remedy)
    return failed(
        command,
        inline(command.error or "bad arguments"),
        f"write it as {code(spec.usage)}; `/help {spec.name}` explains it",
    )


def denied(command: Command, user: str, repo: str, have: str | None) -> Outcome:
    having = f"you have {have}" if have and have != "none" else "you are not a collaborator"
    return failed(
        command,
        f"denied: {code('/' + command.name)} needs **write**, **maintain** or **admin** permission on {repo} ({having})",
        "ask a maintainer to run it, or to give you write access",
    )


def denied_signoff(command: Command, workload: str, owners: Sequence[str]) -> Outcome:
    names = ", ".join(f"@{o}" for o in owners) or "nobody (the config lists no owners)"
    return failed(
        command,
        f"denied: only the owners of workload {code(workload)} can sign it off: {names}",
        "ask one of them to comment `/signoff " + workload + "`",
    )


def unknown_workload(command: Command, workload: str, known: Sequence[str]) -> Outcome:
    listed = ", ".join(code(k) for k in known) if known else "none are configured"
    return failed(
        command,
        f"there is no L3 workload {code(workload)} in `.github/forksync.yml` (known: {listed})",
        "use one of the known names, or add it under `l3.workloads`",
    )


def unknown_suites(command: Command, names: Sequence[str], known: Sequence[str]) -> Outcome:
    listed = ", ".join(code(k) for k in known) if known else "none are configured"
    return failed(
        command,
        f"unknown L1 suite {', '.join(code(n) for n in names)} (known: {listed})",
        "use the names under `l1.suites` in `.github/forksync.yml`, or `/retest` alone for all",
    )


def unknown_ref(command: Command, ref: str, upstream: str) -> Outcome:
    what = f"upstream PR {ref}" if ref.startswith("#") else f"sha {code(ref)}"
    return failed(
        command,
        f"unknown ref: no upstream commit after the fork's base matches {inline(what)} on {inline(upstream)}",
        "check it in the upstream history (a sha prefix of 4+ hex digits, or #N for a squash-merged PR)",
    )


def ambiguous_ref(
    command: Command, ref: str, candidates: Sequence[CommitLine], upstream_url: str | None
) -> Outcome:
    shown = candidates[:MAX_LISTED]
    lines = "\n".join(f"- {commit_line(c, upstream_url)}" for c in shown)
    more = f"\n- … and {len(candidates) - len(shown)} more" if len(candidates) > len(shown) else ""
    return failed(
        command,
        f"ambiguous ref: {code(ref)} matches {len(candidates)} upstream commits",
        "give more hex digits of the sha you mean",
        details=lines + more,
    )


def nothing_to_bundle(command: Command, why: str) -> Outcome:
    return failed(
        command,
        f"nothing to bundle: {why}",
        "nothing to do now; `/status` shows the backlog, and deferred commits come back with `/urgent REF`",
    )


def rate_limited(
    command: Command | str, user: str, limit: int, window_s: int, retry_after_s: int, now: datetime
) -> Outcome:
    at = (now + timedelta(seconds=max(retry_after_s, 1))).astimezone(UTC)
    return failed(
        command,
        f"rate limited: @{user} ran {limit} commands in the last {_duration(window_s)} (the limit for this repository)",
        f"retry in {_duration(retry_after_s)} (after {at:%H:%M} UTC); the limit is `commands.rate_limit` in `.github/forksync.yml`",
    )


def not_available(command: Command, feature: str) -> Outcome:
    return failed(
        command,
        f"{code('/' + command.name)} is not available yet in this deployment ({feature} is not installed)",
        "use the `forksync` command line for now, or ask the bot's operators to deploy it",
    )


def bad_config(command: Command | str, error: str, quoted: str | None) -> Outcome:
    details = fenced(quoted) if quoted else ""
    return failed(
        command,
        f"the repository config is invalid: {inline(error)}",
        "fix `.github/forksync.yml` on the default branch and comment again",
        details,
    )


def error_outcome(command: Command | str, problem: str, remedy: str) -> Outcome:
    """A ForksyncError (a failure the user can act on) as an outcome."""
    return failed(
        command, inline(problem), inline(remedy) or "see `/help`, or open an issue if this looks wrong"
    )


def internal_error(command: Command | str, error_id: str) -> Outcome:
    return failed(
        command,
        f"internal error, id `{error_id}`, logged",
        "try again, or open an issue quoting the id",
    )


def _duration(seconds: int) -> str:
    seconds = max(int(seconds), 0)
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


# --------------------------------------------------------------------------- the reply


def reactions(outcomes: Sequence[Outcome]) -> list[str]:
    """The reactions for a comment: one per distinct status, in OK, STARTED, FAILED order."""
    present = {o.status for o in outcomes}
    return [REACTION[s] for s in (OK, STARTED, FAILED) if s in present]


def reply_marker(comment_id: int) -> str:
    """Marks the reply to one comment, so a redelivered task edits it rather than posting twice."""
    return marker("reply", str(comment_id))


def reply(author: str, comment_id: int, outcomes: Sequence[Outcome]) -> str:
    """One comment answering every command of a comment, in order."""
    parts = [reply_marker(comment_id), f"@{author}" if author else ""]
    for outcome in outcomes:
        line = f"{EMOJI[outcome.status]} {code(outcome.command)} — {outcome.message}"
        if outcome.remedy:
            line += f"\n**What to do:** {outcome.remedy}"
        parts.append(line)
        if outcome.details:
            parts.append(outcome.details)
    body = "\n\n".join(p for p in parts if p)
    if len(body) > MAX_BODY:
        body = body[: MAX_BODY - 80].rsplit("\n", 1)[0] + "\n\n… (cut: the reply was too long for a comment)"
    return body


# --------------------------------------------------------------------------- /help


def help_table(topic: str | None = None) -> str:
    specs: Sequence[Spec] = [s for s in SPECS if s.name == topic] if topic else SPECS
    rows = ["| command | what it does |", "| --- | --- |"]
    rows += [f"| {code(s.usage)} | {s.summary} |" for s in specs]
    notes = (
        "\n\nREF is an upstream sha (4 or more hex digits, a unique prefix) or `#N` (an upstream PR number). "
        "Commands go at the start of a line, several per comment; lines in code blocks and quotes are ignored. "
        "Only users with write access may run them (`/status` and `/help`: anyone); `/signoff` only a workload's owners."
    )
    return "\n".join(rows) + ("" if topic else notes)


# --------------------------------------------------------------------------- /status


def status_details(view: StatusView) -> str:
    url = view.upstream_url
    lines = [
        "| | |",
        "| --- | --- |",
        f"| days behind upstream | **{view.days_behind:.1f}** |",
        f"| backlog commits | **{len(view.backlog)}** |",
        f"| pending | {view.pending} |",
        f"| picked | {view.picked} |",
        f"| won't port | {view.wont_port} |",
        f"| frontier | {commit_link(view.frontier, url)} |",
        f"| contiguous pin | {commit_link(view.contiguous_pin, url)} |",
        f"| upstream tip | {commit_link(view.upstream_tip, url)} |",
    ]
    if view.urgent:
        lines.append(f"| urgent picks | {', '.join(commit_link(s, url) for s in view.urgent)} |")
    out = "\n".join(lines)
    if view.backlog:
        out += "\n\n**Backlog** (oldest first):\n" + _commit_list(view.backlog, url)
    if view.deferred:
        out += "\n\n**Deferred:**\n" + _commit_list(view.deferred, url)
    out += "\n\n**Open bundles:** " + _items(view.bundles)
    out += "\n\n**Open chains:** " + _items(view.chains)
    return out


def _commit_list(commits: Sequence[CommitLine], url: str | None) -> str:
    shown = commits[:MAX_LISTED]
    out = "\n".join(f"- {commit_line(c, url)}" for c in shown)
    if len(commits) > len(shown):
        out += f"\n- … and {len(commits) - len(shown)} more (`forksync status` lists them all)"
    return out


def _items(items: Sequence[OpenItem]) -> str:
    if not items:
        return "none"
    rendered = []
    for item in items:
        name = f"[{inline(item.id)}]({item.url})" if item.url else code(item.id)
        title = f" {inline(item.title)}" if item.title else ""
        count = "" if item.commits is None else f" ({item.commits} commit{'s' if item.commits != 1 else ''})"
        rendered.append(f"\n- {name}{title}{count}")
    return "".join(rendered)


# --------------------------------------------------------------------------- /bundle dry-run


def plan_table(groups: Sequence[PlannedGroup], upstream_url: str | None) -> str:
    if not groups:
        return "The plan is empty: nothing is pending."
    rows = ["| kind | id | commits | first | last | why |", "| --- | --- | --- | --- | --- | --- |"]
    url = upstream_url
    for group in groups[:MAX_LISTED]:
        first = commit_line(group.commits[0], url) if group.commits else "—"
        last = commit_line(group.commits[-1], url) if len(group.commits) > 1 else ""
        why = "; ".join(inline(r) for r in group.reasons[:3])
        if len(group.reasons) > 3:
            why += f"; … {len(group.reasons) - 3} more"
        rows.append(
            f"| {group.kind} | {code(group.id)} | {len(group.commits)} | {first} | {last} | {why or 'low risk'} |"
        )
    if len(groups) > MAX_LISTED:
        rows.append(f"| … | {len(groups) - MAX_LISTED} more | | | | |")
    return "\n".join(rows)


# --------------------------------------------------------------------------- each command's answers
# (the planners in workers/commands/plan.py choose among these; the texts live here only)


def help_answer(command: Command, topic: str | None) -> Outcome:
    return done(
        command,
        "the commands forksync understands" if not topic else f"how to use `/{topic}`",
        help_table(topic),
    )


def status_answer(command: Command, view: StatusView, backlog: int) -> Outcome:
    summary = (
        f"{view.days_behind:.1f} days behind upstream, {backlog} backlog commits, {view.pending} pending"
    )
    return done(command, summary, status_details(view))


def already_picked(command: Command, shown: str, carriers: Sequence[str], disposition: str) -> Outcome:
    listed = ", ".join(f"`{c[:10]}`" for c in carriers)
    return failed(
        command,
        f"{shown} is already picked (carried by {listed}), so it cannot be {disposition}",
        "revert the pick in the fork first if it should not be there",
    )


def nothing_to_hurry(command: Command, shown: str) -> Outcome:
    return done(command, f"{shown} is already picked; nothing to hurry")


def _marked(shown: str, disposition: str, reason: str) -> str:
    return f"marked {shown} as **{disposition}**" + (f": {inline(reason)}" if reason else "")


def decided(command: Command, shown: str, disposition: str, reason: str) -> Outcome:
    """/defer and /skip recorded."""
    said = _marked(shown, disposition, reason)
    if disposition == "deferred":
        return done(command, said + "; it stays in the backlog and out of bundles")
    return done(command, said + "; it will not be picked")


def urgent_outlook(trunk: str, branch: str, conflicts: Sequence[str]) -> str:
    """What ingestion will do with an urgent commit, from its trial pick onto the fork tip."""
    if not conflicts:
        return (
            f"it picks cleanly onto {code(trunk)}, so it gets a PR of its own on {code(branch)}, "
            "built on the fork tip ahead of the bundles; merging it does not move the frontier"
        )
    files = ", ".join(code(path) for path in conflicts)
    return (
        f"its pick onto {code(trunk)} conflicts in {files}, so no PR can be built; an issue will name the files "
        "and the commands to pick it by hand (the frontier stays either way)"
    )


def urgent_started(command: Command, shown: str, reason: str, outlook: str) -> Outcome:
    return started(command, _marked(shown, "urgent", reason) + "; ingestion started now: " + outlook)


def urgent_recorded(command: Command, shown: str, reason: str, outlook: str) -> Outcome:
    return done(
        command,
        _marked(shown, "urgent", reason) + "; the next ingestion (push or poll) acts on it: " + outlook,
    )


def unchained(command: Command, shown: str) -> Outcome:
    return done(command, f"took {shown} out of its chain; file and symbol links will not pull it back in")


def chained(command: Command, shown: str, chain_id: str, commits: int) -> Outcome:
    return done(command, f"moved {shown} into chain {code(chain_id)} ({commits} commits, upstream order)")


def plan_summary(bundles: int, chains: int, commits: int, urgent: int) -> str:
    summary = f"{bundles} bundle(s) and {chains} chain(s), {commits} commits"
    if urgent:
        summary += f" ({urgent} urgent, each in a PR of its own)"
    return summary


def bundle_dry_run(command: Command, summary: str, table: str) -> Outcome:
    return done(command, f"the plan (dry run, nothing pushed): {summary}", table)


def bundle_started(
    command: Command, summary: str, table: str, limit: int | None, configured_max: int
) -> Outcome:
    note = ""
    if limit is not None:
        note = (
            f" with at most {limit} commit(s) per bundle (`max={limit}`, for this run only; later runs bundle by "
            f"`bundle.max_commits` = {configured_max} again)"
        )
    return started(
        command, f"planned {summary}; ingestion started: bundle PRs will be opened or updated{note}", table
    )


def nothing_planned_why(deferred: int) -> str:
    why = "every upstream commit after the base is picked, deferred or won't port"
    if deferred:
        why += f" ({deferred} deferred)"
    return why


def pr_only(command: Command) -> Outcome:
    return failed(
        command,
        f"`/{command.name}` works on pull requests; this is an issue",
        "comment it on the PR it is about",
    )


def retest_not_approved(command: Command, head_repo: str | None, head_sha: str) -> Outcome:
    return failed(
        command,
        f"this PR comes from outside ({head_repo or 'a deleted fork'}) and its head `{head_sha[:10]}` "
        "is not approved for the self-hosted runners",
        "a maintainer reviews the change and comments `/approve`, then `/retest`",
    )


def retest_started(command: Command, suites: Sequence[str], known: Sequence[str], head_sha: str) -> Outcome:
    if suites:
        scope = (
            f"rerunning {', '.join(code(a) for a in suites)} on `{head_sha[:10]}`; the other suites "
            "keep their results on this commit (one with no result on it yet runs too)"
        )
    else:
        listed = ", ".join(code(n) for n in known) or "none are configured"
        scope = f"rerunning all L1 suites ({listed}) on `{head_sha[:10]}`"
    return started(command, f"{scope}; the `forksync / L1` check updates in place")


def unknown_benchmark(command: Command, target: str, names: Sequence[str]) -> Outcome:
    listed = ", ".join(code(n) for n in names) if names else "none are configured"
    return failed(
        command,
        f"there is no L2 benchmark or metric {code(target)} (known: {listed})",
        "use a name under `l2.benchmarks` in `.github/forksync.yml`",
    )


def bisect_started(command: Command, benchmark: str, target: str) -> Outcome:
    what = f"benchmark {code(benchmark)}" + (f" (metric {code(target)})" if target != benchmark else "")
    return started(command, f"bisecting {what} on the l2 queue; the culprit will be posted here")


def digest_started(command: Command) -> Outcome:
    return started(
        command,
        "refreshing this period's pin-update digest issue (label `forksync:digest`); "
        "owners of the touched areas are mentioned there once",
    )


def approve_on_issue(command: Command) -> Outcome:
    return failed(
        command, "`/approve` works on pull requests; this is an issue", "comment it on the PR to approve"
    )


def approve_not_needed_inside(command: Command) -> Outcome:
    return done(
        command,
        "not needed: this PR's branch is in the repository, so its L1 runs on the self-hosted runners already",
    )


def approve_not_needed_member(command: Command, author: str, association: str) -> Outcome:
    return done(
        command,
        f"not needed: @{author} is a {association.lower()} of this repository, so this PR's L1 "
        "runs on the self-hosted runners already",
    )


def approved(command: Command, author: str, head_sha: str) -> Outcome:
    return done(
        command,
        f"approved head `{head_sha[:10]}` of @{author}'s PR for the self-hosted runners; a new push needs a new `/approve`",
    )


def approval_record(record_marker: str, head_sha: str, by: str) -> str:
    """The bot's record of an ``/approve`` on an outside PR (``workers/commands/approval.py`` reads
    its "Approved by" and "Approved head" lines back)."""
    return (
        f"{record_marker}\n"
        "**Self-hosted runners allowed for this PR** (forksync `/approve`).\n\n"
        f"Approved by: @{by}\n"
        f"Approved head: `{head_sha}`\n\n"
        "A new push needs a new `/approve` from a maintainer."
    )


# --------------------------------------------------------------------------- /resolve and its /approve


def resolve_on_issue(command: Command) -> Outcome:
    return failed(
        command,
        "`/resolve` works on forksync's pick pull requests; this is an issue",
        "comment it on the PR whose pick conflicts",
    )


def resolve_not_a_pick(command: Command, head_ref: str) -> Outcome:
    return failed(
        command,
        f"`{head_ref}` is not a forksync pick branch, so there is nothing to resolve",
        "use it on a `[Cherry-pick]` PR that forksync opened",
    )


def resolve_no_agent(command: Command) -> Outcome:
    return failed(
        command,
        "no conflict agent is configured",
        "set `resolve.agent.command` (or `url` and `key_env`) in `.github/forksync.yml`",
    )


def resolve_no_upstream(command: Command, missing: Sequence[str], trailer: str) -> Outcome:
    return failed(
        command,
        "this branch names no upstream commit that forksync can read "
        f"({', '.join(missing) or 'no trailer found'})",
        f"the pick commits must carry the trailer `{trailer}`",
    )


def resolve_human_owned(command: Command, shas: Sequence[str], details: str) -> Outcome:
    who = ", ".join(f"`{sha[:10]}`" for sha in shas[:3])
    return done(
        command,
        f"a maintainer's commit ({who}) is on this branch: forksync keeps it and will not rewrite the branch; "
        "once approved and merged, its resolution goes into the resolution memory",
        details=details,
    )


def resolve_waiting(command: Command, waiting: int, with_agent: bool, details: str) -> Outcome:
    return failed(
        command,
        f"{waiting} file(s) still need a human{' (the agent included)' if with_agent else ''}; the branch is unchanged",
        "push your resolution onto this branch (forksync keeps it), or try `/resolve agent` if an agent is configured",
        details=details,
    )


def resolved(command: Command, files: int, picks: int, head_ref: str, head: str, details: str) -> Outcome:
    return done(
        command,
        f"resolved {files} file(s) in {picks} pick(s) and updated `{head_ref}` to `{head[:10]}`; "
        "a maintainer's approval (a review or `/approve`) is still required before merge",
        details=details,
    )


def resolve_show(command: Command, path: str, commit: str, text: str) -> Outcome:
    return done(command, f"`{path}` in the pick of `{commit[:10]}`", details=text)


def resolve_show_unknown(command: Command, path: str, conflicted: Sequence[str]) -> Outcome:
    listed = ", ".join(f"`{p}`" for p in conflicted[:10]) or "none"
    return failed(command, f"`{path}` does not conflict in this PR's picks", f"conflicted files: {listed}")


def resolution_approval_record(record_marker: str, head_sha: str, by: str) -> str:
    """The bot's record of a resolution's approval (``resolution_approved`` looks for its head line)."""
    return (
        f"{record_marker}\n**Resolution approved** (forksync `/approve`).\n\n"
        f"Approved by: @{by}\nApproved head: `{head_sha}`\n\n"
        "A new push needs a new `/approve` (or an approving review) before merge."
    )


def learned_resolutions_message(count: int, pr: int) -> str:
    """The commit message of the resolution memory's commit for an approved pick PR."""
    return f"forksync: learn {count} resolution(s) approved in #{pr}"


def resolution_approved_answer(command: Command, head_sha: str, learned: int) -> Outcome:
    return done(
        command,
        f"approved the resolution at head `{head_sha[:10]}`; {learned} hunk resolution(s) added to the "
        "resolution memory; merge once L1 is green",
    )
