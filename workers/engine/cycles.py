"""Python's cycle collector paused around work that allocates much and makes no reference cycle.

What it is for: reading history and planning allocate millions of strings, tuples, sets and small
records and free them by reference counting; the collector's passes over them, triggered by the
count of allocations, free nothing and grow with the heap (a pass over a 20k-commit ledger's
records ~0.1-0.25 s). Kept apart from the readers so that a light command (``status``) pauses it
without importing them.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def no_cycle_collection() -> Iterator[None]:
    """The cycle collector paused for the block: while commits are read
    (:func:`~workers.engine.changes.commit_changes`), a plan is made
    (:func:`~workers.engine.planning.make_plan`) or a ledger is built
    (:func:`~workers.engine.ledger.build.build_ledger`). On the Triton replay the reading's 211-460
    passes (0.13-0.30 s CPU) become the one pass after it (0.09-0.15 s); paused for the whole
    plan, 0.25-0.3 s of the main thread's CPU become one pass of ~0.05 s after it; a cold
    ``status`` of 20,000 upstream commits spent 0.1-0.25 s in passes that freed nothing. Nested
    pauses resume only at the outermost one's end."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
