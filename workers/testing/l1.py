"""L1 for one commit: check it out, run the canary and each suite, triage failures, conclude.

:func:`run_l1_for_ref` is what a worker (and ``forksync l1``) calls; it returns a plain
:class:`L1Run` that ``core.render.l1.l1_check_run`` turns into the ``forksync / L1`` check run.
:func:`conclude` is the pure rule: the check fails on omitted or timed-out suites and on failures
of a triage class in ``l1.fail_on`` (``new`` by default), and is ``cancelled`` (not a pass, not
the PR's fault) when only the infrastructure failed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from core.config import RepoConfig, Suite
from core.errors import ForksyncError
from core.store import open_store
from workers.engine.git import Repository
from workers.testing import sandbox, triage
from workers.testing import suites as suites_mod
from workers.testing.canary import CanaryResult, run_canary, run_host_canary
from workers.testing.suites import FAILED, INFRASTRUCTURE, OMITTED, TIMED_OUT, SuiteOutcome

SUCCESS, FAILURE, CANCELLED, NEUTRAL = "success", "failure", "cancelled", "neutral"


@dataclass(frozen=True)
class L1Run:
    """The L1 result of one commit, plain data for renderers, JSON and the trunk store."""

    sha: str
    suites: tuple[SuiteOutcome, ...]
    conclusion: str
    fail_on: tuple[str, ...] = ("new",)
    canary: CanaryResult | None = None
    merge_base: str | None = None
    trunk: bool = False  # a trunk run: results were recorded, nothing was triaged
    log_dir: str = ""
    wall_s: float = 0.0
    suite_s: float = 0.0  # time inside the suites' own processes, reruns included
    suite_runs: int = 0

    @property
    def overhead_s(self) -> float:
        """Worker time beyond the suites' own: worktree add/remove, parsing, triage, store."""
        canary = self.canary.seconds if self.canary else 0.0
        return max(0.0, self.wall_s - self.suite_s - canary)

    def as_json(self) -> dict[str, Any]:
        return {
            "conclusion": self.conclusion,
            "sha": self.sha,
            "suites": [s.as_json() for s in self.suites],
            "canary": None
            if self.canary is None
            else {
                "ok": self.canary.ok,
                "backend": self.canary.backend,
                "reason": self.canary.reason,
            },
            "merge_base": self.merge_base,
            "fail_on": list(self.fail_on),
            "log_dir": self.log_dir,
            "overhead_s": round(self.overhead_s, 3),
        }


def conclude(outcomes: Sequence[SuiteOutcome], fail_on: Sequence[str] = ("new",)) -> str:
    """The check's conclusion: ``failure`` blames the change, ``cancelled`` blames the runner."""
    if not outcomes:
        return NEUTRAL
    blocking = False
    for o in outcomes:
        # A failing exit without a failing test is unexplained: it blocks too.
        if o.status in (OMITTED, TIMED_OUT) or (
            o.status == FAILED and (not o.failures or any(f.triage in fail_on for f in o.failures))
        ):
            blocking = True
    if blocking:
        return FAILURE
    if any(o.status == INFRASTRUCTURE for o in outcomes):
        return CANCELLED
    return SUCCESS


def failing_test_ids(run: L1Run, classes: Sequence[str] | None = None) -> frozenset[str]:
    """``suite/test`` ids that failed in ``run`` (only of these triage classes, when given); an
    omitted or timed-out suite counts as ``suite/<status>``, so a split can chase it too."""
    out: set[str] = set()
    for s in run.suites:
        if s.status in (OMITTED, TIMED_OUT):
            out.add(f"{s.name}/<{s.status}>")
        out.update(f"{s.name}/{f.test_id}" for f in s.failures if classes is None or f.triage in classes)
    return frozenset(out)


