"""An upstream/fork pair in one cache repository, so both histories are readable side by side.

``open_pair(upstream, fork, upstream_branch, fork_branch)`` takes two repository locations (a
local path or a URL), keeps a bare cache repository under ``$FORKSYNC_CACHE_DIR`` (default
``~/.cache/forksync``) keyed by the two locations, and points refs there at both tips:

* local paths are borrowed through ``objects/info/alternates`` (zero copy, nothing fetched);
* URLs are fetched (``git fetch --no-tags``) into the cache.

Refs in the cache: ``refs/forksync/upstream/<branch>``, ``refs/forksync/fork/<branch>`` and
``refs/forksync/fork-notes`` (the fork's decisions notes ref, when it has one). The cache is
disposable: deleting it loses nothing, the next call rebuilds it (so git writes its packs there
without fsync: a power cut can cost the cache, never the fork). Writes meant for the real fork
(decision notes, bundle branches) are made in the cache and pushed with :meth:`Pair.push_to_fork`.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from core.config import CONFIG_PATH, RepoConfig, load_repo_config, load_repo_config_file
from core.errors import ForksyncError
from workers.engine.git import GitError, Repository, run_git

UPSTREAM_PREFIX = "refs/forksync/upstream/"
FORK_PREFIX = "refs/forksync/fork/"
FORK_NOTES_REF = "refs/forksync/fork-notes"
DEFAULT_NOTES_REF = "refs/notes/forksync"

_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://|^[^/\s]+@[^/\s]+:")


def cache_root() -> Path:
    """The directory that holds forksync's disposable caches (``$FORKSYNC_CACHE_DIR``)."""
    env = os.environ.get("FORKSYNC_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "forksync"


def is_url(location: str) -> bool:
    """True for ``scheme://...`` and scp-like ``user@host:path`` locations."""
    return bool(_URL.match(location))


@dataclass(frozen=True)
class Location:
    """One side of the pair: what the user gave, and how git reaches it."""

    given: str
    role: str  # "upstream" or "fork"
    url: str | None  # set for remote locations
    path: Path | None  # set for local repositories
    objects: Path | None  # the local repository's object directory
    shallow: bool = False

    @property
    def remote(self) -> str:
        """What ``git fetch``/``git push`` accept for this location."""
        return self.url if self.url is not None else str(self.path)

    @property
    def key(self) -> str:
        return self.remote


@dataclass(frozen=True)
class Pair:
    """Both histories readable in ``repo``; tips and base are full shas.

    ``fork_notes_tip`` is the commit of the fork's notes ref (``notes_ref``) or None when the
    fork has none yet. ``upstream_url`` is the web address of upstream when known (from a URL
    argument or the local repository's ``remote.origin.url``), used to recognise body links.
    """

    repo: Repository
    upstream: Location
    fork: Location
    upstream_branch: str
    fork_branch: str
    upstream_ref: str
    fork_ref: str
    upstream_tip: str
    fork_tip: str
    base: str
    notes_ref: str
    fork_notes_tip: str | None
    upstream_url: str | None
    fork_url: str | None

    @property
    def cache_dir(self) -> Path:
        """A directory beside the cache repository for derived data (ledger cache)."""
        return self.repo.path.parent

    def fork_file(self, path: str) -> str | None:
        """The text of ``path`` at the fork's trunk tip, or None when it has no such file."""
        out = self.repo.git("cat-file", "--batch", input=f"{self.fork_tip}:{path}\n".encode())
        header, _, rest = out.partition(b"\n")
        parts = header.split()
        if len(parts) != 3 or parts[1] != b"blob":
            return None  # "<rev> missing", or a directory
        return rest[: int(parts[2])].decode("utf-8", "replace")

    def tidy(self) -> None:
        """The cache repository's housekeeping (``git gc --auto``, see :data:`CACHE_SETTINGS`):
        a count of one fan-out directory when there is nothing to do; a gc git detaches when
        there is. A failure costs only disk space: it is not the caller's."""
        self.repo.git("gc", "--auto", "--quiet", check=False)

    def push_to_fork(self, src: str, dst_ref: str, *, force: bool = False) -> None:
        """Push ``src`` (a commit or ref in the cache) to ``dst_ref`` in the real fork.

        Without ``force`` the push must fast-forward, so two writers cannot silently lose each
        other's work: the loser gets a :class:`ForksyncError` telling it to retry.
        """
        spec = f"{'+' if force else ''}{src}:{dst_ref}"
        try:
            self.repo.git("push", "--quiet", "--no-verify", "--", self.fork.remote, spec)
        except GitError as exc:
            if "non-fast-forward" in exc.stderr or "rejected" in exc.stderr or "fetch first" in exc.stderr:
                raise ForksyncError(
                    f"{dst_ref} in the fork {self.fork.given} moved while forksync was writing it",
                    "run the command again (it re-reads the fork first)",
                ) from None
            raise ForksyncError(
                f"cannot write {dst_ref} to the fork {self.fork.given}: {exc.problem}",
                "check that the fork is writable by you (path permissions or push access)",
            ) from None


def open_pair(
    upstream: str,
    fork: str,
    upstream_branch: str = "main",
    fork_branch: str = "main",
    *,
    notes_ref: str = DEFAULT_NOTES_REF,
) -> Pair:
    """Resolve both locations, sync the cache repository, and compute the merge base.

    Raises :class:`ForksyncError` (problem and remedy) for a missing path, a directory that is
    not a git repository, an unreachable URL, an unknown branch, or unrelated histories.
    """
    up = _locate(upstream, "upstream")
    fk = _locate(fork, "fork")
    if not _valid_ref(notes_ref) or not notes_ref.startswith("refs/"):
        raise ForksyncError(
            f"ledger.notes_ref {notes_ref!r} is not a full ref name", "use e.g. refs/notes/forksync"
        )
    repo = _cache_repo(up, fk)
    upstream_ref = UPSTREAM_PREFIX + upstream_branch
    fork_ref = FORK_PREFIX + fork_branch
    cached = _cache_refs(repo)
    wanted: dict[str, str | None] = {}

    upstream_tip = _sync_branch(repo, up, upstream_branch, upstream_ref, "--upstream-branch", wanted)
    fork_tip, notes_tip = _sync_fork(repo, fk, fork_branch, fork_ref, notes_ref, wanted)
    # One batched ref update, and only for refs that moved: a warm call writes nothing.
    updates = [
        f"delete {ref}\n" if sha is None else f"update {ref} {sha}\n"
        for ref, sha in sorted(wanted.items(), key=lambda kv: kv[0])
        if cached.get(ref) != sha
    ]
    if updates:
        _update_refs(repo, "".join(updates))
    base = _merge_base(repo, up, fk, upstream_tip, fork_tip, upstream_branch, fork_branch)
    return Pair(
        repo=repo,
        upstream=up,
        fork=fk,
        upstream_branch=upstream_branch,
        fork_branch=fork_branch,
        upstream_ref=upstream_ref,
        fork_ref=fork_ref,
        upstream_tip=upstream_tip,
        fork_tip=fork_tip,
        base=base,
        notes_ref=notes_ref,
        fork_notes_tip=notes_tip,
        upstream_url=_web_url(up),
        fork_url=_web_url(fk),
    )


# --------------------------------------------------------------------------- locations


def _locate(given: str, role: str) -> Location:
    flag = f"--{role}"
    if not given or not given.strip():
        raise ForksyncError(f"{flag} is empty", f"pass the {role} repository as a path or a URL")
    if is_url(given):
        if given.startswith("file://"):
            # Still a URL for git, but check the path now for a clear message.
            local = Path(given[len("file://") :])
            if not local.exists():
                raise ForksyncError(f"{role} repository {given} does not exist", f"check {flag}")
        return Location(given=given, role=role, url=given, path=None, objects=None)
    path = Path(given).expanduser()
    if not path.exists():
        raise ForksyncError(
            f"{role} repository path {given} does not exist",
            f"pass an existing local clone or a URL to {flag}",
        )
    if not path.is_dir():
        raise ForksyncError(
            f"{role} repository path {given} is not a directory", f"pass a git repository to {flag}"
        )
    try:
        out = run_git(
            path,
            [
                "rev-parse",
                "--path-format=absolute",
                "--git-common-dir",
                "--is-bare-repository",
                "--is-shallow-repository",
                "--show-prefix",
            ],
        ).decode()
    except GitError:
        stale = _stale_worktree(path)
        if stale is not None:
            raise ForksyncError(
                f"{role} path {given} is a git worktree whose metadata is gone ({stale} has no HEAD)",
                f"run git worktree prune in its main clone and add the worktree again, or pass the main clone to {flag}",
            ) from None
        raise ForksyncError(
            f"{role} path {given} is not a git repository",
            f"pass the root of a git clone to {flag} (git init or git clone it first)",
        ) from None
    lines = out.split("\n")
    common, bare, shallow, prefix = [*lines, "", "", "", ""][:4]
    if bare.strip() == "false" and prefix.strip():
        raise ForksyncError(
            f"{role} path {given} is a subdirectory ({prefix.strip().rstrip('/')}) of a git repository",
            f"pass the repository root to {flag}",
        )
    git_dir = Path(common.strip())
    objects = git_dir / "objects"
    return Location(
        given=given,
        role=role,
        url=None,
        path=path.resolve(),
        objects=objects,
        shallow=shallow.strip() == "true",
    )


def _stale_worktree(path: Path) -> Path | None:
    """The gitdir of a linked worktree at ``path`` whose admin folder lost its HEAD (removed or
    pruned in the main clone), or None when ``path`` is not such a worktree."""
    dot_git = path / ".git"
    if not dot_git.is_file():
        return None
    text = dot_git.read_text(errors="replace").strip()
    if not text.startswith("gitdir:"):
        return None
    gitdir = Path(text.removeprefix("gitdir:").strip())
    if not gitdir.is_absolute():
        gitdir = (path / gitdir).resolve()
    return None if (gitdir / "HEAD").is_file() else gitdir


def _cache_repo(up: Location, fk: Location) -> Repository:
    """The bare cache repository of this pair, created on first use."""
    digest = hashlib.sha256(f"{up.key}\0{fk.key}".encode()).hexdigest()[:16]
    root = cache_root() / "pairs" / digest
    path = root / "repo.git"
    repo = Repository(path)
    if not (path / "HEAD").exists():
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ForksyncError(
                f"cannot create the cache directory {root}: {exc.strerror}",
                "set FORKSYNC_CACHE_DIR to a writable directory",
            ) from None
        run_git(root, ["init", "--quiet", "--bare", str(path)])
        (root / "locations.txt").write_text(f"upstream {up.key}\nfork {fk.key}\n")
    layout = root / "layout.txt"
    if not layout.is_file() or layout.read_text().strip() != CACHE_LAYOUT:
        for key, value in CACHE_SETTINGS:
            repo.git("config", key, value)
        try:
            layout.write_text(f"{CACHE_LAYOUT}\n")
        except OSError as exc:
            raise ForksyncError(
                f"cannot write {layout} in the pair cache: {exc.strerror}",
                "make FORKSYNC_CACHE_DIR writable, or point it at another directory (the cache is disposable)",
            ) from None
    alternates = [str(loc.objects) for loc in (up, fk) if loc.objects is not None]
    alt_file = path / "objects" / "info" / "alternates"
    wanted = "".join(f"{a}\n" for a in alternates)
    current = alt_file.read_text() if alt_file.exists() else ""
    if current != wanted:
        alt_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = alt_file.with_suffix(".tmp")
        tmp.write_text(wanted)
        tmp.replace(alt_file)
    return repo


# The cache repository's settings, applied when it is made and when an older cache is opened
# (``layout.txt`` holds CACHE_LAYOUT; 2: housekeeping). No fsync of the packs git writes here (a
# bundle build's fast-import pack): the cache is disposable and everything meant to last is pushed
# to the fork, whose own settings keep their fsync (two hardware flushes were ~0.2 s of a 200-commit
# cold bundle on a VM disk). Housekeeping (:meth:`Pair.tidy`, after each plan): trial merges write
# loose objects here (~6,000 for a cold plan of 1,000 pending commits, ~29 MB on disk, again after
# each landing moves the fork tip) and nothing else removes them. Above ``gc.auto`` loose objects
# (~8 such plans) ``git gc --auto`` packs what the cache's refs reach (its own objects only: gc's
# ``repack -l``) and prunes unreachable loose ones not written for ``gc.pruneExpire``, detached in
# the background. The merge cache uses a merged tree only while it is still there.
CACHE_LAYOUT = "2"
CACHE_SETTINGS = (
    ("core.fsync", "none"),
    ("gc.auto", "50000"),
    ("gc.pruneExpire", "3.days.ago"),
    ("gc.autoDetach", "true"),
)


def _branches(loc: Location) -> list[str]:
    try:
        if loc.path is not None:
            out = run_git(loc.path, ["for-each-ref", "--format=%(refname:short)", "refs/heads/"]).decode()
            return out.split()
        out = run_git(".", ["ls-remote", "--heads", "--", loc.remote]).decode()
    except GitError:
        return []
    return [line.split("refs/heads/", 1)[1] for line in out.splitlines() if "refs/heads/" in line]


def _unknown_branch(loc: Location, branch: str, flag: str) -> ForksyncError:
    names = _branches(loc)
    listed = ", ".join(names[:10]) + (" ..." if len(names) > 10 else "") if names else "none"
    return ForksyncError(
        f"{loc.role} repository {loc.given} has no branch {branch!r}",
        f"pass {flag} with one of its branches ({listed})",
    )


def _update_refs(repo: Repository, commands: str) -> None:
    """Apply ref updates to the cache; another process updating the same cache only delays us."""
    for attempt in range(5):
        try:
            repo.git("update-ref", "--stdin", input=commands.encode())
            return
        except GitError as exc:
            if "lock" not in exc.stderr or attempt == 4:
                raise
            time.sleep(0.05 * (attempt + 1))


def _cache_refs(repo: Repository) -> dict[str, str]:
    out = repo.git("for-each-ref", "--format=%(refname) %(objectname)", "refs/forksync/").decode()
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def _local_refs(loc: Location, refs: list[str]) -> dict[str, str]:
    """Exact refs of a local repository → the commits they point at (one process)."""
    assert loc.path is not None
    out = run_git(
        loc.path, ["for-each-ref", "--format=%(refname) %(objectname) %(objecttype)", *refs]
    ).decode()
    found: dict[str, str] = {}
    for line in out.splitlines():
        name, sha, _kind = line.split(" ")
        if name in refs:
            found[name] = sha
    return found


def _check_branch(branch: str, flag: str) -> None:
    if not branch or branch.startswith("-") or not _valid_ref(f"refs/heads/{branch}"):
        raise ForksyncError(f"{flag} {branch!r} is not a valid branch name", f"pass a branch name to {flag}")


def _sync_branch(
    repo: Repository, loc: Location, branch: str, ref: str, flag: str, wanted: dict[str, str | None]
) -> str:
    """The tip of ``loc``'s ``branch``; records the cache ref to point at it in ``wanted``."""
    _check_branch(branch, flag)
    if loc.path is not None:
        # A maintainer's clone often holds upstream as a remote-tracking branch: accept
        # "--upstream . --upstream-branch upstream/main" as well as a local branch.
        refs = _local_refs(loc, [f"refs/heads/{branch}", f"refs/remotes/{branch}"])
        tip = refs.get(f"refs/heads/{branch}") or refs.get(f"refs/remotes/{branch}")
        if tip is None:
            raise _unknown_branch(loc, branch, flag)
        wanted[ref] = tip
        return tip
    return _fetch_branch(repo, loc, branch, ref, flag)


def _fetch_branch(repo: Repository, loc: Location, branch: str, ref: str, flag: str) -> str:
    try:
        repo.git(
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--",
            loc.remote,
            f"+refs/heads/{branch}:{ref}",
        )
    except GitError as exc:
        if "couldn't find remote ref" in exc.stderr:
            raise _unknown_branch(loc, branch, flag) from None
        raise ForksyncError(
            f"cannot fetch the {loc.role} repository {loc.given}: {exc.problem}",
            f"check the URL given to --{loc.role} and your network or credentials",
        ) from None
    tip = repo.rev_parse(ref)
    if tip is None:  # pragma: no cover - fetch succeeded, so the ref exists
        raise _unknown_branch(loc, branch, flag)
    return tip


def _sync_fork(
    repo: Repository, fk: Location, branch: str, ref: str, notes_ref: str, wanted: dict[str, str | None]
) -> tuple[str, str | None]:
    """The fork's trunk tip and decisions notes tip (None when it has no notes yet)."""
    _check_branch(branch, "--fork-branch")
    if fk.path is not None:
        refs = _local_refs(fk, [f"refs/heads/{branch}", notes_ref])
        tip = refs.get(f"refs/heads/{branch}")
        if tip is None:
            raise _unknown_branch(fk, branch, "--fork-branch")
        notes = refs.get(notes_ref)
        wanted[ref] = tip
        wanted[FORK_NOTES_REF] = notes
        return tip, notes
    tip = _fetch_branch(repo, fk, branch, ref, "--fork-branch")
    try:
        repo.git(
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--",
            fk.remote,
            f"+{notes_ref}:{FORK_NOTES_REF}",
        )
        notes = repo.rev_parse(FORK_NOTES_REF)
    except GitError as exc:
        if "couldn't find remote ref" not in exc.stderr:
            raise ForksyncError(
                f"cannot fetch {notes_ref} from the fork {fk.given}: {exc.problem}",
                "check the fork URL and your access to it",
            ) from None
        notes = None
        wanted[FORK_NOTES_REF] = None
    return tip, notes


def _merge_base(
    repo: Repository, up: Location, fk: Location, upstream_tip: str, fork_tip: str, ub: str, fb: str
) -> str:
    """``git merge-base``, remembered per pair of tips (it is the slow part of a warm status)."""
    memo = repo.path.parent / "merge-bases.txt"
    key = f"{upstream_tip} {fork_tip} "
    try:
        for line in memo.read_text().splitlines():
            if line.startswith(key):
                return line[len(key) :].strip()
    except OSError:
        pass
    out = repo.git("merge-base", upstream_tip, fork_tip, check=False).decode().strip()
    if not out:
        raise ForksyncError(
            f"the fork {fk.given} ({fb}) and upstream {up.given} ({ub}) share no history (no merge base)",
            "fetch the full history (git fetch --unshallow) of the shallow clone"
            if up.shallow or fk.shallow
            else "check that --fork is a fork of --upstream and that the branches are right",
        )
    try:
        lines = memo.read_text().splitlines()[-63:] if memo.exists() else []
        tmp = memo.with_name(f"{memo.name}.{os.getpid()}.tmp")
        tmp.write_text("".join(f"{line}\n" for line in [*lines, key + out]))
        tmp.replace(memo)
    except OSError:
        pass  # a memo that cannot be written only costs speed
    return out


_BAD_REF = re.compile(r"(^|/)\.|\.\.|[\x00-\x20\x7f~^:?*\[\\]|@\{|//|\.lock(/|$)|[/.]$|^@$")


def _valid_ref(ref: str) -> bool:
    """git check-ref-format's rules, without a subprocess."""
    return bool(ref) and not _BAD_REF.search(ref)


def _web_url(loc: Location) -> str | None:
    """``https://github.com/owner/repo`` for a location when it can be known, else None."""
    url = loc.url
    if url is None and loc.path is not None:
        raw = run_git(loc.path, ["config", "--get", "remote.origin.url"], check=False).decode().strip()
        url = raw or None
    return normalise_web_url(url) if url else None


def normalise_web_url(url: str) -> str | None:
    """Turn ``git@github.com:o/r.git`` or ``https://github.com/o/r.git`` into ``https://github.com/o/r``."""
    m = re.match(r"^(?:[a-z+]+://)?(?:[^@/]+@)?([^/:]+)[:/]+(.+?)(?:\.git)?/*$", url.strip())
    if not m or "." not in m.group(1):
        return None
    return f"https://{m.group(1).lower()}/{m.group(2)}"


def open_configured(
    upstream: str,
    fork: str,
    upstream_branch: str | None = None,
    fork_branch: str | None = None,
    config_file: str | None = None,
) -> tuple[Pair, RepoConfig]:
    """Open the pair with its repository config, as every command that reads the ledger does.

    The config is ``config_file`` when given, else ``.github/forksync.yml`` at the fork's trunk
    tip when present, else the defaults. Branches: the argument, else the config's, else main.
    """
    config = load_repo_config_file(config_file) if config_file else None
    fork_branch = fork_branch or (config.fork.branch if config else None) or "main"
    notes_ref = config.ledger.notes_ref if config else DEFAULT_NOTES_REF
    ub = upstream_branch or (config.upstream.branch if config else None) or "main"
    pair = open_pair(upstream, fork, ub, fork_branch, notes_ref=notes_ref)
    if config is None:
        text = pair.fork_file(CONFIG_PATH)
        config = (
            load_repo_config(text, f"{CONFIG_PATH} (fork {fork_branch} at {pair.fork_tip[:12]})")
            if text
            else RepoConfig()
        )
        wanted_ub = upstream_branch or config.upstream.branch
        if config.ledger.notes_ref != notes_ref or wanted_ub != ub:
            pair = open_pair(upstream, fork, wanted_ub, fork_branch, notes_ref=config.ledger.notes_ref)
    return pair, config
