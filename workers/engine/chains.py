"""Open risky chains, recorded durably in the fork at ``refs/forksync/chains``.

The ref points at a commit whose tree holds one file, ``chains.json``: every open chain with
its members (upstream order), one reason each, and the commits removed from it by hand; and,
under ``bundles``, the bundles the last build made (id and upstream commits), so that the next
plan keeps their ids across a re-cut (:mod:`workers.engine.parts`). Each
write is a new commit on top of the previous one, so the ref is also an audit log of chain
changes (``git log -p refs/forksync/chains`` in the fork), and writes fast-forward: two
writers racing lose nothing silently, the second is told to retry.

The record is rebuildable: deleting the ref loses only the hand moves (``forksync chain``);
the next ``forksync plan`` re-derives every chain from the rules and records it again (and
bundles re-cut without a record get ids from their first commit again).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pygit2

from core.errors import ForksyncError
from workers.engine.git import GitError, run_git
from workers.engine.pair import Pair
from workers.engine.partition.records import REASON_KINDS, ChainRecord, Reason
from workers.engine.parts import PartRecord

CHAINS_REF = "refs/forksync/chains"
# Where the cache keeps its copy of the fork's chains ref (fetched for remote forks).
CACHE_CHAINS_REF = "refs/forksync/fork-chains"
CHAINS_FILE = "chains.json"
FORMAT_VERSION = 1

BOT_NAME = "forksync"
BOT_EMAIL = "forksync@users.noreply.github.com"


@dataclass(frozen=True)
class ChainStore:
    """The recorded chains (and built bundles) as read from the fork, and the commit they were read from."""

    records: tuple[ChainRecord, ...]
    tip: str | None
    parts: tuple[PartRecord, ...] = ()

    def get(self, chain_id: str) -> ChainRecord | None:
        return next((r for r in self.records if r.id == chain_id), None)


def encode(records: Sequence[ChainRecord], parts: Sequence[PartRecord] = ()) -> bytes:
    """Canonical JSON of the records (sorted by id): the same chains and bundles give the same bytes.
    ``bundles`` is written only when there are some (older readers ignore it)."""
    doc: dict[str, Any] = {
        "version": FORMAT_VERSION,
        "chains": [
            {
                "id": r.id,
                "commits": list(r.commits),
                "reasons": [reason.as_json() for reason in r.reasons],
                "excluded": list(r.excluded),
            }
            for r in sorted(records, key=lambda r: r.id)
        ],
    }
    if parts:
        doc["bundles"] = [{"id": p.id, "commits": list(p.commits)} for p in sorted(parts, key=lambda p: p.id)]
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()


def decode(data: bytes, source: str) -> tuple[ChainRecord, ...]:
    """Parse ``chains.json``'s chains; a damaged record is an error that says how to rebuild it."""
    return decode_store(data, source)[0]


