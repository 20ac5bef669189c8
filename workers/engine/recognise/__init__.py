"""The ledger's message recognisers, one module per family of forms (being moved here from
``workers/engine/recognisers.py``, which still runs them in order)."""

from __future__ import annotations
