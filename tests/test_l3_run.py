"""The l2-queue half of /l3, planned (workers/testing/l3_run.py): whether a workload's command runs,
and what its check and the answer say once it ran; plain data, no GitHub, git or runner."""

from __future__ import annotations

from dataclasses import replace

from core.config import L3Config, RepoConfig, Workload
from core.github.records import CheckRunInfo
from core.render.l3 import L3State, check_name
from workers.testing.l3 import Answer
from workers.testing.l3_run import RecordL3Run, RunFacts, RunL3Command, RunResult, plan_result, plan_run

HEAD = "a" * 40
TRAIN = Workload("llama-train", owners=("perf",), run=("python", "train.py"))
SIGN_ONLY = Workload("review", owners=("perf",))
CONFIG = replace(RepoConfig(), l3=L3Config((TRAIN, SIGN_ONLY)))
CHECK = CheckRunInfo(41, check_name("llama-train"), HEAD, "in_progress", None, "")


def _found(state: L3State | None = None) -> tuple[CheckRunInfo, L3State | None]:
    return CHECK, state or L3State("llama-train", ("perf",), HEAD, requested_by="alice")


def test_a_workload_with_its_check_runs_and_the_check_says_running() -> None:
    """The check is rewritten as running, then the command runs at the head."""
    record, run = plan_run(RunFacts("llama-train", HEAD, CONFIG, _found()))
    assert isinstance(record, RecordL3Run) and record.check_run_id == 41 and record.state.run == "running"
    assert run == RunL3Command(("python", "train.py"), 41, record.state)


def test_nothing_runs_without_a_workload_a_command_or_a_check() -> None:
    """Unknown workload, one with no run command, or no check on the head: answered, nothing written."""
    (unknown,) = plan_run(RunFacts("nope", HEAD, CONFIG, None))
    assert isinstance(unknown, Answer) and not unknown.ok and "no L3 workload named `nope`" in unknown.text
    (no_run,) = plan_run(RunFacts("review", HEAD, CONFIG, None))
    assert isinstance(no_run, Answer) and "has no `run` command" in no_run.text
    (no_check,) = plan_run(RunFacts("llama-train", HEAD, CONFIG, None))
    assert isinstance(no_check, Answer) and "comment `/l3 llama-train` first" in no_check.text


def test_a_head_that_cannot_run_is_said_on_its_check() -> None:
    """Not fetchable (or a bad config): the check records the failure and why; without a check only the answer."""
    record, answer = plan_run(RunFacts("llama-train", HEAD, CONFIG, _found(), cannot_run="not on a branch"))
    assert isinstance(record, RecordL3Run) and (record.state.run, record.state.run_detail) == (
        "failed",
        "not on a branch",
    )
    assert answer == Answer(
        False, "L3 **llama-train** command did not run: not on a branch.", check_run_id=41
    )
    assert plan_run(RunFacts("llama-train", HEAD, CONFIG, None, cannot_run="why")) == [Answer(False, "why")]


def test_the_result_keeps_a_sign_off_given_while_it_ran() -> None:
    """An owner signed off during the run: the final state keeps it, with the metrics (finite only)."""
    step = RunL3Command(("python", "train.py"), 41, _found()[1] or L3State("llama-train", (), HEAD))
    fresh = _found(L3State("llama-train", ("perf",), HEAD, signed_by="perf", run="running"))
    record, answer = plan_result(
        CONFIG, step, fresh, RunResult(0, False, "done", {"tok_s": 12.5, "bad": float("nan")})
    )
    assert isinstance(record, RecordL3Run) and record.state.signed_by == "perf"
    assert record.state.run == "passed" and dict(record.state.metrics) == {"tok_s": 12.5}
    assert answer == Answer(True, "L3 **llama-train** command passed (exit 0); tok_s=12.5.", check_run_id=41)


def test_a_failed_or_timed_out_command_says_how() -> None:
    """A non-zero exit names its last output line; a timeout its limit."""
    step = RunL3Command(("python", "train.py"), 41, L3State("llama-train", (), HEAD), timeout_s=60)
    _, failed = plan_result(CONFIG, step, None, RunResult(3, False, "OOM"))
    assert isinstance(failed, Answer) and not failed.ok and "failed (exit 3: OOM); no metrics" in failed.text
    record, _ = plan_result(CONFIG, step, None, RunResult(None, True, ""))
    assert isinstance(record, RecordL3Run) and record.state.run_detail == "timed out after 60s"
