"""The warm path of ``forksync status``: repeat the last identical answer without the engine.

A cold ``status`` ends by remembering what it printed, with everything that answer depended
on: the arguments as given (and the paths they resolve to), the bytes of ``--config``, and in
each local repository the refs it read (branch tips, the decisions notes ref), the repository
config (``remote.origin.url`` feeds recognition) and the ``shallow`` file. The next ``status``
with the same arguments reads those few small files directly -- no git process, no YAML, no
engine import -- and prints the remembered answer when every one is unchanged.

This module must stay cheap to import (``os``, ``sys``, ``json`` and ``zlib`` only): it runs
before argparse. Whatever it does not fully understand (URLs, worktree ``.git`` files,
symbolic or reftable refs, config includes, unusual arguments, a record from another version)
sends ``status`` down the normal path, which is always correct; a record that cannot be
written only costs speed.
"""

from __future__ import annotations

import json
import os
import sys
import zlib

TYPE_CHECKING = False  # not typing's: importing typing costs the warm path ~5 ms
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from workers.engine.pair import Pair

# Bump when what ``status`` prints changes for the same inputs. The ledger's own version is
# part of every record too (a test keeps LEDGER_VERSION here equal to the engine's).
RECORD_VERSION = 2  # 2: status shows the fork's own pins
LEDGER_VERSION = 10

_OPTIONS = ("--upstream", "--fork", "--upstream-branch", "--fork-branch", "--config")


class _Unsupported(Exception):
    """Something the warm path does not read itself: the normal path answers."""


def cache_root() -> str:
    """``workers.engine.pair.cache_root()`` without importing it (a test keeps them equal)."""
    env = os.environ.get("FORKSYNC_CACHE_DIR")
    if env:
        return os.path.expanduser(env)
    return os.path.join(os.path.expanduser("~"), ".cache", "forksync")


# What the last ``answer`` call saw before the normal path ran: ``remember`` stores a record
# only if nothing it depends on changed while the answer was being computed.
_seen: dict[str, Any] | None = None


def answer(argv: Sequence[str]) -> int | None:
    """Print the remembered answer for ``status ARGV`` and return 0, or None to run it normally."""
    global _seen
    _seen = None
    try:
        parsed = _parse(argv)
        inputs = _inputs(parsed)
        states = {role: _repo_state(inputs[role + "_real"]) for role in ("upstream", "fork")}
    except (_Unsupported, OSError, ValueError):
        return None
    _seen = {"inputs": inputs, "states": states}
    try:
        with open(_record_path(inputs), encoding="utf-8") as fh:
            record = json.load(fh)
        if record["inputs"] != inputs or record["states"] != states:
            return None
        for role, name, sha in record["refs"]:
            if _read_ref(states[role]["gitdir"], name) != sha:
                return None
        stdout, warnings = record["stdout"], record["warnings"]
    except (_Unsupported, OSError, ValueError, KeyError, TypeError):
        return None
    for warning in warnings:
        print(f"forksync: warning: {warning}", file=sys.stderr)
    sys.stdout.write(stdout + "\n")
    return 0


def remember(pair: Pair, stdout: str, warnings: Sequence[str]) -> None:
    """After a normal ``status``: keep its answer for the warm path, when it can be checked.

    Stored only when the refs now point where the pair read them and the inputs and repository
    states still equal what :func:`answer` saw before the run.
    """
    global _seen
    seen, _seen = _seen, None
    if seen is None:
        return
    try:
        inputs = seen["inputs"]
        states = {role: _repo_state(inputs[role + "_real"]) for role in ("upstream", "fork")}
        if states != seen["states"] or _inputs_again(inputs) != inputs:
            return
        up, fk = states["upstream"]["gitdir"], states["fork"]["gitdir"]
        heads = f"refs/heads/{pair.upstream_branch}"
        remotes = f"refs/remotes/{pair.upstream_branch}"
        refs = [
            ["upstream", heads, _read_ref(up, heads)],
            ["upstream", remotes, _read_ref(up, remotes)],
            ["fork", f"refs/heads/{pair.fork_branch}", _read_ref(fk, f"refs/heads/{pair.fork_branch}")],
            ["fork", pair.notes_ref, _read_ref(fk, pair.notes_ref)],
        ]
        # The pair prefers a local branch over a remote-tracking one, as _sync_branch does.
        if (refs[0][2] or refs[1][2]) != pair.upstream_tip or refs[2][2] != pair.fork_tip:
            return
        if refs[3][2] != pair.fork_notes_tip:
            return
        record = {
            "inputs": inputs,
            "states": states,
            "refs": refs,
            "stdout": stdout,
            "warnings": list(warnings),
        }
        path = _record_path(inputs)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(record, fh, separators=(",", ":"))
        os.replace(tmp, path)
    except (_Unsupported, OSError, ValueError):
        pass  # no record: the next status takes the normal path, nothing worse


