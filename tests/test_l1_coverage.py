"""The coverage watchdog: required checks from other CI must have run to a verdict on the PR head."""

from __future__ import annotations

from workers.testing.watchdog import CheckRunState, coverage


def test_missing_skipped_and_neutral_required_checks_fail_and_are_named() -> None:
    """Missing, skipped and neutral required checks fail coverage and each is named; others are not."""
    runs = [
        CheckRunState("Build / linux", "completed", "success"),
        CheckRunState("Lint", "completed", "skipped"),
        CheckRunState("GPU tests", "completed", "neutral"),
        CheckRunState("Unrelated", "completed", "skipped"),
    ]
    result = coverage(["Build / linux", "Lint", "GPU tests", "Docs"], runs)
    assert result.conclusion == "failure"
    assert result.missing == ("Lint", "GPU tests", "Docs")
    assert {g.check: g.problem for g in result.gaps} == {
        "Lint": "skipped",
        "GPU tests": "neutral",
        "Docs": "missing",
    }
    assert result.present == ("Build / linux",)


def test_failed_required_check_is_covered() -> None:
    """A required check that ran and failed is coverage (its own check shows the failure)."""
    result = coverage(["Build / linux"], [CheckRunState("Build / linux", "completed", "failure")])
    assert result.conclusion == "success" and result.gaps == ()


def test_still_running_check_is_pending_not_a_failure() -> None:
    """A required check still in progress makes coverage pending, neither success nor failure."""
    runs = [CheckRunState("build / Linux", "in_progress", None)]
    result = coverage(["Build / linux"], runs)
    assert result.conclusion == "pending" and result.missing == ()


def test_rerun_that_succeeded_covers_an_earlier_skip() -> None:
    """Of several runs of one name, one real verdict is enough; names compare case-insensitively."""
    runs = [CheckRunState("lint", "completed", "skipped"), CheckRunState("Lint", "completed", "success")]
    assert coverage(["Lint"], runs).conclusion == "success"


def test_no_required_checks_is_success() -> None:
    """With no required checks configured there is nothing to miss."""
    assert coverage([], []).conclusion == "success"
