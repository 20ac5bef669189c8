"""Which L1 suites a commit must pass: the trunk's, never only what the PR under test says.

A PR could otherwise switch its own gate off (delete ``.github/forksync.yml``, drop the suite it
breaks). :func:`plan_suites` is the pure rule: the expected set is the config at the PR's base;
a PR that changes the config runs the union (the trunk's definition of a suite both name, the
PR's for a suite it adds), and dropping a trunk suite needs a maintainer's ``/approve`` of the
PR's head, without which the check fails however the suites do.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from core.config import RepoConfig, Suite


@dataclass(frozen=True)
class SuitePlan:
    """What L1 runs on a commit and what the PR's config changes about it."""

    suites: tuple[Suite, ...]
    required_checks: tuple[str, ...]
    added: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()  # named by both, defined differently: the trunk's definition runs
    required_added: tuple[str, ...] = ()
    required_dropped: tuple[str, ...] = ()
    drop_approved_by: str | None = None

    @property
    def blocked(self) -> bool:
        """True when the PR drops trunk suites or required checks and no maintainer approved it."""
        return bool(self.dropped or self.required_dropped) and self.drop_approved_by is None

    @property
    def changes(self) -> bool:
        return bool(
            self.added or self.dropped or self.changed or self.required_added or self.required_dropped
        )

    def apply(self, trunk: RepoConfig) -> RepoConfig:
        """The config L1 runs with: the trunk's rules, these suites and required checks."""
        return replace(trunk, l1=replace(trunk.l1, suites=self.suites, required_checks=self.required_checks))


def plan_suites(trunk: RepoConfig, head: RepoConfig, *, drop_approved_by: str | None = None) -> SuitePlan:
    """The suites and required checks for a commit whose own config is ``head``, on a trunk whose
    config is ``trunk``. ``drop_approved_by``: the maintainer whose ``/approve`` names this head;
    with it, dropped suites no longer run and the drop does not block."""
    theirs = {s.name: s for s in head.l1.suites}
    ours = {s.name: s for s in trunk.l1.suites}
    added = tuple(n for n in theirs if n not in ours)
    dropped = tuple(n for n in ours if n not in theirs)
    changed = tuple(n for n in ours if n in theirs and theirs[n] != ours[n])
    approved = drop_approved_by if (dropped or _removed(trunk, head)) else None
    keep = [s for s in trunk.l1.suites if not (approved and s.name in dropped)]
    suites = (*keep, *(theirs[n] for n in added))
    required_dropped = _removed(trunk, head)
    required_added = tuple(
        c for c in head.l1.required_checks if c.lower() not in _lower(trunk.l1.required_checks)
    )
    required = tuple(c for c in trunk.l1.required_checks if not (approved and c in required_dropped))
    return SuitePlan(
        suites=suites,
        required_checks=(*required, *required_added),
        added=added,
        dropped=dropped,
        changed=changed,
        required_added=required_added,
        required_dropped=required_dropped,
        drop_approved_by=approved,
    )


def _lower(names: tuple[str, ...]) -> set[str]:
    return {n.lower() for n in names}


def _removed(trunk: RepoConfig, head: RepoConfig) -> tuple[str, ...]:
    theirs = _lower(head.l1.required_checks)
    return tuple(c for c in trunk.l1.required_checks if c.lower() not in theirs)