def decode_store(data: bytes, source: str) -> tuple[tuple[ChainRecord, ...], tuple[PartRecord, ...]]:
    """Parse ``chains.json``: (the chains, the bundles of the last build)."""

    def bad(problem: str) -> ForksyncError:
        return ForksyncError(
            f"{source} is damaged: {problem}",
            f"fix it, or delete {CHAINS_REF} in the fork (git update-ref -d {CHAINS_REF}) to rebuild the "
            "chains from the rules (hand moves made with forksync chain are then lost)",
        )

    try:
        doc: Any = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad(f"not JSON ({exc})") from None
    if (
        not isinstance(doc, dict)
        or doc.get("version") != FORMAT_VERSION
        or not isinstance(doc.get("chains"), list)
    ):
        raise bad(f"expected an object with version {FORMAT_VERSION} and a list of chains")
    records = []
    for i, item in enumerate(doc["chains"]):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise bad(f"chains[{i}] has no id")
        commits = item.get("commits", [])
        excluded = item.get("excluded", [])
        reasons = item.get("reasons", [])
        if not (_strings(commits) and _strings(excluded) and isinstance(reasons, list)):
            raise bad(f"chain {item['id']}: commits, excluded and reasons must be lists")
        parsed = []
        for reason in reasons:
            if not (
                isinstance(reason, dict) and _strings([reason.get(k) for k in ("commit", "kind", "detail")])
            ):
                raise bad(f"chain {item['id']}: a reason needs commit, kind and detail")
            if reason["kind"] not in REASON_KINDS:
                raise bad(f"chain {item['id']}: unknown reason kind {reason['kind']!r}")
            parsed.append(Reason(reason["commit"], reason["kind"], reason["detail"]))
        records.append(ChainRecord(item["id"], tuple(commits), tuple(parsed), tuple(excluded)))
    parts = []
    bundles = doc.get("bundles", [])
    if not isinstance(bundles, list):
        raise bad("bundles must be a list")
    for i, item in enumerate(bundles):
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("id"), str)
            or not _strings(item.get("commits"))
        ):
            raise bad(f"bundles[{i}] needs an id and a list of commits")
        parts.append(PartRecord(item["id"], tuple(item["commits"])))
    return tuple(records), tuple(parts)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def read_chains(pair: Pair) -> ChainStore:
    """The chains recorded in the fork (an empty store when it has none yet)."""
    tip = _fork_tip(pair)
    if tip is None:
        return ChainStore((), None)
    repo = pygit2.Repository(str(pair.repo.path))
    commit = repo.get(tip)
    source = f"{CHAINS_REF} ({tip[:12]}) in the fork"
    if not isinstance(commit, pygit2.Commit):
        raise ForksyncError(
            f"{source} does not point at a commit", f"delete {CHAINS_REF} in the fork to rebuild it"
        )
    try:
        blob = commit.tree[CHAINS_FILE]
    except KeyError:
        raise ForksyncError(
            f"{source} has no {CHAINS_FILE}", f"delete {CHAINS_REF} in the fork to rebuild it"
        ) from None
    data = repo.get(blob.id)
    assert isinstance(data, pygit2.Blob)
    records, parts = decode_store(data.data, source)
    return ChainStore(records, tip, parts)


def _fork_tip(pair: Pair) -> str | None:
    """The commit of the fork's chains ref, made readable in the cache."""
    fork = pair.fork
    if fork.path is not None:
        out = run_git(fork.path, ["for-each-ref", "--format=%(objectname)", CHAINS_REF]).decode().split()
        return out[0] if out else None
    try:
        pair.repo.git(
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--",
            fork.remote,
            f"+{CHAINS_REF}:{CACHE_CHAINS_REF}",
        )
    except GitError as exc:
        if "couldn't find remote ref" in exc.stderr:
            return None
        raise ForksyncError(
            f"cannot fetch {CHAINS_REF} from the fork {fork.given}: {exc.problem}",
            "check the fork URL and your access to it",
        ) from None
    return pair.repo.rev_parse(CACHE_CHAINS_REF)


def prepare_chains(
    repo: pygit2.Repository,
    store: ChainStore,
    records: Sequence[ChainRecord],
    message: str,
    parts: Sequence[PartRecord] | None = None,
) -> str | None:
    """Write (in the cache) the commit recording ``records`` (and ``parts``, the bundles just built;
    None keeps the recorded ones) on top of ``store.tip``.

    Returns its sha, or None when the record would not change: rerunning a plan writes nothing.
    """
    data = encode(records, store.parts if parts is None else parts)
    if store.tip is not None:
        current = repo.get(store.tip)
        if isinstance(current, pygit2.Commit) and CHAINS_FILE in current.tree:
            old = repo.get(current.tree[CHAINS_FILE].id)
            if isinstance(old, pygit2.Blob) and old.data == data:
                return None
    elif not records and not (store.parts if parts is None else parts):
        return None
    builder = repo.TreeBuilder()
    builder.insert(CHAINS_FILE, repo.create_blob(data), pygit2.enums.FileMode.BLOB)
    tree = builder.write()
    now = int(time.time())
    sig = pygit2.Signature(BOT_NAME, BOT_EMAIL, now, 0)
    parents = [pygit2.Oid(hex=store.tip)] if store.tip else []
    oid = repo.create_commit(None, sig, sig, message, tree, parents)
    return str(oid)