def select_suites(config: RepoConfig, names: Sequence[str] | None) -> tuple[Suite, ...]:
    if not names:
        return config.l1.suites
    known = {s.name: s for s in config.l1.suites}
    unknown = [n for n in names if n not in known]
    if unknown:
        listed = ", ".join(known) or "none are configured"
        raise ForksyncError(
            f"no L1 suite named {', '.join(map(repr, unknown))}", f"configured suites: {listed}"
        )
    return tuple(known[n] for n in names)


CanaryFn = Callable[[], CanaryResult]


def run_l1_for_ref(
    repo: Path,
    ref: str,
    config: RepoConfig,
    *,
    data_dir: Path,
    suite_names: Sequence[str] | None = None,
    base_ref: str | None = None,
    trunk: bool = False,
    canary: CanaryFn | None = None,
    infra_retries: int | None = None,
    env: Mapping[str, str] | None = None,
    results: triage.TrunkResults | None = None,
    host_canary: CanaryFn | None = None,
) -> L1Run:
    """Run L1 on ``ref`` of ``repo`` exactly as a worker does.

    ``base_ref``: the PR's target branch; failures are triaged against trunk results at the
    merge-base of ``ref`` and it. ``trunk``: this is a trunk push; record every test's outcome
    (and the suite's test count for the baseline) instead of triaging. ``canary``: the runner
    check before GPU suites (default: the kernel-pack canary on the GPU). ``infra_retries``:
    how often a suite that died of an infrastructure cause is rerun here (default
    ``l1.max_infra_retries``; a worker that reschedules on another runner passes 0).
    ``results``: the trunk results of this repository in the shared store (default: the
    embedded store under ``data_dir``, as ``forksync l1`` on one machine uses).
    ``host_canary``: the CPU runner's canary, re-run after a suspected infrastructure failure of
    a CPU suite (default :func:`run_host_canary` on the data dir); a GPU suite re-runs ``canary``.
    """
    started = time.monotonic()
    chosen = select_suites(config, suite_names)
    l1 = config.l1
    retries = l1.max_infra_retries if infra_retries is None else infra_retries
    git = Repository(repo)
    sha = git.rev_parse(ref)
    if sha is None:
        raise ForksyncError(f"{ref!r} is not a commit in {repo}", "fetch it first, or pass an existing --ref")
    merge_base = None
    if base_ref and not trunk:
        base_sha = git.rev_parse(base_ref)
        if base_sha is not None:
            merge_base = git.text("merge-base", sha, base_sha) or None
    store = results or triage.TrunkResults(open_store(None, data_dir))
    log_dir = data_dir / "l1" / "logs" / sha[:12]

    canary_result: CanaryResult | None = None
    gpu_canary = (canary or run_canary) if l1.canary else None
    host = host_canary or (lambda: run_host_canary(data_dir))
    if gpu_canary is not None and any(s.gpu for s in chosen):
        canary_result = gpu_canary()

    outcomes: list[SuiteOutcome] = []
    suite_s, suite_runs = 0.0, 0
    with suites_mod.checkout(repo, sha, sandbox.worktree_parent(data_dir / "l1" / "worktrees")) as (
        workdir,
        _,
    ):
        for suite in chosen:
            if suite.gpu and canary_result is not None and not canary_result.ok:
                outcomes.append(
                    SuiteOutcome(
                        name=suite.name,
                        status=INFRASTRUCTURE,
                        owners=suite.owners,
                        gpu=True,
                        attempts=0,
                        infra_cause="runner canary failed",
                        reason=f"not run: {canary_result.describe()}. Not caused by this change; "
                        "the job goes to another runner.",
                    )
                )
                continue
            baseline = store.baseline(suite.name, l1.baseline_window)

            def once(
                attempt: int, tag: str = "", suite: Suite = suite, baseline: int | None = baseline
            ) -> SuiteOutcome:
                outcome = suites_mod.run_suite(
                    suite,
                    workdir,
                    log_dir,
                    baseline=baseline,
                    fraction=l1.baseline_fraction,
                    env=env,
                    attempt=attempt,
                    tag=tag,
                )
                # A flaky-test rerun is evidence only: the canary settles the suite's own run.
                return outcome if tag else _settle(outcome, suite, gpu_canary, host)

            outcome = once(1)
            suite_s, suite_runs = suite_s + outcome.duration_s, suite_runs + 1
            while outcome.status == INFRASTRUCTURE and outcome.attempts <= retries:
                outcome = once(outcome.attempts + 1)
                suite_s, suite_runs = suite_s + outcome.duration_s, suite_runs + 1
            if trunk:
                store.record(sha, suite.name, outcome.status, outcome.tests)
            elif outcome.status == FAILED and outcome.failures:
                outcome, rerun_s = _triage(outcome, store, merge_base, l1.flaky_reruns, once)
                if rerun_s:
                    suite_s, suite_runs = suite_s + rerun_s, suite_runs + 1
            outcomes.append(outcome)
    return L1Run(
        sha=sha,
        suites=tuple(outcomes),
        conclusion=conclude(outcomes, l1.fail_on),
        fail_on=l1.fail_on,
        canary=canary_result,
        merge_base=merge_base,
        trunk=trunk,
        log_dir=str(log_dir),
        wall_s=time.monotonic() - started,
        suite_s=suite_s,
        suite_runs=suite_runs,
    )


