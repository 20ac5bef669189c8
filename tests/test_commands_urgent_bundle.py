"""/urgent and /bundle max=N end to end: a signed ``issue_comment`` webhook, the real comment task, the
loopback GitHub, real git remotes; the ingestion they enqueue is run as the worker would run it.

Sample pair (tests/fixtures/ingest.py): upstream #101 (picked), #102, #103 (LLVM pin: a risky chain),
#104 pending; config ``bundle.max_commits: 10``.
"""

from __future__ import annotations

from typing import Any

from tests.fixtures.commands import FORK, CommandWorld


def _pulls(w: CommandWorld) -> dict[str, dict[str, Any]]:
    """Open PRs of the fork by title: head and base."""
    with w.gh.lock:
        return {
            w.gh.state.issues[FORK][n]["title"]: {"head": pr["head"], "base": pr["base"]}
            for n, pr in w.gh.state.pulls[FORK].items()
            if w.gh.state.issues[FORK][n]["state"] == "open"
        }


def test_urgent_reply_is_truthful_and_ingestion_opens_its_own_pr(command_world: CommandWorld) -> None:
    """/urgent #104 says it gets a PR of its own on forksync/urgent/<sha7> (and never "does not yet");
    the ingestion it starts opens that PR against main, alongside a bundle that no longer carries #104."""
    from workers.tasks.ingest import ingest

    w = command_world
    sha = w.pair.shas["#104"]
    cid = w.say("/urgent #104")
    body = w.reply(cid)
    assert w.reactions(cid) == ["eyes", "rocket"]
    assert f"it picks cleanly onto `main`, so it gets a PR of its own on `forksync/urgent/{sha[:7]}`" in body
    assert "does not move the frontier" in body and "does not yet" not in body
    ((name, kwargs),) = w.sent
    assert name == "forksync.ingest" and "max_commits" not in kwargs
    ingest(**kwargs)
    pulls = _pulls(w)
    assert pulls["[Cherry-pick][URGENT] 'Add c (#104)'"] == {
        "head": f"forksync/urgent/{sha[:7]}",
        "base": "main",
    }
    assert "[Cherry-pick][BUNDLE] Cherry-pick 1 upstream(#102)" in pulls
    assert pulls["[Cherry-pick][CHAIN] Cherry-pick 1 upstream(#103)"]["base"] == "main" and len(pulls) == 3


def test_urgent_reply_names_the_conflicting_files(command_world: CommandWorld) -> None:
    """/urgent on a commit that conflicts on the fork tip says so, naming the file; it promises no PR."""
    w = command_world
    sha = w.pair.advance_upstream("Rewrite fork readme (#105)", {"fork/README": "theirs\n"})
    cid = w.say("/urgent #105")
    body = w.reply(cid)
    assert "its pick onto `main` conflicts in `fork/README`, so no PR can be built" in body
    assert "PR of its own" not in body
    assert w.status()["urgent"] == [sha]  # recorded all the same: never dropped


def test_bundle_max_shapes_this_ingestion_only(command_world: CommandWorld) -> None:
    """/bundle max=1 sends max_commits=1 to the ingestion, which opens one bundle PR per commit; the reply
    says so; a later ingestion without it bundles by the config again (the config is not changed)."""
    from workers.tasks.ingest import ingest

    w = command_world
    cid = w.say("/bundle max=1")
    body = w.reply(cid)
    assert w.reactions(cid) == ["eyes", "rocket"]
    assert "at most 1 commit(s) per bundle (`max=1`, for this run only" in body
    assert "the ingestion itself bundles by" not in body
    ((name, kwargs),) = w.sent
    assert name == "forksync.ingest" and kwargs["max_commits"] == 1
    ingest(**kwargs)
    titles = sorted(t for t in _pulls(w) if "BUNDLE" in t)
    assert titles == [
        "[Cherry-pick][BUNDLE] Cherry-pick 1 upstream(#102)",
        "[Cherry-pick][BUNDLE] Cherry-pick 1 upstream(#104)",
    ]
    ingest(**{k: v for k, v in kwargs.items() if k != "max_commits"})
    assert sorted(t for t in _pulls(w) if "BUNDLE" in t) == [
        "[Cherry-pick][BUNDLE] Cherry-pick 2 upstream(#102 #104)"
    ]
