"""Pure builders for the ingestion loop's text: bundle PRs, chain tracking issues, the check run.

Every body carries a hidden marker (``core.render.marker``) keyed by the bundle or chain id, so
a rerun finds and edits its own PR or issue instead of opening a second one; the bundle body
also names the plan it came from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.render import marker, neutral

TITLE_MAX = 250  # GitHub rejects titles over 256 characters
CHECK_NAME = "forksync / ingestion"


@dataclass(frozen=True)
class CommitRow:
    """One upstream commit as the ingestion texts show it."""

    sha: str
    subject: str
    author: str
    pr: int | None = None  # upstream PR number, from the squash-merge subject "(#N)"
    note: str = ""  # risk note or reason, one line


@dataclass(frozen=True)
class BundleView:
    key: str  # stable bundle id; also the marker key
    branch: str
    base_branch: str  # what the PR targets: the fork trunk, or the branch of the bundle it is stacked on
    commits: tuple[CommitRow, ...]
    plan_id: str
    ejected: tuple[CommitRow, ...] = ()  # failed at build time, moved to a chain
    stacked_on: str | None = None  # the bundle (id) it is stacked on; its branch is base_branch
    stack_commits: int = 0  # stacked: the commits of the bundles under it (what it needs landed first)
    needs: tuple[CommitRow, ...] = ()  # stacked: its members that need the stack under it, and why
    unstacked_from: str | None = None  # the declined bundle's branch it was stacked on
    left_behind: tuple[CommitRow, ...] = ()  # members that need the declined bundle and moved to it


@dataclass(frozen=True)
class ChainView:
    key: str
    branch: str | None  # built through its conflicts, when anything could be built
    commits: tuple[CommitRow, ...]  # upstream order; note = why it is in the chain
    conflicts: tuple[str, ...]  # files that conflict on the fork tip
    reproduce: str  # shell command a maintainer runs to replay the chain locally
    plan_id: str
    base_branch: str = "main"  # what its PR targets
    carried: int = 0  # members on the branch (built through, resolutions included)
    resolutions: tuple[str, ...] = ()  # one Conflict Resolution section per resolved member, rendered
    stopped_at: str | None = None  # the member the build stopped at (no resolution)
    waiting: tuple[tuple[str, str], ...] = ()  # (path, why) of that member's files
    waits_for: tuple[str, ...] = ()  # upstream commits not landed that are all it waits for (no human needed)


@dataclass(frozen=True)
class UrgentView:
    """One commit a maintainer marked urgent, picked alone onto the fork trunk (not stacked)."""

    key: str  # "urgent-<sha7>"; also the marker key
    branch: str | None  # forksync/urgent/<sha7>; None when its pick conflicts (nothing to open a PR on)
    base_branch: str  # the fork trunk
    commit: CommitRow
    conflicts: tuple[str, ...]  # files its pick onto the fork tip conflicts in
    reproduce: str  # shell lines to pick it by hand
    plan_id: str


@dataclass(frozen=True)
class IngestionFigures:
    days_behind: float
    backlog: int
    pending: int
    picked: int
    frontier: str | None
    upstream_tip: str | None
    bundles: int
    chains: int
    urgent: int = 0  # urgent picks in flight (their own PR, or an issue when they conflict)


def _pr_ref(row: CommitRow) -> str:
    return f"#{row.pr}" if row.pr is not None else row.sha[:7]


def _cell(text: str) -> str:
    """Text from upstream made safe inside a Markdown table cell (no marker, no ping)."""
    return " ".join(neutral(text, refs=False).replace("|", "\\|").split())


def bundle_title(bundle: BundleView) -> str:
    """``[Cherry-pick][BUNDLE] Cherry-pick K upstream(#a #b …)``, the fork convention (design.md)."""
    head = f"[Cherry-pick][BUNDLE] Cherry-pick {len(bundle.commits)} upstream("
    refs: list[str] = []
    for row in bundle.commits:
        ref = _pr_ref(row)
        if len(head) + len(" ".join([*refs, ref])) + len(" …)") > TITLE_MAX:
            refs.append("…")
            break
        refs.append(ref)
    return head + " ".join(refs) + ")"


def _link(upstream_url: str | None, row: CommitRow) -> str:
    if upstream_url and upstream_url.startswith("https://"):
        base = upstream_url.removesuffix(".git").rstrip("/")
        commit = f"[`{row.sha[:10]}`]({base}/commit/{row.sha})"
        pr = f"[#{row.pr}]({base}/pull/{row.pr})" if row.pr is not None else "—"
        return f"{commit} | {pr}"
    return f"`{row.sha[:10]}` | {f'#{row.pr}' if row.pr is not None else '—'}"


def _commit_table(rows: tuple[CommitRow, ...], upstream_url: str | None, note_header: str) -> list[str]:
    lines = [f"| # | commit | upstream PR | author | subject | {note_header} |", "|---|---|---|---|---|---|"]
    for i, row in enumerate(rows, 1):
        lines.append(
            f"| {i} | {_link(upstream_url, row)} | {_cell(row.author)} | {_cell(row.subject)} | {_cell(row.note) or '—'} |"
        )
    return lines


# Where a stacked bundle's body names its base PR: the ingestion planner (or, for a base opened in
# the same run, its executor) puts the PR's number in its place (``fill_stack_ref``).
STACK_REF = "<!-- forksync:stack-base -->"


def fill_stack_ref(body: str, number: int | None) -> str:
    """``body`` with its base PR named (``#N``), or unchanged while the base has no PR yet."""
    return body if number is None else body.replace(STACK_REF, f"#{number}")


NEW_PR_REF = "<!-- forksync:new-pr -->"


def fill_pull_ref(body: str, number: int | None) -> str:
    """``body`` with the PR opened this run named (`` (#N)``), or without the mark when none was."""
    return body.replace(NEW_PR_REF, f" (#{number})" if number is not None else "")


def bundle_body(bundle: BundleView, upstream_url: str | None) -> str:
    lines = [
        marker("bundle", bundle.key),
        marker("plan", bundle.plan_id),
        f"Cherry-picks {len(bundle.commits)} low-risk upstream commits, in upstream order, "
        f"on branch `{bundle.branch}`. Each keeps its author and names the upstream commit in a trailer.",
    ]
    if bundle.stacked_on is not None:
        why = (
            "Its commits depend on that bundle's (below: which lines or symbols)"
            if bundle.needs
            else "It was cut from one group of dependent commits whose needs cross, so the group's "
            "bundles are stacked in line"
        )
        lines += [
            f"**Stacked on {STACK_REF}** (`{bundle.base_branch}`, {bundle.stack_commits} commits it needs); "
            f"lands after it. {why}, and bundles are kept to `bundle.max_commits`, so it is built on that "
            "branch and targets it. When that PR lands, forksync re-targets this one to the trunk and "
            "rebuilds it, in this same PR.",
        ]
    else:
        lines += [
            f"Built on `{bundle.base_branch}` alone: it lands on its own, in any order with the other bundles "
            "and chains. When another lands first, forksync rebuilds this one onto the new trunk in this same PR.",
        ]
    lines += ["", *_commit_table(bundle.commits, upstream_url, "risk notes")]
    if bundle.needs:
        lines += [
            "",
            f"**Why stacked** ({len(bundle.needs)}): these commits need the bundle it is stacked on.",
            "",
            *_commit_table(bundle.needs, upstream_url, "needs"),
        ]
    if bundle.unstacked_from is not None:
        lines += [
            "",
            f"Was stacked on `{bundle.unstacked_from}`, whose PR was closed unmerged: rebuilt on "
            f"`{bundle.base_branch}` without it"
            + (
                f"; {len(bundle.left_behind)} commit(s) that need it left this PR for it:"
                if bundle.left_behind
                else "."
            ),
        ]
        if bundle.left_behind:
            lines += ["", *_commit_table(bundle.left_behind, upstream_url, "needs")]
    if bundle.ejected:
        lines += [
            "",
            f"**Ejected at build time** ({len(bundle.ejected)}): these did not apply cleanly and moved to a risky chain.",
            "",
            *_commit_table(bundle.ejected, upstream_url, "why"),
        ]
    lines += [
        "",
        "Merging this PR moves the ledger: the next ingestion plans from the new fork tip. "
        "Comment `/bundle` to rebuild it, `/skip <sha> <reason>` to drop a commit (wont_port).",
        "",
        f"<sub>forksync plan `{bundle.plan_id}`</sub>",
    ]
    return "\n".join(lines) + "\n"


def urgent_title(view: UrgentView) -> str:
    """``[Cherry-pick][URGENT] '<upstream subject (#N)>'``: the fork's pick title, tagged urgent
    (the ledger reads the tag, like the decision note, as an urgent pick: the frontier stays)."""
    title = f"[Cherry-pick][URGENT] '{view.commit.subject}'"
    if view.branch is None:
        title = f"[forksync][URGENT] conflicts: '{view.commit.subject}'"
    return title if len(title) <= TITLE_MAX else title[: TITLE_MAX - 2] + "…'"


def urgent_body(view: UrgentView, upstream_url: str | None) -> str:
    """Body of the urgent pick's PR, or of its issue when the pick conflicts on the fork tip."""
    lines = [
        marker("urgent", view.key),
        marker("plan", view.plan_id),
    ]
    if view.branch is not None:
        lines += [
            f"Picks one upstream commit now, out of upstream order, because a maintainer marked it **urgent**: "
            f"built alone on `{view.base_branch}` (not stacked behind the bundles) on branch `{view.branch}`. "
            "It keeps its author and names the upstream commit in a trailer.",
            "",
            "Merging it does **not** move the frontier: the ledger counts it as an urgent pick, and the "
            "bundles still take the commits before it in upstream order.",
        ]
    else:
        lines += [
            f"A maintainer marked this upstream commit **urgent**, but it does not pick cleanly onto "
            f"`{view.base_branch}`, so forksync opened no PR and built no branch for it (it never commits conflict markers).",
            "",
            "**Conflicting files** on the fork tip:",
            "",
            *(f"- `{path}`" for path in view.conflicts),
            "",
            "**Resolve by hand** in a clone of the fork and open a PR titled "
            f"`[Cherry-pick][URGENT] '{view.commit.subject}'` (keep the `cherry picked from` trailer); "
            "once it merges, the ledger counts it as an urgent pick and this issue is no longer needed:",
            "",
            "```sh",
            view.reproduce,
            "```",
        ]
    lines += [
        "",
        *_commit_table((view.commit,), upstream_url, "note"),
        "",
        "Comment `/defer <sha>` or `/skip <sha> <reason>` to stop hurrying it.",
        "",
        f"<sub>forksync plan `{view.plan_id}`</sub>",
    ]
    return "\n".join(lines) + "\n"


def chain_title(chain: ChainView) -> str:
    first = chain.commits[0].subject if chain.commits else "(empty)"
    title = f"[forksync][CHAIN] {len(chain.commits)} risky upstream commit{'s' if len(chain.commits) != 1 else ''}: {first}"
    return title if len(title) <= TITLE_MAX else title[: TITLE_MAX - 1] + "…"


def chain_pr_title(chain: ChainView) -> str:
    """``[Cherry-pick][CHAIN] Cherry-pick K upstream(#a #b …)``: a chain's PR, named as bundles are."""
    refs: list[str] = []
    head = f"[Cherry-pick][CHAIN] Cherry-pick {len(chain.commits)} upstream("
    for row in chain.commits:
        ref = _pr_ref(row)
        if len(head) + len(" ".join([*refs, ref])) + len(" …)") > TITLE_MAX:
            return head + " ".join(refs) + " …)"
        refs.append(ref)
    return head + " ".join(refs) + ")"


def chain_pr_body(chain: ChainView, upstream_url: str | None) -> str:
    """A chain's PR: its members (as a bundle lists them, with why each is there), each resolved
    member's Conflict Resolution notes, and where the build stopped, if it did."""
    lines = [
        marker("chain", chain.key),
        marker("plan", chain.plan_id),
        f"{_chain_intro(chain)}; {chain.carried} are on the branch. Each keeps its author and names the upstream "
        "commit in a trailer.",
        "",
        *_chain_members(chain, upstream_url),
        *_chain_stop(chain),
        "Runs L1 like any PR. " + CHAIN_COMMANDS,
    ]
    return "\n".join(lines) + "\n"


CHAIN_COMMANDS = "Comment `/chain` to change membership, `/defer <sha>` to leave a commit for later."


def _chain_intro(chain: ChainView) -> str:
    """What a chain is, in the words its PR and its tracking issue share."""
    on = f" on branch `{chain.branch}`" if chain.branch else f" onto `{chain.base_branch}`"
    return (
        f"Risky chain `{chain.key}`: {len(chain.commits)} upstream commits that depend on each other, picked in "
        f"upstream order{on} and built through their conflicts"
    )


def _chain_members(chain: ChainView, upstream_url: str | None) -> list[str]:
    """The members' table and each resolved member's Conflict Resolution notes."""
    lines = [*_commit_table(chain.commits, upstream_url, "why it is in the chain"), ""]
    if chain.resolutions:
        lines += [f"**Resolved conflicts** ({len(chain.resolutions)}): check each before approving.", ""]
        for section in chain.resolutions:
            lines += [section.rstrip("\n"), ""]
    return lines


def _chain_stop(chain: ChainView) -> list[str]:
    """Where the build stopped and what waits: an unlanded upstream commit (nothing to do by hand), or
    a human (the files and the commands to reproduce)."""
    if chain.stopped_at and chain.waits_for:
        commits = ", ".join(f"`{sha[:10]}`" for sha in chain.waits_for)
        return [
            f"**Waits at `{chain.stopped_at[:12]}`** for upstream {commits}, not landed yet: it brings files "
            "this member changes. The chain goes on when it lands (the next ingest rebuilds it); nothing to "
            "resolve by hand:",
            "",
            *(f"- `{path}`: {why}" for path, why in chain.waiting),
            "",
        ]
    if chain.stopped_at:
        return [
            f"**Stopped at `{chain.stopped_at[:12]}`**: no resolution; these files wait for a human:",
            "",
            *(f"- `{path}`: {why}" for path, why in chain.waiting),
            "",
            "Reproduce locally, resolve, and push to the branch (forksync never rewrites a human's commit):"
            if chain.branch
            else "Reproduce locally and resolve; once the first commit builds, the chain's branch and PR follow:",
            "",
            "```sh",
            chain.reproduce,
            "```",
            "",
        ]
    return []


def resolution_notes(commit: str, entries: tuple[tuple[str, str, str], ...]) -> str:
    """fbtriton's ``Conflict Resolution:`` section (``- File: / Action: / Reason:``), for a resolver
    whose outcome the full renderer (core.render.resolution) cannot read."""
    lines = [f"`{commit[:12]}`", "Conflict Resolution:"]
    for path, action, reason in entries:
        lines += [f"- File: {path}", f"  Action: {action}", f"  Reason: {reason}"]
    return "\n".join(lines) + "\n"


def chain_body(chain: ChainView, upstream_url: str | None) -> str:
    """A chain's tracking issue, in its PR's words: the chain has no PR because nothing of it builds
    yet (or ``bundle.chain_prs: false``); where the build stops and what waits, and how to reproduce."""
    if chain.branch and chain.carried:
        status = f"; {chain.carried} are on the branch, which has no PR (`bundle.chain_prs: false`)."
    else:
        status = (
            ". Nothing of it builds yet, so it is tracked in this issue; its PR opens (and this issue closes) "
            "once a commit builds."
        )
    lines = [
        marker("chain", chain.key),
        marker("plan", chain.plan_id),
        _chain_intro(chain) + status,
        "",
        *_chain_members(chain, upstream_url),
    ]
    if chain.conflicts and not chain.waiting:
        lines += [
            "**Conflicting files** on the fork tip:",
            "",
            *(f"- `{path}`" for path in chain.conflicts),
            "",
        ]
    stop = _chain_stop(chain)
    lines += stop
    if not (chain.stopped_at and chain.waits_for) and not chain.stopped_at:
        lines += ["Reproduce locally:", "", "```sh", chain.reproduce, "```", ""]
    lines.append(CHAIN_COMMANDS)
    return "\n".join(lines) + "\n"


def ingestion_summary(figures: IngestionFigures) -> tuple[str, str]:
    """(title, summary) of the ``forksync / ingestion`` check run."""
    title = f"{figures.days_behind:.1f} days behind upstream, backlog {figures.backlog}, pending {figures.pending}"
    rows = [
        "| metric | value |",
        "|---|---|",
        f"| days behind upstream | {figures.days_behind:.2f} |",
        f"| backlog commits | {figures.backlog} |",
        f"| pending commits | {figures.pending} |",
        f"| picked | {figures.picked} |",
        f"| frontier | {f'`{figures.frontier[:10]}`' if figures.frontier else '—'} |",
        f"| upstream tip | {f'`{figures.upstream_tip[:10]}`' if figures.upstream_tip else '—'} |",
        f"| open bundles | {figures.bundles} |",
        f"| open risky chains | {figures.chains} |",
        f"| urgent picks in flight | {figures.urgent} |",
    ]
    return title, "\n".join(rows) + "\n"


def no_upstream_summary(config_path: str) -> tuple[str, str]:
    """The check run's title and summary when the fork's config names no upstream."""
    return (
        f"{config_path}: upstream.url is not set; nothing to ingest",
        f"Add `upstream: {{url: https://github.com/OWNER/REPO, branch: main}}` to `{config_path}`.\n",
    )


def ingest_failure_summary(problem: str, one_line: str) -> tuple[str, str]:
    """The check run's title and summary when a run fails for a reason the maintainer must fix."""
    return (
        f"ingestion failed: {problem}"[:240],
        f"**{one_line}**\n\nNothing was pushed or opened by this run. Fix the cause and push: the next push or "
        "poll retries.\n",
    )


def config_error_summary(
    message: str, source: str, line: int | None, line_text: str | None
) -> tuple[str, str]:
    """(title, summary) of the failing check run for a bad ``.github/forksync.yml``."""
    where = f"{source}:{line}" if line else source
    title = f"{where}: the forksync config is invalid; ingestion is paused"
    parts = [f"**{_cell(message)}**", ""]
    if line_text is not None:
        parts += [f"Line {line} of `{source}`:", "", "```yaml", line_text, "```", ""]
    parts.append(
        "Fix the file and push: ingestion resumes on the next push or poll. Nothing else was changed."
    )
    return title, "\n".join(parts) + "\n"


# --------------------------------------------------------------------------- comments the loop posts


def force_push_note(
    branch: str,
    old_head: str,
    new_head: str,
    trunk: str,
    approvers: tuple[str, ...],
    running: tuple[str, ...],
    plan_id: str,
) -> str:
    """Said on a PR whose branch forksync force-pushed over an approval or a running L1 check."""
    lines = [
        f"forksync force-pushed `{branch}` (`{old_head[:10]}` → `{new_head[:10]}`): plan `{plan_id}` rebuilt "
        f"it onto the current `{trunk}` (something landed there, or the plan changed)."
    ]
    if approvers:
        who = ", ".join(f"@{login}" for login in approvers)
        lines.append(
            f"It was **force-pushed over your approval** ({who}): the commits you approved are rebuilt, so "
            "forksync asked you to review again. Compare with `git range-diff "
            f"{old_head[:10]}...{new_head[:10]}`."
        )
    if running:
        lines.append(
            f"L1 was still running on the old head ({', '.join(f'`{name}`' for name in running)}): that result "
            "no longer describes this PR; L1 runs again on the new head."
        )
    return "\n\n".join(lines) + "\n"


def retarget_note(branch: str, old_base: str, new_base: str) -> str:
    """Said on a PR forksync re-targeted (it was based on a merged or stale branch)."""
    return (
        f"forksync re-targeted this PR from `{old_base}` to `{new_base}`: every bundle and chain is now built "
        f"on `{new_base}` alone and lands on its own, and `{branch}` was rebuilt onto it. Same PR, same branch.\n"
    )


def stack_landed_note(branch: str, old_base: str, new_base: str, still_open: bool = False) -> str:
    """Said on a stacked PR re-targeted to the trunk: the bundle it was stacked on landed (or went),
    or, ``still_open``, its commits no longer need that bundle."""
    why = (
        f"its commits no longer need `{old_base}` (re-planned: the body says what it holds)"
        if still_open
        else "the bundle it was stacked on is no longer open (it landed, or was re-planned)"
    )
    return (
        f"forksync re-targeted this PR from `{old_base}` to `{new_base}`: {why}, so `{branch}` was rebuilt "
        f"onto `{new_base}`. Same PR, same branch.\n"
    )


def early_merge_note(branch: str, into: str, trunk: str, base_number: int | None, reopened: bool) -> str:
    """Said on a stacked bundle PR that was merged before its base: it went into the base's branch."""
    base = f"#{base_number}" if base_number is not None else f"the PR of `{into}`"
    head = (
        f"This PR was merged into `{into}`, the branch of the bundle it is stacked on ({base}), not into "
        f"`{trunk}`: a stacked PR merged before its base lands in the base's branch, so its commits are "
        f"not on `{trunk}`."
    )
    if not reopened:
        return (
            head
            + " Its commits are no longer pending (they reached the trunk since), so nothing is reopened.\n"
        )
    return (
        f"{head} forksync rebuilt `{into}` with that bundle's own commits and opened these again in a new PR "
        f"from `{branch}`{NEW_PR_REF}, stacked on {base}: they land after it. (The `forksync / L1` check of a "
        "stacked PR waits until its base lands; branch protection that requires it blocks an early merge.)\n"
    )


def early_merge_base_note(stacked_number: int, branch: str, into: str) -> str:
    """Said on the base PR whose branch a stacked PR was merged into before it landed."""
    return (
        f"#{stacked_number} (`{branch}`, stacked on this PR) was merged into `{into}` before this PR landed. "
        f"forksync rebuilt `{into}` with this bundle's own commits only; #{stacked_number}'s commits are in a "
        f"new PR{NEW_PR_REF}, stacked on this one, landing after it.\n"
    )


def restack_note(branch: str, old_base: str, new_base: str) -> str:
    """Said on a stacked PR re-targeted onto another bundle's branch (the one its commits need now)."""
    return (
        f"forksync re-targeted this PR from `{old_base}` to `{new_base}`: its commits need the bundle on "
        f"`{new_base}` now (the body says which lines or symbols), so `{branch}` was rebuilt onto it and "
        "lands after it. Same PR, same branch.\n"
    )


def unstacked_note(
    branch: str, old_base: str, new_base: str, declined: str, number: int | None, left: int
) -> str:
    """Said on a stacked PR re-based because a bundle under it (``declined``) was closed unmerged."""
    which = f"#{number} (`{declined}`)" if number is not None else f"the PR of `{declined}`"
    moved = (
        f" {left} commit(s) of this PR need it: they left this PR and stay with that bundle (listed in the body)."
        if left
        else " None of this PR's commits need it."
    )
    return (
        f"forksync re-targeted this PR from `{old_base}` to `{new_base}`: {which}, a bundle it was stacked "
        f"on, was closed unmerged, so `{branch}` was rebuilt onto `{new_base}` without it.{moved} "
        "Same PR, same branch.\n"
    )


def unstacked_closed_comment(branch: str, declined: str, number: int | None) -> str:
    """Closing a stacked PR all of whose commits need a bundle whose PR was closed unmerged."""
    which = f"#{number} (`{declined}`)" if number is not None else f"the PR of `{declined}`"
    return (
        f"Closed: every commit of this PR needs {which}, the bundle it was stacked on, which was closed "
        f"unmerged. They stay with that bundle (its branch is kept: reopening that PR takes them back), so "
        f"forksync closed this one and deleted `{branch}`."
    )


def superseded_comment(
    branch: str, plan_id: str, into: Sequence[tuple[str, int]] = (), landed: int = 0, out: int = 0
) -> str:
    """Closing a bundle's PR that the plan no longer has. With where its commits went (``into``: each
    destination as it should read, e.g. ``#12 (`forksync/bundle/…`)``, and how many; ``landed``,
    ``out``), the comment names them: the bundle was re-cut and no new bundle holds most of its commits."""
    if not (into or landed or out):
        return (
            f"Superseded: ingestion plan `{plan_id}` no longer has this bundle (its commits were merged, or "
            f"re-planned into another bundle). forksync closed it and deleted `{branch}`."
        )
    total = sum(n for _, n in into) + landed + out
    where = [f"{n} in {dest}" for dest, n in into]
    if landed:
        where.append(f"{landed} landed on the trunk")
    if out:
        where.append(f"{out} in no bundle or chain now (deferred, won't port, or gone from upstream)")
    return (
        f"Superseded: ingestion plan `{plan_id}` re-cut the group of dependent commits this bundle was part "
        f"of, and no bundle of the new cut holds most of its commits. Its {total} commit(s) are now: "
        f"{'; '.join(where)}. forksync closed this PR and deleted `{branch}`"
        + ("; review goes on there." if into else ".")
    )


PULL_MARK = "<!-- forksync:pull:{head} -->"
_PULL_MARK = re.compile(r"<!-- forksync:pull:(\S+) -->")


def pull_mark(head: str) -> str:
    """A place in a comment for the PR of ``head`` that this run opens (filled by :func:`fill_pull_marks`)."""
    return PULL_MARK.format(head=head)


def fill_pull_marks(body: str, numbers: Mapping[str, int]) -> str:
    """``body`` with each :func:`pull_mark` as ``#N (`head`)``, or the branch alone where no PR was opened."""

    def named(match: re.Match[str]) -> str:
        head = match.group(1)
        number = numbers.get(head)
        return f"#{number} (`{head}`)" if number is not None else f"`{head}`"

    return _PULL_MARK.sub(named, body)


def chain_emptied_comment(branch: str, plan_id: str, stopped_at: str | None) -> str:
    """Closing a chain's PR whose rebuild onto the trunk carries no commit (its issue says what waits)."""
    first = f" (its first commit `{stopped_at[:10]}` does not pick onto the trunk)" if stopped_at else ""
    return (
        f"This chain now builds no commit{first}, so there is nothing to review here: plan `{plan_id}` tracks "
        f"it in an issue that names the files waiting and the command to reproduce. forksync closed this PR and "
        f"deleted `{branch}`; it opens a PR again once something builds."
    )


def urgent_done_comment(branch: str, plan_id: str) -> str:
    return (
        f"No longer needed: ingestion plan `{plan_id}` has no urgent pick for this commit "
        f"(it is picked, or its urgent mark was changed). forksync closed it and deleted `{branch}`."
    )


def chain_done_comment(plan_id: str) -> str:
    return f"Done: every commit of this risky chain is now picked or marked won't-port (plan `{plan_id}`)."


def chain_now_pr_comment(url: str) -> str:
    return f"This chain now has built commits: it is reviewed and landed as a PR, {url}. forksync closed this issue."
