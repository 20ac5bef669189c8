"""The ingestion loop in-process: real git remotes and the real engine, GitHub recorded (DryGitHub)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.github.ingest import DryGitHub
from core.settings import WorkerSettings
from tests.fixtures.ingest import UPSTREAM_URL, IngestPair
from workers.adapters.gitcache import GitCache
from workers.adapters.state import LocalState
from workers.engine.git import Repository
from workers.jobs.engine_bridge import run_engine
from workers.jobs.ingestion import IngestEnv, ingest_repository

REPO = "acme/fork"


def make_env(pair: IngestPair, tmp_path: Path) -> tuple[IngestEnv, DryGitHub]:
    gh = DryGitHub(remotes={REPO: str(pair.fork_bare)})
    settings = WorkerSettings.from_mapping(
        {"FORKSYNC_DATA_DIR": str(tmp_path / "data"), "FORKSYNC_GIT_URL_MAP": json.dumps(pair.url_map)}
    )
    env = IngestEnv(
        settings, gh, GitCache(settings.data_dir / "git"), LocalState(settings.data_dir), run_engine
    )
    return env, gh


def test_upstream_ahead_opens_bundle_pr_chain_pr_and_check(ingest_pair: IngestPair, tmp_path: Path) -> None:
    """One bundle PR (#102 #104) and one chain PR (#103, risky path, built), each on the trunk, and a
    check with the figures; no tracking issue (the chain built its commit)."""
    env, gh = make_env(ingest_pair, tmp_path)
    report = ingest_repository(env, REPO)
    assert report.status == "ingested"
    assert gh.titles("pulls") == [
        "[Cherry-pick][BUNDLE] Cherry-pick 2 upstream(#102 #104)",
        "[Cherry-pick][CHAIN] Cherry-pick 1 upstream(#103)",
    ]
    pull, chain = gh.pulls.values()
    assert pull["base"] == "main" and str(pull["head"]).startswith("forksync/bundle/")
    body = str(pull["body"])
    assert "<!-- forksync:bundle:" in body and "<!-- forksync:plan:" in body
    assert "Improve b (#102)" in body and "Upstream Dev" in body
    assert "lands on its own, in any order" in body
    assert chain["base"] == "main" and str(chain["head"]).startswith("forksync/chain/")
    assert "Bump LLVM (#103)" in str(chain["body"]) and "risky_path" in str(chain["body"])
    assert gh.issues == {}
    (check,) = gh.checks
    assert check["name"] == "forksync / ingestion" and check["conclusion"] == "success"
    assert check["head_sha"] == Repository(ingest_pair.fork_bare).rev_parse("refs/heads/main")
    assert report.figures["pending"] == 3 and report.figures["backlog"] == 0 and report.figures["picked"] == 1
    assert "pending 3" in str(check["title"])
    # the branch was pushed to the fork, carrying both commits with their trailers
    fork = Repository(ingest_pair.fork_bare)
    head = fork.rev_parse(f"refs/heads/{pull['head']}")
    assert head is not None
    log = fork.text("log", "--format=%B", f"main..{head}")
    assert f"(cherry picked from commit {ingest_pair.shas['#102']})" in log
    assert f"(cherry picked from commit {ingest_pair.shas['#104']})" in log
    assert fork.rev_parse("refs/forksync/chains") is not None  # the chain is recorded durably
    assert env.state.series(f"metrics:{REPO}")[-1]["pending"] == 3


def test_rerun_updates_never_duplicates(ingest_pair: IngestPair, tmp_path: Path) -> None:
    """Running twice on the same state opens nothing new and pushes the same branch heads."""
    env, gh = make_env(ingest_pair, tmp_path)
    first = ingest_repository(env, REPO)
    heads = Repository(ingest_pair.fork_bare).text("for-each-ref", "refs/heads/forksync/")
    second = ingest_repository(env, REPO)
    assert [p["created"] for p in first.pulls] == [True, True]
    assert [p["created"] for p in second.pulls] == [False, False]
    assert second.issues == [] and second.closed == []
    assert len(gh.pulls) == 2 and gh.issues == {} and gh.comments == []
    assert Repository(ingest_pair.fork_bare).text("for-each-ref", "refs/heads/forksync/") == heads
    assert first.figures["plan_id"] == second.figures["plan_id"]


def test_merged_bundle_moves_the_ledger(ingest_pair: IngestPair, tmp_path: Path) -> None:
    """After the bundle PR merges into the fork trunk, the ledger moves and the next plan has no bundle."""
    env, gh = make_env(ingest_pair, tmp_path)
    first = ingest_repository(env, REPO)
    branch = first.pulls[0]["key"]
    fork = Repository(ingest_pair.fork_bare)
    bundle_head = fork.rev_parse(f"refs/heads/{gh.pulls[(REPO, next(iter(gh.pulls))[1])]['head']}")
    assert bundle_head is not None and branch
    fork.git("update-ref", "refs/heads/main", bundle_head)  # the merge (fast-forward)
    second = ingest_repository(env, REPO)
    assert second.figures["picked"] == 3
    # the frontier is now the upstream tip; the chain's commit (#103) is a hole behind it
    assert second.figures["pending"] == 0 and second.figures["backlog"] == 1
    assert second.figures["days_behind"] == 0
    # the chain PR stays, rebuilt onto the new trunk: the same PR, its base unchanged
    assert [(p["key"], p["created"]) for p in second.pulls] == [(first.pulls[1]["key"], False)]
    chain = next(p for p in gh.pulls.values() if str(p["head"]).startswith("forksync/chain/"))
    assert chain["base"] == "main" and chain["state"] == "open"
    chain_head = fork.rev_parse(f"refs/heads/{chain['head']}")
    assert fork.text("rev-parse", f"{chain_head}~1") == bundle_head  # on the new trunk


def test_upstream_advance_is_planned(ingest_pair: IngestPair, tmp_path: Path) -> None:
    """A new upstream commit after a run appears in the next plan's bundle."""
    env, _gh = make_env(ingest_pair, tmp_path)
    ingest_repository(env, REPO)
    ingest_pair.advance_upstream("Add d (#105)", {"src/d.py": "x = 1\n"})
    report = ingest_repository(env, REPO)
    assert report.figures["pending"] == 4
    assert "#105" in report.pulls[0]["title"]


@pytest.mark.parametrize(
    ("text", "line", "quoted"),
    [
        ("bundle:\n  max_commits: many\n", 2, "  max_commits: many"),
        ("upstream: {url: x}\nbogus_key: 1\n", 2, "bogus_key: 1"),
    ],
)
def test_bad_config_fails_the_check_quoting_the_line(
    ingest_pair: IngestPair, tmp_path: Path, text: str, line: int, quoted: str
) -> None:
    """A bad .github/forksync.yml gives a failing check that quotes the line at fault; nothing is opened."""
    ingest_pair.fork.commit("break config", {".github/forksync.yml": text})
    ingest_pair.push_fork()
    env, gh = make_env(ingest_pair, tmp_path)
    report = ingest_repository(env, REPO)
    assert report.status == "config_error"
    (check,) = gh.checks
    assert check["conclusion"] == "failure"
    assert f"forksync.yml:{line}" in str(check["title"])
    assert quoted in str(check["summary"])
    assert gh.pulls == {} and gh.issues == {}
    assert Repository(ingest_pair.fork_bare).text("for-each-ref", "refs/heads/forksync/") == ""


def test_superseded_bundle_and_finished_chain_are_closed(ingest_pair: IngestPair, tmp_path: Path) -> None:
    """When the fork carries everything (the bundle merged, the chain's commit picked by hand), the next
    run closes the bundle PR and the chain issue with a comment and deletes their branches; it opens nothing."""
    env, gh = make_env(ingest_pair, tmp_path)
    first = ingest_repository(env, REPO)
    assert first.closed == []
    fork = Repository(ingest_pair.fork_bare)
    branches = fork.text("for-each-ref", "--format=%(refname:lstrip=2)", "refs/heads/forksync/").split()
    assert any(b.startswith("forksync/bundle/") for b in branches) and any(
        b.startswith("forksync/chain/") for b in branches
    )
    # a maintainer picks all three pending commits by hand on the fork trunk
    work = ingest_pair.fork
    work.git("pull", "-q", "--ff-only", str(ingest_pair.fork_bare), "main")
    for pr in ("#102", "#103", "#104"):
        work.cherry_pick(ingest_pair.shas[pr], x=True)
    ingest_pair.push_fork()
    second = ingest_repository(env, REPO)
    assert second.figures["pending"] == 0 and second.figures["backlog"] == 0
    assert second.pulls == [] and second.issues == []
    assert sorted(c["kind"] for c in second.closed) == ["pull", "pull"]
    pull, chain = gh.pulls.values()
    assert pull["state"] == "closed" and "Superseded" in str(pull["closing_comment"])
    assert chain["state"] == "closed" and "picked" in str(chain["closing_comment"])
    assert fork.text("for-each-ref", "refs/heads/forksync/") == ""
    third = ingest_repository(env, REPO)
    assert third.closed == [] and third.pulls == [] and third.issues == []


def test_unreachable_upstream_fails_the_check_with_the_reason(
    ingest_pair: IngestPair, tmp_path: Path
) -> None:
    """An upstream.url that cannot be fetched gives a failing check naming the problem, not a silent
    task failure; nothing is pushed or opened."""
    good = ingest_pair.fork.git("show", "HEAD:.github/forksync.yml")
    bad = good.replace(UPSTREAM_URL, UPSTREAM_URL.replace("upstream.git", "no-such-upstream.git"))
    ingest_pair.fork.commit("point upstream nowhere", {".github/forksync.yml": bad})
    ingest_pair.push_fork()
    env, gh = make_env(ingest_pair, tmp_path)
    report = ingest_repository(env, REPO)
    assert report.status == "error"
    (check,) = gh.checks
    assert check["conclusion"] == "failure" and "ingestion failed" in str(check["title"])
    assert "no-such-upstream" in str(check["summary"])
    assert gh.pulls == {} and gh.issues == {}
    assert Repository(ingest_pair.fork_bare).text("for-each-ref", "refs/heads/forksync/") == ""


def test_stale_locks_from_a_crashed_run_do_not_wedge_the_next(
    ingest_pair: IngestPair, tmp_path: Path
) -> None:
    """Lock files left in the worker's fork cache and in the engine's pair cache by a killed run are
    cleared before the next run, which then succeeds (and opens nothing twice)."""
    from workers.adapters.gitcache import cache_name
    from workers.engine.pair import cache_root

    env, gh = make_env(ingest_pair, tmp_path)
    ingest_repository(env, REPO)
    fork_cache = env.caches.root / cache_name(f"fork:{REPO}")
    (fork_cache / "refs" / "heads" / "main.lock").write_text("")
    (fork_cache / "packed-refs.lock").write_text("")
    pair_repos = [
        p.parent / "repo.git"
        for p in (cache_root() / "pairs").glob("*/locations.txt")
        if f"fork {fork_cache}\n" in p.read_text()
    ]
    assert pair_repos
    for repo in pair_repos:
        (repo / "refs" / "forksync").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / "forksync" / "upstream").mkdir(exist_ok=True)
        (repo / "refs" / "forksync" / "upstream" / "main.lock").write_text("")
    ingest_pair.advance_upstream("Add d (#105)", {"src/d.py": "d = 1\n"})
    report = ingest_repository(env, REPO)
    assert report.status == "ingested" and report.figures["pending"] == 4
    assert len(gh.pulls) == 2 and gh.issues == {}


