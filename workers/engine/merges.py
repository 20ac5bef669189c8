"""git's own trial merges, and what is known of them without running git again.

:class:`GitMerger` runs ``git merge-tree`` (merge-ort, the merge ``git cherry-pick`` makes) on three
trees, through a few long-running ``git merge-tree --stdin`` processes; :class:`MergeCache` keeps
its outcomes (and the proofs') between runs; :class:`ProvedMerges` settles a file changed on both
sides without git where :mod:`workers.engine.cleanmerge` proves its merge clean (git's merged
bytes, never a claimed conflict). :class:`~workers.engine.pick.PickTarget` asks them through the
:class:`TreeMerger` protocol; nothing here knows about picks or plans.
"""

from __future__ import annotations

import contextlib
import json
import os
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pygit2

from workers.engine.attributes import ATTRIBUTES_FILE, TreeAttributes
from workers.engine.cleanmerge import MergeMemo, keep_recent, merge_clean, proof_holds_for
from workers.engine.git import AskedGit, RunningGit, ask_git, run_git, start_git

if TYPE_CHECKING:
    from workers.engine.pick import PickTarget

# Files git compares for renames in one merge (``merge.renameLimit``): renames among more
# added/deleted files than this are not detected, and the pick is judged without them.
RENAME_LIMIT = 1000


@dataclass(frozen=True)
class MergeOutcome:
    """A three-way merge of whole trees: the merged tree when clean, else the conflicting paths."""

    tree: pygit2.Oid | None
    conflicts: tuple[str, ...] = ()


class TreeMerger(Protocol):
    """Merges ``theirs`` into ``ours`` with ``base`` as the ancestor, as a cherry-pick does.

    ``proofs``: the file merges this merger's outcome is known for without running it (a
    :class:`ProvedMerges`), or None when every merge must be asked for; ``proving_pays``: whether
    they are worth trying now (:meth:`GitMerger.proving_pays`).
    """

    proofs: ProvedMerges | None

    def proving_pays(self, size: int) -> bool:
        """Whether ``proofs`` should decide a file merge of ``size`` bytes now rather than leave it to the merge."""
        ...

    def merge(self, base: pygit2.Oid, ours: pygit2.Oid, theirs: pygit2.Oid) -> MergeOutcome: ...

    def prefetch(self, base: pygit2.Oid, ours: pygit2.Oid, theirs: pygit2.Oid) -> None:
        """A hint: this merge is likely asked for soon (a merger may start it now, or ignore it)."""
        ...


_MERGE_OPTIONS = (
    "-c",
    "merge.renames=true",
    "-c",
    f"merge.renameLimit={RENAME_LIMIT}",
    "-c",
    "merge.conflictStyle=merge",
)


