"""Pure parts of the ingestion loop: texts (titles, bodies, check), handler composition, triggers."""

from __future__ import annotations

from typing import Any

import pytest

from core import tasknames
from core.render.ingest import (
    TITLE_MAX,
    BundleView,
    ChainView,
    CommitRow,
    IngestionFigures,
    bundle_body,
    bundle_title,
    chain_body,
    config_error_summary,
    ingestion_summary,
)
from workers.app import handlers


def rows(n: int) -> tuple[CommitRow, ...]:
    return tuple(CommitRow(f"{i:040x}", f"Change {i} (#{1000 + i})", f"Dev {i}", 1000 + i) for i in range(n))


def test_bundle_title_follows_the_fork_convention_and_fits() -> None:
    """`[Cherry-pick][BUNDLE] Cherry-pick K upstream(#a #b …)`: K counts all commits; 94 PRs still fit a title."""
    assert bundle_title(BundleView("b1", "forksync/bundle/x", "main", rows(2), "p")) == (
        "[Cherry-pick][BUNDLE] Cherry-pick 2 upstream(#1000 #1001)"
    )
    long = bundle_title(BundleView("b1", "forksync/bundle/x", "main", rows(94), "p"))
    assert long.startswith("[Cherry-pick][BUNDLE] Cherry-pick 94 upstream(#1000 #1001 ")
    assert long.endswith(" …)") and len(long) <= TITLE_MAX
    no_pr = CommitRow("ab" * 20, "No PR here", "Dev")
    assert bundle_title(BundleView("b", "forksync/bundle/y", "main", (no_pr,), "p")).endswith(
        "upstream(abababa)"
    )


def test_bundle_body_has_markers_table_links_and_no_broken_cells() -> None:
    """The body carries the bundle and plan markers, a row per commit with author and PR link; a
    `|` in a subject cannot break the table."""
    row = CommitRow("c" * 40, "Fix a | b (#7)", "Ada", 7, "touches hot path")
    body = bundle_body(
        BundleView("bundle-1", "forksync/bundle/c", "main", (row,), "plan9"), "https://github.com/o/up.git"
    )
    assert "<!-- forksync:bundle:bundle-1 -->" in body and "<!-- forksync:plan:plan9 -->" in body
    assert "[#7](https://github.com/o/up/pull/7)" in body and "Ada" in body and "touches hot path" in body
    assert "Fix a \\| b (#7)" in body
    assert "Built on `main` alone: it lands on its own, in any order" in body


def test_chain_body_lists_reasons_conflicts_and_how_to_reproduce() -> None:
    """A chain issue says why each commit is there, which files conflict, and how to replay it locally."""
    chain = ChainView("chain-1", None, rows(2), ("lib/a.cpp",), "git cherry-pick -x aaa bbb", "p1")
    body = chain_body(chain, None)
    assert "<!-- forksync:chain:chain-1 -->" in body and "`lib/a.cpp`" in body
    assert "```sh\ngit cherry-pick -x aaa bbb\n```" in body


def test_check_texts_carry_the_figures_and_quote_the_bad_line() -> None:
    """The success check names days behind, backlog and pending; the failure quotes file, line and text."""
    title, summary = ingestion_summary(IngestionFigures(2.5, 4, 7, 9, "f" * 40, "e" * 40, 1, 2))
    assert title == "2.5 days behind upstream, backlog 4, pending 7"
    assert "| backlog commits | 4 |" in summary and "| open risky chains | 2 |" in summary
    title, summary = config_error_summary("x.yml:3: bundle.max: unknown key", "x.yml", 3, "  max: 4")
    assert title.startswith("x.yml:3:") and "```yaml\n  max: 4\n```" in summary


def test_dispatch_runs_every_handler_even_when_one_fails() -> None:
    """A failing handler is reported (raised) only after the others have run."""
    ran: list[str] = []
    event = "forksync.test_event"

    @handlers.handles(event)
    def broken(**_: Any) -> None:
        ran.append("broken")
        raise RuntimeError("boom")

    @handlers.handles(event)
    def fine(**_: Any) -> None:
        ran.append("fine")

    with pytest.raises(RuntimeError, match="boom"):
        handlers.dispatch(event, {"x": 1})
    assert ran == ["broken", "fine"]
    with handlers.only_from(__name__):
        assert handlers.handlers_for(event) == [broken, fine]
    with handlers.only_from("elsewhere"):
        assert handlers.handlers_for(event) == []
    assert handlers.handlers_for(event) == [broken, fine]


