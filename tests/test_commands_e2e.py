"""Comment commands end to end: a signed ``issue_comment`` webhook into ``bot.create_app``, the real
``forksync.on_comment`` Celery task run in-process, the loopback GitHub over HTTP, real git remotes.

Each test asserts the reply, the reactions and the effect (or that there was none). The sample
pair (tests/fixtures/ingest.py): upstream #101 (picked), #102, #103 (LLVM pin: a risky chain),
#104 pending; ``acme/fork`` is the fork as GitHub holds it.
"""

from __future__ import annotations

import json

from tests.fixtures.commands import FORK, CommandWorld
from tests.loopback_github import APP_BOT_LOGIN


def test_skip_marks_wont_port_visible_to_status_at_once(command_world: CommandWorld) -> None:
    """/skip #102 REASON: 👀 then 👍, one reply, and `forksync status --json` counts it wont_port."""
    w = command_world
    assert w.status()["wont_port"] == 0
    cid = w.say("Not for our hardware.\n/skip #102 AMD only")
    assert w.reactions(cid) == ["eyes", "+1"]
    body = w.reply(cid)
    assert '👍 `/skip #102 "AMD only"` — marked' in body and "as **wont_port**: AMD only" in body
    status = w.status()
    assert status["wont_port"] == 1 and status["pending"] == 2
    note = json.loads(_note(w, w.pair.shas["#102"]))
    assert note["disposition"] == "wont_port" and "@maint" in note["reason"]


def _note(w: CommandWorld, sha: str) -> str:
    from workers.engine.git import Repository

    bare = Repository(w.gh.bare(FORK))
    return bare.text("notes", "--ref", "forksync", "show", sha)


def test_defer_and_urgent(command_world: CommandWorld) -> None:
    """/defer and /urgent record their dispositions durably; /urgent also enqueues an ingest (🚀)."""
    w = command_world
    cid = w.say(f"/defer {w.pair.shas['#104'][:7]} after the release\n/urgent #103")
    assert w.reactions(cid) == ["eyes", "+1", "rocket"]
    status = w.status()
    assert status["urgent"] == [w.pair.shas["#103"]]
    assert json.loads(_note(w, w.pair.shas["#104"]))["disposition"] == "deferred"
    assert [(name, kw["repo"]) for name, kw in w.sent] == [("forksync.ingest", FORK)]


def test_unknown_ref_and_ambiguous_ref(command_world: CommandWorld) -> None:
    """An unknown sha and a REF naming two commits are answered 😕 with the reason; nothing is written."""
    w = command_world
    w.pair.advance_upstream("Reland b (#102)", {"src/b2.py": "x = 1\n"})
    cid = w.say("/skip 0badc0de nope\n/skip #102 dup")
    body = w.reply(cid)
    assert "unknown ref: no upstream commit after the fork's base matches sha `0badc0de`" in body
    assert "ambiguous ref: `#102` matches 2 upstream commits" in body
    assert w.reactions(cid) == ["eyes", "confused"]
    assert w.status()["wont_port"] == 0


def test_read_only_user_is_denied(command_world: CommandWorld) -> None:
    """A read-only user's /skip is refused naming the permission; nothing is recorded; /status still answers."""
    w = command_world
    cid = w.say("/skip #102 please\n/status", author="reader")
    body = w.reply(cid)
    assert (
        "denied: `/skip` needs **write**, **maintain** or **admin** permission on acme/fork (you have read)"
        in body
    )
    assert "days behind upstream" in body
    assert w.reactions(cid) == ["eyes", "+1", "confused"]
    assert w.status()["wont_port"] == 0


def test_status_reply(command_world: CommandWorld) -> None:
    """/status replies with the figures and the pending picture of the sample pair."""
    w = command_world
    cid = w.say("/status")
    body = w.reply(cid)
    assert "0.0 days behind upstream" in body or "days behind upstream" in body
    assert "| pending | 3 |" in body and "| picked | 1 |" in body
    assert "**Open bundles:** none" in body
    assert w.reactions(cid) == ["eyes", "+1"]


