"""Build bundles and risky chains as branches, by in-memory cherry-picks (never a work tree).

Every branch is built on the fork tip (the trunk) alone: bundles, chains and urgent picks are
independent PRs, each landable on its own and in any order; when one lands, the next run
re-plans and rebuilds the others onto the new trunk (same branches, so the same PRs). The
partition keeps bundles independent (a commit that depends on an earlier bundle joins it);
a **stacked** bundle (``Bundle.stacked_on``: part of a group dependencies carried past the bound)
is built on the built head of the bundle it needs, and its PR targets that bundle's branch;
each urgent commit (``Plan.urgent``) is built alone on ``forksync/urgent/<sha7>``. Every built commit keeps the upstream author and author date,
carries the upstream message, the upstream PR link and the configured trailer, and is
committed by the bot at the upstream commit's committer time: the same plan gives the same
shas, so a rerun updates branches instead of duplicating them.

**Chains are built through**: commit by commit; at a conflict the injected :class:`Resolver`
(``workers.engine.resolve.resolve_pick`` in production, wired by ``planning``) is asked for a
resolution of that pick onto the chain so far. A resolved member is committed with the resolved
tree and its file entries are kept for the chain's PR (Conflict Resolution notes); without a
resolution the chain stops there and says which commit and files wait, and how to reproduce it.

A bundle commit that fails at build time (it needs an earlier bundle that the trial pick's
running target had and the trunk has not, the fork moved since planning, or no merge was
possible) is ejected to a chain (a new one, or one ejected earlier in this build that it links
to by file or symbol), whose reason names the earlier bundles that change its conflicting files
(it waits for them to land), and the build goes on.

Picks happen in memory (``pick.PickTarget``); the commits are then written by one
``git fast-import`` process (one pack, no tree written per commit), through the git funnel,
into the repository given; only a scratch ref is used, and removed. Publishing the branches is
the caller's job (``planning.build_and_record``).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pygit2

from workers.engine.changes import CommitChanges, Entry
from workers.engine.git import FedGit, Repository
from workers.engine.ids import fresh_id
from workers.engine.merges import GitMerger, MergeCache
from workers.engine.partition.records import Bundle, Chain, Plan, Reason
from workers.engine.pick import PickResult, PickTarget

if TYPE_CHECKING:
    from tempfile import TemporaryDirectory

BUNDLE_BRANCH = "forksync/bundle/"
CHAIN_BRANCH = "forksync/chain/"
URGENT_BRANCH = "forksync/urgent/"
BOT_COMMITTER = ("forksync", "forksync@users.noreply.github.com")

_SQUASH_PR = re.compile(r"\(#(\d+)\)\s*$")
_MERGE_PR = re.compile(r"^Merge pull request #(\d+)\b")


class ResolvedFile(Protocol):
    """One file of a resolution: fbtriton's File / Action / Reason, and the strategy that made it."""

    @property
    def path(self) -> str: ...
    @property
    def strategy(self) -> str: ...
    @property
    def action(self) -> str: ...
    @property
    def reason(self) -> str: ...


class WaitingFile(Protocol):
    """A conflicted file nothing may resolve: a human must."""

    @property
    def path(self) -> str: ...
    @property
    def reason(self) -> str: ...


class Resolution(Protocol):
    """What a resolver answers for one pick (``workers.engine.resolve.model.ResolveOutcome``)."""

    @property
    def resolved(self) -> bool: ...
    @property
    def tree(self) -> str | None: ...
    @property
    def entries(self) -> Sequence[ResolvedFile]: ...
    @property
    def waiting(self) -> Sequence[WaitingFile]: ...
    @property
    def resolved_by(self) -> str | None:
        """Who resolved it (deterministic, memory, agent): the ``Resolved-By:`` trailer; None: nobody."""
        ...


class Resolver(Protocol):
    """Resolves cherry-picking ``commit`` onto ``onto`` (a commit or tree sha), in the object database."""

    def __call__(self, repo: pygit2.Repository, commit: str, onto: str, *, config: Any) -> Resolution: ...


@dataclass(frozen=True)
class Resolved:
    """A chain member whose conflict a resolver resolved, with its outcome (for the PR's notes)."""

    commit: str
    outcome: Resolution


