"""Which open chains a commit depends on, by the configured rule (``risk.link: line | file``).

``line`` (the default) links a commit to a chain only by what really depends:

* **lines** — its hunks (widened by ``risk.context_lines``) overlap lines that a chain member
  still to pick was the last to change (``Change.depends``, from :mod:`workers.engine.lines`);
* **symbols** — it changes the definition of a name whose definition a chain member changes (a
  Python definition only in the same module: two files' own ``is_hopper`` are two functions), or
  it uses a name a chain member introduces (definitions only, never a mere mention; the
  generic-name stop-list applies; a use names a new free function, class, macro or record, never a
  method, and file-local definitions never link across files; a C++ member access such as
  ``op.getNumBuffers()`` names a method only, so it never links to a new free function). Members already picked link nothing: their lines and names
  are in the fork already.

``file`` is the earlier rule, kept to compare: any shared file, or any shared symbol (function
context or definition), of any member, picked ones included.

The index is looked up per commit (file, line owner, symbol), never scanned per chain, so the
walk stays linear in the number of commits. Chain ids may be stale after a merge; the caller's
``find`` resolves them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from workers.engine.symbols import last_name

if TYPE_CHECKING:
    from workers.engine.partition.records import Change


# A qualified C++ name links its uses by its last part only from this length on.
SPECIFIC_NAME = 8


@dataclass(frozen=True)
class Link:
    """A dependency of a commit on an open chain: ``kind`` (line, symbol, file) and its detail."""

    chain: str
    kind: str
    detail: str


@dataclass
class ChainLinks:
    """The link index of the open chains: who owns which member, file and symbol."""

    mode: str = "line"
    member: dict[str, str] = field(default_factory=dict)  # pending member sha → chain id
    files: dict[str, set[str]] = field(default_factory=dict)  # path → chain ids (file mode)
    symbols: dict[str, set[str]] = field(default_factory=dict)  # file mode: any symbol → chain ids
    defined: dict[str, dict[str, str]] = field(default_factory=dict)  # line: definition → chain → member
    introduced: dict[str, dict[str, tuple[str, str]]] = field(
        default_factory=dict
    )  # last name → chain → (symbol, member)

    def add(
        self,
        chain_id: str,
        sha: str,
        paths: Iterable[str],
        symbols: Iterable[str],
        defined: Iterable[str] = (),
        introduced: Iterable[str] = (),
        *,
        pending: bool = True,
    ) -> None:
        """Record that ``sha`` is a member of ``chain_id`` (``pending``: still to pick)."""
        if self.mode == "file":
            for path in paths:
                self.files.setdefault(path, set()).add(chain_id)
            for symbol in symbols:
                self.symbols.setdefault(symbol, set()).add(chain_id)
            return
        if not pending:
            return  # picked: its lines and names are in the fork already
        self.member[sha] = chain_id
        for symbol in defined:
            self.defined.setdefault(symbol, {}).setdefault(chain_id, sha)
        for symbol in introduced:
            # A use is a bare identifier: it names a new function, class, macro or record. A Python
            # method never (``x.add(`` cannot say whose ``add`` it calls); a C++ ``A::b`` (method or
            # namespaced function) only when ``b`` is specific enough to name one thing.
            name = last_name(symbol)
            if "." in symbol or ("::" in symbol and len(name) < SPECIFIC_NAME):
                continue
            self.introduced.setdefault(name, {}).setdefault(chain_id, (symbol, sha))

    def links_of(self, change: Change, find: Callable[[str], str]) -> dict[str, Link]:
        """The open chains ``change`` depends on, one reason each (the first found, in a fixed order).

        An owner already found (directly, or through a chain it merged into) is skipped before its
        reason is written: a name many members changed has many owners (860k owners visited for
        4,000 pending commits), and writing each one's reason was most of the time here. The
        check is written out in each loop: a helper function for it cost 1-3% of a 4,000-commit plan."""
        found: dict[str, Link] = {}
        if self.mode == "file":
            for path in sorted(change.paths):
                for owner in sorted(self.files.get(path, ())):
                    head = find(owner)
                    if head not in found:
                        found[head] = Link(head, "file", f"touches {path} of {head}")
            for symbol in sorted(change.symbols):
                for owner in sorted(self.symbols.get(symbol, ())):
                    head = find(owner)
                    if head not in found:
                        found[head] = Link(head, "symbol", f"touches symbol {symbol} of {head}")
            return found
        for dep in change.depends:
            holder = self.member.get(dep.commit)
            if holder is not None:
                head = find(holder)
                if head not in found:
                    found[head] = Link(
                        head, "line", f"{dep.describe()} last changed by {dep.commit[:7]} of {head}"
                    )
        for symbol in sorted(change.defined):
            for owner, sha in sorted(self.defined.get(symbol, {}).items()):
                head = find(owner)
                if head not in found:
                    found[head] = Link(
                        head,
                        "symbol",
                        f"changes the definition of {symbol}, also changed by {sha[:7]} of {head}",
                    )
        for name in sorted(change.used):
            member = name.startswith(".")  # a C++ member access: it can name a method (``A::name``) only
            for owner, (symbol, sha) in sorted(self.introduced.get(name.lstrip("."), {}).items()):
                if not member or "::" in symbol:
                    head = find(owner)
                    if head not in found:
                        found[head] = Link(
                            head, "symbol", f"uses {symbol}, introduced by {sha[:7]} of {head}"
                        )
        return found

    def forget(self, sha: str) -> None:
        """``sha`` no longer counts as a pending member (taken out of its chain)."""
        self.member.pop(sha, None)