def test_bundle_dry_run_then_bundle_opens_the_pr(command_world: CommandWorld) -> None:
    """/bundle dry-run replies with the plan and pushes nothing; /bundle enqueues the ingestion, which
    (run here as the worker would) opens the bundle PR and the chain's; /status then lists it."""
    from workers.tasks.ingest import ingest

    w = command_world
    refs = w.pair.fork.git("ls-remote", str(w.gh.bare(FORK)))
    cid = w.say("/bundle dry-run")
    body = w.reply(cid)
    assert "1 bundle(s) and 1 chain(s), 3 commits" in body and "risky_path" in body
    assert w.pair.fork.git("ls-remote", str(w.gh.bare(FORK))) == refs and w.sent == []
    cid = w.say("/bundle")
    assert w.reactions(cid) == ["eyes", "rocket"] and "ingestion started" in w.reply(cid)
    ((name, kwargs),) = w.sent
    assert name == "forksync.ingest"
    ingest(**kwargs)
    with w.gh.lock:
        titles = [w.gh.state.issues[FORK][n]["title"] for n in w.gh.state.pulls[FORK]]
    assert titles == [
        "[Cherry-pick][BUNDLE] Cherry-pick 2 upstream(#102 #104)",
        "[Cherry-pick][CHAIN] Cherry-pick 1 upstream(#103)",
    ]  # the chain built its commit: a PR
    cid = w.say("/status")
    assert "Cherry-pick 2 upstream" in w.reply(cid) and "(2 commits)" in w.reply(cid)


def test_nothing_to_bundle(command_world: CommandWorld) -> None:
    """When every pending commit is decided, /bundle answers 😕 nothing to bundle and enqueues nothing."""
    w = command_world
    w.say("/skip #102 no\n/skip #103 no\n/defer #104")
    cid = w.say("/bundle")
    assert "nothing to bundle" in w.reply(cid) and w.reactions(cid) == ["eyes", "confused"]
    assert w.sent == []


def test_chain_and_unchain(command_world: CommandWorld) -> None:
    """/chain #104 into the LLVM chain records it in the fork's chains ref; /unchain takes it out."""
    w = command_world
    llvm = f"chain-{w.pair.shas['#103'][:7]}"
    w.say("/bundle dry-run")  # planning does not record; the chain id is deterministic
    cid = w.say(f"/chain #104 into {llvm}")
    assert f"into chain `{llvm}`" in w.reply(cid)
    record = json.loads(
        w.pair.fork.git("--git-dir", str(w.gh.bare(FORK)), "show", "refs/forksync/chains:chains.json")
    )
    (chain,) = [c for c in record["chains"] if c["id"] == llvm]
    assert chain["commits"][-1] == w.pair.shas["#104"]
    cid = w.say("/unchain #104")
    assert "out of its chain" in w.reply(cid)
    record = json.loads(
        w.pair.fork.git("--git-dir", str(w.gh.bare(FORK)), "show", "refs/forksync/chains:chains.json")
    )
    assert all(w.pair.shas["#104"] not in c["commits"] for c in record["chains"])


def test_rate_limited(command_world: CommandWorld) -> None:
    """Past commands.rate_limit, the user is told when to retry and nothing runs."""
    w = command_world
    w.set_config(w.config(rate_limit=2))
    w.say("/status\n/help")
    cid = w.say("/skip #102 too many")
    body = w.reply(cid)
    assert "rate limited: @maint ran 2 commands in the last 10 min" in body and "retry in" in body
    assert w.reactions(cid) == ["eyes", "confused"]
    assert w.status()["wont_port"] == 0
    other = w.say("/help", author="boss")  # another user has their own budget
    assert w.reactions(other) == ["eyes", "+1"]


def test_bots_own_comment_is_ignored(command_world: CommandWorld) -> None:
    """A comment by forksync[bot] (e.g. quoting /help) gets no reaction and no reply, at the door or in the task."""
    w = command_world
    cid = w.add_comment("/skip #102 loop?", "forksync[bot]")
    status, text = w.deliver(cid)
    assert status == 202 and "bot" in text
    from workers.tasks.commands import answer

    kwargs = {
        "installation_id": w.gh.installation,
        "repo": FORK,
        "issue_number": w.issue,
        "comment_id": cid,
        "author": "forksync[bot]",
        "author_type": "Bot",
        "is_pull_request": False,
    }
    assert answer(w.settings, kwargs) is None
    assert w.reactions(cid) == [] and w.replies(cid) == [] and w.status()["wont_port"] == 0