class GitMerger:
    """git's own merge (``git merge-tree --write-tree``, merge-ort) on three trees, in the object database.

    git 2.38+ merges commits and finds their merge base itself, so the three trees get throwaway
    commits (the ancestor as the root, ours and theirs on it): the merge base is the ancestor,
    exactly a cherry-pick's. Nothing but objects is written; no ref, index or work tree.
    Run from the git directory, git reads no in-tree ``.gitattributes``, while a cherry-pick reads
    its work tree's (ours): so a merge onto a tree that has some gets them as its own
    ``core.attributesFile`` (:class:`~workers.engine.attributes.TreeAttributes`, one file per
    distinct set of rules in :data:`ATTRIBUTES_FOLDER`, per process: prefetched merges onto other
    trees do not share it), and ``merge=union``, ``-merge`` or ``binary`` decide as in git.
    Its :class:`ProvedMerges` (``proofs``; off with ``prove=False``, so that every merge runs)
    lets a target settle without git the picks whose file merges are proved clean.
    With a :class:`MergeCache`, a merge already made (in this run or an earlier one) is read back
    instead of run again: ``calls`` counts the git runs, ``hits`` the merges read back.

    :meth:`prefetch` starts a merge that will probably be asked for next, as a git process of its
    own, while the caller goes on (another merge, the partition's own work); :meth:`merge` then
    collects it instead of starting it. The outcome is git's either way: only when it runs differs.

    The merges go to a few long-running ``git merge-tree --stdin`` processes (:class:`_MergeServer`,
    at most :data:`SERVERS` at once, one merge asked of each at a time, so a prefetched merge and
    the one asked now still run side by side): each merge is the same ``merge-ort`` run on the
    same two commits, without a process start and the repository's set-up each time (git's CPU
    per trial merge ~10 → ~5.5 ms on the Triton replay). Where that cannot be had (no ``stdbuf``,
    a git whose answers do not come back while it runs: checked once a process) or a server's git
    stops, a merge runs as a git process of its own, as before. ``asked`` counts the merges a
    server answered.
    """

    _SIG = pygit2.Signature("forksync", "forksync@users.noreply.github.com", 0, 0)

    def __init__(
        self, repo: pygit2.Repository, cache: MergeCache | None = None, *, prove: bool = True
    ) -> None:
        self.repo = repo
        self.path = Path(repo.path)
        self.cache = cache
        self.proofs: ProvedMerges | None = ProvedMerges(repo, cache) if prove else None
        self.calls = 0
        self.hits = 0
        self.prefetched = 0  # git runs started ahead by prefetch (counted in calls once collected)
        self.unclaimed = 0  # prefetched merges nobody asked for (collected into the cache)
        self.asked = 0  # merges answered by a long-running git (_MergeServer)
        self._running: dict[tuple[str, str, str], _Started] = {}
        self._roots: dict[pygit2.Oid, pygit2.Oid] = {}  # ancestor tree → its throwaway root commit
        self._theirs: dict[tuple[pygit2.Oid, pygit2.Oid], pygit2.Oid] = {}  # (ancestor, theirs) → its commit
        self._attributes: TreeAttributes | None = None
        self._servers: list[_MergeServer] = []
        # Work the caller gives the merger to do while git merges (one small step a call, False
        # when there is none for now): the plan reads ahead (workers.engine.analyses, planning).
        self.idle: Callable[[], bool] | None = None
        # A merger dropped without close() still ends its servers' git processes.
        self._finalizer = weakref.finalize(self, _close_servers, self._servers)

    def merge(self, base: pygit2.Oid, ours: pygit2.Oid, theirs: pygit2.Oid) -> MergeOutcome:
        key = (str(base), str(ours), str(theirs))
        running = self._running.pop(key, None)
        if running is not None:
            self.calls += 1
            self.prefetched += 1
            return self._collect(base, ours, theirs, running)
        if self.cache is not None:
            known = self.cache.get(self.repo, base, ours, theirs)
            if known is not None:
                self.hits += 1
                return known
        self.calls += 1
        return self._collect(base, ours, theirs, self._start(base, ours, theirs))

    def proving_pays(self, size: int) -> bool:
        """Whether a file merge of ``size`` bytes (the largest of its three versions) is better
        proved in process (:class:`ProvedMerges`) than left to git: up to :data:`PROOF_PAYS_BYTES`.

        A merge sent to git costs the caller's thread little: git merges on another core, on a
        long-running process, and the plan fills the wait with work it does anyway (:attr:`idle`).
        A proof is Python on the caller's thread, and its cost grows with the file (on the Triton
        replay ~0.9 ms a file merge under 200 lines, ~3 ms from 1,000 lines on, against git's
        ~5 ms for the whole merge-tree on the other core; proving every file merge there made the
        proofs 28% of a cold plan's wall time, and the plan 30-50% slower than with none).
        A small file's proof costs less than what a merge by git needs of the caller first: the
        target tree written, the throwaway commit, the answer read back."""
        return size <= PROOF_PAYS_BYTES

    def prefetch(self, base: pygit2.Oid, ours: pygit2.Oid, theirs: pygit2.Oid) -> None:
        """Start this merge now, unless it is known or already running (at most
        :data:`PREFETCH_LIMIT` at once: an unclaimed one is collected into the cache first)."""
        key = (str(base), str(ours), str(theirs))
        if key in self._running or (self.cache is not None and self.cache.get(self.repo, base, ours, theirs)):
            return
        while len(self._running) >= PREFETCH_LIMIT:
            self._settle(next(iter(self._running)))
        self._running[key] = self._start(base, ours, theirs)

    def close(self) -> None:
        """Collect every prefetched merge nobody asked for (into the cache, when there is one), and
        end the long-running gits (a later merge starts new ones)."""
        while self._running:
            self._settle(next(iter(self._running)))
        _close_servers(self._servers)

    def _settle(self, key: tuple[str, str, str]) -> None:
        running = self._running.pop(key)
        self.unclaimed += 1
        base, ours, theirs = (pygit2.Oid(hex=k) for k in key)
        with contextlib.suppress(pygit2.GitError, ValueError):  # a merge nobody asked for:
            self._collect(base, ours, theirs, running)  # its failure is nobody's answer

    def _start(self, base: pygit2.Oid, ours: pygit2.Oid, theirs: pygit2.Oid) -> _Started:
        root = self._roots.get(base)
        if root is None:
            root = self._roots[base] = self.repo.create_commit(None, self._SIG, self._SIG, "base", base, [])
        one = self.repo.create_commit(None, self._SIG, self._SIG, "ours", ours, [root])
        # The same commit is merged onto several targets (the running bundle, the next bundle's, a
        # chain's): its side of the merge is one throwaway commit, made once.
        two = self._theirs.get((base, theirs))
        if two is None:
            two = self._theirs[(base, theirs)] = self.repo.create_commit(
                None, self._SIG, self._SIG, "theirs", theirs, [root]
            )
        options = _merge_options(self._rules(ours))
        server = self._server(options)
        if server is not None:
            server.ask(one, two)
            return _Started(self.path, options, one, two, server=server)
        return _Started(self.path, options, one, two)

    def _server(self, options: tuple[str, ...]) -> _MergeServer | None:
        """An idle long-running git for merges with ``options`` (started when there is room), or
        None: then the merge runs as a process of its own."""
        self._servers[:] = [s for s in self._servers if s.alive]
        for server in self._servers:
            if server.options == options and not server.busy:
                return server
        if len(self._servers) >= SERVERS:
            other = next((s for s in self._servers if not s.busy), None)
            if other is None:
                return None
            other.close()  # idle, for another ours tree's attributes: make room
            self._servers.remove(other)
        started = _MergeServer.start(self.path, options, self.repo)
        if started is not None:
            self._servers.append(started)
        return started

    def _rules(self, ours: pygit2.Oid) -> Path | None:
        """The attributes file that gives git the ``.gitattributes`` of ``ours`` (the tree a
        cherry-pick's work tree holds), None when it has none: then git reads what it always does."""
        if self._attributes is None:
            self._attributes = TreeAttributes(
                self.repo, self.path / ATTRIBUTES_FOLDER, global_attributes(self.path)
            )
        return self._attributes.file(ours)

    def _collect(
        self, base: pygit2.Oid, ours: pygit2.Oid, theirs: pygit2.Oid, running: _Started
    ) -> MergeOutcome:
        idle = self.idle
        while idle is not None and not running.ready():
            if not idle():  # one step of the caller's work per check; none left for now: wait for git
                break
        fields = running.wait()
        if running.answered:
            self.asked += 1
        if not fields:
            raise pygit2.GitError("git merge-tree gave no result")
        tree = pygit2.Oid(hex=fields[0])
        conflicts = tuple(sorted(set(fields[1:])))
        outcome = MergeOutcome(None if conflicts else tree, conflicts)
        if self.cache is not None:
            self.cache.put(base, ours, theirs, outcome)
        return outcome


