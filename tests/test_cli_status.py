"""The `forksync status` / `mark` / `demo` contract: JSON keys, the table, and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fixtures.demo import DemoRuns
from tests.fixtures.ledger import ForkedPair, run_cli
from tests.gitrepo import GitRepo
from workers.demo.sample import make_sample

Forked = Callable[[], ForkedPair]

STATUS_KEYS = {
    "base",
    "upstream_tip",
    "frontier",
    "contiguous_pin",
    "days_behind",
    "backlog",
    "backlog_commits",
    "pending",
    "picked",
    "wont_port",
    "urgent",
    "deferred",
}


def test_status_json_has_the_contract_keys_and_types(forked: Forked) -> None:
    """--json prints one object with every contract key, of the contract's type."""
    p = forked()
    a, b, c = p.up(10), p.up(11), p.up(12)
    p.pick(a)
    p.pick(c)
    result = p.status()
    assert result.code == 0, result.err
    data = result.json()
    assert set(data) >= STATUS_KEYS
    assert data["base"] == p.base and data["upstream_tip"] == c and data["frontier"] == c
    assert data["contiguous_pin"] == a
    assert isinstance(data["days_behind"], float) and data["days_behind"] == 0.0
    assert data["backlog"] == 1 and data["backlog_commits"] == [b]
    assert (data["pending"], data["picked"], data["wont_port"], data["urgent"]) == (0, 2, 0, [])


def test_status_table_is_readable(forked: Forked) -> None:
    """Without --json, status prints a table naming the frontier and the backlog commits."""
    p = forked()
    a, b = p.up(10, "Fix the scheduler"), p.up(11, "Add the pass")
    p.pick(b)
    result = run_cli("status", "--upstream", str(p.upstream.path), "--fork", str(p.fork.path))
    assert result.code == 0
    assert "days behind" in result.out and "frontier" in result.out
    assert f"{a[:12]}  Fix the scheduler (#10)" in result.out
    assert not result.out.lstrip().startswith("{")


def test_status_on_urls(forked: Forked) -> None:
    """file:// URLs are fetched into the cache and give the same answer as local paths."""
    p = forked()
    a = p.up(10)
    p.pick(a)
    local = p.status().json()
    remote = run_cli(
        "status", "--upstream", f"file://{p.upstream.path}", "--fork", f"file://{p.fork.path}", "--json"
    )
    assert remote.code == 0, remote.err
    assert remote.json() == local


def test_config_file_option_and_fork_config_are_used(forked: Forked, tmp_path: Path) -> None:
    """--config FILE is read; without it .github/forksync.yml at the fork tip is (upstream.url here)."""
    p = forked()
    a = p.up(10)
    p.fork.commit("Port (#2)\n\nhttps://github.com/triton-lang/triton/pull/10", {"x": "1\n"})
    assert p.status().json()["picked"] == 1  # upstream url unknown: any non-fork link counts
    cfg = tmp_path / "cfg.yml"
    cfg.write_text("upstream: {url: https://github.com/other/repo}\n")
    assert p.status("--config", str(cfg)).json()["picked"] == 0
    p.fork.commit(
        "Add config (#3)", {".github/forksync.yml": "upstream: {url: https://github.com/other/repo}\n"}
    )
    assert p.status().json()["picked"] == 0
    assert a


def _bad(result_code: int, err: str, fragment: str) -> None:
    assert result_code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert fragment in lines[0], lines[0]


@pytest.mark.parametrize("which", ["upstream", "fork"])
def test_missing_path_is_one_line_exit_2(forked: Forked, tmp_path: Path, which: str) -> None:
    """A path that does not exist: one line naming it and the remedy, exit 2."""
    p = forked()
    args = {"upstream": str(p.upstream.path), "fork": str(p.fork.path), which: str(tmp_path / "nope")}
    r = run_cli("status", "--upstream", args["upstream"], "--fork", args["fork"])
    _bad(r.code, r.err, "does not exist")
    assert r.out == ""


