"""The trial picks the partition asks for: the narrow protocols its walk calls.

The walk (:mod:`workers.engine.partition.walk`) never touches git: it asks a :class:`Trial`
whether a commit picks cleanly onto the fork tip plus everything bundled so far, and, when the
trial also is a :class:`ChainTrial` or a :class:`BundleTrial`, whether it picks on an open chain
or on the trunk with its own bundle alone. :class:`workers.engine.planning.TipTrial` answers
them in memory; tests answer them with fakes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable


class Trial(Protocol):
    """Trial cherry-picks onto the fork tip plus everything bundled so far, in memory."""

    def try_pick(self, sha: str) -> tuple[str, ...]:
        """Conflicting paths (sorted); empty when clean, in which case the target advances."""
        ...


@runtime_checkable
class ChainTrial(Protocol):
    """A :class:`Trial` that also keeps one target per open chain, for the ``pick`` rule."""

    def try_pick(self, sha: str) -> tuple[str, ...]: ...

    def chain_add(self, chain_id: str, sha: str) -> None:
        """Pick ``sha`` onto ``chain_id``'s target (made from the running bundle at its first member)."""
        ...

    def chain_merge(self, keep: str, other: str, members: Sequence[str]) -> None:
        """``other`` merged into ``keep``: ``members`` (upstream order) now ride on ``keep``'s target."""
        ...

    def picks_with(self, chain_id: str, sha: str) -> bool:
        """Whether ``sha`` picks cleanly on top of ``chain_id``'s target (nothing advances)."""
        ...


@runtime_checkable
class BundleTrial(Protocol):
    """A :class:`Trial` that also keeps the trunk plus the current bundle alone, so that a commit
    near an earlier bundle's lines is joined to that bundle only when it does not apply without it."""

    def try_pick(self, sha: str) -> tuple[str, ...]: ...

    def picks_alone(self, sha: str, fresh: bool) -> bool:
        """Whether ``sha`` picks cleanly onto the trunk plus the current bundle (``fresh``: the trunk
        alone, for a commit that starts a new bundle); nothing advances."""
        ...

    def bundle_add(self, sha: str) -> None:
        """``sha`` joined the current bundle: pick it onto the current bundle's target."""
        ...

    def bundle_close(self) -> None:
        """The current bundle is closed: the next one starts from the trunk."""
        ...