# Where a merger writes the attributes files of the trees it merges (in the git directory).
ATTRIBUTES_FOLDER = "forksync-attributes"

# A file merge up to this size (bytes, the largest of its three versions) is proved in process
# whenever it can be (GitMerger.proving_pays); a larger one goes to git.
PROOF_PAYS_BYTES = 4096

# Long-running merge gits a GitMerger keeps at once: the merge asked now beside PREFETCH_LIMIT
# started ahead, one each.
SERVERS = 3
# How long the first server of a process may take to answer its check (a merge of two empty trees).
SERVER_CHECK_S = 10.0
_servers_answer: bool | None = None  # whether this process's servers answer as they run (checked once)


def _merge_options(rules: Path | None) -> tuple[str, ...]:
    """git's options for a trial merge: :data:`_MERGE_OPTIONS`, and ``ours``' attributes file."""
    return (*_MERGE_OPTIONS, *(("-c", f"core.attributesFile={rules}") if rules is not None else ()))


# What ``git merge-tree`` is asked, after the options: the merged tree's id and the conflicting
# paths (each once, unquoted: ``-z``), no messages.
_MERGE_TREE = ("merge-tree", "--write-tree", "--name-only", "--no-messages", "-z")


class _MergeServer:
    """One long-running ``git merge-tree --stdin`` (:class:`~workers.engine.git.AskedGit`) for merges
    with the same options: one merge asked at a time (``busy`` until its answer is read)."""

    def __init__(self, git: AskedGit, options: tuple[str, ...]) -> None:
        self.git = git
        self.options = options
        self.busy = False

    @property
    def alive(self) -> bool:
        return self.git.alive

    @classmethod
    def start(cls, where: Path, options: tuple[str, ...], repo: pygit2.Repository) -> _MergeServer | None:
        """A new server, or None where servers do not answer while they run (checked on the
        process's first server: two empty trees merged, answered within :data:`SERVER_CHECK_S`)."""
        global _servers_answer
        if _servers_answer is False:
            return None
        git = ask_git(where, [*options, *_MERGE_TREE[:1], "--stdin", *_MERGE_TREE[1:]])
        if git is None:
            _servers_answer = False
            return None
        server = cls(git, options)
        if _servers_answer is None:
            sig = GitMerger._SIG
            empty = repo.create_commit(None, sig, sig, "empty", empty_tree(repo), [])
            git.ask(f"{empty} {empty}".encode())
            fields = git.answer(timeout=SERVER_CHECK_S)
            _servers_answer = fields is not None and len(fields) == 2 and fields[0] == b"1"
            if not _servers_answer:
                git.close()
                return None
        return server

    def ask(self, one: pygit2.Oid, two: pygit2.Oid) -> None:
        self.busy = True
        self.git.ask(f"{one} {two}".encode())

    def answer(self) -> list[bytes] | None:
        """The merged tree and conflicting paths (``-z`` fields, the clean/conflicted status
        dropped), or None when the server's git stopped (it is then dead)."""
        fields = self.git.answer()
        self.busy = False
        if fields is None or len(fields) < 2 or fields[0] not in (b"0", b"1"):
            self.git.close()
            return None
        return fields[1:]

    def close(self) -> None:
        self.git.close()


