"""L2: robust regression detection, the durable result store, and trunk runs that bisect a new break."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from core.config import Benchmark, L2Config, Metric, RepoConfig, load_repo_config
from core.store import open_store
from tests.fixtures.trunk import TrunkCommit
from workers.engine.git import Repository
from workers.testing.l2 import run_benchmark, run_trunk
from workers.testing.regression import FAILED, OK, REGRESSED, SKIPPED, L2Run, baseline, judge
from workers.testing.results import ResultStore

MakeTrunk = Callable[[str, Sequence[TrunkCommit]], tuple[Path, list[str]]]

MATMUL = Benchmark(
    name="matmul-sweep",
    run=("python", "bench.py"),
    metrics=(Metric("tflops", "higher", 5.0), Metric("latency_ms", "lower", 5.0)),
)


def ok_run(tflops: float, latency: float = 10.0, sha: str = "s") -> L2Run:
    return L2Run("matmul-sweep", sha, "pass", {"tflops": tflops, "latency_ms": latency}, verdict=OK)


# --------------------------------------------------------------------------- regression


def test_regression_needs_threshold_and_to_be_outside_the_noise() -> None:
    """Against a noisy baseline, a 6% dip inside the noise band is ok; a 20% drop is a regression."""
    noisy = [ok_run(v) for v in (100, 104, 97, 102, 98, 105, 96)]  # about +-5% run to run
    dip = judge(L2Run("matmul-sweep", "x", "pass", {"tflops": 94.0, "latency_ms": 10.0}), noisy, MATMUL, 7)
    drop = judge(L2Run("matmul-sweep", "x", "pass", {"tflops": 80.0, "latency_ms": 10.0}), noisy, MATMUL, 7)
    assert dip.status == OK and "within noise" in dip.checks[0].reason
    assert drop.status == REGRESSED
    assert [c.metric for c in drop.regressed_metrics] == ["tflops"]
    assert "worse than the 5% threshold" in drop.reason


def test_quiet_benchmark_is_held_to_its_threshold_and_direction() -> None:
    """With no noise, 6% worse regresses; for a lower-is-better metric, higher is worse, lower is fine."""
    quiet = [ok_run(100.0, 10.0) for _ in range(5)]
    assert (
        judge(L2Run("m", "x", "pass", {"tflops": 94.0, "latency_ms": 10.0}), quiet, MATMUL, 7).status
        == REGRESSED
    )
    slower = judge(L2Run("m", "x", "pass", {"tflops": 100.0, "latency_ms": 10.7}), quiet, MATMUL, 7)
    assert [c.metric for c in slower.regressed_metrics] == ["latency_ms"]
    assert judge(L2Run("m", "x", "pass", {"tflops": 130.0, "latency_ms": 5.0}), quiet, MATMUL, 7).status == OK


def test_baseline_uses_only_the_last_good_runs_and_is_robust_to_outliers() -> None:
    """Regressed and skipped runs never enter the baseline; one wild outlier does not move the median."""
    history = [ok_run(50.0)] * 3 + [ok_run(100.0)] * 6 + [ok_run(1000.0)]
    history += [L2Run("m", "r", "pass", {"tflops": 10.0}, verdict=REGRESSED)] * 4
    b = judge(L2Run("m", "x", "pass", {"tflops": 100.0, "latency_ms": 10.0}), history, MATMUL, 7)
    assert b.checks[0].baseline is not None and b.checks[0].baseline.median == 100.0
    assert b.status == OK
    base = baseline([100.0, 101.0, 99.0, 1e9])
    assert base is not None and base.median == 100.5 and base.spread < 3


def test_failures_missing_metrics_and_skips() -> None:
    """A failed run is a failure verdict; a missing metric regresses; skip/infra/timeout judge nothing."""
    assert judge(L2Run("m", "x", "fail", reason="exit 1"), [], MATMUL, 7).status == FAILED
    missing = judge(L2Run("m", "x", "pass", {"tflops": 1.0}), [ok_run(1.0)], MATMUL, 7)
    assert missing.status == REGRESSED and "latency_ms missing" in missing.reason
    for status in ("skip", "infra", "timeout"):
        assert judge(L2Run("m", "x", status, reason=status), [], MATMUL, 7).status == SKIPPED
    first = judge(L2Run("m", "x", "pass", {"tflops": 1.0, "latency_ms": 1.0}), [], MATMUL, 7)
    assert first.status == OK and "no baseline yet" in first.checks[0].reason


# --------------------------------------------------------------------------- store


def test_result_store_is_durable_and_serves_time_series(tmp_path: Path) -> None:
    """Runs survive reopening the file; series and last_good read them back in trunk order."""
    store = ResultStore.in_data_dir(tmp_path / "data")
    for i, v in enumerate((100.0, 101.0, 70.0)):
        verdict = REGRESSED if v < 80 else OK
        store.record(
            "org/fork",
            L2Run(
                "matmul-sweep",
                f"sha{i}",
                "pass",
                {"tflops": v},
                verdict=verdict,
                recorded_at=f"2026-11-2{i}T02:00:00Z",
            ),
        )
    store.record("org/other", L2Run("matmul-sweep", "zzz", "pass", {"tflops": 1.0}, verdict=OK))
    again = ResultStore.in_data_dir(tmp_path / "data")
    assert [(p.sha, p.value, p.verdict) for p in again.series("org/fork", "matmul-sweep", "tflops")] == [
        ("sha0", 100.0, OK),
        ("sha1", 101.0, OK),
        ("sha2", 70.0, REGRESSED),
    ]
    good = again.last_good("org/fork", "matmul-sweep")
    assert good is not None and good.sha == "sha1" and good.metrics == {"tflops": 101.0}
    assert [r.sha for r in again.history("org/fork", "matmul-sweep", limit=2)] == ["sha1", "sha2"]
    assert again.benchmarks("org/fork") == ["matmul-sweep"]


# --------------------------------------------------------------------------- trunk runs

BENCH = """\
import json, pathlib, sys
root = pathlib.Path(__file__).parent
if (root / "broken").exists():
    print("Traceback (most recent call last):\\n  File \\"bench.py\\", line 9, in <module>\\n"
          "RuntimeError: kernel launch failed", file=sys.stderr)
    sys.exit(1)