def test_edited_comment_is_not_rerun(command_world: CommandWorld) -> None:
    """Editing a comment (action "edited") runs nothing again: one reply, reactions unchanged."""
    w = command_world
    cid = w.say("/skip #102 first")
    with w.gh.lock:
        w.gh.state.comments[FORK][cid]["body"] = "/skip #102 first\n/defer #104"
    status, _ = w.deliver(cid, action="edited")
    assert status == 202
    assert len(w.replies(cid)) == 1 and w.reactions(cid) == ["eyes", "+1"]
    assert w.status()["deferred"] == 0


def test_redelivered_task_does_not_run_twice(command_world: CommandWorld) -> None:
    """The same comment's task run again (a redelivery after a crash) finds the reply and stops."""
    from workers.tasks.commands import answer

    w = command_world
    cid = w.say("/urgent #104")
    kwargs = {
        "installation_id": w.gh.installation,
        "repo": FORK,
        "issue_number": w.issue,
        "comment_id": cid,
        "author": "maint",
        "author_type": "User",
        "is_pull_request": False,
    }
    assert answer(w.settings, kwargs) is None
    assert len(w.replies(cid)) == 1 and len(w.sent) == 1


def test_comment_in_code_block_is_ignored(command_world: CommandWorld) -> None:
    """Commands quoted in a code block or a reply quote run nothing and get no answer."""
    w = command_world
    cid = w.say("To skip, say:\n```\n/skip #102 reason\n```\n> /bundle")
    assert w.reactions(cid) == [] and w.replies(cid) == []
    assert w.status()["wont_port"] == 0


def test_help_and_unknown_command(command_world: CommandWorld) -> None:
    """/help lists every command; a misspelt one is answered with the closest command."""
    w = command_world
    cid = w.say("/hlep\n/help", author="reader")
    body = w.reply(cid)
    assert "unknown command `/hlep`" in body and "did you mean `/help`?" in body
    assert "`/bundle [max=N] [dry-run]`" in body and "`/signoff WORKLOAD`" in body
    assert w.reactions(cid) == ["eyes", "+1", "confused"]


def test_bad_config_is_quoted(command_world: CommandWorld) -> None:
    """A broken .github/forksync.yml on the default branch: 😕 quoting the line at fault, nothing runs."""
    w = command_world
    w.set_config(w.config() + "bundle:\n  max_commits: lots\n")
    cid = w.say("/skip #102 x")
    body = w.reply(cid)
    assert "the repository config is invalid" in body and ".github/forksync.yml:" in body
    assert w.reactions(cid) == ["eyes", "confused"]


# --------------------------------------------------------------------------- pull-request commands


def test_retest_on_a_pr_reruns_l1(command_world: CommandWorld) -> None:
    """/retest on an internal PR enqueues forksync.run_l1 with the PR head and number (🚀); named
    suites are sent and the reply names them (not "all"); unknown suites are refused, nothing sent."""
    w = command_world
    pr = w.open_pull("feature")
    cid = w.say("/retest unit", issue=pr)
    reply = w.reply(cid)
    assert (
        w.reactions(cid) == ["eyes", "rocket"]
        and "rerunning `unit` on" in reply
        and "all L1 suites" not in reply
    )
    ((name, kwargs),) = w.sent
    assert (
        name == "forksync.run_l1"
        and kwargs["head_sha"] == w.gh.head(FORK, "feature")
        and kwargs["repo"] == FORK
    )
    assert kwargs["number"] == pr and kwargs["suites"] == ["unit"]
    cid = w.say("/retest", issue=pr)
    assert "rerunning all L1 suites (`unit`)" in w.reply(cid)
    assert w.sent[-1][1]["number"] == pr and "suites" not in w.sent[-1][1]
    cid = w.say("/retest nope", issue=pr)
    assert "unknown L1 suite `nope` (known: `unit`)" in w.reply(cid) and len(w.sent) == 2