def _close_servers(servers: list[_MergeServer]) -> None:
    for server in servers:
        server.close()
    servers.clear()


class _Started:
    """A trial merge under way: asked of a server, or as a git process of its own (started at
    once when there is no server, or when the server's git stopped before answering)."""

    def __init__(
        self,
        where: Path,
        options: tuple[str, ...],
        one: pygit2.Oid,
        two: pygit2.Oid,
        server: _MergeServer | None = None,
    ) -> None:
        self.where, self.options, self.one, self.two = where, options, one, two
        self.server = server
        self.answered = False
        self._alone: RunningGit | None = None if server is not None else self._own()

    def _own(self) -> RunningGit:
        return start_git(self.where, [*self.options, *_MERGE_TREE, str(self.one), str(self.two)], check=False)

    def ready(self) -> bool:
        """Whether git's answer is (about to be) there: collecting it would not wait long."""
        if self.server is not None:
            return self.server.git.ready()
        return self._alone is None or self._alone.done()

    def wait(self) -> list[str]:
        """git's answer: the merged tree's id, then the conflicting paths (empty when git gave none)."""
        if self.server is not None:
            fields = self.server.answer()
            if fields is not None:
                self.answered = True
                return [f.decode("utf-8", "surrogateescape") for f in fields]
            self._alone = self._own()  # the server's git stopped: this merge alone, as before
        assert self._alone is not None
        out = self._alone.wait().decode("utf-8", "surrogateescape")
        return [field for field in out.split("\0") if field]


def global_attributes(where: Path) -> bytes:
    """The content of the global attributes file git reads for ``where`` (``core.attributesFile``,
    by default ``$XDG_CONFIG_HOME/git/attributes``), empty when there is none."""
    configured = run_git(where, ["config", "--path", "core.attributesFile"], check=False)
    name = configured.decode("utf-8", "surrogateescape").strip()
    if not name:
        config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        name = os.path.join(config_home, "git", "attributes")
    try:
        return (where / name).read_bytes()  # a relative name is git's, from its working directory
    except OSError:
        return b""


# Prefetched merges running at once (each a git process): the next pick's, and one spare.
PREFETCH_LIMIT = 2