@dataclass(frozen=True)
class Built:
    """One built branch: what it carries, where it starts, and what did not make it."""

    kind: str  # "bundle", "chain" or "urgent"
    id: str
    branch: str
    base: str  # the commit it is built on
    base_branch: str  # what a PR of it targets: the fork trunk, or the branch of the bundle it is stacked on
    head: str
    commits: tuple[str, ...]  # upstream shas carried, in order
    picks: tuple[str, ...]  # the fork commits made, one per carried upstream commit
    ejected: tuple[str, ...] = ()  # bundle commits that failed and went to a chain
    stopped_at: str | None = None  # chain, urgent: the first commit that did not pick (nor resolve)
    conflicts: tuple[str, ...] = ()  # chain, urgent: the paths it conflicts in
    resolved: tuple[Resolved, ...] = ()  # chain: members picked through a resolution
    waiting: tuple[tuple[str, str], ...] = ()  # chain: (path, why) of the stopping commit's files
    # chain: the pending upstream commits the stopping commit waits for, when they are all it waits for
    # (each waiting file is one such a commit brings): it moves once they land, no human needed
    waits_for: tuple[str, ...] = ()

    @property
    def reproduce(self) -> str:
        """How to meet the stopping conflict by hand, from the chain branch."""
        if self.stopped_at is None:
            return ""
        return (
            f"git fetch origin {self.branch} && git checkout -B resolve-{self.id} FETCH_HEAD && "
            f"git cherry-pick -x {self.stopped_at}"
        )

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "branch": self.branch,
            "base": self.base,
            "base_branch": self.base_branch,
            "head": self.head,
            "commits": list(self.commits),
        }
        if self.kind == "bundle":
            out["ejected"] = list(self.ejected)
        else:
            out["stopped_at"] = self.stopped_at
            out["conflicts"] = list(self.conflicts)
        if self.kind == "chain":
            out["resolved"] = [
                {
                    "commit": r.commit,
                    "entries": [
                        {"path": e.path, "strategy": e.strategy, "action": e.action, "reason": e.reason}
                        for e in r.outcome.entries
                    ],
                }
                for r in self.resolved
            ]
            out["waiting"] = [{"path": p, "reason": why} for p, why in self.waiting]
            out["waits_for"] = list(self.waits_for)
            out["reproduce"] = self.reproduce
        return out


@dataclass(frozen=True)
class BuildResult:
    bundles: tuple[Built, ...]
    chains: tuple[Built, ...]
    # The plan's chains plus those made by ejection: what to record as open chains.
    open_chains: tuple[Chain, ...] = field(default=())
    # One per urgent commit, each built alone on the fork tip; a conflicting one carries nothing.
    urgent: tuple[Built, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "bundles": [b.as_json() for b in self.bundles],
            "chains": [c.as_json() for c in self.chains],
            "ejected": sorted(sha for b in self.bundles for sha in b.ejected),
            "urgent": [u.as_json() for u in self.urgent],
        }


@dataclass(frozen=True)
class PickStyle:
    """How built commits are written: trailer template, upstream web URL, committer."""

    trailer: str = "(cherry picked from commit {sha})"
    upstream_url: str | None = None
    committer: tuple[str, str] = BOT_COMMITTER


def pr_number(message: str) -> int | None:
    """The upstream PR a squash-merge subject (``... (#123)``) or a merge subject names."""
    subject = message.split("\n", 1)[0]
    m = _SQUASH_PR.search(subject) or _MERGE_PR.match(subject)
    return int(m.group(1)) if m else None


def pick_message(message: str, sha: str, style: PickStyle, resolved_by: str | None = None) -> str:
    """Upstream message, then the upstream PR link and the trailer naming the upstream commit;
    a resolved pick also names who resolved it (``Resolved-By:``, read by the dashboard)."""
    lines = []
    pr = pr_number(message)
    if pr is not None:
        lines.append(
            f"{style.upstream_url.rstrip('/')}/pull/{pr}" if style.upstream_url else f"Upstream-PR: #{pr}"
        )
    lines.append(style.trailer.replace("{sha}", sha))
    if resolved_by:
        lines.append(f"Resolved-By: {resolved_by}")
    return message.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n"


