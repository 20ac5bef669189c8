"""The cycle collector's pause (:mod:`workers.engine.cycles`): nested pauses, and the readers that take it."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import pytest

from tests.fixtures.ledger import ForkedPair
from workers.engine.cycles import no_cycle_collection
from workers.engine.ledger import build as ledger_build


def test_a_pause_resumes_at_the_outermost_end_and_after_an_error() -> None:
    assert gc.isenabled()
    with no_cycle_collection():
        assert not gc.isenabled()
        with no_cycle_collection():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner end does not resume it
    assert gc.isenabled()
    with pytest.raises(RuntimeError), no_cycle_collection():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_cold_ledger_is_built_with_the_collector_paused(
    forked: Callable[[], ForkedPair], monkeypatch: pytest.MonkeyPatch
) -> None:
    made = forked()
    made.pick(made.up(2))
    seen: list[bool] = []
    real = ledger_build.compute_ledger

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(ledger_build, "compute_ledger", watched)
    ledger = made.ledger()
    assert seen == [False]
    assert gc.isenabled()
    assert ledger.metrics.picked == 1