class MergeCache:
    """git's merge outcomes kept between runs: (ancestor, ours, theirs) trees → merged tree or conflicting paths,
    and the file merges :class:`ProvedMerges` decided: (ancestor, ours, theirs) blobs → merged blob or unproved.

    What a trial pick is for: the bot plans again on every poll, mostly on the same fork tip and
    the same upstream, so most of its trial picks are merges it already made. A three-way merge
    is a pure function of the three trees, git's version and :data:`_MERGE_OPTIONS`; the last two
    are the file's key, so another git (or other options) starts a new cache. A clean outcome is
    used only while its merged tree is still in the object database. The proofs are kept for the
    same reason: a warm plan meets the same file merges, and proving one again costs about what
    git's merge does (the proof's version is in the key too). The file (one JSON list a line: five
    items for a tree merge, four for a file merge) is rewritten atomically by :meth:`save`, keeping
    the newest :data:`MERGES_KEPT` outcomes of each kind; one that cannot be read or written only
    costs speed.
    """

    def __init__(self, path: Path | None, key: str) -> None:
        self.path = path
        self.key = key
        self._known: dict[tuple[str, str, str], MergeOutcome] = {}
        self._files: dict[tuple[str, str, str], str | None] = {}  # blobs → merged blob, None: unproved
        self._fresh = 0  # tree merges added by this run
        self._fresh_files = 0  # file merges added by this run
        if path is not None:
            self._load(path)

    @classmethod
    def open(cls, folder: Path, repo: pygit2.Repository) -> MergeCache:
        """The cache kept in ``folder`` (a pair's cache directory) for merges in ``repo``, by this machine's git."""
        return cls(folder / MERGE_CACHE_FILE, merge_cache_key(Path(repo.path)))

    def _load(self, path: Path) -> None:
        try:
            lines = path.read_text("utf-8").split("\n")
        except (OSError, UnicodeDecodeError):
            return
        if not lines or lines[0] != self.key:
            return
        for line in lines[1:]:
            try:
                item = json.loads(line)
                if isinstance(item, list) and len(item) == 4:
                    base, ours, theirs, blob = item
                    if isinstance(blob, str | None) and all(isinstance(x, str) for x in (base, ours, theirs)):
                        self._files[(base, ours, theirs)] = blob
                    continue
                base, ours, theirs, tree, conflicts = item
                outcome = MergeOutcome(pygit2.Oid(hex=tree) if tree else None, tuple(conflicts))
            except (ValueError, TypeError):
                continue
            self._known[(base, ours, theirs)] = outcome

    def get(
        self, repo: pygit2.Repository, base: pygit2.Oid, ours: pygit2.Oid, theirs: pygit2.Oid
    ) -> MergeOutcome | None:
        """The outcome of this merge if it is known (and its merged tree is still there)."""
        outcome = self._known.get((str(base), str(ours), str(theirs)))
        if outcome is None or (outcome.tree is not None and outcome.tree not in repo):
            return None
        return outcome

    def put(self, base: pygit2.Oid, ours: pygit2.Oid, theirs: pygit2.Oid, outcome: MergeOutcome) -> None:
        key = (str(base), str(ours), str(theirs))
        self._known.pop(key, None)  # re-inserted last: the newest survive the bound
        self._known[key] = outcome
        self._fresh += 1

    def file_merge(
        self, repo: pygit2.Repository, base: pygit2.Oid, ours: pygit2.Oid, theirs: pygit2.Oid
    ) -> tuple[bool, pygit2.Oid | None]:
        """A file merge decided before: (True, merged blob) or (True, None) when it was not proved
        clean; (False, None) when unknown (or its merged blob is gone)."""
        key = (str(base), str(ours), str(theirs))
        if key not in self._files:
            return False, None
        blob = self._files[key]
        if blob is None:
            return True, None
        oid = pygit2.Oid(hex=blob)
        return (True, oid) if oid in repo else (False, None)

    def put_file_merge(
        self, base: pygit2.Oid, ours: pygit2.Oid, theirs: pygit2.Oid, merged: pygit2.Oid | None
    ) -> None:
        key = (str(base), str(ours), str(theirs))
        self._files.pop(key, None)  # re-inserted last: the newest survive the bound
        self._files[key] = None if merged is None else str(merged)
        self._fresh_files += 1

    def save(self) -> None:
        """Write the outcomes (newest :data:`MERGES_KEPT` of each kind) when this run added any."""
        if self.path is None or not (self._fresh or self._fresh_files):
            return
        items = list(self._known.items())[-MERGES_KEPT:]
        lines = [
            json.dumps([b, o, t, str(out.tree) if out.tree is not None else None, list(out.conflicts)])
            for (b, o, t), out in items
        ]
        lines += [json.dumps([b, o, t, m]) for (b, o, t), m in list(self._files.items())[-MERGES_KEPT:]]
        body = "\n".join(lines)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(f"{self.key}\n{body}\n", "utf-8")
            tmp.replace(self.path)
            self._fresh = self._fresh_files = 0
        except OSError:
            pass


