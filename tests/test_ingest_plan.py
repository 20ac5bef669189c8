"""The ingestion planner on plain data: one PR per head, re-targeting, force-push notes, closing."""

from __future__ import annotations

from workers.jobs.ingest_plan import (
    CloseIssue,
    ClosePull,
    Comment,
    DeleteBranches,
    EditPull,
    IngestFacts,
    OpenPull,
    PostCheck,
    PullFacts,
    PushRefs,
    RequestReview,
    UpsertIssue,
    Wanted,
    approvers,
    plan,
    running_l1,
)

OLD, NEW = "a" * 40, "b" * 40
BUNDLE = "forksync/bundle/1111111"
CHAIN = "forksync/chain/2222222"


def bundle(head_sha: str = NEW) -> Wanted:
    return Wanted("bundle", "bundle-1111111", "[Cherry-pick][BUNDLE] x", "body", 2, BUNDLE, "main", head_sha)


def facts(
    wanted: tuple[Wanted, ...],
    pulls: dict[str, PullFacts] | None = None,
    before: dict[str, str] | None = None,
    closed: tuple[str, ...] = (),
) -> IngestFacts:
    push = tuple(w.head for w in wanted if w.head)
    return IngestFacts(
        "o/fork", "main", "c" * 40, "plan1", wanted, pulls or {}, before or {}, push, "t", "s", closed
    )


def found(**kw: object) -> PullFacts:
    base = {
        "number": 7,
        "head": BUNDLE,
        "base": "main",
        "url": "u/7",
        "title": "[Cherry-pick][BUNDLE] x",
        "body": "body",
    }
    return PullFacts(**{**base, **kw})  # type: ignore[arg-type]


def test_new_branch_opens_a_pr_and_the_check_comes_last() -> None:
    actions = plan(facts((bundle(),)))
    assert isinstance(actions[0], PushRefs) and actions[0].branches == (BUNDLE,)
    assert isinstance(actions[1], OpenPull) and (actions[1].head, actions[1].base) == (BUNDLE, "main")
    assert isinstance(actions[-1], PostCheck) and len(actions) == 3


def test_found_pr_is_edited_never_opened_again_and_unchanged_text_is_not_sent() -> None:
    actions = plan(facts((bundle(),), {BUNDLE: found()}, {BUNDLE: NEW}))
    (edit,) = [a for a in actions if isinstance(a, EditPull)]
    assert edit.number == 7 and (edit.new_title, edit.new_body, edit.base) == (None, None, None)
    assert not [a for a in actions if isinstance(a, OpenPull | Comment)]


def test_pr_on_another_base_is_retargeted_and_says_so() -> None:
    actions = plan(facts((bundle(),), {BUNDLE: found(base="forksync/bundle/0000000")}, {BUNDLE: NEW}))
    (edit,) = [a for a in actions if isinstance(a, EditPull)]
    assert edit.base == "main"
    (note,) = [a for a in actions if isinstance(a, Comment)]
    assert "re-targeted this PR from `forksync/bundle/0000000` to `main`" in note.body


def test_force_push_over_an_approval_is_said_and_review_re_requested() -> None:
    actions = plan(facts((bundle(),), {BUNDLE: found(approvers=("mona",))}, {BUNDLE: OLD}))
    (note,) = [a for a in actions if isinstance(a, Comment)]
    assert "force-pushed over your approval" in note.body and "@mona" in note.body and OLD[:10] in note.body
    assert [a for a in actions if isinstance(a, RequestReview)] == [RequestReview(7, ("mona",))]
    # the comment comes after the push that makes it true
    assert actions.index(note) > next(i for i, a in enumerate(actions) if isinstance(a, PushRefs))


def test_force_push_over_a_running_l1_is_said_without_a_review_request() -> None:
    actions = plan(facts((bundle(),), {BUNDLE: found(running=("forksync / L1",))}, {BUNDLE: OLD}))
    (note,) = [a for a in actions if isinstance(a, Comment)]
    assert "L1 was still running" in note.body and "approval" not in note.body
    assert not [a for a in actions if isinstance(a, RequestReview)]


def test_no_note_when_the_branch_does_not_move_or_nobody_is_overrun() -> None:
    same = plan(facts((bundle(),), {BUNDLE: found(approvers=("mona",))}, {BUNDLE: NEW}))
    quiet = plan(facts((bundle(),), {BUNDLE: found()}, {BUNDLE: OLD}))
    assert not [a for a in same + quiet if isinstance(a, Comment | RequestReview)]