def test_pr_commands_on_an_issue_are_refused(command_world: CommandWorld) -> None:
    """/retest, /l3 and /approve on an issue say they work on pull requests; nothing is enqueued."""
    w = command_world
    cid = w.say("/retest\n/l3 llama\n/approve")
    assert w.reply(cid).count("works on pull requests") == 3 and w.sent == []


def test_outside_pr_needs_approve_at_its_head(command_world: CommandWorld) -> None:
    """An outside PR does not get GPU L1 until a maintainer's /approve; a reader cannot approve; a new
    push needs a new approval (is_approved, for the L1 runner, follows the head)."""
    from workers.commands.approval import APPROVED_LABEL, is_approved

    w = command_world
    pr = w.open_pull("patch", head_repo="stranger/fork", author="stranger")
    adapter = w.gh.adapter(w.gh.installation)
    cid = w.say("/retest", issue=pr)
    assert "is not approved for the self-hosted runners" in w.reply(cid) and w.sent == []
    cid = w.say("/approve", issue=pr, author="reader")
    assert "denied" in w.reply(cid) and not is_approved(adapter, FORK, pr, own_login=APP_BOT_LOGIN)
    cid = w.say("/approve", issue=pr)
    head = w.gh.head("stranger/fork", "patch")
    assert f"approved head `{head[:10]}`" in w.reply(cid) and w.reactions(cid) == ["eyes", "+1"]
    assert is_approved(adapter, FORK, pr, own_login=APP_BOT_LOGIN)
    with w.gh.lock:
        assert APPROVED_LABEL in w.gh.state.issues[FORK][pr]["labels"]
    cid = w.say("/retest", issue=pr)
    assert w.reactions(cid) == ["eyes", "rocket"] and [n for n, _ in w.sent] == ["forksync.run_l1"]
    assert w.sent[0][1]["number"] == pr and w.sent[0][1]["head_sha"] == head
    w.gh.commit("stranger/fork", {"evil.sh": "curl | sh\n"}, branch="patch")
    assert not is_approved(adapter, FORK, pr, own_login=APP_BOT_LOGIN)
    internal = w.open_pull("inside")
    assert is_approved(adapter, FORK, internal, own_login=APP_BOT_LOGIN)


def test_forged_approval_comment_does_not_count(command_world: CommandWorld) -> None:
    """A user who pastes the approval marker into their own comment does not approve anything."""
    from workers.commands.approval import approval_body, is_approved

    w = command_world
    pr = w.open_pull("patch2", head_repo="stranger/fork", author="stranger")
    w.add_comment(approval_body(pr, w.gh.head("stranger/fork", "patch2"), "maint"), "stranger", issue=pr)
    assert not is_approved(w.gh.adapter(w.gh.installation), FORK, pr, own_login=APP_BOT_LOGIN)


def test_another_bots_approval_comment_does_not_let_retest_run(command_world: CommandWorld) -> None:
    """/retest on an outside PR trusts the approval record only from forksync's own login: another
    App's bot echoing the marker approves nothing, and no L1 run is sent."""
    from workers.commands.approval import approval_body

    w = command_world
    pr = w.open_pull("patch3", head_repo="stranger/fork", author="stranger")
    w.add_comment(
        approval_body(pr, w.gh.head("stranger/fork", "patch3"), "maint"), "other-app[bot]", issue=pr
    )
    cid = w.say("/retest", issue=pr)
    assert "confused" in w.reactions(cid) and "/approve" in w.reply(cid)
    assert [n for n, _ in w.sent] == []


def test_bisect_enqueues_l2(command_world: CommandWorld) -> None:
    """/bisect METRIC good=SHA enqueues forksync.bisect for its benchmark; an unknown name is refused."""
    w = command_world
    cid = w.say("/bisect tflops good=abcd123")
    assert w.reactions(cid) == [
        "eyes",
        "rocket",
    ] and "bisecting benchmark `matmul` (metric `tflops`)" in w.reply(cid)
    assert w.sent == [
        (
            "forksync.bisect",
            {
                "installation_id": w.gh.installation,
                "repo": FORK,
                "benchmark": "matmul",
                "issue_number": w.issue,
                "good": "abcd123",
                "delivery": w.sent[0][1]["delivery"],
            },
        )
    ]
    cid = w.say("/bisect nope")
    assert "there is no L2 benchmark or metric `nope`" in w.reply(cid) and len(w.sent) == 1


