"""A red bundle is split: its L1 fails on a suite trunk passes, so its commits are bisected
(in-memory builds + L1 runs), the culprit is ejected into a chain with the failing test as the
reason, the bundle is rebuilt in the same PR, and the PR and check run say so."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.store import open_store
from tests.fixtures.l1 import config_yaml, flow_suite
from tests.loopback_github import LoopbackGitHub
from workers.adapters.gitcache import GitCache
from workers.jobs.l1_job import L1Job, run_l1_job

REPO = "acme/fork"
BRANCH = "forksync/bundle/20261201-1"
LIB = "def helper(value):\n    return value + 1\n"
TESTS = "from lib import helper\n\n\ndef test_adds_one():\n    assert helper(1) == 2\n\n\ndef test_other():\n    assert True\n"


def _bundle(gh: LoopbackGitHub, base: str, broken_at: int, size: int) -> list[tuple[str, str]]:
    """A bundle branch of ``size`` picks on ``base``; pick ``broken_at`` breaks `helper`. Returns
    (fork sha, upstream sha) per pick."""
    subprocess.run(
        ["git", "--git-dir", str(gh.bare(REPO)), "update-ref", f"refs/heads/{BRANCH}", base], check=True
    )
    picks = []
    for i in range(size):
        upstream = f"{i + 1:x}" * 40
        files: dict[str, str | None] = {f"docs/n{i}.md": f"note {i}\n"}
        if i == broken_at:
            files["lib.py"] = "def helper(value):\n    return value + 2\n"
        sha = gh.commit(
            REPO,
            files,
            branch=BRANCH,
            message=f"Upstream change {i} (#{100 + i})\n\n(cherry picked from commit {upstream[:40]})",
        )
        picks.append((sha, upstream[:40]))
    return picks


def _runner(
    gh: LoopbackGitHub, tmp_path: Path, eject: Any, rebuild: Any = lambda: None
) -> Callable[..., Any]:
    """``job(sha, **L1Job fields)``: run the L1 job as a worker would, on one store and git cache."""
    store = open_store(None, tmp_path / "data")
    adapter = gh.adapter(gh.installation)

    def job(sha: str, **kw: Any) -> Any:
        return run_l1_job(
            adapter,
            GitCache(tmp_path / "git"),
            tmp_path / "data",
            L1Job(REPO, sha, **kw),
            clone_url=gh.git_url(REPO),
            token=gh.token_for(gh.installation),
            store=store,
            eject=eject,
            rebuild=rebuild,
        )

    return job


def test_a_red_bundle_is_bisected_and_its_culprit_ejected(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """Of 6 picks the 5th breaks `unit/test_adds_one` (trunk passes it): the split finds that one
    in at most ceil(log2 6) + 1 runs, ejects it with the test as the reason, asks for the rebuild,
    and the check run and a PR comment say which commit, why, and where it went."""
    gh = loopback_github
    cfg = config_yaml(flow_suite("unit", "."))
    base = gh.commit(REPO, {".github/forksync.yml": cfg, "lib.py": LIB, "test_lib.py": TESTS})
    job = _runner(
        gh,
        tmp_path,
        eject=lambda sha, reason: ejected.append((sha, reason)) or "chain-split",
        rebuild=lambda: rebuilds.append(1),
    )

    ejected: list[tuple[str, str]] = []
    rebuilds: list[int] = []
    job(base, trunk=True, push_ref="refs/heads/main")
    picks = _bundle(gh, base, broken_at=4, size=6)
    head = picks[-1][0]
    number = gh.add_pull(REPO, BRANCH, title="[BUNDLE] Cherry-pick 6 upstream")
    result = job(head, pr_number=number)
    assert result.run is not None and result.run.conclusion == "failure"
    assert [sha for sha, _ in ejected] == [picks[4][1]], "exactly the breaking pick's upstream commit"
    assert "`unit/test_lib::test_adds_one`" in ejected[0][1] and f"bundle PR #{number}" in ejected[0][1]
    assert rebuilds == [1]
    (check,) = [
        r
        for r in gh.state.check_runs[REPO].values()
        if r["name"] == "forksync / L1" and r["head_sha"] == head
    ]
    summary = check["output"]["summary"]
    assert "**Red bundle split**: bisected 6 commit(s) with" in summary
    runs = int(summary.split("with ")[1].split(" ")[0])
    assert runs <= 4, "O(log N): ceil(log2 6) + 1 confirmation"
    # The upstream subject's (#104) is upstream's PR: neutralised so it does not link to the fork's #104.
    assert (
        f"`{picks[4][0][:12]}` Upstream change 4 (#\u200d104): breaks `unit/test_lib::test_adds_one`; ejected into chain `chain-split`"
        in summary
    )
    comments = [c["body"] for c in gh.state.comments[REPO].values() if c["issue_number"] == number]
    assert any("Red bundle split" in c and "rebuilt without them in this PR" in c for c in comments)


def test_the_red_bundle_is_rebuilt_without_its_culprit_and_retested_in_the_same_pr(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """After the split, the PR's branch is force-pushed to the bundle rebuilt without the ejected
    pick (same base, the other picks kept, in order), L1 runs on it in the same PR and passes; the
    new head's check, the old head's check, the PR body and a comment say what was ejected and
    why. The job the force-push starts (pull_request synchronize) does not run the suites again;
    a second split of the same PR replaces the body's section instead of adding one."""
    gh = loopback_github
    cfg = config_yaml(flow_suite("unit", "."))
    base = gh.commit(REPO, {".github/forksync.yml": cfg, "lib.py": LIB, "test_lib.py": TESTS})
    ejected: list[tuple[str, str]] = []
    job = _runner(
        gh,
        tmp_path,
        eject=lambda sha, reason: ejected.append((sha, reason)) or "chain-split",
        rebuild=lambda: None,
    )

    job(base, trunk=True, push_ref="refs/heads/main")
    picks = _bundle(gh, base, broken_at=2, size=5)
    old_head = picks[-1][0]
    number = gh.add_pull(REPO, BRANCH, title="[BUNDLE] Cherry-pick 5 upstream", body="Five upstream commits.")
    result = job(old_head, pr_number=number)
    assert result.run is not None and result.run.conclusion == "failure"

    new_head = gh.head(REPO, BRANCH)
    assert new_head is not None and new_head != old_head, "the PR's branch was force-pushed"
    git = ["git", "--git-dir", str(gh.bare(REPO))]
    rebuilt = subprocess.run(
        [*git, "log", "--format=%s", f"{base}..{new_head}"], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert [line for line in rebuilt if line][::-1] == [
        f"Upstream change {i} (#{100 + i})" for i in (0, 1, 3, 4)
    ]
    assert (
        subprocess.run(
            [*git, "show", f"{new_head}:lib.py"], capture_output=True, text=True, check=True
        ).stdout
        == LIB
    ), "the culprit's change is gone"
    assert (
        subprocess.run(
            [*git, "merge-base", base, new_head], capture_output=True, text=True, check=True
        ).stdout.strip()
        == base
    ), "rebuilt on the same base"

    checks = {r["head_sha"]: r for r in gh.state.check_runs[REPO].values() if r["name"] == "forksync / L1"}
    new_check, old_check = checks[new_head], checks[old_head]
    assert (new_check["status"], new_check["conclusion"]) == ("completed", "success")
    assert new_check["external_id"] == f"pr:{number}"
    for check in (new_check, old_check):
        summary = check["output"]["summary"]
        assert (
            f"`{picks[2][0][:12]}` Upstream change 2" in summary
            and "ejected into chain `chain-split`" in summary
        )
        assert f"force-pushed to `{new_head[:12]}` and L1 ran again on it. L1 on it: **success**" in summary
    assert old_check["conclusion"] == "failure"
    body = gh.state.issues[REPO][number]["body"]
    assert body.startswith("Five upstream commits.") and "**Red bundle split**" in body
    assert "breaks `unit/test_lib::test_adds_one`" in body
    assert [sha for sha, _ in ejected] == [picks[2][1]]

    again = job(new_head, pr_number=number, after_push=True)
    assert again.status == "skipped" and again.check_run_id == new_check["id"] and again.run is None
    assert gh.state.check_runs[REPO][new_check["id"]]["output"] == new_check["output"], (
        "left as the split wrote it"
    )
    rerun = job(new_head, pr_number=number)
    assert rerun.status == "done" and rerun.run is not None and rerun.run.conclusion == "success", (
        "a re-run button or /retest still runs it"
    )

    from core.render.l1 import carry_split_section, with_split_section

    rewritten = carry_split_section(body, "The ingest's new body.")
    assert rewritten.startswith("The ingest's new body.") and "**Red bundle split**" in rewritten, (
        "an ingest rewriting the bundle's body keeps the split's section"
    )
    assert (
        carry_split_section(rewritten, rewritten) == rewritten
        and carry_split_section("plain", "new") == "new"
    )
    twice = with_split_section(with_split_section(body, "first"), "second")
    assert (
        twice.count("forksync:l1-split-section -->") == 2
        and "first" not in twice.split("Five upstream commits.")[1]
    )


def test_a_split_that_force_pushes_over_an_approval_says_so_and_asks_again(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """A red bundle PR approved by a maintainer (on its current head) is split and force-pushed:
    the PR says the push overran that approval, naming the approver, and re-requests their review;
    a reviewer who only commented is not asked."""
    gh = loopback_github
    cfg = config_yaml(flow_suite("unit", "."))
    base = gh.commit(REPO, {".github/forksync.yml": cfg, "lib.py": LIB, "test_lib.py": TESTS})
    job = _runner(gh, tmp_path, eject=lambda sha, reason: "chain-split", rebuild=lambda: None)

    job(base, trunk=True, push_ref="refs/heads/main")
    picks = _bundle(gh, base, broken_at=1, size=3)
    number = gh.add_pull(
        REPO, BRANCH, title="[BUNDLE] Cherry-pick 3 upstream", body="Three upstream commits."
    )
    for login in ("alice", "carol"):
        gh.set_permission(REPO, login, "write")
    gh.review(REPO, number, "carol", "COMMENTED")
    gh.review(REPO, number, "alice")
    result = job(picks[-1][0], pr_number=number)
    assert result.run is not None and result.run.conclusion == "failure"
    assert gh.head(REPO, BRANCH) != picks[-1][0], "the split force-pushed the rebuilt bundle"
    assert gh.state.pulls[REPO][number]["requested_reviewers"] == ["alice"]
    comments = [c["body"] for c in gh.state.comments[REPO].values() if c["issue_number"] == number]
    assert any("**force-pushed over your approval** (@alice)" in c for c in comments)
    assert "**force-pushed over your approval** (@alice)" in gh.state.issues[REPO][number]["body"]


def test_a_bundle_failing_where_trunk_fails_is_not_split(
    loopback_github: LoopbackGitHub, tmp_path: Path
) -> None:
    """A failure trunk shares (broken trunk) ejects nothing: the bundle is not its cause."""
    gh = loopback_github
    broken = TESTS.replace("== 2", "== 3")
    base = gh.commit(
        REPO,
        {
            ".github/forksync.yml": config_yaml(flow_suite("unit", ".")) + "  fail_on: [new, broken_trunk]\n",
            "lib.py": LIB,
            "test_lib.py": broken,
        },
    )
    ejected: list[str] = []
    job = _runner(gh, tmp_path, eject=lambda sha, reason: ejected.append(sha) or "x", rebuild=lambda: None)

    job(base, trunk=True, push_ref="refs/heads/main")
    picks = _bundle(gh, base, broken_at=-1, size=3)
    number = gh.add_pull(REPO, BRANCH)
    result = job(picks[-1][0], pr_number=number)
    assert result.run is not None and result.run.conclusion == "failure" and ejected == []


def test_the_worker_ejector_records_the_culprit_in_the_forks_chains_ref(ingest_pair: Any) -> None:
    """The eject the L1 task wires in moves the upstream commit into a chain of its own in the
    fork's chains ref (as /chain does), with the split's reason; the next plan keeps it there."""
    from core.config import load_repo_config
    from workers.engine.chains import read_chains
    from workers.engine.pair import open_pair
    from workers.jobs.l1_split import chain_ejector

    pair = ingest_pair
    config = load_repo_config(pair.fork.git("show", "main:.github/forksync.yml"))
    culprit = pair.shas["#102"]
    chain = chain_ejector(config, str(pair.upstream_bare), str(pair.fork_bare), None)(
        culprit, "ejected from bundle PR #7 by the L1 split: with it `unit/t` fail(s)"
    )
    assert chain is not None
    store = read_chains(
        open_pair(str(pair.upstream_bare), str(pair.fork_bare), config.upstream.branch, config.fork.branch)
    )
    record = store.get(chain)
    assert record is not None and record.commits == (culprit,)
    assert record.reasons[0].detail.startswith("ejected from bundle PR #7 by the L1 split")