def test_chain_pr_opened_closes_its_old_issue_and_empty_chain_pr_closes_for_its_issue() -> None:
    chain = Wanted("chain", "chain-2222222", "[Cherry-pick][CHAIN] y", "b", 1, CHAIN, "main", NEW)
    opened = plan(facts((chain,)))
    assert (
        CloseIssue("<!-- forksync:chain:chain-2222222 -->", "", chain="chain-2222222", pull_of=CHAIN)
        in opened
    )
    emptied = Wanted("chain", "chain-2222222", "[forksync][CHAIN] y", "b", 1, stopped_at="d" * 40)
    actions = plan(facts((emptied,), before={CHAIN: OLD}))
    assert [type(a) for a in actions] == [PushRefs, UpsertIssue, ClosePull, DeleteBranches, PostCheck]
    close = next(a for a in actions if isinstance(a, ClosePull))
    assert close.head == CHAIN and "builds no commit" in close.comment and "dddddddddd" in close.comment


def test_stale_branches_are_closed_with_why_then_deleted() -> None:
    urgent = "forksync/urgent/3333333"
    actions = plan(facts((), before={BUNDLE: OLD, urgent: OLD, CHAIN: OLD}, closed=("chain-2222222",)))
    closes = {a.head: a.comment for a in actions if isinstance(a, ClosePull)}
    assert "Superseded" in closes[BUNDLE] and "No longer needed" in closes[urgent]
    assert "every commit of this risky chain is now picked" in closes[CHAIN]
    (delete,) = [a for a in actions if isinstance(a, DeleteBranches)]
    assert sorted(delete.branches) == sorted([BUNDLE, urgent, CHAIN])
    assert any(isinstance(a, CloseIssue) and a.chain == "chain-2222222" for a in actions)


def test_approvers_are_the_latest_approvals_of_the_current_head() -> None:
    reviews = [
        ("mona", "APPROVED", OLD),
        ("lisa", "APPROVED", OLD),
        ("lisa", "CHANGES_REQUESTED", OLD),
        ("kai", "APPROVED", "e" * 40),
        ("mona", "COMMENTED", OLD),
    ]
    assert approvers(reviews, OLD) == ("mona",)  # lisa withdrew; kai approved an older head
    assert running_l1(
        [
            ("forksync / L1", "in_progress", OLD),
            ("forksync / L1 (gpu)", "queued", OLD),
            ("forksync / L1", "completed", OLD),
            ("other", "in_progress", OLD),
            ("forksync / L1", "queued", NEW),
        ],
        OLD,
    ) == ("forksync / L1", "forksync / L1 (gpu)")


def test_an_ingest_rewriting_a_bundles_body_keeps_the_l1_splits_section() -> None:
    """The L1 split wrote what it ejected into the bundle PR's body; the ingest's rewrite of that
    body keeps the section (and an unchanged body with it is not sent again)."""
    from core.render.l1 import with_split_section

    split_body = with_split_section("old body", "**Red bundle split**: ejected `abc`")
    actions = plan(facts((bundle(),), {BUNDLE: found(body=split_body)}, {BUNDLE: NEW}))
    (edit,) = [a for a in actions if isinstance(a, EditPull)]
    assert edit.new_body is not None and edit.new_body.startswith("body")
    assert "**Red bundle split**: ejected `abc`" in edit.new_body and "old body" not in edit.new_body
    again = plan(facts((bundle(),), {BUNDLE: found(body=edit.new_body)}, {BUNDLE: NEW}))
    assert [a.new_body for a in again if isinstance(a, EditPull)] == [None]


# ---- stacked bundles

BASE = "forksync/bundle/3333333"


def stacked(**kw: object) -> Wanted:
    from core.render.ingest import STACK_REF

    fields: dict[str, object] = {
        "kind": "bundle",
        "key": "bundle-1111111",
        "title": "[Cherry-pick][BUNDLE] x",
        "body": f"Stacked on {STACK_REF}",
        "commits": 2,
        "head": BUNDLE,
        "base": BASE,
        "head_sha": NEW,
        "stacked_on": BASE,
    }
    return Wanted(**{**fields, **kw})  # type: ignore[arg-type]


def test_a_stacked_pr_is_opened_on_its_base_branch_naming_the_base_pr() -> None:
    """Stacked: the PR targets the base bundle's branch and its body names the base PR's number
    when the base PR exists; when it is opened in the same run the executor fills it in."""
    base_pull = found(number=3, head=BASE)
    (opened,) = [a for a in plan(facts((stacked(),), {BASE: base_pull})) if isinstance(a, OpenPull)]
    assert (opened.base, opened.body, opened.stacked_on) == (BASE, "Stacked on #3", BASE)
    (later,) = [a for a in plan(facts((stacked(),))) if isinstance(a, OpenPull)]
    assert later.body == "Stacked on <!-- forksync:stack-base -->" and later.stacked_on == BASE