class _Stream:
    """A ``git fast-import`` stream of the built commits: one process writes them all as a pack.

    Writing each commit's trees through libgit2 costs one loose object per directory level per
    commit; fast-import computes the same trees from the parent's and the changed paths. Commit
    objects are byte-for-byte what ``create_commit`` would write (same headers, same message),
    so shas do not depend on which writer made them. fast-import starts with the first commit and
    is fed each one as it is made, so git builds trees and the pack while the build picks on;
    :meth:`run` ends the stream, :meth:`abandon` drops it (nothing written takes effect).
    """

    def __init__(self, repo: Repository, ref: str) -> None:
        self.repo = repo
        self.ref = ref  # the scratch ref every commit is made on (removed again by :meth:`run`)
        self.marks = 0
        self._git: FedGit | None = None
        self._tmp: TemporaryDirectory[str] | None = None  # where the marks file goes, once started

    def commit(
        self,
        parent: str,
        author: pygit2.Signature,
        committer: pygit2.Signature,
        message: str,
        updates: Mapping[str, Entry | None],
    ) -> str:
        self.marks += 1
        mark = f":{self.marks}"
        data = message.encode("utf-8")
        out = [
            f"commit {self.ref}\nmark {mark}\n".encode(),
            b"author " + _ident(author) + b"\n",
            b"committer " + _ident(committer) + b"\n",
            f"data {len(data)}\n".encode(),
            data,
            f"\nfrom {parent}\n".encode(),
        ]
        for path, entry in updates.items():
            name = _fi_path(path)
            if entry is None:
                out.append(b"D " + name + b"\n")
            else:
                out.append(f"M {entry[1]:06o} {entry[0]} ".encode() + name + b"\n")
        out.append(b"\n")
        if self._git is None:
            import tempfile  # here: tempfile pulls shutil, random, bz2, lzma into every CLI start otherwise

            self._tmp = tempfile.TemporaryDirectory(prefix="forksync-build-")
            marks_file = Path(self._tmp.name) / "marks"
            self._git = self.repo.feed(
                "fast-import", "--quiet", "--done", "--force", f"--export-marks={marks_file}"
            )
        self._git.write(b"".join(out))
        return mark

    def run(self) -> dict[str, str]:
        """End the stream: the commits are in the repository; mark → sha. The scratch ref is removed again."""
        if self._git is None:
            return {}
        try:
            try:
                self._git.write(b"done\n")
                self._git.finish()
            finally:
                self._git = None
                self.repo.git("update-ref", "-d", self.ref, check=False)
            marks = {}
            assert self._tmp is not None
            for line in (Path(self._tmp.name) / "marks").read_text().splitlines():
                mark, _, sha = line.partition(" ")
                marks[mark] = sha
            return marks
        finally:
            if self._tmp is not None:
                self._tmp.cleanup()

    def abandon(self) -> None:
        """Stop the stream unfinished (the build failed): no commit or ref of it is written."""
        if self._git is not None:
            self._git.abandon()
            self._git = None
            if self._tmp is not None:
                self._tmp.cleanup()


def _ident(sig: pygit2.Signature) -> bytes:
    sign = "-" if sig.offset < 0 else "+"
    hours, minutes = divmod(abs(sig.offset), 60)
    return (
        sig.raw_name + b" <" + sig.raw_email + b"> " + f"{sig.time} {sign}{hours:02d}{minutes:02d}".encode()
    )


def _fi_path(path: str) -> bytes:
    """A path as fast-import reads it: C-quoted when it could be misread (LF, leading quote)."""
    if "\n" in path or path.startswith('"'):
        quoted = path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{quoted}"'.encode()
    return path.encode()