# --------------------------------------------------------------------------- arguments


def _parse(argv: Sequence[str]) -> dict[str, Any]:
    """Exactly status's own options, each once; anything else is argparse's to judge."""
    out: dict[str, Any] = {"--json": False}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--json":
            if out["--json"]:
                raise _Unsupported(arg)
            out["--json"] = True
            i += 1
            continue
        name, eq, value = arg.partition("=")
        if name not in _OPTIONS or name in out:
            raise _Unsupported(arg)
        if not eq:
            if i + 1 >= len(argv):
                raise _Unsupported(arg)
            value = argv[i + 1]
            i += 1
        if not value or value.startswith("-"):
            raise _Unsupported(arg)
        out[name] = value
        i += 1
    if "--upstream" not in out or "--fork" not in out:
        raise _Unsupported("missing")
    return out


def _inputs(parsed: dict[str, Any]) -> dict[str, Any]:
    inputs: dict[str, Any] = {
        "version": [RECORD_VERSION, LEDGER_VERSION],
        "json": parsed["--json"],
        "upstream_branch": parsed.get("--upstream-branch"),
        "fork_branch": parsed.get("--fork-branch"),
        "config": None,
        "config_real": None,
        "config_text": None,
    }
    for role in ("upstream", "fork"):
        given = parsed[f"--{role}"]
        if ":" in given:
            raise _Unsupported(given)  # a URL (or a path git would read as one): fetched normally
        inputs[role] = given
        inputs[role + "_real"] = os.path.realpath(os.path.expanduser(given))
    config = parsed.get("--config")
    if config is not None:
        inputs["config"] = config
        inputs["config_real"] = os.path.realpath(config)
        with open(config, "rb") as fh:
            inputs["config_text"] = fh.read().decode("utf-8", "surrogateescape")
    return inputs


def _inputs_again(inputs: dict[str, Any]) -> dict[str, Any]:
    """The inputs re-read now (the config file may have changed while status ran)."""
    again = dict(inputs)
    if inputs["config"] is not None:
        with open(inputs["config"], "rb") as fh:
            again["config_text"] = fh.read().decode("utf-8", "surrogateescape")
    return again


def _record_path(inputs: dict[str, Any]) -> str:
    key = json.dumps(inputs, sort_keys=True).encode("utf-8", "surrogateescape")
    return os.path.join(cache_root(), "warm-status", f"{zlib.crc32(key):08x}.json")


# --------------------------------------------------------------------------- repositories


def _repo_state(path: str) -> dict[str, Any]:
    """Where the repository's refs live, and the small files the answer depends on."""
    dotgit = os.path.join(path, ".git")
    if os.path.isdir(dotgit):
        gitdir = dotgit
    elif os.path.lexists(dotgit):
        raise _Unsupported("a .git file (worktree or submodule)")
    elif os.path.isfile(os.path.join(path, "HEAD")) and os.path.isdir(os.path.join(path, "objects")):
        gitdir = path  # bare
    else:
        raise _Unsupported("not a repository root")
    for odd in ("commondir", "reftable"):
        if os.path.lexists(os.path.join(gitdir, odd)):
            raise _Unsupported(odd)
    config = _read_text(os.path.join(gitdir, "config"))
    if config is not None and "[include" in config.lower():
        raise _Unsupported("config includes")
    return {"gitdir": gitdir, "config": config, "shallow": _read_text(os.path.join(gitdir, "shallow"))}


def _read_text(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "surrogateescape")
    except FileNotFoundError:
        return None


def _read_ref(gitdir: str, name: str) -> str | None:
    """The object a ref points at (loose file, else packed-refs), None when there is no such ref."""
    try:
        with open(os.path.join(gitdir, name), "rb") as fh:
            value = fh.read().decode("ascii", "replace").strip()
    except (FileNotFoundError, NotADirectoryError):
        value = None
    if value is not None:
        if not _is_sha(value):
            raise _Unsupported(f"{name} is a symbolic or unreadable ref")
        return value
    text = _read_text(os.path.join(gitdir, "packed-refs"))
    if text is None:
        return None
    suffix = " " + name
    for line in text.splitlines():
        if line.endswith(suffix) and not line.startswith(("#", "^")):
            sha = line[: -len(suffix)]
            if not _is_sha(sha):
                raise _Unsupported(f"packed-refs line for {name}")
            return sha
    return None


def _is_sha(value: str) -> bool:
    return len(value) in (40, 64) and all(c in "0123456789abcdef" for c in value)