@pytest.mark.parametrize(
    ("ref", "after", "triggers"),
    [
        ("refs/heads/main", "a" * 40, True),
        ("refs/heads/upstream-mirror", "a" * 40, True),
        ("refs/heads/forksync/bundle/abc", "a" * 40, False),  # our own push
        ("refs/heads/main", "0" * 40, False),  # a deletion
        ("refs/tags/v1", "a" * 40, False),
    ],
)
def test_push_triggers_an_ingest_unless_it_is_ours(
    monkeypatch: pytest.MonkeyPatch, ref: str, after: str, triggers: bool
) -> None:
    """A push to a fork branch enqueues an ingest; forksync's own pushes, deletions and tags do not."""
    from workers.tasks import ingest as ingest_tasks

    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(ingest_tasks.ingest, "delay", lambda **kw: sent.append(kw))
    ingest_tasks.ingest_on_push(
        installation_id=1, repo="o/f", ref=ref, before="b" * 40, after=after, delivery="d"
    )
    assert bool(sent) is triggers
    if triggers:
        assert sent[0]["repo"] == "o/f" and sent[0]["delivery"] == "d"


def test_a_merged_pr_triggers_an_ingest(monkeypatch: pytest.MonkeyPatch) -> None:
    """pull_request closed+merged enqueues an ingest; closed without merge (not a bundle), or opened, does not."""
    from workers.tasks import ingest as ingest_tasks

    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(ingest_tasks.ingest, "delay", lambda **kw: sent.append(kw))
    ingest_tasks.ingest_on_merge(installation_id=1, repo="o/f", number=5, action="closed", merged=False)
    ingest_tasks.ingest_on_merge(installation_id=1, repo="o/f", number=5, action="opened", merged=False)
    assert sent == []
    ingest_tasks.ingest_on_merge(installation_id=1, repo="o/f", number=5, action="closed", merged=True)
    assert sent and sent[0]["reason"] == "PR #5 merged"
    assert tasknames.ON_PULL_REQUEST in {name for name in tasknames.WEBHOOK_TASKS}


def test_a_bundle_pr_closed_unmerged_triggers_an_ingest(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bundle PR closed without merging is declined: an ingest re-bases what is stacked on it now;
    another PR closed unmerged triggers nothing."""
    from workers.tasks import ingest as ingest_tasks

    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(ingest_tasks.ingest, "delay", lambda **kw: sent.append(kw))
    ingest_tasks.ingest_on_merge(
        installation_id=1, repo="o/f", number=6, action="closed", merged=False, head_ref="feature/x"
    )
    assert sent == []
    ingest_tasks.ingest_on_merge(
        installation_id=1,
        repo="o/f",
        number=7,
        action="closed",
        merged=False,
        head_ref="forksync/bundle/abc1234",
    )
    assert [s["reason"] for s in sent] == ["PR #7 closed unmerged"]


def test_a_chain_issue_says_what_its_pr_says() -> None:
    """The tracking issue and the PR of the same chain share their words: what the chain is, the
    members' table (why each is in the chain), where the build stopped and what waits."""
    from core.render.ingest import chain_pr_body

    waits = (("lib/a.cpp", "both sides changed line 3"),)
    stopped = ChainView("chain-1", None, rows(2), ("lib/a.cpp",), "git cherry-pick -x aaa bbb", "p1")
    stopped = ChainView(**{**stopped.__dict__, "stopped_at": "a" * 40, "waiting": waits})
    issue = chain_body(stopped, None)
    pr = chain_pr_body(ChainView(**{**stopped.__dict__, "branch": "forksync/chain/1", "carried": 1}), None)
    for words in (
        "upstream commits that depend on each other, picked in upstream order",
        "built through their conflicts",
        "why it is in the chain |",
        f"**Stopped at `{'a' * 12}`**: no resolution; these files wait for a human:",
        "- `lib/a.cpp`: both sides changed line 3",
        "Comment `/chain` to change membership",
    ):
        assert words in issue and words in pr, words
    assert "Nothing of it builds yet, so it is tracked in this issue" in issue and "Runs L1" not in issue
    assert "Built up to its first conflict" not in issue and "ongoing complex change" not in issue
    waiting = ChainView(**{**stopped.__dict__, "waits_for": ("b" * 40,)})
    text = chain_body(waiting, None)
    assert f"for upstream `{'b' * 10}`, not landed yet" in text and "git cherry-pick" not in text
    assert f"for upstream `{'b' * 10}`, not landed yet" in chain_pr_body(waiting, None)