def test_not_a_repository(forked: Forked, tmp_path: Path) -> None:
    """A directory that is not a git repository is reported as such."""
    p = forked()
    plain = tmp_path / "plain"
    plain.mkdir()
    r = run_cli("status", "--upstream", str(plain), "--fork", str(p.fork.path))
    _bad(r.code, r.err, "is not a git repository")


def test_unknown_branch_lists_the_branches(forked: Forked) -> None:
    """An unknown branch names the branches that exist."""
    p = forked()
    r = run_cli(
        "status", "--upstream", str(p.upstream.path), "--fork", str(p.fork.path), "--upstream-branch", "dev"
    )
    _bad(r.code, r.err, "has no branch 'dev'")
    assert "main" in r.err


def test_unrelated_histories(forked: Forked, make_repo: Callable[[str], GitRepo]) -> None:
    """A fork with no common history with upstream: no merge base, exit 2."""
    p = forked()
    other = make_repo("other")
    other.commit("Something else", {"a": "b\n"})
    r = run_cli("status", "--upstream", str(p.upstream.path), "--fork", str(other.path))
    _bad(r.code, r.err, "share no history")


def test_malformed_config(forked: Forked, tmp_path: Path) -> None:
    """A malformed config file quotes the file, line and key."""
    p = forked()
    cfg = tmp_path / "bad.yml"
    cfg.write_text("ledger:\n  notes_reff: x\n")
    r = p.status("--config", str(cfg))
    _bad(r.code, r.err, "bad.yml:2: ledger.notes_reff: unknown key")


def test_malformed_config_in_the_fork(forked: Forked) -> None:
    """A malformed .github/forksync.yml at the fork tip is reported the same way, never ignored."""
    p = forked()
    p.fork.commit("Add config (#3)", {".github/forksync.yml": "bundle:\n  max_commits: lots\n"})
    r = p.status()
    _bad(r.code, r.err, "forksync.yml")
    assert "bundle.max_commits" in r.err


@pytest.mark.parametrize(
    ("ref", "fragment"),
    [
        ("#99", "no commit of upstream main after the base"),
        ("deadbeef", "no upstream commit matches deadbeef"),
        ("zz-top", "neither an upstream sha nor a PR number"),
        ("#11", "PR #11 names 2 commits"),
    ],
)
def test_mark_bad_ref_writes_nothing(forked: Forked, ref: str, fragment: str) -> None:
    """Unknown, malformed or ambiguous REF: one line, exit 2, and the notes ref is untouched."""
    p = forked()
    p.up(10)
    p.up(11, "First landing")
    p.up(11, "Re-land", {"src/reland.py": "x\n"})
    r = p.mark(ref, "wont_port")
    _bad(r.code, r.err, fragment)
    assert p.fork.git("for-each-ref", "refs/notes/") == ""


def test_mark_ambiguous_sha_prefix(forked: Forked) -> None:
    """A sha prefix that matches two upstream commits is refused, naming the ambiguity."""
    from core.config import LedgerConfig
    from core.errors import ForksyncError
    from workers.cli.mark import resolve_ref
    from workers.engine.ledger.cache import load_ledger
    from workers.engine.pair import open_pair

    p = forked()
    shas = [p.up(n) for n in range(10, 30)]
    first: dict[str, list[str]] = {}
    for s in shas:
        first.setdefault(s[0], []).append(s)
    prefix = next(k for k, v in sorted(first.items()) if len(v) > 1)
    pair = open_pair(str(p.upstream.path), str(p.fork.path))
    with pytest.raises(ForksyncError, match="is ambiguous: it matches"):
        resolve_ref(pair, load_ledger(pair, LedgerConfig()), prefix)


def test_mark_commit_before_the_base(forked: Forked) -> None:
    """The base itself (or older) cannot be marked: it is not in the ledger's range."""
    p = forked()
    p.up(10)
    r = p.mark(p.base[:10], "wont_port")
    _bad(r.code, r.err, "is not one of the commits")


def test_mark_bad_decision_is_one_line(forked: Forked) -> None:
    """An unknown decision word is a usage error on one line, exit 2, nothing written."""
    p = forked()
    p.up(10)
    r = p.mark("#10", "skip")
    _bad(r.code, r.err, "invalid choice")
    assert p.fork.git("for-each-ref", "refs/notes/") == ""