print(json.dumps({"metrics": {"tflops": float((root / "speed").read_text()), "latency_ms": 10.0}}))
"""

CONFIG = """\
l2:
  baseline_runs: 5
  bisect_budget: 8
  benchmarks:
    - name: matmul-sweep
      run: [{python}, bench.py]
      metrics:
        - {{name: tflops, direction: higher, threshold: 5}}
        - {{name: latency_ms, direction: lower, threshold: 5}}
"""


def trunk(n: int, speeds: dict[int, float], broken_from: int | None = None) -> list[TrunkCommit]:
    commits = [TrunkCommit("base", {"bench.py": BENCH, "speed": "100\n"})]
    speed = 100.0
    for i in range(1, n):
        speed = speeds.get(i, speed)
        files: dict[str, str | None] = {"speed": f"{speed + (i % 3) * 0.5}\n", f"lib/m{i}.py": "x\n"}
        if broken_from is not None and i == broken_from:
            files["broken"] = "1\n"
        commits.append(TrunkCommit(f"change {i}", files))
    return commits


def test_trunk_run_detects_a_regression_and_bisects_between_nightlies(
    make_trunk: MakeTrunk, tmp_path: Path
) -> None:
    """Nightlies at every 8th commit; a drop planted in between is bisected against the stored baseline."""
    path, shas = make_trunk("fork", trunk(49, {29: 80.0}))
    config = load_repo_config(CONFIG.format(python=sys.executable))
    store = ResultStore(open_store(None, tmp_path / "l2"))
    repo = Repository(path)
    nightly = [0, 8, 16, 24, 32, 40, 48]
    outcomes = {
        i: run_trunk(repo, "org/fork", shas[i], config, store, recorded_at=f"n{i}")[0] for i in nightly
    }
    assert [outcomes[i].verdict.status for i in nightly] == [OK, OK, OK, OK, REGRESSED, REGRESSED, REGRESSED]
    first = outcomes[32]
    assert first.new_break and first.last_good == shas[24] and first.first_bad == shas[32]
    assert first.bisect is not None and first.bisect.culprit == shas[29]
    # The reference came from the store (median of good runs): no run at the good end was needed.
    assert first.bisect.reference is not None and first.bisect.probes[0].sha != shas[24]
    assert first.bisect.runs <= 3
    later = outcomes[40]
    assert not later.new_break and later.bisect is None and later.first_bad == shas[32]
    assert [p.verdict for p in store.series("org/fork", "matmul-sweep", "tflops")] == [OK] * 4 + [
        REGRESSED
    ] * 3


def test_trunk_failure_is_bisected_by_exit_status_and_kept_as_a_failure(
    make_trunk: MakeTrunk, tmp_path: Path
) -> None:
    """A benchmark that starts crashing is a failure verdict with its output; bisection finds the commit."""
    path, shas = make_trunk("fork", trunk(21, {}, broken_from=13))
    config = load_repo_config(CONFIG.format(python=sys.executable))
    store = ResultStore(open_store(None, tmp_path / "l2"))
    repo = Repository(path)
    run_trunk(repo, "org/fork", shas[10], config, store)
    out = run_trunk(repo, "org/fork", shas[20], config, store)[0]
    assert out.verdict.status == FAILED and out.run.reason == "exit 1"
    assert "RuntimeError: kernel launch failed" in out.run.failures[0].text
    assert out.bisect is not None and out.bisect.culprit == shas[13]


def test_first_ever_run_failing_ranks_suspects_without_bisecting(
    make_trunk: MakeTrunk, tmp_path: Path
) -> None:
    """No good run to bisect from: the outcome says so and ranks recent commits by path overlap."""
    commits = trunk(6, {}, broken_from=1)
    commits.append(TrunkCommit("touch bench", {"bench.py": BENCH + "# tweak\n"}))
    path, shas = make_trunk("fork", commits)
    config = load_repo_config(CONFIG.format(python=sys.executable))
    out = run_trunk(
        Repository(path), "org/fork", shas[-1], config, ResultStore(open_store(None, tmp_path / "l2"))
    )[0]
    assert out.verdict.status == FAILED and out.bisect is None
    assert "no good run" in out.note
    assert out.suspects[0].sha == shas[-1] and out.suspects[0].files == ("bench.py",)


def test_run_benchmark_statuses(make_trunk: MakeTrunk) -> None:
    """125 is skip, a full disk is infra (not a failure), a missing metrics line is a failure that says so."""
    path, shas = make_trunk("fork", [TrunkCommit("base", {"a": "1\n"})])
    repo = Repository(path)

    def bench(code: str, **kw: object) -> Benchmark:
        return Benchmark(name="b", run=(sys.executable, "-c", code), metrics=(Metric("x"),), **kw)  # type: ignore[arg-type]

    assert run_benchmark(repo, shas[0], bench("raise SystemExit(125)")).status == "skip"
    infra = run_benchmark(
        repo, shas[0], bench("import sys; print('No space left on device', file=sys.stderr); sys.exit(1)")
    )
    assert infra.status == "infra" and infra.failures == ()
    nometrics = run_benchmark(repo, shas[0], bench("print('done')"))
    assert nometrics.status == "fail" and 'no {"metrics"' in nometrics.reason
    slow = run_benchmark(repo, shas[0], bench("import time; time.sleep(30)", timeout=1))
    assert slow.status == "timeout" and slow.duration_s < 10


@pytest.mark.parametrize("direction", ["higher", "lower"])
def test_config_defaults_feed_the_judge(direction: str) -> None:
    """The config's baseline_runs and per-metric direction/threshold are what judge() applies."""
    cfg = RepoConfig(
        l2=L2Config(benchmarks=(Benchmark("b", ("x",), metrics=(Metric("m", direction, 10.0),)),))
    )
    b = cfg.l2.benchmarks[0]
    history = [L2Run("b", "s", "pass", {"m": 100.0}, verdict=OK)] * 3
    worse = 85.0 if direction == "higher" else 115.0
    assert judge(L2Run("b", "x", "pass", {"m": worse}), history, b, cfg.l2.baseline_runs).status == REGRESSED
    assert (
        judge(
            L2Run("b", "x", "pass", {"m": 95.0 if direction == "higher" else 105.0}),
            history,
            b,
            cfg.l2.baseline_runs,
        ).status
        == OK
    )


