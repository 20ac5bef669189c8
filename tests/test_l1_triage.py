"""Trunk-aware triage through real suite runs: broken trunk, flaky, new; the check fails only on new."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from core.config import L1Config, RepoConfig
from core.store import Store, database_url_for, open_store
from tests.fixtures.l1 import FAILING_TEST, PYTEST_ENV, passing_tests, pytest_suite
from tests.gitrepo import GitRepo
from workers.testing.l1 import run_l1_for_ref
from workers.testing.triage import TrunkResults, classify

MakeRepo = Callable[[str], GitRepo]

# Fails on the first run in a directory, passes on the next: flaky by construction.
FLAKY_TEST = """\
import os
from pathlib import Path


def test_sometimes():
    marker = Path(os.environ["FLAKY_DIR"]) / "ran-once"
    first = not marker.exists()
    marker.write_text("x")
    assert not first, "first run fails"
"""


def config(**l1: object) -> RepoConfig:
    return RepoConfig(l1=L1Config(suites=(pytest_suite(),), **l1))  # type: ignore[arg-type]


def test_failure_also_on_trunk_at_merge_base_is_broken_trunk(make_repo: MakeRepo, tmp_path: Path) -> None:
    """A test that fails on trunk at the PR's merge-base is 'broken_trunk': reported, not blamed."""
    repo = make_repo("r")
    repo.commit(
        "trunk with a broken test", {"tests/test_a.py": FAILING_TEST, "tests/test_b.py": passing_tests(2)}
    )
    data = tmp_path / "data"
    trunk = run_l1_for_ref(repo.path, "main", config(), data_dir=data, trunk=True)
    assert trunk.trunk and trunk.suites[0].status == "failed"
    repo.git("checkout", "-q", "-b", "pr")
    repo.commit("unrelated change", {"README": "hi\n"})
    pr = run_l1_for_ref(repo.path, "pr", config(), data_dir=data, base_ref="main")
    (suite,) = pr.suites
    assert [f.triage for f in suite.failures] == ["broken_trunk"]
    assert pr.merge_base == repo.head("main")
    assert pr.conclusion == "success", "a pre-existing failure must not fail the PR's check"
    assert "1 broken trunk" in suite.reason


def test_failure_that_passes_on_rerun_is_flaky(make_repo: MakeRepo, tmp_path: Path) -> None:
    """A failure not on trunk that passes on the automatic rerun is 'flaky', and does not fail the check."""
    repo = make_repo("r")
    repo.commit("flaky", {"tests/test_a.py": FLAKY_TEST + "\n" + passing_tests(1)})
    # The suite sees only its allow-listed environment plus its config's ``env:``, so the marker
    # directory is named there, as a real config would.
    suite_env = {**PYTEST_ENV, "FLAKY_DIR": str(tmp_path)}
    flaky_config = RepoConfig(l1=L1Config(suites=(pytest_suite(env=suite_env),)))
    run = run_l1_for_ref(repo.path, "HEAD", flaky_config, data_dir=tmp_path / "data")
    (suite,) = run.suites
    assert [(f.test_id, f.triage) for f in suite.failures] == [("tests.test_a::test_sometimes", "flaky")]
    assert run.conclusion == "success"
    assert Path(suite.log_path).exists() and Path(suite.log_path.replace(".log", ".rerun.log")).exists()


def test_failure_that_fails_again_and_not_on_trunk_is_new(make_repo: MakeRepo, tmp_path: Path) -> None:
    """A failure that trunk does not have and that fails again on rerun is 'new' and fails the check."""
    repo = make_repo("r")
    repo.commit("good trunk", {"tests/test_b.py": passing_tests(2)})
    data = tmp_path / "data"
    run_l1_for_ref(repo.path, "main", config(), data_dir=data, trunk=True)
    repo.git("checkout", "-q", "-b", "pr")
    repo.commit("break it", {"tests/test_a.py": FAILING_TEST})
    run = run_l1_for_ref(repo.path, "pr", config(), data_dir=data, base_ref="main")
    (failure,) = run.suites[0].failures
    assert failure.triage == "new" and run.conclusion == "failure"


def test_fail_on_config_can_block_on_broken_trunk(make_repo: MakeRepo, tmp_path: Path) -> None:
    """With l1.fail_on including broken_trunk, a pre-existing failure fails the check too."""
    repo = make_repo("r")
    repo.commit("broken trunk", {"tests/test_a.py": FAILING_TEST})
    data = tmp_path / "data"
    run_l1_for_ref(repo.path, "main", config(), data_dir=data, trunk=True)
    strict = config(fail_on=("new", "broken_trunk"), flaky_reruns=0)
    run = run_l1_for_ref(repo.path, "main", strict, data_dir=data, base_ref="main")
    assert run.suites[0].failures[0].triage == "broken_trunk" and run.conclusion == "failure"


def test_trunk_runs_set_the_baseline_that_omits_a_shrunken_suite(make_repo: MakeRepo, tmp_path: Path) -> None:
    """Trunk runs record test counts; a PR running under 80% of that rolling baseline is omitted."""
    repo = make_repo("r")
    repo.commit("ten tests", {"tests/test_a.py": passing_tests(10)})
    data = tmp_path / "data"
    run_l1_for_ref(repo.path, "main", config(), data_dir=data, trunk=True)
    assert TrunkResults(open_store(None, data)).baseline("unit") == 10
    repo.git("checkout", "-q", "-b", "pr")
    repo.commit("drop tests", {"tests/test_a.py": passing_tests(7)})
    run = run_l1_for_ref(repo.path, "pr", config(), data_dir=data, base_ref="main")
    assert run.suites[0].status == "omitted" and run.conclusion == "failure"
    assert "under 80% of its trunk baseline of 10" in run.suites[0].reason


def test_classify_prefers_broken_trunk_over_flaky_and_says_why() -> None:
    """Pure rule: trunk failure beats a rerun pass; with no trunk results the reason says so."""
    verdicts = classify(
        ["a", "b", "c"],
        trunk_failing=frozenset({"a"}),
        rerun_passed=frozenset({"a", "b"}),
        reran=True,
        merge_base="f" * 40,
    )
    assert [(v.test_id, v.triage) for v in verdicts] == [("a", "broken_trunk"), ("b", "flaky"), ("c", "new")]
    assert "ffffffffffff" in verdicts[0].why
    (unknown,) = classify(["x"], trunk_failing=None)
    assert unknown.triage == "new" and "no trunk results" in unknown.why


def test_store_survives_reopen_and_rerun_replaces(tmp_path: Path) -> None:
    """The trunk store is durable (a new handle sees it) and a rerun at a commit replaces its results."""
    db = Store(database_url_for(None, tmp_path))
    TrunkResults(db).record("c1", "unit", "failed", [("t1", "failed"), ("t2", "passed")])
    TrunkResults(db).record("c1", "unit", "passed", [("t1", "passed"), ("t2", "passed")])
    store = TrunkResults(db)
    assert store.failing_at("c1", "unit") == frozenset()
    assert store.failing_at("c2", "unit") is None
    store.record("c2", "unit", "omitted", [])
    assert store.baseline("unit") == 2, "an omitted trunk run must not drag the baseline down"
