"""Command actions on real repositories (the fake GitHub stands in only for comments).

Decisions must be durable in the fork (``forksync status`` sees them at once); REF errors
must be answered with the candidates; nothing is written when a command is refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tests.fixtures.commands import FakeCommentGitHub, pull_info
from tests.gitrepo import GitRepo
from workers.cli import main as forksync
from workers.commands.actions import Services
from workers.commands.gate import MemoryGate
from workers.commands.handler import Answer, CommentTask, handle
from workers.commands.registry import default_actions

UPSTREAM_URL = "https://github.com/up/stream"


@dataclass
class ForkPair:
    upstream: GitRepo
    fork: GitRepo
    shas: dict[str, str]  # name -> upstream sha

    def status(self, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
        capsys.readouterr()
        assert (
            forksync(
                ["status", "--json", "--upstream", str(self.upstream.path), "--fork", str(self.fork.path)]
            )
            == 0
        )
        data: dict[str, object] = json.loads(capsys.readouterr().out)
        return data


@pytest.fixture
def pair(make_repo: Callable[[str], GitRepo]) -> ForkPair:
    """Upstream: base, then a..e (squash subjects with #N); fork: cut at base, picks a and c (c with -x)."""
    upstream = make_repo("upstream")
    upstream.commit("base", {"README": "base\n", "lib/core.c": "int core;\n"})
    fork = make_repo("fork")
    fork.fetch(upstream)
    fork.git("reset", "-q", "--hard", "refs/remotes/other/main")
    fork.commit("fork config", {".github/forksync.yml": f"upstream: {{url: {UPSTREAM_URL}}}\n"})
    shas = {}
    for i, name in enumerate("abcde", start=1):
        shas[name] = upstream.commit(f"Change {name} (#{100 + i})", {f"src/{name}.py": f"{name} = {i}\n"})
    fork.fetch(upstream)
    fork.cherry_pick(shas["a"], x=True)
    fork.cherry_pick(shas["c"], x=True)
    return ForkPair(upstream, fork, shas)


@pytest.fixture
def gh(fake_github: FakeCommentGitHub) -> FakeCommentGitHub:
    fake_github.config = f"upstream: {{url: {UPSTREAM_URL}}}\ncommands: {{rate_limit: 100}}\n"
    return fake_github


def services(pair: ForkPair, sent: list[tuple[str, dict[str, object]]] | None = None) -> Services:
    return Services(
        fork_location=lambda repo: str(pair.fork.path),
        upstream_location=lambda url: str(pair.upstream.path) if url == UPSTREAM_URL else url,
        send_task=(lambda name, kwargs: sent.append((name, kwargs))) if sent is not None else None,
    )


def comment(
    gh: FakeCommentGitHub,
    pair: ForkPair,
    body: str,
    author: str = "alice",
    issue: int = 7,
    sent: list[tuple[str, dict[str, object]]] | None = None,
    is_pr: bool = False,
) -> Answer:
    cid = gh.add(issue, body, author)
    answer = handle(
        CommentTask(1, "o/fork", issue, cid, author, "User", is_pr, "d"),
        gh,
        MemoryGate(),
        default_actions(),
        services(pair, sent),
    )
    assert answer is not None
    return answer


def test_skip_is_recorded_durably_and_status_sees_it(
    gh: FakeCommentGitHub, pair: ForkPair, capsys: pytest.CaptureFixture[str]
) -> None:
    """/skip REF REASON writes wont_port to the fork's notes; forksync status counts it at once."""
    before = pair.status(capsys)
    assert before["wont_port"] == 0 and pair.shas["b"] in before["backlog_commits"]  # type: ignore[operator]
    answer = comment(gh, pair, f"/skip {pair.shas['b'][:8]} AMD only")
    assert "👍" in answer.body and "as **wont_port**: AMD only" in answer.body
    after = pair.status(capsys)
    assert after["wont_port"] == 1
    assert pair.shas["b"] not in after["backlog_commits"]  # type: ignore[operator]
    note = pair.fork.git("notes", "--ref", "forksync", "show", pair.shas["b"])
    assert "AMD only (by @alice via /skip)" in note


def test_defer_by_pr_number(gh: FakeCommentGitHub, pair: ForkPair) -> None:
    """/defer #N finds the upstream commit by its squash-merge PR number."""
    answer = comment(gh, pair, "/defer #104 after the LLVM bump")
    assert "as **deferred**" in answer.body and "stays in the backlog" in answer.body
    note = json.loads(pair.fork.git("notes", "--ref", "forksync", "show", pair.shas["d"]))
    assert note["disposition"] == "deferred" and note["reason"].startswith("after the LLVM bump")


def test_urgent_records_and_starts_ingestion(
    gh: FakeCommentGitHub, pair: ForkPair, capsys: pytest.CaptureFixture[str]
) -> None:
    """/urgent REF records urgent and enqueues an ingest (🚀); the frontier does not move."""
    sent: list[tuple[str, dict[str, object]]] = []
    frontier = pair.status(capsys)["frontier"]
    answer = comment(gh, pair, f"/urgent {pair.shas['e']}", sent=sent)
    assert "🚀" in answer.body and answer.reactions == ("rocket",)
    assert [name for name, _ in sent] == ["forksync.ingest"] and sent[0][1]["repo"] == "o/fork"
    status = pair.status(capsys)
    assert status["urgent"] == [pair.shas["e"]] and status["frontier"] == frontier


def test_unknown_ref_writes_nothing(gh: FakeCommentGitHub, pair: ForkPair) -> None:
    """A sha that is not an upstream commit after the base is refused; no notes ref appears."""
    answer = comment(gh, pair, "/skip deadbeef nope")
    assert "😕" in answer.body and "unknown ref" in answer.body
    assert pair.fork.git("for-each-ref", "refs/notes/") == ""


def test_ambiguous_ref_lists_candidates(gh: FakeCommentGitHub, pair: ForkPair) -> None:
    """A REF that names several upstream commits lists each with its link; nothing is written."""
    reland = pair.upstream.commit("Reland change b (#102)", {"src/b2.py": "b2\n"})
    answer = comment(gh, pair, "/skip #102 dup")
    assert "ambiguous ref: `#102` matches 2 upstream commits" in answer.body
    assert (
        f"{UPSTREAM_URL}/commit/{pair.shas['b']}" in answer.body
        and f"{UPSTREAM_URL}/commit/{reland}" in answer.body
    )
    assert "give more hex digits" in answer.body
    assert pair.fork.git("for-each-ref", "refs/notes/") == ""


def test_resolve_sha_prefix() -> None:
    """A sha prefix resolves when unique; a shared prefix gives every candidate; none gives none."""
    from types import SimpleNamespace

    from workers.commands.actions import RefProblem, resolve

    ledger = SimpleNamespace(
        entries=[SimpleNamespace(sha=s, pr_number=None) for s in ("abcd1", "abcd2", "ef012")]
    )
    assert resolve(ledger, "ef01").sha == "ef012"
    with pytest.raises(RefProblem) as several:
        resolve(ledger, "abcd")
    assert [e.sha for e in several.value.candidates] == ["abcd1", "abcd2"]
    with pytest.raises(RefProblem) as none:
        resolve(ledger, "0000")
    assert none.value.candidates == ()


def test_picked_commit_cannot_be_skipped(gh: FakeCommentGitHub, pair: ForkPair) -> None:
    """/skip on a commit the fork already carries says so and records nothing."""
    answer = comment(gh, pair, f"/skip {pair.shas['a']} oops")
    assert "is already picked" in answer.body and "😕" in answer.body
    assert pair.fork.git("for-each-ref", "refs/notes/") == ""


def test_status_reply(gh: FakeCommentGitHub, pair: ForkPair) -> None:
    """/status replies with days behind, the backlog with upstream links, frontier and pin."""
    answer = comment(gh, pair, "/status", author="rita")
    assert "👍" in answer.body
    assert (
        f"[`{pair.shas['b'][:10]}`]({UPSTREAM_URL}/commit/{pair.shas['b']}) Change b ([#102]({UPSTREAM_URL}/pull/102))"
        in answer.body
    )
    assert "| frontier |" in answer.body and pair.shas["c"][:10] in answer.body
    assert "**Open chains:** none" in answer.body


def test_approve_records_head_and_is_approved(gh: FakeCommentGitHub, pair: ForkPair) -> None:
    """/approve on an outside PR records its head; is_approved holds for that head only."""
    from workers.commands.approval import is_approved

    gh.pulls[9] = pull_info(9, "a" * 40, "feature", "stranger/fork", "stranger")
    assert not is_approved(gh, "o/fork", 9, own_login=gh.own_login)
    answer = comment(gh, pair, "/approve", issue=9, is_pr=True)
    assert "approved head `aaaaaaaaaa`" in answer.body
    assert is_approved(gh, "o/fork", 9, own_login=gh.own_login)
    gh.pulls[9] = pull_info(9, "b" * 40, "feature", "stranger/fork", "stranger")
    assert not is_approved(gh, "o/fork", 9, own_login=gh.own_login)
    gh.pulls[10] = pull_info(10, "c" * 40, "inside", "o/fork", "alice")
    assert is_approved(gh, "o/fork", 10, own_login=gh.own_login)


def test_outside_pr_by_a_member_needs_no_approval(gh: FakeCommentGitHub, pair: ForkPair) -> None:
    """A PR from a fork whose author is a member or collaborator runs without /approve (and /approve
    says it is not needed, recording nothing); a contributor's or an unknown association does not."""
    from workers.commands.approval import approval_marker, is_approved, needs_approval

    gh.pulls[11] = pull_info(11, "d" * 40, "feature", "alice/fork", "alice", "MEMBER")
    assert is_approved(gh, "o/fork", 11, own_login=gh.own_login)
    answer = comment(gh, pair, "/approve", issue=11, is_pr=True)
    assert "not needed: @alice is a member" in answer.body
    assert gh.find_comment("o/fork", 11, approval_marker(11)) is None
    assert needs_approval("o/fork", "stranger/fork", "CONTRIBUTOR") and needs_approval("o/fork", None, "NONE")
    assert needs_approval("o/fork", "stranger/fork", "FIRST_TIME_CONTRIBUTOR")
    assert not needs_approval("o/fork", "bob/fork", "collaborator") and not needs_approval(
        "O/Fork", "o/fork", "NONE"
    )


def test_bundle_dry_run_replies_with_plan_and_pushes_nothing(gh: FakeCommentGitHub, pair: ForkPair) -> None:
    """/bundle dry-run answers with the plan table; no branch or ref is written to the fork."""
    refs_before = pair.fork.git("for-each-ref")
    answer = comment(gh, pair, "/bundle dry-run")
    assert (
        "👍" in answer.body
        and "the plan (dry run, nothing pushed): 1 bundle(s) and 0 chain(s), 3 commits" in answer.body
    )
    assert (
        "| bundle | `" in answer.body
        and pair.shas["b"][:10] in answer.body
        and pair.shas["e"][:10] in answer.body
    )
    assert pair.fork.git("for-each-ref") == refs_before


def test_bundle_max_shapes_the_plan(gh: FakeCommentGitHub, pair: ForkPair) -> None:
    """/bundle max=1 dry-run plans bundles of one commit each."""
    answer = comment(gh, pair, "/bundle max=1 dry-run")
    assert "3 bundle(s) and 0 chain(s), 3 commits" in answer.body


def test_bundle_starts_ingestion(gh: FakeCommentGitHub, pair: ForkPair) -> None:
    """/bundle enqueues the ingestion task for this repository and answers 🚀 with the plan."""
    sent: list[tuple[str, dict[str, object]]] = []
    answer = comment(gh, pair, "/bundle", sent=sent)
    assert answer.reactions == ("rocket",) and "ingestion started" in answer.body
    assert sent == [
        (
            "forksync.ingest",
            {"installation_id": 1, "repo": "o/fork", "reason": "/bundle by @alice", "delivery": "d"},
        )
    ]


def test_bundle_without_a_worker_says_not_available(gh: FakeCommentGitHub, pair: ForkPair) -> None:
    """Without a task queue, /bundle does not pretend: 😕 not available yet."""
    answer = comment(gh, pair, "/bundle")
    assert "not available yet in this deployment" in answer.body


def test_nothing_to_bundle(gh: FakeCommentGitHub, pair: ForkPair) -> None:
    """When every commit is picked, skipped or deferred, /bundle says there is nothing to bundle and sends nothing."""
    sent: list[tuple[str, dict[str, object]]] = []
    comment(gh, pair, f"/skip {pair.shas['b']} no\n/skip {pair.shas['d']} no\n/defer {pair.shas['e']}")
    answer = comment(gh, pair, "/bundle", sent=sent)
    assert "nothing to bundle" in answer.body and "😕" in answer.body and sent == []


def test_chain_and_unchain_are_recorded_in_the_fork(gh: FakeCommentGitHub, pair: ForkPair) -> None:
    """/chain REF records a chain in refs/forksync/chains; /unchain takes the commit out again."""
    answer = comment(gh, pair, f"/chain {pair.shas['d'][:7]}")
    assert f"into chain `chain-{pair.shas['d'][:7]}`" in answer.body
    record = json.loads(pair.fork.git("show", "refs/forksync/chains:chains.json"))
    assert record["chains"][0]["commits"] == [pair.shas["d"]]
    assert record["chains"][0]["reasons"][0]["kind"] == "manual"
    dry = comment(gh, pair, "/bundle dry-run")
    assert "1 bundle(s) and 1 chain(s)" in dry.body
    answer = comment(gh, pair, f"/unchain {pair.shas['d'][:7]}")
    assert "took" in answer.body and "out of its chain" in answer.body
    record = json.loads(pair.fork.git("show", "refs/forksync/chains:chains.json"))
    assert all(pair.shas["d"] not in c["commits"] for c in record["chains"])


def test_chain_into_unknown_chain_is_refused(gh: FakeCommentGitHub, pair: ForkPair) -> None:
    """/chain REF into ID for a chain that does not exist names the open chains; nothing is written."""
    answer = comment(gh, pair, f"/chain {pair.shas['d'][:7]} into chain-nope")
    assert "there is no open chain 'chain-nope'" in answer.body and "😕" in answer.body
    assert pair.fork.git("for-each-ref", "refs/forksync/") == ""


def test_concurrent_decision_is_kept_and_ours_written_on_top(
    gh: FakeCommentGitHub, pair: ForkPair, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If another decision lands between our read and our push, ours is re-applied on top: both survive."""
    import workers.commands.execute as executor
    from workers.engine.decisions import write_decision as real_write

    calls: list[str] = []

    def racing_write(repo, notes_commit, sha, disposition, reason=""):  # type: ignore[no-untyped-def]
        if not calls:  # someone else marks d while we were reading
            pair.fork.git(
                "notes",
                "--ref",
                "forksync",
                "add",
                "-m",
                '{"disposition": "deferred", "reason": "other"}',
                pair.shas["d"],
            )
        calls.append(sha)
        return real_write(repo, notes_commit, sha, disposition, reason)

    monkeypatch.setattr(executor, "write_decision", racing_write)  # the executor writes the notes
    answer = comment(gh, pair, f"/skip {pair.shas['b']} mine")
    assert "👍" in answer.body and len(calls) == 2
    assert "mine" in pair.fork.git("notes", "--ref", "forksync", "show", pair.shas["b"])
    assert "other" in pair.fork.git("notes", "--ref", "forksync", "show", pair.shas["d"])