def test_l3_then_signoff_by_owner_only(command_world: CommandWorld) -> None:
    """/l3 opens the sign-off check; a maintainer who is not an owner is refused, naming the owners;
    the owner (even read-only) signs it off and the check succeeds."""
    w = command_world
    pr = w.open_pull("big")
    head = w.gh.head(FORK, "big")

    def check() -> dict[str, object]:
        with w.gh.lock:
            (run,) = [r for r in w.gh.state.check_runs[FORK].values() if r["name"] == "forksync / L3: llama"]
            return dict(run)

    cid = w.say("/l3 llama", issue=pr)
    assert "awaiting sign-off from @ann" in w.reply(cid)
    assert check()["status"] == "in_progress" and check()["head_sha"] == head
    cid = w.say("/signoff llama", issue=pr)
    assert "only its owners can (@ann)" in w.reply(cid) and w.reactions(cid) == ["eyes", "confused"]
    assert check()["conclusion"] is None
    cid = w.say("/signoff llama", issue=pr, author="ann")
    assert "@ann signed off L3 **llama**" in w.reply(cid) and w.reactions(cid) == ["eyes", "+1"]
    assert check()["conclusion"] == "success"


def _append_upstream(w: CommandWorld, count: int) -> list[str]:
    """``count`` small upstream commits on top of upstream main in one ``git fast-import`` (fast)."""
    import subprocess

    work = w.pair.upstream.path
    head = w.pair.upstream.head()
    chunks = []
    for i in range(count):
        when = 1_800_000_000 + 60 * i
        msg = f"Tweak {i} (#{5000 + i})".encode()
        chunks.append(f"commit refs/heads/main\nmark :{i + 1}\n".encode())
        chunks.append(
            f"author Dev <dev@example.com> {when} +0000\ncommitter Dev <dev@example.com> {when} +0000\n".encode()
        )
        chunks.append(b"data %d\n%s\n" % (len(msg), msg))
        if i == 0:
            chunks.append(f"from {head}\n".encode())
        data = f"{i}\n".encode()
        chunks.append(
            f"M 100644 inline tweaks/{i % 50}.txt\n".encode() + b"data %d\n%s\n" % (len(data), data)
        )
    subprocess.run(["git", "-C", str(work), "fast-import", "--quiet"], input=b"".join(chunks), check=True)
    w.pair.upstream.git("reset", "-q", "--hard", "main")
    w.pair.push_upstream()
    return w.pair.upstream.git("rev-list", "--reverse", f"{head}..main").split()


def test_ambiguous_sha_prefix_lists_the_candidates(command_world: CommandWorld) -> None:
    """A 4-hex prefix shared by two upstream commits is refused listing both candidates; nothing is written."""
    w = command_world
    shas = _append_upstream(w, 700)
    by_prefix: dict[str, list[str]] = {}
    for sha in shas:
        by_prefix.setdefault(sha[:4], []).append(sha)
    # 700 commits share some 4-hex prefix with near certainty; the dates are fixed, so always the same one.
    pair = next(group for group in by_prefix.values() if len(group) == 2)
    prefix = pair[0][:4]
    cid = w.say(f"/skip {prefix} which one?")
    body = w.reply(cid)
    assert f"ambiguous ref: `{prefix}` matches 2 upstream commits" in body
    # (upstream is named by its web address, so each candidate links to its commit)
    web = "https://upstream.example/acme/upstream/commit/"
    assert all(f"- [`{sha[:10]}`]({web}{sha}) Tweak" in body for sha in pair)
    assert "give more hex digits" in body and w.reactions(cid) == ["eyes", "confused"]
    assert w.status()["wont_port"] == 0
    cid = w.say(f"/skip {pair[1][:8]} this one")
    assert "as **wont_port**" in w.reply(cid) and w.status()["wont_port"] == 1