class _Builder:
    """Picks commits in memory and streams each clean one as a commit to fast-import."""

    def __init__(
        self, repo: pygit2.Repository, changes: Mapping[str, CommitChanges], style: PickStyle, ref: str
    ) -> None:
        self.repo = repo
        self.changes = changes
        self.style = style
        self.stream = _Stream(Repository(Path(repo.path)), ref)
        self.resolved: dict[str, Resolution] = {}
        self.waiting: dict[str, tuple[tuple[str, str], ...]] = {}
        self.waits_for: dict[str, tuple[str, ...]] = {}

    def run(
        self,
        target: PickTarget,
        base: str,
        commits: Sequence[str],
        stop_at_conflict: bool,
        resolve: Callable[[str, str], Resolution | None] | None = None,
        after: Callable[[str, tuple[str, ...]], tuple[tuple[str, str, str], ...]] | None = None,
    ) -> tuple[str, list[str], list[str], list[tuple[str, tuple[str, ...], str]]]:
        """Pick ``commits`` onto ``target`` whose tree is ``base``'s (a sha, or a mark of this stream).

        ``resolve(sha, onto_tree)`` is asked at a conflict (chains); a resolved pick is committed
        with the resolved tree and recorded in ``self.resolved``, one that is not stops the run.
        ``after(sha, conflicting paths)``: (path, why, the upstream commit it waits for) for each
        conflicting path when every one of them is a bundled commit's that has not landed (the
        chain's trial pick went onto that bundle's tree): then the pick waits for it, unresolved.
        Returns (head, carried upstream shas, pick marks, failures as (sha, conflicting paths, error)).
        """
        target.take_updates()
        head = base
        carried: list[str] = []
        picks: list[str] = []
        failures: list[tuple[str, tuple[str, ...], str]] = []
        for sha in commits:
            result = target.pick(self.changes[sha])
            waits = after(sha, result.conflicts) if after is not None and result.conflicts else ()
            if waits:
                # Not a conflict to resolve: the lines come with a bundle still open, and the pick is
                # made again on the trunk once that bundle has landed.
                self.waiting[sha] = tuple((path, why) for path, why, _ in waits)
                self.waits_for[sha] = tuple(dict.fromkeys(needed for _, _, needed in waits))
            elif not result.clean and resolve is not None:
                outcome = resolve(sha, str(target.tree()))
                if outcome is not None and outcome.resolved and outcome.tree:
                    target.move_to(pygit2.Oid(hex=outcome.tree))
                    self.resolved[sha] = outcome
                    result = PickResult(sha)
                elif outcome is not None:
                    self.waiting[sha] = tuple((w.path, w.reason) for w in outcome.waiting)
                    needs = [getattr(w, "needs", None) for w in outcome.waiting]
                    if needs and all(needs):
                        self.waits_for[sha] = tuple(dict.fromkeys(n for n in needs if n))
            if not result.clean:
                failures.append((sha, result.conflicts, result.error))
                if stop_at_conflict:
                    break
                continue
            upstream = self.repo.get(sha)
            assert isinstance(upstream, pygit2.Commit)
            committer = pygit2.Signature(
                self.style.committer[0],
                self.style.committer[1],
                upstream.commit_time,
                upstream.commit_time_offset,
            )
            resolution = self.resolved.get(sha)
            message = pick_message(
                upstream.message, sha, self.style, resolution.resolved_by if resolution else None
            )
            head = self.stream.commit(head, upstream.author, committer, message, target.take_updates())
            carried.append(sha)
            picks.append(head)
        return head, carried, picks, failures


def waits_on_bundles(
    chain: Chain, plan: Plan, changes: Mapping[str, CommitChanges], sha: str, conflicts: tuple[str, ...]
) -> tuple[tuple[str, str, str], ...]:
    """(path, why, the bundled commit) for each of ``conflicts`` of chain member ``sha``, when each
    is a file the trunk has and a bundled commit whose lines the member changes (:attr:`Chain.after`)
    changed too; empty when any conflict is the member's own (a conflict to resolve) or a file the
    trunk lacks (the resolver says which commit brings it)."""
    needs = chain.bundled_needs(sha)
    out = []
    for path in conflicts:
        brought = next((n for n in needs if n in changes and path in changes[n].paths), None)
        if brought is None or any(d.path == path and d.old is None for d in changes[brought].deltas):
            return ()
        bundle = plan.bundle_of(brought)
        where = f"in bundle {bundle.id} ({bundle_branch(bundle)})" if bundle is not None else "planned"
        out.append(
            (
                path,
                f"changes lines that upstream {brought[:10]} changed, which is {where}, not landed yet: "
                "this pick waits for it (land that bundle first; the chain is then rebuilt on the new trunk)",
                brought,
            )
        )
    return tuple(out)


def bundle_branch(bundle: Bundle) -> str:
    """``forksync/bundle/<sha7>``: named by the bundle's id, which a re-based part keeps."""
    return BUNDLE_BRANCH + bundle.id.removeprefix("bundle-")