def _settle(outcome: SuiteOutcome, suite: Suite, gpu_canary: CanaryFn | None, host: CanaryFn) -> SuiteOutcome:
    """Infrastructure from the runner's own signals: a suspected one (exit by signal, a cause in
    the log of a run without results) is settled by re-running the canary (GPU suites: the GPU
    canary; CPU suites: the host canary), and a GPU suite that failed is checked with the canary
    after it (a GPU that died mid-suite fails tests whose text says nothing about it)."""
    if outcome.unconfirmed is not None:
        probe = gpu_canary if suite.gpu and gpu_canary is not None else host
        return suites_mod.infra_confirmed(outcome, probe())
    if suite.gpu and gpu_canary is not None and outcome.status in (FAILED, OMITTED, TIMED_OUT):
        after = gpu_canary()
        if not after.ok:
            return suites_mod.canary_failed_after(outcome, after)
    return outcome


def _triage(
    outcome: SuiteOutcome,
    store: triage.TrunkResults,
    merge_base: str | None,
    reruns: int,
    once: Callable[[int, str], SuiteOutcome],
) -> tuple[SuiteOutcome, float]:
    """Classify the suite's failures; rerun it (bounded) when trunk does not explain them all."""
    trunk_failing = store.failing_at(merge_base, outcome.name) if merge_base else None
    unexplained = [
        f.test_id for f in outcome.failures if trunk_failing is None or f.test_id not in trunk_failing
    ]
    rerun_passed: set[str] = set()
    rerun_s = 0.0
    reran = False
    if unexplained and reruns > 0:
        # The rerun's own outcome is evidence only; the suite keeps its first result and log.
        again = once(outcome.attempts, "rerun")
        rerun_s, reran = again.duration_s, True
        passed_again = {tid for tid, result in again.tests if result == "passed"}
        rerun_passed = {tid for tid in unexplained if tid in passed_again}
    verdicts = {
        v.test_id: v
        for v in triage.classify(
            [f.test_id for f in outcome.failures],
            trunk_failing=trunk_failing,
            rerun_passed=frozenset(rerun_passed),
            reran=reran,
            merge_base=merge_base,
        )
    }
    failures = tuple(replace(f, triage=verdicts[f.test_id].triage) for f in outcome.failures)
    counts = {k: sum(1 for f in failures if f.triage == k) for k in triage.CLASSES}
    parts = [f"{n} {triage.LABELS[k]}" for k, n in counts.items() if n]
    reason = f"{len(failures)} test(s) failed: {', '.join(parts)}"
    if trunk_failing is None:
        reason += " (no trunk results at the merge-base to compare with)"
    return replace(outcome, failures=failures, reason=reason), rerun_s