JUNIT_BENCH = """\
import json, os, pathlib
case = '<testcase classname="test.test_ops" name="{n}"><failure message="{m}">{t}</failure></testcase>'
cases = [case.format(n="test_dot[fp16-64]", m="AssertionError: mismatch 3 / 4096", t="E AssertionError"),
         case.format(n="test_dot[bf16-128]", m="AssertionError: mismatch 9 / 16384", t="E AssertionError"),
         case.format(n="test_scan[1]", m="ValueError: bad axis 1", t="E ValueError: bad axis 1"),
         '<testcase classname="test.test_ops" name="test_ok"/>']
pathlib.Path(os.environ["FORKSYNC_JUNIT"]).write_text("<testsuite>" + "".join(cases) + "</testsuite>")
print(json.dumps({"metrics": {"x": 1.0}}))
"""


def test_junit_failures_become_grouped_tracking_sightings(make_trunk: MakeTrunk) -> None:
    """A benchmark's JUnit failures fail the run even at exit 0; parametrised variants share one sighting."""
    from workers.testing.l2 import BenchmarkOutcome
    from workers.testing.tracking import report_from_l2

    path, shas = make_trunk("fork", [TrunkCommit("base", {"bench.py": JUNIT_BENCH})])
    bench = Benchmark("ops", (sys.executable, "bench.py"), metrics=(Metric("x"),), owners=("dan",))
    run = run_benchmark(Repository(path), shas[0], bench)
    assert run.status == "fail" and run.reason == "3 tests failed" and run.exit_code == 0
    assert [f.test_id for f in run.failures] == [
        "test.test_ops::test_dot[fp16-64]",
        "test.test_ops::test_dot[bf16-128]",
        "test.test_ops::test_scan[1]",
    ]
    verdict = judge(run, [], bench, 7)
    report = report_from_l2(BenchmarkOutcome(run, verdict, None, shas[0], True), bench, "night 1")
    assert [len(s.tests) for s in report.sightings] == [2, 1]
    assert report.sightings[0].signature.test == "test.test_ops::test_dot"
    assert report.owners == ("dan",) and report.judged