def build(
    repo: pygit2.Repository,
    plan: Plan,
    fork_tip: str,
    fork_branch: str,
    changes: Mapping[str, CommitChanges],
    order: Sequence[str],
    style: PickStyle = PickStyle(),
    resolver: Resolver | None = None,
    resolver_config: Any = None,
    merges: MergeCache | None = None,
) -> BuildResult:
    """Build every bundle and chain of ``plan`` as commits in ``repo``, each on ``fork_tip``
    (no branch is written).

    ``changes`` must hold every planned commit; ``order`` is the upstream order of the walk
    (chains made by ejection take their place in it).
    """
    position = {sha: i for i, sha in enumerate(order)}
    builder = _Builder(repo, changes, style, f"refs/forksync/build-{os.getpid()}")
    # The plan's trial picks use git's merge too (build and plan agree); with the plan's
    # ``merges`` its outcomes are read back: a bundle is built by the same picks its trial made.
    merger = GitMerger(repo, merges)
    try:
        tip = repo.get(fork_tip)
        assert isinstance(tip, pygit2.Commit)
        bundles: list[tuple[Bundle, str, str, str, list[str], list[str], list[str]]] = []
        ejected_chains: list[_Ejected] = []
        taken = {c.id for c in plan.chains}
        touched: dict[str, list[str]] = {}  # path → ids of the bundles built so far that change it
        built: dict[str, tuple[str, str, pygit2.Oid]] = {}  # bundle id → (branch, head, tree) as built
        # Every planned chain starts with its first member picked onto the trunk, a merge git runs (the
        # trial pick went onto the running bundle, another tree): those merges are started ahead, one
        # per branch built, so that git merges the next chain's first pick while this process builds.
        trunk = PickTarget(repo, tip.tree.id, merger)
        firsts = [changes[c.commits[0]] for c in plan.chains if c.commits]
        for bundle in plan.bundles:
            if firsts:
                trunk.prefetch(firsts.pop(0))
            if bundle.declined:
                continue  # its PR was closed unmerged: its branch stays as it was, nothing is built on it
            branch = bundle_branch(bundle)
            # Each bundle alone on the trunk, so it lands on its own, in any order; a stacked one on the
            # bundle it needs (built before it: bases come first in upstream order), landing after it.
            base, base_name, tree = fork_tip, fork_branch, tip.tree.id
            if bundle.stacked_on is not None and bundle.stacked_on in built:
                base_name, base, tree = built[bundle.stacked_on]
            target = PickTarget(repo, tree, merger)
            head, carried, picks, failures = builder.run(target, base, bundle.commits, stop_at_conflict=False)
            # A base that carried nothing (every member ejected) is no base: its dependants go on what it was on.
            built[bundle.id] = (branch, head, target.tree()) if carried else (base_name, base, tree)
            for sha, paths, error in failures:
                needs = sorted({b for path in paths for b in touched.get(path, ())})
                _eject(sha, paths, error, branch, changes, ejected_chains, taken, needs)
            bundles.append((bundle, branch, base, base_name, carried, picks, [sha for sha, _, _ in failures]))
            for sha in carried:
                for path in changes[sha].paths:
                    if not touched.setdefault(path, []) or touched[path][-1] != bundle.id:
                        touched[path].append(bundle.id)

        open_chains = [*plan.chains, *(e.chain() for e in ejected_chains)]
        open_chains.sort(key=lambda c: position[c.commits[0]])
        chains = []
        for chain in open_chains:
            if firsts:
                trunk.prefetch(firsts.pop(0))
            ask = (
                None
                if resolver is None
                else (lambda sha, onto: resolver(repo, sha, onto, config=resolver_config))
            )
            # On the trunk too: a member that changes lines of a bundle still open and conflicts there
            # waits for that bundle to land (then the chain is rebuilt on the new trunk); other
            # conflicts go to the resolver.
            chain_head, carried, picks, failures = builder.run(
                PickTarget(repo, tip.tree.id, merger),
                fork_tip,
                chain.commits,
                stop_at_conflict=True,
                resolve=ask,
                after=functools.partial(waits_on_bundles, chain, plan, changes),
            )
            chains.append(
                (chain, fork_tip, fork_branch, chain_head, carried, picks, failures[0] if failures else None)
            )

        # Urgent commits: each alone on the fork tip, not stacked behind anything (picked now, out of order).
        urgent = []
        for hurried in plan.urgent:
            head_u, carried, picks, failures = builder.run(
                PickTarget(repo, tip.tree.id, merger), fork_tip, hurried.commits, stop_at_conflict=True
            )
            urgent.append((hurried, head_u, carried, picks, failures[0] if failures else None))

        merger.close()  # a merge started ahead and never asked for (none, unless a first pick moved)
        marks = builder.stream.run()
    except BaseException:
        builder.stream.abandon()  # nothing half-built reaches the repository
        merger.close()
        raise

    def sha_of(name: str) -> str:
        return marks[name] if name.startswith(":") else name

    built_bundles = tuple(
        Built(
            "bundle",
            bundle.id,
            branch,
            sha_of(base),
            base_name,
            sha_of(picks[-1] if picks else base),
            tuple(carried),
            tuple(sha_of(p) for p in picks),
            ejected=tuple(ejected),
        )
        for bundle, branch, base, base_name, carried, picks, ejected in bundles
    )
    built_chains = tuple(
        Built(
            "chain",
            chain.id,
            CHAIN_BRANCH + chain.id.removeprefix("chain-"),
            sha_of(base),
            base_name,
            sha_of(chain_head),
            tuple(carried),
            tuple(sha_of(p) for p in picks),
            stopped_at=stopped[0] if stopped else None,
            conflicts=stopped[1] if stopped else (),
            resolved=tuple(Resolved(s, builder.resolved[s]) for s in carried if s in builder.resolved),
            waiting=builder.waiting.get(
                stopped[0], tuple((p, "conflicts; no resolution") for p in stopped[1])
            )
            if stopped
            else (),
            waits_for=builder.waits_for.get(stopped[0], ()) if stopped else (),
        )
        for chain, base, base_name, chain_head, carried, picks, stopped in chains
    )
    built_urgent = tuple(
        Built(
            "urgent",
            hurried.id,
            URGENT_BRANCH + hurried.id.removeprefix("urgent-"),
            fork_tip,
            fork_branch,
            sha_of(head_u),
            tuple(carried),
            tuple(sha_of(p) for p in picks),
            stopped_at=stopped[0] if stopped else None,
            conflicts=(stopped[1] or (f"(no merge possible: {stopped[2]})",)) if stopped else (),
        )
        for hurried, head_u, carried, picks, stopped in urgent
    )
    return BuildResult(built_bundles, built_chains, tuple(open_chains), built_urgent)


