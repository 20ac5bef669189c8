"""L2 regression detection that survives noise: a run against a robust baseline of recent good runs.

The baseline of a metric is the median of its last ``baseline_runs`` good runs and its spread
(the median absolute deviation, scaled to a standard deviation). A run regresses a metric when
it is worse than the median by more than the metric's threshold percent *and* further from it
than ``NOISE_K`` spreads: a noisy benchmark does not cry wolf, a quiet one is held to its
threshold. A failing run counts as a regression of its own. Pure functions over plain records.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from core.config import Benchmark, Metric
from workers.testing.bisect import worse_percent
from workers.testing.signatures import Failure

# Run statuses: what the command did.
PASS, FAIL, SKIP, INFRA, TIMEOUT = "pass", "fail", "skip", "infra", "timeout"
# Verdicts: what the run means for the trunk.
OK, REGRESSED, FAILED, SKIPPED = "ok", "regressed", "failed", "skipped"

# How many spreads away from the median a value must be to count as a change (about 99.7%
# of a normal noise distribution lies within three standard deviations).
NOISE_K = 3.0
# MAD × 1.4826 estimates the standard deviation of normally distributed noise.
MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class L2Run:
    """One L2 benchmark run at one trunk commit, as recorded in the result store."""

    benchmark: str
    sha: str
    status: str  # pass | fail | skip | infra | timeout
    metrics: Mapping[str, float] = field(default_factory=dict)
    exit_code: int | None = 0
    duration_s: float = 0.0
    reason: str = ""
    output_tail: str = ""
    failures: tuple[Failure, ...] = ()
    verdict: str = ""  # ok | regressed | failed | skipped, set by judge()
    recorded_at: str = ""
    run_id: int | None = None


@dataclass(frozen=True)
class Baseline:
    """Median and noise spread of a metric over recent good runs."""

    median: float
    spread: float
    runs: int

    @property
    def band(self) -> float:
        """Half-width of the noise band around the median."""
        return NOISE_K * self.spread


@dataclass(frozen=True)
class MetricCheck:
    metric: str
    value: float | None
    baseline: Baseline | None
    worse_pct: float | None
    regressed: bool
    reason: str


@dataclass(frozen=True)
class Verdict:
    """What a run means: ok, regressed (metrics), failed (tests or command), or skipped."""

    status: str
    reason: str
    checks: tuple[MetricCheck, ...] = ()

    @property
    def regressed_metrics(self) -> tuple[MetricCheck, ...]:
        return tuple(c for c in self.checks if c.regressed)

    @property
    def bad(self) -> bool:
        return self.status in (REGRESSED, FAILED)


def baseline(values: Sequence[float]) -> Baseline | None:
    """The robust baseline of ``values`` (median and scaled MAD), or None without values."""
    if not values:
        return None
    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values)
    return Baseline(median, MAD_TO_SIGMA * mad, len(values))


def good_values(history: Sequence[L2Run], metric: str, baseline_runs: int) -> list[float]:
    """The metric's values in the last ``baseline_runs`` good runs of ``history`` (oldest first)."""
    values = [r.metrics[metric] for r in history if r.verdict == OK and metric in r.metrics]
    return values[-baseline_runs:]


def check_metric(metric: Metric, value: float | None, base: Baseline | None) -> MetricCheck:
    """Compare one value with its baseline by the metric's direction and threshold, outside the noise."""
    if value is None:
        return MetricCheck(
            metric.name, None, base, None, True, f"{metric.name} missing from the metrics line"
        )
    if base is None:
        return MetricCheck(metric.name, value, None, None, False, f"{metric.name}={value:g}: no baseline yet")
    worse = worse_percent(value, base.median, metric.direction)
    outside = abs(value - base.median) > base.band
    regressed = worse > metric.threshold and outside
    text = (
        f"{metric.name}={value:g} vs median {base.median:g} of {base.runs} good runs "
        f"({-worse:+.1f}%, noise ±{base.band:.3g})"
    )
    if regressed:
        return MetricCheck(
            metric.name, value, base, worse, True, f"{text}: worse than the {metric.threshold:g}% threshold"
        )
    if worse > metric.threshold:
        return MetricCheck(metric.name, value, base, worse, False, f"{text}: within noise")
    return MetricCheck(metric.name, value, base, worse, False, text)


def judge(run: L2Run, history: Sequence[L2Run], benchmark: Benchmark, baseline_runs: int) -> Verdict:
    """The verdict of ``run`` against the earlier runs of the same benchmark (oldest first)."""
    if run.status in (SKIP, INFRA, TIMEOUT):
        return Verdict(SKIPPED, run.reason or run.status)
    if run.status == FAIL:
        return Verdict(FAILED, run.reason or "the benchmark failed")
    checks = tuple(
        check_metric(m, run.metrics.get(m.name), baseline(good_values(history, m.name, baseline_runs)))
        for m in benchmark.metrics
    )
    bad = [c for c in checks if c.regressed]
    if bad:
        return Verdict(REGRESSED, "; ".join(c.reason for c in bad), checks)
    return Verdict(OK, "all metrics within their thresholds" if checks else "passed", checks)


def worst(checks: Sequence[MetricCheck], benchmark: Benchmark) -> MetricCheck | None:
    """The regressed metric furthest past its threshold (the one to bisect on)."""
    thresholds = {m.name: m.threshold for m in benchmark.metrics}
    regressed = [c for c in checks if c.regressed and c.worse_pct is not None]
    if not regressed:
        return None
    return max(regressed, key=lambda c: (c.worse_pct or 0.0) / max(thresholds.get(c.metric, 1.0), 1e-9))