# The merge cache's file in a pair's cache directory, and how many outcomes it keeps (~200 bytes each).
MERGE_CACHE_FILE = "merges.v1.jsonl"
MERGES_KEPT = 100_000

_git_version: str | None = None
# The version of the clean-merge proof whose outcomes a cache holds (raise it when the proof changes).
PROOF_VERSION = 1


def merge_cache_key(where: Path) -> str:
    """What a cached merge outcome depends on besides its trees: git's version and the options.

    The in-tree attributes git merges with are ours' ``.gitattributes`` (:class:`TreeAttributes`),
    part of the ours tree, which is in each outcome's key already; version 2: outcomes from before
    the merger handed git those attributes (version 1) are not read back; version 3: conflicting
    paths as git names them with ``-z`` (unquoted), where version 2 kept git's C-quoted names of
    paths with unusual bytes."""
    return json.dumps(
        ["forksync-merges", 3, git_version(where), list(_MERGE_OPTIONS), "proof", PROOF_VERSION]
    )


def git_version(where: Path) -> str:
    """``git version`` of the git on PATH (asked once per process)."""
    global _git_version
    if _git_version is None:
        _git_version = run_git(where, ["version"]).decode("utf-8", "replace").strip()
    return _git_version


# Regular files (plain and executable): the only modes a merge is proved for.
REGULAR_MODES = (pygit2.enums.FileMode.BLOB, pygit2.enums.FileMode.BLOB_EXECUTABLE)
# Settings that change how git merges a file's content (drivers, attributes, the diff, eol).
_MERGE_SETTINGS = (
    r"^(merge\.default|merge\.renormalize|diff\.algorithm|core\.attributesfile|attr\.tree|core\.ignorecase)$"
)
_FALSE = ("false", "no", "off", "0")
# Environment variables through which a git run could get such settings the config file lacks.
_SETTINGS_FROM_ENVIRONMENT = ("GIT_ATTR_SOURCE", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT")


class ProvedMerges:
    """git's merge of one file's content, decided without git where :func:`merge_clean` proves it clean.

    What lets a trial pick that changes a file the target changed too skip ``git merge-tree``.
    The proof covers xdiff's text merge; the rest of what git does to a file is ruled out here
    and by the caller: this git's version must be one the proof was read from, and no setting or
    attributes file outside the trees may choose another merge (``merge.default``,
    ``merge.renormalize``, ``diff.algorithm``, ``core.attributesFile`` or its default file, the
    system file, ``$GIT_DIR/info/attributes``, ``attr.tree``, ``core.ignorecase``); the caller
    checks the ``.gitattributes`` files on the path (:meth:`attributes_apply`). Each outcome is
    kept by blob ids; a merged blob is written once. ``proved`` counts the distinct file merges
    decided, ``left`` those left to git, ``picks`` the picks that needed no git thanks to them,
    ``recalled`` the file merges read back from ``cache`` (decided by an earlier run) instead.
    """

    def __init__(self, repo: pygit2.Repository, cache: MergeCache | None = None) -> None:
        self.repo = repo
        self.cache = cache
        self.proved = 0
        self.left = 0
        self.recalled = 0
        self.picks = 0
        self._known: dict[tuple[pygit2.Oid, pygit2.Oid, pygit2.Oid], pygit2.Oid | None] = {}
        self._memo = MergeMemo()  # what the proofs learn about each side, by blob ids
        self._blobs: dict[pygit2.Oid, bytes] = {}
        self._seen: dict[tuple[pygit2.Oid, str], bool] = {}  # (tree, attributes path) → present
        self._files: dict[str, bool] = {}
        self._usable: bool | None = None
        self._head: pygit2.Tree | None = None
        self._folders = [Path(p) for p in {repo.path, repo.workdir} if p]

    @property
    def usable(self) -> bool:
        """Whether nothing outside the three trees could make git merge a file differently."""
        if self._usable is None:
            self._usable = self._settle_usable()
        return self._usable

    def _settle_usable(self) -> bool:
        where = Path(self.repo.path)
        if not proof_holds_for(git_version(where)):
            return False
        if any(os.environ.get(name) for name in _SETTINGS_FROM_ENVIRONMENT):
            return False
        found = run_git(where, ["config", "--get-regexp", _MERGE_SETTINGS], check=False)
        for line in found.decode("utf-8", "replace").splitlines():
            key, _, value = line.partition(" ")
            if key == "diff.algorithm" and value.strip().lower() == "histogram":
                continue
            if key in ("merge.renormalize", "core.ignorecase") and value.strip().lower() in _FALSE:
                continue
            return False
        config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        exec_path = run_git(where, ["--exec-path"]).decode("utf-8", "replace").strip()  # git's own prefix:
        outside = [
            where / "info" / "attributes",
            Path(config_home) / "git" / "attributes",
            Path("/etc/gitattributes"),
            Path(exec_path).parent.parent / "etc" / "gitattributes",
        ]
        if any(path.exists() for path in outside):
            return False
        try:  # a bare repository's attributes may come from HEAD (git 2.42+)
            self._head = None if self.repo.head_is_unborn else self.repo.head.peel(pygit2.Commit).tree
        except (pygit2.GitError, KeyError, ValueError):
            return False
        return True

    def attributes_apply(self, path: str, trees: tuple[pygit2.Tree, ...], ours: PickTarget) -> bool:
        """Whether any ``.gitattributes`` could apply to ``path``: in a directory on its way, in
        any of ``trees`` (and HEAD's), in the target ``ours``, or as a file beside the repository."""
        folders = path.split("/")[:-1]
        for depth in range(len(folders) + 1):
            name = "/".join([*folders[:depth], ATTRIBUTES_FILE])
            if ours.entry(name) is not None:
                return True
            for tree in (*trees, self._head):
                if tree is not None and self._in_tree(tree, name):
                    return True
            if self._on_disk(name):
                return True
        return False

    def _in_tree(self, tree: pygit2.Tree, name: str) -> bool:
        key = (tree.id, name)
        found = self._seen.get(key)
        if found is None:
            found = self._seen[key] = _has(tree, name)
        return found

    def _on_disk(self, name: str) -> bool:
        """Whether an attributes file ``name`` lies beside the repository (asked once a run)."""
        found = self._files.get(name)
        if found is None:
            found = self._files[name] = any((folder / name).exists() for folder in self._folders)
        return found

    def merge(self, base: pygit2.Oid, ours: pygit2.Oid, theirs: pygit2.Oid) -> pygit2.Oid | None:
        """The blob git would write for this clean content merge, or None when not proved clean."""
        key = (base, ours, theirs)
        if key in self._known:
            merged = self._known[key]
        elif self.cache is not None and (known := self.cache.file_merge(self.repo, *key))[0]:
            merged = self._known[key] = known[1]
            self.recalled += 1
        else:
            old, one, two = (self._data(oid) for oid in key)
            text = (
                None
                if old is None or one is None or two is None
                else merge_clean(old, one, two, self._memo, key)
            )
            merged = None
            if text is not None:
                merged = self.repo.create_blob(text)
                self._keep(merged, text)  # the target holds it now: the next merges of this path read it
            self._known[key] = merged
            if self.cache is not None:
                self.cache.put_file_merge(base, ours, theirs, merged)
            if merged is None:
                self.left += 1
            else:
                self.proved += 1
        return merged

    def _data(self, oid: pygit2.Oid) -> bytes | None:
        """A blob's bytes (None if it is no blob); the last few are kept: the same ancestor and
        target versions of a file meet many commits' versions in one plan."""
        data = self._blobs.get(oid)
        if data is None:
            blob = self.repo.get(oid)
            if not isinstance(blob, pygit2.Blob):
                return None
            data = blob.data
        return self._keep(oid, data)

    def _keep(self, oid: pygit2.Oid, data: bytes) -> bytes:
        return keep_recent(self._blobs, oid, lambda: data, BLOBS_KEPT)


# Blob contents a ProvedMerges keeps at once (the last used; tens of MB at most for busy files).
BLOBS_KEPT = 256


def _has(tree: pygit2.Tree, path: str) -> bool:
    try:
        tree[path]
    except KeyError:
        return False
    return True


def empty_tree(repo: pygit2.Repository) -> pygit2.Oid:
    """The empty tree's id in ``repo`` (written if it is not there yet)."""
    return repo.TreeBuilder().write()
