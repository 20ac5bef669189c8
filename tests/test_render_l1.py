"""The pure L1 and coverage check-run builders: titles that say whose problem it is, grouping, limits."""

from __future__ import annotations

from core.render.l1 import MAX_ANNOTATIONS, coverage_check_run, infra_issue, l1_check_run, l1_in_progress
from workers.testing.canary import CanaryResult
from workers.testing.l1 import L1Run, conclude
from workers.testing.suites import Failure, SuiteOutcome
from workers.testing.watchdog import CheckRunState, coverage

SHA = "a" * 40


def failure(
    test: str, triage: str = "new", sig: str = "s1", file: str | None = "t.py", line: int | None = 3
) -> Failure:
    return Failure(
        test, "AssertionError: boom", "AssertionError: boom\n>   assert x", file, line, sig, "boom", triage
    )


def run_of(*suites: SuiteOutcome, canary: CanaryResult | None = None) -> L1Run:
    return L1Run(SHA, tuple(suites), conclude(suites), canary=canary, merge_base="b" * 40)


def test_failures_group_by_signature_blocking_first() -> None:
    """Failures sharing a signature form one group; the new group comes before broken-trunk ones."""
    suite = SuiteOutcome(
        "unit",
        "failed",
        passed=5,
        failed=3,
        failures=(
            failure("t::a", "broken_trunk", sig="old"),
            failure("t::b", sig="s1"),
            failure("t::c", sig="s1"),
        ),
    )
    out = l1_check_run(run_of(suite))
    assert out.conclusion == "failure" and out.title == "2 new failure(s)"
    text = out.text
    assert text.index("#### new: boom (2 test(s))") < text.index("#### broken trunk: boom (1 test(s))")
    assert "Triage: 1 broken trunk, 2 new." in out.summary


def test_only_preexisting_failures_pass_and_say_so() -> None:
    """Broken-trunk and flaky failures alone pass the check, and the title says none is new."""
    suite = SuiteOutcome(
        "unit", "failed", failed=2, failures=(failure("t::a", "broken_trunk"), failure("t::b", "flaky"))
    )
    out = l1_check_run(run_of(suite))
    assert out.conclusion == "success"
    assert out.title == "Passed: 2 failure(s), none new (1 broken trunk, 1 flaky)"
    assert all(a.annotation_level == "warning" for a in out.annotations)


def test_omitted_and_timed_out_suites_are_named_in_the_title() -> None:
    """An omitted or timed-out suite fails the check and the title names it and what happened."""
    out = l1_check_run(
        run_of(
            SuiteOutcome("unit", "passed", passed=3),
            SuiteOutcome("lit", "omitted", reason="ran 0 tests"),
            SuiteOutcome("slow", "timed_out", reason="killed"),
        )
    )
    assert out.conclusion == "failure" and out.title == "lit omitted; slow timed out"
    assert "- **lit**: ran 0 tests" in out.summary


def test_crashed_suite_shows_the_end_of_its_log() -> None:
    """A suite that failed with no failing test shows its log's last lines in the check run text."""
    crashed = SuiteOutcome(
        "lit", "omitted", reason="crashed before writing results", log_tail="Segmentation fault"
    )
    text = l1_check_run(run_of(crashed)).text
    assert "### lit: omitted, last lines of its log\n```\nSegmentation fault\n```" in text


def test_infrastructure_only_is_cancelled_and_not_blamed() -> None:
    """Only infrastructure problems: cancelled, the title says it is not the change, owners not pinged."""
    suite = SuiteOutcome("gpu", "infrastructure", reason="infrastructure: GPU lost", owners=("kernels-team",))
    out = l1_check_run(run_of(suite, canary=CanaryResult(False, "none", "no CUDA device visible", 0.1)))
    assert out.conclusion == "cancelled" and "not caused by this change" in out.title
    assert "🛠️ runner canary failed: no CUDA device visible" in out.summary
    assert "@kernels-team" not in out.summary


def test_owners_are_told_when_their_suite_breaks() -> None:
    """A customer suite that fails names its owners beside the reason."""
    suite = SuiteOutcome(
        "customer",
        "failed",
        failed=1,
        reason="1 test(s) failed",
        owners=("acme-ml",),
        failures=(failure("t::a"),),
    )
    assert "@acme-ml" in l1_check_run(run_of(suite)).summary


def test_annotations_are_capped_and_failures_without_location_have_none() -> None:
    """At most 50 annotations (blocking ones first); failures with no file:line add none."""
    fails = (
        *(failure(f"t::{i}", "flaky" if i % 2 else "new") for i in range(80)),
        failure("t::x", file=None, line=None),
    )
    out = l1_check_run(run_of(SuiteOutcome("unit", "failed", failed=81, failures=fails)))
    assert len(out.annotations) == MAX_ANNOTATIONS
    assert [a.annotation_level for a in out.annotations[:40]] == ["failure"] * 40
    assert out.output()["annotations"][0]["path"] == "t.py"


def test_log_links_and_in_progress() -> None:
    """A log URL per suite becomes a link; the in-progress output lists the suites being run."""
    out = l1_check_run(
        run_of(SuiteOutcome("unit", "passed", passed=1, log_path="/x/unit.log")),
        log_url={"unit": "https://ci.example/logs/unit"},
    )
    assert "[log](https://ci.example/logs/unit)" in out.summary
    assert (
        "`/x/unit.log`"
        in l1_check_run(run_of(SuiteOutcome("unit", "passed", passed=1, log_path="/x/unit.log"))).summary
    )
    progress = l1_in_progress(SHA, ["unit", "lit"])
    assert (
        progress.status == "in_progress"
        and progress.conclusion is None
        and "`unit`, `lit`" in progress.summary
    )


def test_no_suites_is_neutral_and_says_how_to_add_them() -> None:
    """No configured suite: neutral, with a title that says where to configure them."""
    out = l1_check_run(run_of())
    assert out.conclusion == "neutral" and "add l1.suites" in out.title


def test_coverage_pending_is_in_progress_and_failure_has_remedy() -> None:
    """Coverage with a check still running is in progress; a gap fails with the remedy spelled out."""
    pending = coverage_check_run(SHA, coverage(["Build"], [CheckRunState("Build", "in_progress", None)]))
    assert (
        pending.status == "in_progress"
        and pending.conclusion is None
        and pending.title == "Waiting for Build"
    )
    failed = coverage_check_run(SHA, coverage(["Build"], []))
    assert failed.conclusion == "failure" and "l1.required_checks" in failed.summary


def test_infra_issue_has_a_stable_marker() -> None:
    """The infra issue is keyed by cause and runner, so repeated failures update one issue."""
    title, body = infra_issue("out of disk space", "gpu-3", "unit", SHA, "No space left on device")
    assert title == "[infra] out of disk space on gpu-3"
    assert body.startswith("<!-- forksync:infra:out of disk space:gpu-3 -->")
