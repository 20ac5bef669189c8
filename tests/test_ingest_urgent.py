"""The ingestion loop fast-tracks urgent commits: its own PR on the fork trunk (an issue when the pick
conflicts), ahead of the bundles; once merged, the ledger counts it urgent and the frontier stays.

Real bare remotes and the real engine; GitHub recorded (DryGitHub). Sample pair: tests/fixtures/ingest.py.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

from tests.fixtures.ingest import IngestPair
from tests.test_ingestion import REPO, make_env
from workers.cli import main as forksync
from workers.engine.git import Repository
from workers.jobs.ingestion import ingest_repository


def _cli(pair: IngestPair, *argv: str) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = forksync(
            [argv[0], "--upstream", str(pair.upstream_bare), "--fork", str(pair.fork_bare), *argv[1:]]
        )
    assert code == 0
    return dict(json.loads(out.getvalue())) if out.getvalue().startswith("{") else {}


def _mark_urgent(pair: IngestPair, sha: str) -> None:
    _cli(pair, "mark", sha, "urgent", "--reason", "hit in production")


def test_urgent_commit_gets_its_own_pr_on_the_trunk_ahead_of_bundles(
    ingest_pair: IngestPair, tmp_path: Path
) -> None:
    """/urgent #104: a PR `[Cherry-pick][URGENT] 'Add c (#104)'` from forksync/urgent/<sha7> into main,
    opened before the bundle PR, carrying the trailer; the bundle no longer carries #104."""
    sha = ingest_pair.shas["#104"]
    _mark_urgent(ingest_pair, sha)
    env, gh = make_env(ingest_pair, tmp_path)
    report = ingest_repository(env, REPO)
    assert report.status == "ingested" and report.figures["urgent"] == 1
    assert gh.titles("pulls") == [
        "[Cherry-pick][URGENT] 'Add c (#104)'",
        "[Cherry-pick][BUNDLE] Cherry-pick 1 upstream(#102)",
        "[Cherry-pick][CHAIN] Cherry-pick 1 upstream(#103)",
    ]
    urgent = next(p for p in gh.pulls.values() if "URGENT" in str(p["title"]))
    assert urgent["head"] == f"forksync/urgent/{sha[:7]}" and urgent["base"] == "main"
    body = str(urgent["body"])
    assert f"<!-- forksync:urgent:urgent-{sha[:7]} -->" in body and "does **not** move the frontier" in body
    fork = Repository(ingest_pair.fork_bare)
    head = fork.rev_parse(f"refs/heads/forksync/urgent/{sha[:7]}")
    main = fork.rev_parse("refs/heads/main")
    assert head is not None and main is not None
    assert fork.text("rev-list", f"{main}..{head}").split() == [head]  # one commit, right on the trunk
    assert f"(cherry picked from commit {sha})" in fork.text("log", "-1", "--format=%B", head)
    assert "| urgent picks in flight | 1 |" in str(gh.checks[-1]["summary"])
    # a rerun updates the same PR, never a second one
    again = ingest_repository(env, REPO)
    assert [p["created"] for p in again.pulls] == [False, False, False] and len(gh.pulls) == 3


def test_merged_urgent_pr_is_an_urgent_pick_and_the_frontier_stays(
    ingest_pair: IngestPair, tmp_path: Path
) -> None:
    """After the urgent PR merges, status says urgent (not picked), the frontier and days behind stay,
    pending drops by one, and the next run closes nothing new but the urgent branch and offers #104 nowhere."""
    sha = ingest_pair.shas["#104"]
    _mark_urgent(ingest_pair, sha)
    before = _cli(ingest_pair, "status", "--json")
    env, _gh = make_env(ingest_pair, tmp_path)
    ingest_repository(env, REPO)
    fork = Repository(ingest_pair.fork_bare)
    head = fork.rev_parse(f"refs/heads/forksync/urgent/{sha[:7]}")
    assert head is not None
    fork.git("update-ref", "refs/heads/main", head)  # the merge (fast-forward)
    after = _cli(ingest_pair, "status", "--json")
    assert after["urgent"] == [sha] and after["picked"] == before["picked"] == 1
    assert after["frontier"] == before["frontier"] == ingest_pair.shas["#101"]
    assert after["days_behind"] == before["days_behind"] > 0
    assert after["pending"] == before["pending"] - 1
    second = ingest_repository(env, REPO)
    assert second.figures["urgent"] == 0 and all("URGENT" not in p["title"] for p in second.pulls)
    assert [c["branch"] for c in second.closed] == [f"forksync/urgent/{sha[:7]}"]
    assert fork.rev_parse(f"refs/heads/forksync/urgent/{sha[:7]}") is None
    assert sha not in json.dumps(_cli(ingest_pair, "plan", "--json"))


def test_conflicting_urgent_commit_opens_an_issue_naming_the_files(
    ingest_pair: IngestPair, tmp_path: Path
) -> None:
    """An urgent commit that conflicts on the fork tip is not dropped: an issue names the conflicting file
    and how to pick it by hand; no urgent branch or PR is made."""
    sha = ingest_pair.advance_upstream("Rewrite fork readme (#105)", {"fork/README": "theirs\n"})
    _mark_urgent(ingest_pair, sha)
    env, gh = make_env(ingest_pair, tmp_path)
    report = ingest_repository(env, REPO)
    assert report.figures["urgent"] == 1
    assert all("URGENT" not in str(p["title"]) for p in gh.pulls.values())
    issue = next(i for i in gh.issues.values() if "URGENT" in str(i["title"]))
    assert issue["title"] == "[forksync][URGENT] conflicts: 'Rewrite fork readme (#105)'"
    body = str(issue["body"])
    assert "- `fork/README`" in body and f"git cherry-pick -x {sha[:12]}" in body
    assert Repository(ingest_pair.fork_bare).text("for-each-ref", "refs/heads/forksync/urgent/") == ""
