"""Delivery accounting under faults, the small version of ``benchmarks/bench_delivery_faults.py``
(issue 14): gunicorn as the Procfile runs it, real ``celery worker`` processes, a private Redis
or the embedded broker, signed deliveries whose handler writes one marker row per execution.
Every accepted delivery is executed, none is lost, none runs again after it finished."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.bench_delivery_faults import run_fault

pytestmark = pytest.mark.slow

# Two workers of two pool processes: at most this many handlers are in flight when one is killed.
IN_FLIGHT = 4


@pytest.mark.parametrize("fault", ["redis-volatile", "worker-kill", "embedded-kill"])
def test_every_accepted_delivery_runs_once_under(fault: str, tmp_path: Path) -> None:
    result = run_fault(
        fault, 45, tmp_path / fault, grace_s=4.0, replay_every_s=2.0, settle_s=90.0, visibility_s=8, threads=3
    )
    assert result.accepted == 45, result
    assert result.lost == 0 and result.executed == result.accepted, result
    assert result.rerun_after_finish == 0, result  # nothing runs again once it finished
    if fault == "redis-volatile":
        assert result.duplicated == 0, result
        assert result.replayed > 0 or result.refused_5xx > 0, result  # the fault did hit the load
    else:
        # a handler killed between its side effect and its finish record runs again (at least once)
        assert result.duplicated <= IN_FLIGHT, result
