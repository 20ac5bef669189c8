"""Why the fork lacks a file an upstream pick changes, read from history (the git layer behind the pipeline).

The pipeline skips upstream's change to a file the fork does not have only when the fork dropped
it; a file that is missing because the upstream commit bringing it has not landed yet (in a bundle
not merged, a chain, a hole) makes the pick depend on that commit. :class:`GitFileHistory` answers
with plain data (``model.Dropped`` or ``model.WaitsFor``), from ``git log`` on both sides since the
fork point and the set of upstream commits the fork carries (the ledger's).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Protocol

from workers.engine.git import Repository
from workers.engine.resolve.model import Absence, Dropped, WaitsFor

if TYPE_CHECKING:
    from workers.engine.ledger.records import Ledger


class FileHistory(Protocol):
    """What ``resolve_pick`` asks about a file the fork lacks; ``upstream_parent``: the pick's parent."""

    def absence(self, path: str, upstream_parent: str) -> Absence: ...


class GitFileHistory:
    """``absence`` from the fork's and upstream's history since ``base`` (their fork point).

    The fork dropped the file when it deleted it since the fork point (renames count as deletes),
    when the file was there at the fork point and is gone, or when the upstream commit that last
    added it is one the fork carries (``carried``: upstream shas, from the ledger). Otherwise the
    upstream commit that adds it (or renames a file to it) is pending: ``where(sha)`` says where it
    is (its bundle, chain, a hole), so the waiting note names it."""

    def __init__(
        self,
        git: Repository,
        base: str,
        fork_tip: str,
        *,
        carried: Collection[str] = frozenset(),
        where: Callable[[str], str] | None = None,
    ) -> None:
        self.git = git
        self.base = base
        self.fork_tip = fork_tip
        self.carried = carried
        self.where = where or (lambda sha: "not landed in the fork")
        self._memo: dict[tuple[str, str], Absence] = {}

    def absence(self, path: str, upstream_parent: str) -> Absence:
        key = (path, upstream_parent)
        if key not in self._memo:
            self._memo[key] = self._absence(path, upstream_parent)
        return self._memo[key]

    def _absence(self, path: str, upstream_parent: str) -> Absence:
        deleted = self._last("--diff-filter=D", f"{self.base}..{self.fork_tip}", path)
        if deleted is not None:
            sha, subject = deleted
            return Dropped(f"the fork deleted this file in {sha[:10]} ({subject})")
        added = self._last("--diff-filter=A", f"{self.base}..{upstream_parent}", path)
        if added is None:
            if self.git.ok("cat-file", "-e", f"{self.base}:{path}"):
                return Dropped("the fork had this file where it branched from upstream and no longer has it")
            return Dropped("neither the fork nor upstream since the fork point has had this file")
        sha, subject = added
        if sha in self.carried:
            return Dropped(
                f"the fork carries upstream {sha[:10]} ({subject}), which adds this file, and has dropped it since"
            )
        renamed_from = self._renamed_from(sha, path)
        if renamed_from is not None:
            gone = self._last("--diff-filter=D", f"{self.base}..{self.fork_tip}", renamed_from)
            if gone is not None:
                return Dropped(
                    f"the fork deleted {renamed_from} in {gone[0][:10]} ({gone[1]}), which upstream "
                    f"{sha[:10]} renames to this file"
                )
        return WaitsFor(sha, subject, self.where(sha), renamed_from)

    def _last(self, change: str, revs: str, path: str) -> tuple[str, str] | None:
        """The newest commit of ``revs`` with ``change`` on ``path`` (renames as delete + add)."""
        out = self.git.text("log", "-n1", "--no-renames", change, "--format=%H%x00%s", revs, "--", path)
        if not out:
            return None
        sha, _, subject = out.partition("\0")
        return sha, subject

    def _renamed_from(self, sha: str, path: str) -> str | None:
        out = self.git.text("show", "-M", "--name-status", "--format=", sha)
        for line in out.splitlines():
            fields = line.split("\t")
            if len(fields) == 3 and fields[0].startswith("R") and fields[2] == path:
                return fields[1]
        return None


def plan_locator(
    bundles: Mapping[str, tuple[str, str]],
    chains: Mapping[str, str],
    deferred: Collection[str] = (),
    urgent: Collection[str] = (),
) -> Callable[[str], str]:
    """``where(sha)`` from a plan's placement: ``bundles`` sha → (bundle id, branch), ``chains`` sha → chain id."""

    def where(sha: str) -> str:
        if sha in bundles:
            bundle, branch = bundles[sha]
            return f"in bundle {bundle} ({branch}), not landed yet"
        if sha in chains:
            return f"in chain {chains[sha]}, not landed yet"
        if sha in deferred:
            return "deferred by a maintainer (a hole the fork has not taken)"
        if sha in urgent:
            return "an urgent pick not landed yet"
        return "pending upstream, in no bundle or chain of this plan"

    return where


def ledger_history(git: Repository, base: str, onto: str, ledger: Ledger) -> GitFileHistory:
    """The history where no plan is at hand (``forksync resolve``, ``/resolve``): ``onto``'s and
    upstream's since the fork point ``base``, the upstream commits the fork carries (the ledger's),
    and where a pending one is by its decision. So a file the fork dropped after carrying the commit
    that brings it is skipped as dropped, and one whose commit has not landed waits for it."""
    from workers.engine.decisions import Disposition

    decided = {e.sha: e.disposition for e in ledger.entries if not e.carriers}

    def where(sha: str) -> str:
        disposition = decided.get(sha)
        if disposition is Disposition.DEFERRED:
            return "deferred by a maintainer (a hole the fork has not taken)"
        if disposition is Disposition.URGENT:
            return "an urgent pick not landed yet"
        return "pending upstream, not landed in the fork yet (`forksync plan` says in which bundle or chain)"

    carried = frozenset(e.sha for e in ledger.entries if e.carriers)
    return GitFileHistory(git, base, onto, carried=carried, where=where)
