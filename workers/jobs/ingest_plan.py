"""What one ingestion run does on GitHub, decided from plain data: ``plan(facts) -> list[Action]``.

The engine has built the branches in the worker's fork cache; :class:`IngestFacts` says what it
built (:class:`Wanted`: one PR per urgent pick, bundle and built chain, one issue per urgent pick
that conflicts and per chain that built nothing), what the fork had before (branch heads), and
the open PRs found by head branch with their approvals and running L1 checks. :func:`plan`
decides, without touching anything:

- **one PR per head branch**: found by head, whatever its base; never a second one. A PR based on
  another branch than the one wanted is re-targeted (``PullRequest.edit(base=...)``) and says why:
  a **stacked** bundle (based on the branch of the bundle it needs) whose base landed goes to the
  trunk; one whose base PR a maintainer closed unmerged is rebuilt on the trunk without it; a
  stacked PR's body names its base PR (``#N``, filled in here, or by the executor when the base PR
  is opened in the same run). A bundle whose PR was closed unmerged is not opened again: its
  branch is kept (reopening the PR takes it back);
- **force-pushes are said**: a PR whose branch moves while it has an approval given on its current
  head, or an L1 check queued or running there, gets a comment (``core.render.ingest.force_push_note``)
  and its approvers are asked to review again;
- a chain that now has built commits closes its tracking issue, pointing at the PR; a chain PR
  whose rebuild carries nothing is closed, and its issue says what waits;
- stale bot branches (merged, re-planned, finished) have their PRs closed with a comment and are
  deleted; a bundle that a re-cut left with no successor (no new bundle holds most of its commits,
  ``workers.engine.parts``) says where its commits went, naming the PRs that hold them now;
  finished chains close their issues; the check run with the figures comes last.

:func:`workers.jobs.ingestion.execute` applies the actions through the ingestion GitHub roles and
the git funnel, in order (the push before anything that names the new heads).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from core.render import marker
from core.render.ingest import (
    chain_done_comment,
    chain_emptied_comment,
    early_merge_base_note,
    early_merge_note,
    fill_stack_ref,
    force_push_note,
    pull_mark,
    restack_note,
    retarget_note,
    stack_landed_note,
    superseded_comment,
    unstacked_closed_comment,
    unstacked_note,
    urgent_done_comment,
)
from core.render.l1 import L1_CHECK, carry_split_section

# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Wanted:
    """One thing the engine built that GitHub should show: a PR (``head`` set) or an issue."""

    kind: str  # "urgent", "bundle", "chain"
    key: str  # bundle, chain or urgent id; the marker key
    title: str
    body: str
    commits: int
    head: str | None = None  # the branch to open the PR from; None: an issue instead
    base: str | None = None  # the fork trunk, or (stacked) the branch of the bundle it needs
    head_sha: str | None = None  # what the branch points at once pushed
    stopped_at: str | None = None  # chain: the member its build stopped at
    stacked_on: str | None = None  # bundle: the head branch of the bundle it is stacked on (= base)
    unstacked_from: str | None = None  # bundle: the declined bundle's branch it was stacked on
    left_behind: int = 0  # bundle: its members that need that declined bundle and moved to it


@dataclass(frozen=True)
class Moved:
    """Where the commits of a bundle that a re-cut left with no successor went: ``into`` gives, in
    plan order, the head branch (or, for a chain without a branch, the chain id) of each bundle,
    chain or urgent pick holding some of them now, and how many; ``landed``: the trunk carries them;
    ``out``: in no bundle or chain now (deferred, won't port, gone from upstream)."""

    into: tuple[tuple[str, int], ...]
    landed: int = 0
    out: int = 0


@dataclass(frozen=True)
class PullFacts:
    """An open PR found by its head branch, and what a force-push over it would overrun."""

    number: int
    head: str
    base: str
    url: str
    title: str
    body: str
    approvers: tuple[str, ...] = ()  # whose latest review approves the current head
    running: tuple[str, ...] = ()  # L1 check runs queued or in progress on the current head


@dataclass(frozen=True)
class IngestFacts:
    """Everything :func:`plan` decides from."""

    repo: str
    trunk: str
    trunk_head: str
    plan_id: str
    wanted: tuple[Wanted, ...]
    pulls: Mapping[str, PullFacts]  # head branch → its open PR
    heads_before: Mapping[str, str]  # bot branch → the fork's head before this run
    push: tuple[str, ...]  # bot branches the engine wrote, to force-push
    check_title: str
    check_summary: str
    chains_closed: tuple[str, ...] = ()  # chains the engine dropped from the record: every commit placed
    declined: Mapping[str, int] = field(default_factory=dict)  # bundle branch → its PR closed unmerged
    emptied: Mapping[str, str] = field(
        default_factory=dict
    )  # stacked branch gone → the declined one it needed
    # bundle branch → (its PR, the branch it was merged into): a stacked PR merged before its base
    merged_early: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    moved: Mapping[str, Moved] = field(
        default_factory=dict
    )  # bundle branch gone in a re-cut → where its commits are


# --------------------------------------------------------------------------- actions


@dataclass(frozen=True)
class PushRefs:
    """Force-push the bot branches, then the notes and chain record (fast-forward only)."""

    branches: tuple[str, ...]


@dataclass(frozen=True)
class OpenPull:
    key: str
    kind: str
    head: str
    base: str
    title: str
    body: str
    commits: int
    stacked_on: str | None = None  # the body names this branch's PR (opened earlier in the run)


@dataclass(frozen=True)
class EditPull:
    """Edit PR ``number`` in place: fields left None are unchanged (nothing to send when all are)."""

    key: str
    kind: str
    number: int
    url: str
    title: str  # the title it has after the edit, for the report
    commits: int
    new_title: str | None = None
    new_body: str | None = None
    base: str | None = None  # re-target
    stacked_on: str | None = None  # the body names this branch's PR (opened earlier in the run)


@dataclass(frozen=True)
class Comment:
    number: int
    body: str
    pull_of: str | None = None  # the body names the PR opened this run from this branch (core.render.ingest)


@dataclass(frozen=True)
class RequestReview:
    number: int
    users: tuple[str, ...]


@dataclass(frozen=True)
class ClosePull:
    head: str
    comment: str
    kind: str = "pull"


@dataclass(frozen=True)
class DeleteBranches:
    branches: tuple[str, ...]


@dataclass(frozen=True)
class UpsertIssue:
    key: str
    kind: str
    marker: str
    title: str
    body: str
    commits: int


@dataclass(frozen=True)
class CloseIssue:
    marker: str
    comment: str
    chain: str | None = None
    pull_of: str | None = None  # the head of the PR whose URL the comment names (filled in by the executor)


@dataclass(frozen=True)
class PostCheck:
    head_sha: str
    title: str
    summary: str


Action = (
    PushRefs
    | OpenPull
    | EditPull
    | Comment
    | RequestReview
    | ClosePull
    | DeleteBranches
    | UpsertIssue
    | CloseIssue
    | PostCheck
)


@dataclass
class _Plan:
    actions: list[Action] = field(default_factory=list)

    def add(self, action: Action) -> None:
        self.actions.append(action)


# --------------------------------------------------------------------------- the planner


def plan(facts: IngestFacts) -> list[Action]:
    """The run's GitHub and push actions, in the order they must happen (module docstring)."""
    out = _Plan()
    out.add(PushRefs(facts.push))
    wanted_heads = {w.head for w in facts.wanted if w.head}
    issue_chains = {w.key for w in facts.wanted if w.kind == "chain" and w.head is None}
    order = {"urgent": 0, "bundle": 1, "chain": 2}
    for w in sorted(facts.wanted, key=lambda w: order.get(w.kind, 3)):  # urgent first: they should not wait
        if w.head is None:
            out.add(UpsertIssue(w.key, w.kind, marker(w.kind, w.key), w.title, w.body, w.commits))
            continue
        _pull(out, facts, w)
        if w.head in facts.merged_early:
            _merged_early(out, facts, w.head, w.stacked_on)
    # A declined bundle's branch stays as it was closed: reopening its PR takes it back.
    stale = sorted(set(facts.heads_before) - wanted_heads - set(facts.push) - set(facts.declined))
    for branch in sorted(set(facts.merged_early) - wanted_heads):
        number, into = facts.merged_early[branch]
        base_pull = facts.pulls.get(into)
        base_number = base_pull.number if base_pull is not None else None
        out.add(Comment(number, early_merge_note(branch, into, facts.trunk, base_number, False)))
    for branch in stale:
        if branch.startswith("forksync/urgent/"):
            out.add(ClosePull(branch, urgent_done_comment(branch, facts.plan_id)))
        elif branch.startswith("forksync/chain/") and _chain_key(branch) in facts.chains_closed:
            out.add(ClosePull(branch, chain_done_comment(facts.plan_id)))
        elif branch in facts.emptied:
            home = facts.emptied[branch]
            out.add(ClosePull(branch, unstacked_closed_comment(branch, home, facts.declined.get(home))))
        elif branch.startswith("forksync/chain/") and _chain_key(branch) in issue_chains:
            stopped = next((w.stopped_at for w in facts.wanted if w.key == _chain_key(branch)), None)
            out.add(ClosePull(branch, chain_emptied_comment(branch, facts.plan_id, stopped)))
        elif branch in facts.moved:
            moved = facts.moved[branch]
            named = tuple((_where(facts, dest), n) for dest, n in moved.into)
            out.add(
                ClosePull(branch, superseded_comment(branch, facts.plan_id, named, moved.landed, moved.out))
            )
        else:
            out.add(ClosePull(branch, superseded_comment(branch, facts.plan_id)))
    if stale:
        out.add(DeleteBranches(tuple(stale)))
    for chain_id in sorted(facts.chains_closed):
        out.add(CloseIssue(marker("chain", chain_id), chain_done_comment(facts.plan_id), chain=chain_id))
    out.add(
        PostCheck(facts.trunk_head, facts.check_title, facts.check_summary)
    )  # last: it reports a finished run
    return out.actions


def _merged_early(out: _Plan, facts: IngestFacts, head: str, stacked_on: str | None) -> None:
    """A stacked PR merged into its base's branch: say so on it (and on the base PR), naming the new
    PR its commits are in now (opened just before, from the same branch)."""
    number, into = facts.merged_early[head]
    base_pull = facts.pulls.get(stacked_on or into)
    base_number = base_pull.number if base_pull is not None else None
    out.add(Comment(number, early_merge_note(head, into, facts.trunk, base_number, True), pull_of=head))
    if base_pull is not None and base_pull.head == into:
        out.add(Comment(base_pull.number, early_merge_base_note(number, head, into), pull_of=head))


def _where(facts: IngestFacts, dest: str) -> str:
    """A destination of moved commits as the closing comment names it: its PR (``#N``, or a mark the
    executor fills for a PR opened this run), a chain's tracking issue, or the branch."""
    found = facts.pulls.get(dest)
    if found is not None:
        return f"#{found.number} (`{dest}`)"
    for w in facts.wanted:
        if w.head == dest:
            return pull_mark(dest)
        if w.head is None and w.key == dest:
            return f"{w.kind} `{dest}` (tracked in an issue: nothing of it builds yet)"
    return f"`{dest}`"


def _chain_key(branch: str) -> str:
    return "chain-" + branch.removeprefix("forksync/chain/")


def _pull(out: _Plan, facts: IngestFacts, w: Wanted) -> None:
    assert w.head is not None and w.base is not None
    found = facts.pulls.get(w.head)
    body = w.body
    if w.stacked_on is not None:
        base_pull = facts.pulls.get(w.stacked_on)
        body = fill_stack_ref(body, base_pull.number if base_pull is not None else None)
    if found is None:
        out.add(OpenPull(w.key, w.kind, w.head, w.base, w.title, body, w.commits, w.stacked_on))
        if w.kind == "chain":
            # It was a tracking issue while nothing was built: the PR is where it lives now.
            out.add(CloseIssue(marker("chain", w.key), "", chain=w.key, pull_of=w.head))
        return
    retarget = found.base != w.base
    body = carry_split_section(found.body, body)  # the L1 split's section stays (docs/l1.md)
    out.add(
        EditPull(
            w.key,
            w.kind,
            found.number,
            found.url,
            w.title,
            w.commits,
            new_title=w.title if w.title != found.title else None,
            new_body=body if body != found.body else None,
            base=w.base if retarget else None,
            stacked_on=w.stacked_on,
        )
    )
    if retarget:
        out.add(Comment(found.number, _retarget_why(facts, w, found.base)))
    before = facts.heads_before.get(w.head)
    moved = before is not None and w.head_sha is not None and before != w.head_sha
    if moved and (found.approvers or found.running):
        assert before is not None and w.head_sha is not None
        out.add(
            Comment(
                found.number,
                force_push_note(
                    w.head, before, w.head_sha, facts.trunk, found.approvers, found.running, facts.plan_id
                ),
            )
        )
        if found.approvers:
            out.add(RequestReview(found.number, found.approvers))


def _retarget_why(facts: IngestFacts, w: Wanted, old_base: str) -> str:
    """What the comment on a re-targeted PR says: why its base changed."""
    assert w.head is not None and w.base is not None
    if w.unstacked_from is not None:
        declined = w.unstacked_from
        return unstacked_note(w.head, old_base, w.base, declined, facts.declined.get(declined), w.left_behind)
    if w.stacked_on is not None:
        return restack_note(w.head, old_base, w.base)
    if old_base.startswith("forksync/bundle/"):
        still_open = any(other.head == old_base for other in facts.wanted)
        return stack_landed_note(w.head, old_base, w.base, still_open)
    return retarget_note(w.head, old_base, w.base)


# --------------------------------------------------------------------------- facts from records


def approvers(reviews: Sequence[tuple[str, str, str | None]], head_sha: str | None) -> tuple[str, ...]:
    """Who approves ``head_sha``: each reviewer's latest approving or blocking review decides
    (comments do not); an approval given on an older head was already overrun and said."""
    latest: dict[str, tuple[str, str | None]] = {}
    for user, state, commit in reviews:
        if state in ("APPROVED", "CHANGES_REQUESTED", "DISMISSED"):
            latest[user] = (state, commit)
    return tuple(
        sorted(
            user
            for user, (state, commit) in latest.items()
            if state == "APPROVED" and (commit is None or head_sha is None or commit == head_sha)
        )
    )


def running_l1(checks: Sequence[tuple[str, str, str]], head_sha: str | None) -> tuple[str, ...]:
    """The L1 check runs (``forksync / L1``, pools included) queued or in progress on ``head_sha``."""
    return tuple(
        sorted(
            {
                name
                for name, status, sha in checks
                if name.startswith(L1_CHECK)
                and status in ("queued", "in_progress")
                and (head_sha is None or sha == head_sha)
            }
        )
    )