def test_chain_issue_with_chain_prs_off_becomes_a_pr_when_turned_on(
    ingest_pair: IngestPair, tmp_path: Path
) -> None:
    """With ``bundle.chain_prs: false`` the built chain (#103) is a tracking issue; turned back on (the
    default), the chain is a [Cherry-pick][CHAIN] PR on the trunk and its issue is closed naming the PR;
    a rerun edits the PR in place, never a second one."""
    from tests.fixtures.ingest import CONFIG

    off = CONFIG.format(url=UPSTREAM_URL).replace(
        "  max_commits: 10\n", "  max_commits: 10\n  chain_prs: false\n"
    )
    ingest_pair.fork.commit("Fork: chains as issues", {".github/forksync.yml": off})
    ingest_pair.push_fork()
    env, gh = make_env(ingest_pair, tmp_path)
    first = ingest_repository(env, REPO)
    assert gh.titles("pulls") == ["[Cherry-pick][BUNDLE] Cherry-pick 2 upstream(#102 #104)"]
    (issue,) = gh.issues.values()
    assert "Bump LLVM (#103)" in str(issue["title"]) + str(issue["body"])
    assert "risky_path" in str(issue["body"]) and "git cherry-pick -x" in str(issue["body"])
    assert first.closed == []
    ingest_pair.fork.commit("Fork: chains as PRs", {".github/forksync.yml": CONFIG.format(url=UPSTREAM_URL)})
    ingest_pair.push_fork()
    second = ingest_repository(env, REPO)
    chain = next(p for p in gh.pulls.values() if str(p["head"]).startswith("forksync/chain/"))
    assert chain["base"] == "main" and "<!-- forksync:chain:" in str(chain["body"])
    assert "risky_path" in str(chain["body"]) and "Runs L1 like any PR" in str(chain["body"])
    assert issue["state"] == "closed" and f"dry://{REPO}/{chain['number']}" in str(issue["closing_comment"])
    assert [c["kind"] for c in second.closed] == ["issue"]
    third = ingest_repository(env, REPO)
    assert [p["created"] for p in third.pulls] == [False, False] and len(gh.pulls) == 2 and third.closed == []