def test_a_stacked_pr_whose_base_is_gone_is_retargeted_to_the_trunk_saying_the_base_landed() -> None:
    w = stacked(body="Built on main alone", base="main", stacked_on=None)
    actions = plan(facts((w,), {BUNDLE: found(base=BASE)}, {BUNDLE: OLD}))
    (edit,) = [a for a in actions if isinstance(a, EditPull)]
    assert edit.base == "main" and edit.number == 7
    (note,) = [a for a in actions if isinstance(a, Comment)]
    assert f"from `{BASE}` to `main`" in note.body and "no longer open (it landed" in note.body


def test_a_pr_unstacked_from_a_declined_base_says_which_pr_was_closed_and_what_left() -> None:
    w = stacked(body="b", base="main", stacked_on=None, unstacked_from=BASE, left_behind=2)
    f = facts((w,), {BUNDLE: found(base=BASE)}, {BUNDLE: OLD})
    f = IngestFacts(**{**f.__dict__, "declined": {BASE: 3}})
    (note,) = [a for a in plan(f) if isinstance(a, Comment)]
    assert f"#3 (`{BASE}`), a bundle it was stacked on, was closed unmerged" in note.body
    assert "2 commit(s) of this PR need it" in note.body


def test_a_declined_branch_is_kept_and_an_emptied_stacked_pr_is_closed_saying_why() -> None:
    """The declined bundle's branch is neither deleted nor reopened; a stacked branch whose commits
    all went with it is closed with the reason, then deleted."""
    f = facts((), before={BASE: OLD, BUNDLE: OLD})
    f = IngestFacts(**{**f.__dict__, "declined": {BASE: 3}, "emptied": {BUNDLE: BASE}})
    actions = plan(f)
    (close,) = [a for a in actions if isinstance(a, ClosePull)]
    assert close.head == BUNDLE and "every commit of this PR needs #3" in close.comment
    (delete,) = [a for a in actions if isinstance(a, DeleteBranches)]
    assert delete.branches == (BUNDLE,)
    assert not [a for a in actions if isinstance(a, OpenPull)]


def test_a_stacked_pr_merged_early_is_said_on_it_and_its_base_and_reopened() -> None:
    """The stacked branch's newest PR (#5) was merged into its base's branch: the bundle is opened again
    from the same branch, and #5 and the base PR are told, naming the new PR (filled in by the executor)."""
    f = facts((stacked(),), {BASE: found(number=3, head=BASE)}, {BUNDLE: OLD, BASE: OLD})
    f = IngestFacts(**{**f.__dict__, "merged_early": {BUNDLE: (5, BASE)}})
    actions = plan(f)
    (opened,) = [a for a in actions if isinstance(a, OpenPull)]
    notes = [a for a in actions if isinstance(a, Comment)]
    assert [(n.number, n.pull_of) for n in notes] == [(5, BUNDLE), (3, BUNDLE)]
    assert actions.index(opened) < actions.index(notes[0])  # the new PR exists before it is named
    assert (
        f"merged into `{BASE}`, the branch of the bundle it is stacked on (#3), not into `main`"
        in notes[0].body
    )
    assert "<!-- forksync:new-pr -->" in notes[0].body and "#5 (`" in notes[1].body


def test_a_stacked_pr_merged_early_whose_commits_landed_since_is_only_told() -> None:
    """Nothing of that bundle is pending any more: no PR reopened; the merged PR is told why."""
    f = facts((), before={BUNDLE: OLD})
    f = IngestFacts(**{**f.__dict__, "merged_early": {BUNDLE: (5, BASE)}})
    actions = plan(f)
    assert not [a for a in actions if isinstance(a, OpenPull)]
    (note,) = [a for a in actions if isinstance(a, Comment)]
    assert note.number == 5 and "nothing is reopened" in note.body


def test_the_new_pr_mark_is_filled_or_dropped() -> None:
    from core.render.ingest import NEW_PR_REF, fill_pull_ref

    assert fill_pull_ref(f"in a new PR{NEW_PR_REF}, stacked", 6) == "in a new PR (#6), stacked"
    assert fill_pull_ref(f"in a new PR{NEW_PR_REF}, stacked", None) == "in a new PR, stacked"