def test_status_warns_about_unreadable_notes(forked: Forked) -> None:
    """A hand-written note forksync cannot read is named on stderr, never dropped silently."""
    p = forked()
    a = p.up(10)
    p.fork.git("fetch", "-q", str(p.upstream.path), "main")
    p.fork.git("notes", "--ref", "forksync", "add", "-m", "maybe later", a)
    r = p.status()
    assert r.code == 0
    assert "ignored the note on" in r.err and "unknown disposition" in r.err


@pytest.mark.slow
def test_demo_runs_offline_and_shows_status(demo_runs: DemoRuns) -> None:
    """`forksync demo` builds the sample pair and prints its status table."""
    r = demo_runs.first  # a real process (tests/fixtures/demo.py)
    assert r.returncode == 0, r.stderr
    assert "days behind" in r.stdout and "backlog (oldest first):" in r.stdout


def test_console_entry_point_runs_as_a_process(forked: Forked) -> None:
    """`python -m workers.cli status --json` works as a real process (exit 0, JSON on stdout)."""
    p = forked()
    p.up(10)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "workers.cli",
            "status",
            "--upstream",
            str(p.upstream.path),
            "--fork",
            str(p.fork.path),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["pending"] == 1


def test_sample_pair_ledger_matches_its_story(tmp_path: Path) -> None:
    """Every recogniser, the bundle, the revert, urgent, wont_port and deferred in the sample."""
    from workers.engine.ledger.build import build_ledger
    from workers.engine.pair import open_configured

    sample = make_sample(tmp_path / "s")
    pair, config = open_configured(str(sample.upstream), str(sample.fork))
    ledger = build_ledger(pair, config.ledger, upstream_url=config.upstream.url)
    got = {pr: ledger.entry(sha).disposition.value for pr, sha in sample.pr_sha.items()}  # type: ignore[union-attr]
    assert got == sample.expect
    for pr, how in sample.recogniser.items():
        assert f"({how})" in ledger.entry(sample.pr_sha[pr]).reason, pr  # type: ignore[union-attr]
    assert ledger.metrics.frontier == sample.pr_sha[sample.frontier_pr]
    assert ledger.metrics.backlog_commits == (sample.pr_sha[7005], sample.pr_sha[7011])
    assert ledger.metrics.contiguous_pin == sample.pr_sha[7004]


def test_mark_on_a_fork_given_by_url_pushes_the_notes(forked: Forked) -> None:
    """With --fork as a URL the decision is pushed to that repository's notes ref."""
    p = forked()
    a = p.up(10)
    r = run_cli(
        "mark",
        "--upstream",
        f"file://{p.upstream.path}",
        "--fork",
        f"file://{p.fork.path}",
        a[:10],
        "deferred",
        "--reason",
        "later",
    )
    assert r.code == 0, r.err
    assert "deferred" in p.fork.git("notes", "--ref", "forksync", "show", a)
    again = run_cli(
        "status", "--upstream", f"file://{p.upstream.path}", "--fork", f"file://{p.fork.path}", "--json"
    )
    assert again.json()["deferred"] == 1


def test_upstream_as_a_remote_tracking_branch_of_the_fork_clone(forked: Forked) -> None:
    """`--upstream FORK --upstream-branch upstream/main` reads upstream from the clone's remote branch."""
    p = forked()
    a = p.up(10)
    p.up(11)
    p.pick(a)
    same_repo = run_cli(
        "status",
        "--upstream",
        str(p.fork.path),
        "--upstream-branch",
        "upstream/main",
        "--fork",
        str(p.fork.path),
        "--json",
    )
    assert same_repo.code == 0, same_repo.err
    assert same_repo.json() == p.status().json()


def test_unwritable_cache_dir_is_one_line(
    forked: Forked, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache dir that cannot be created names FORKSYNC_CACHE_DIR as the remedy, exit 2."""
    p = forked()
    p.up(10)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    monkeypatch.setenv("FORKSYNC_CACHE_DIR", str(blocker / "cache"))
    r = p.status()
    _bad(r.code, r.err, "cannot create the cache directory")
    assert "FORKSYNC_CACHE_DIR" in r.err
