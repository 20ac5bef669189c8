"""Durable maintainer decisions (wont_port, deferred, urgent) as git notes in the fork.

One note per upstream commit under the fork's notes ref (``ledger.notes_ref``, default
``refs/notes/forksync``), each a small JSON object::

    {"disposition": "wont_port", "reason": "AMD-only, we do not ship AMD", "upstream": "<sha>"}

The notes ref is an ordinary git notes ref (``git notes --ref forksync show <sha>`` reads it
where the upstream object exists), so it is pushed, fetched and audited like any ref; every
change is a commit with the previous notes commit as parent. Nothing lives only in a cache.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum

from core.errors import ForksyncError
from workers.engine.git import Repository


class Disposition(StrEnum):
    """What the fork does with an upstream commit.

    ``picked``: carried by a fork commit (or a merge) and not urgent; ``urgent``: carried (or
    marked to be taken) out of order, never moves the frontier; ``wont_port`` and ``deferred``:
    recorded decisions (a known hole); ``pending``: not carried and not decided -- an unmarked
    hole when it is behind the frontier (backlog), otherwise not reached yet.
    """

    PICKED = "picked"
    DEFERRED = "deferred"
    WONT_PORT = "wont_port"
    URGENT = "urgent"
    PENDING = "pending"


# The dispositions a maintainer can record (the others are computed from history).
DECIDABLE = (Disposition.WONT_PORT, Disposition.DEFERRED, Disposition.URGENT)


@dataclass(frozen=True)
class Decision:
    """A recorded decision on one upstream commit."""

    sha: str
    disposition: Disposition
    reason: str = ""

    def note_text(self) -> str:
        body = {"disposition": self.disposition.value, "reason": self.reason, "upstream": self.sha}
        return json.dumps(body, sort_keys=True) + "\n"


@dataclass(frozen=True)
class Decisions:
    """All decisions of a notes commit, plus notes that could not be read (never dropped silently)."""

    by_sha: dict[str, Decision]
    problems: tuple[str, ...] = ()


def parse_note(sha: str, text: str) -> Decision:
    """Read one note: forksync's JSON, or a hand-written ``wont_port: reason`` line."""
    text = text.strip()
    try:
        data = json.loads(text)
    except ValueError:
        word, _, reason = text.partition(":") if ":" in text.split("\n", 1)[0] else text.partition(" ")
        data = {"disposition": word.strip(), "reason": reason.strip()}
    if not isinstance(data, dict):
        raise ValueError("note is not a JSON object")
    raw = str(data.get("disposition", "")).strip().lower().replace("-", "_").replace("'", "")
    try:
        disposition = Disposition(raw)
    except ValueError:
        raise ValueError(f"unknown disposition {raw!r}") from None
    if disposition not in DECIDABLE:
        raise ValueError(
            f"disposition {raw!r} cannot be recorded (only {', '.join(d.value for d in DECIDABLE)})"
        )
    return Decision(sha=sha, disposition=disposition, reason=str(data.get("reason") or ""))


def read_decisions(repo: Repository, notes_commit: str | None) -> Decisions:
    """Every decision in ``notes_commit`` (two git processes however many notes there are)."""
    if notes_commit is None:
        return Decisions({})
    listing = repo.git("ls-tree", "-r", "-z", notes_commit).decode("utf-8", "replace")
    entries: list[tuple[str, str]] = []  # (annotated sha, blob)
    for item in listing.split("\x00"):
        if not item:
            continue
        meta, _, path = item.partition("\t")
        parts = meta.split()
        if len(parts) != 3 or parts[1] != "blob":
            continue
        annotated = path.replace("/", "")  # notes trees may fan out as ab/cdef...
        if len(annotated) == 40:
            entries.append((annotated, parts[2]))
    if not entries:
        return Decisions({})
    batch = repo.git("cat-file", "--batch", input="".join(f"{blob}\n" for _, blob in entries).encode())
    texts = _split_batch(batch)
    by_sha: dict[str, Decision] = {}
    problems: list[str] = []
    for (sha, _), text in zip(entries, texts, strict=True):
        try:
            by_sha[sha] = parse_note(sha, text)
        except ValueError as exc:
            problems.append(f"ignored the note on {sha[:12]} in the decisions notes: {exc}")
    return Decisions(by_sha, tuple(problems))


def _split_batch(data: bytes) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(data):
        end = data.index(b"\n", pos)
        header = data[pos:end].split()
        size = int(header[2]) if len(header) == 3 else 0
        out.append(data[end + 1 : end + 1 + size].decode("utf-8", "replace"))
        pos = end + 1 + size + 1
    return out


def write_decision(
    repo: Repository,
    notes_commit: str | None,
    sha: str,
    disposition: Disposition | None,
    reason: str = "",
) -> str | None:
    """Write a new notes commit (in ``repo``) that sets or, with None, clears ``sha``'s decision.

    Returns the new commit, or None when nothing changes (clearing an absent decision, or
    recording the decision that is already there). The
    caller publishes it (``Pair.push_to_fork``); the tree is rewritten flat, which git reads.
    """
    if disposition is not None and disposition not in DECIDABLE:
        raise ForksyncError(
            f"{disposition.value} cannot be recorded by hand", "use wont_port, deferred, urgent or clear"
        )
    current: dict[str, str] = {}
    if notes_commit is not None:
        listing = repo.git("ls-tree", "-r", "-z", notes_commit).decode("utf-8", "replace")
        for item in listing.split("\x00"):
            meta, _, path = item.partition("\t")
            parts = meta.split()
            if len(parts) == 3:
                current[path.replace("/", "")] = f"{parts[0]} {parts[1]} {parts[2]}"
    if disposition is None:
        if sha not in current:
            return None
        del current[sha]
        message = f"forksync: clear the decision on {sha}"
    else:
        blob = _blob(repo, Decision(sha, disposition, reason))
        if current.get(sha) == f"100644 blob {blob}":
            return None  # the same decision is already recorded: write nothing
        current[sha] = f"100644 blob {blob}"
        message = f"forksync: {disposition.value} {sha}" + (f"\n\n{reason}" if reason else "")
    tree_input = "".join(f"{meta}\t{path}\x00" for path, meta in sorted(current.items()))
    tree = repo.git("mktree", "-z", input=tree_input.encode()).decode().strip()
    args = ["commit-tree", tree, "-m", message]
    if notes_commit is not None:
        args[2:2] = ["-p", notes_commit]
    return repo.git(*args, env=_identity(repo)).decode().strip()


def _blob(repo: Repository, decision: Decision) -> str:
    return repo.git("hash-object", "-w", "--stdin", input=decision.note_text().encode()).decode().strip()


def _identity(repo: Repository) -> dict[str, str]:
    """Use the user's git identity when configured; otherwise sign as forksync (never fail)."""
    if repo.ok("var", "GIT_COMMITTER_IDENT") and repo.ok("var", "GIT_AUTHOR_IDENT"):
        return {}
    return {
        "GIT_AUTHOR_NAME": "forksync",
        "GIT_AUTHOR_EMAIL": "forksync@localhost",
        "GIT_COMMITTER_NAME": "forksync",
        "GIT_COMMITTER_EMAIL": "forksync@localhost",
    }