@dataclass
class _Ejected:
    id: str
    commits: list[str]
    reasons: list[Reason]
    files: set[str]
    symbols: set[str]

    def chain(self) -> Chain:
        return Chain(self.id, tuple(self.commits), tuple(self.reasons))


def _eject(
    sha: str,
    paths: tuple[str, ...],
    error: str,
    branch: str,
    changes: Mapping[str, CommitChanges],
    ejected: list[_Ejected],
    taken: set[str],
    needs: Sequence[str] = (),
) -> None:
    change = changes[sha]
    for chain in ejected:
        files = sorted(set(change.paths) & chain.files)
        symbols = sorted(change.symbols & chain.symbols)
        if files or symbols:
            kind, what = ("file", files[0]) if files else ("symbol", f"symbol {symbols[0]}")
            chain.commits.append(sha)
            chain.reasons.append(Reason(sha, kind, f"ejected from {branch}; touches {what} of {chain.id}"))
            chain.files.update(change.paths)
            chain.symbols.update(change.symbols)
            return
    detail = (
        f"ejected from {branch}: pick onto the fork trunk conflicts in {', '.join(paths)}"
        if paths
        else (f"ejected from {branch}: {error}")
    )
    if needs:
        detail += (
            f"; {', '.join(needs)} change{'s' if len(needs) == 1 else ''} them: it follows, once they land"
        )
    chain_id = fresh_id("chain", sha, taken)
    taken.add(chain_id)
    ejected.append(
        _Ejected(chain_id, [sha], [Reason(sha, "conflict", detail)], set(change.paths), set(change.symbols))
    )
