"""The optional conflict agent: a command or an OpenAI-compatible endpoint, behind the same rails.

Protocol (docs/conflicts.md has the full schema). The request, JSON on the command's stdin
(or the user message of a chat completion)::

    {"protocol": "forksync-resolve/1", "upstream_commit": sha, "subject": ..., "message": ...,
     "files": [{"path", "base", "ours", "theirs", "diff3", "fork_history": [{"sha", "subject"}]}],
     "related_upstream_commits": [{"sha", "subject"}]}

The answer, JSON on stdout (or the completion's content)::

    {"files": [{"path": ..., "resolved": "<whole file>", "action": ..., "reason": ...}
               | {"path": ..., "defer": "<why a human must decide>"}]}

Whatever the agent answers goes through the rails (:func:`pipeline.check_candidate`); a file it
leaves out counts as deferred. Timeouts and output size are bounded; failures are one-line
:class:`AgentError`s and leave every file waiting for a human.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pygit2

from core.config import AgentConfig
from core.errors import ForksyncError
from workers.engine.git import run_git
from workers.engine.resolve import model, rails
from workers.engine.resolve.merge3 import Merged, git_merge
from workers.engine.resolve.model import FileOutcome, Waiting
from workers.engine.resolve.pipeline import Conflict, check_candidate

PROTOCOL = "forksync-resolve/1"
SYSTEM_PROMPT = (
    "You resolve git cherry-pick conflicts for a fork that ingests an upstream project. You get JSON: the "
    "upstream commit, and per conflicted file its base (upstream parent), ours (the fork), theirs (upstream) "
    'and git\'s diff3 conflict. Answer ONLY with JSON: {"files": [{"path": P, "resolved": WHOLE_FILE, '
    '"action": WHAT_YOU_DID, "reason": WHY}]} or {"path": P, "defer": WHY} for a file a human must '
    "decide. Keep every line outside the conflict blocks exactly as in the merge, keep the fork's symbols, "
    "and never leave conflict markers: anything else is refused."
)


class AgentError(ForksyncError):
    """The agent could not be run or gave an unusable answer."""


@dataclass(frozen=True)
class AgentAnswer:
    """One file of the agent's answer: a resolved file with Action/Reason, or a deferral."""

    path: str
    resolved: str | None
    action: str
    reason: str
    defer: str | None = None


class Agent(Protocol):
    @property
    def name(self) -> str: ...

    def ask(self, request: dict[str, Any]) -> dict[str, Any]: ...


def parse_answer(doc: Any, paths: Sequence[str]) -> dict[str, AgentAnswer]:
    """Validate the agent's JSON; unknown paths are ignored, missing ones are deferred by the caller."""
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), list):
        raise AgentError(
            'the agent\'s answer is not {"files": [...]}', "see the protocol in docs/conflicts.md"
        )
    out: dict[str, AgentAnswer] = {}
    for item in doc["files"]:
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            raise AgentError("an entry of the agent's files has no path", 'each entry needs "path"')
        path = item["path"]
        if path not in paths:
            continue
        if isinstance(item.get("defer"), str):
            out[path] = AgentAnswer(path, None, "", "", defer=item["defer"] or "no reason given")
            continue
        resolved = item.get("resolved")
        if not isinstance(resolved, str):
            raise AgentError(
                f'the agent\'s entry for {path} has neither "resolved" nor "defer"',
                "answer the whole resolved file, or defer with a reason",
            )
        action = str(item.get("action") or "").strip()
        reason = str(item.get("reason") or "").strip()
        if not action or not reason:
            raise AgentError(
                f"the agent's entry for {path} lacks an Action or a Reason",
                "every resolution says what was done and why",
            )
        out[path] = AgentAnswer(path, resolved, " ".join(action.split()), " ".join(reason.split()))
    return out


@dataclass(frozen=True)
class CommandAgent:
    """An agent run as a command: the request on stdin, the answer on stdout."""

    argv: tuple[str, ...]
    timeout_s: int = 300
    max_output_bytes: int = 2 * 1024 * 1024
    env: tuple[tuple[str, str], ...] = ()
    # A command from a repository's config (resolve.agent.command) is code a fork writer chose: it
    # runs with the suites' allow-listed environment (workers/testing/sandbox.py), never the App's
    # key or the deployment's secrets. Only the operator's own command (forksync resolve --agent)
    # inherits the whole environment.
    inherit_env: bool = False

    @property
    def name(self) -> str:
        """The script's name, not its interpreter's (``python3 agent.py`` is ``agent.py``)."""
        words = list(self.argv)
        if words and re.match(
            r"^(python[\d.]*|node|bash|sh|ruby|perl|uv|uvx|npx)$", os.path.basename(words[0])
        ):
            words = [w for w in words[1:] if not w.startswith("-")] or words
        return os.path.basename(words[0]) if words else "agent"

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(request).encode()
        with (
            tempfile.TemporaryFile() as out,
            tempfile.TemporaryFile() as err,
            tempfile.TemporaryDirectory(prefix="forksync-agent-") as home,
        ):
            if self.inherit_env:
                env = {**os.environ, **dict(self.env)}
            else:
                from workers.testing.sandbox import child_env

                env = child_env(Path(home), dict(self.env))
            try:
                proc = subprocess.run(
                    list(self.argv),
                    input=data,
                    stdout=out,
                    stderr=err,
                    timeout=self.timeout_s,
                    check=False,
                    env=env,
                )
            except FileNotFoundError:
                raise AgentError(
                    f"agent command {self.argv[0]!r} not found",
                    "fix resolve.agent.command in .github/forksync.yml",
                ) from None
            except subprocess.TimeoutExpired:
                raise AgentError(
                    f"the agent ran past {self.timeout_s}s and was stopped",
                    "raise resolve.agent.timeout_s or make the agent faster",
                ) from None
            size = out.seek(0, os.SEEK_END)
            if size > self.max_output_bytes:
                raise AgentError(
                    f"the agent wrote {size} bytes, more than the {self.max_output_bytes} allowed",
                    "raise resolve.agent.max_output_kb or answer less",
                )
            out.seek(0)
            body = out.read()
            err.seek(0)
            complaint = err.read(2000).decode("utf-8", "replace").strip().splitlines()
        if proc.returncode != 0:
            first = complaint[0] if complaint else "no message"
            raise AgentError(f"the agent exited {proc.returncode}: {first[:200]}", "see the agent's own log")
        try:
            doc: dict[str, Any] = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise AgentError(
                f"the agent's output is not JSON ({exc.__class__.__name__}: {str(exc)[:80]})",
                "print exactly one JSON object on stdout",
            ) from None
        return doc


@dataclass(frozen=True)
class HttpAgent:
    """An OpenAI-compatible chat-completions endpoint (URL + the name of the env var with the key)."""

    url: str
    key_env: str | None
    model_name: str | None
    timeout_s: int = 300
    max_output_bytes: int = 2 * 1024 * 1024
    opener: Callable[..., Any] = urllib.request.urlopen

    @property
    def name(self) -> str:
        return self.model_name or "http-agent"

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if self.key_env:
            allowed = agent_key_names(os.environ)
            if self.key_env not in allowed:
                from workers.testing.sandbox import is_secret_name

                why = (
                    " (it holds one of the App's or the deployment's secrets)"
                    if is_secret_name(self.key_env)
                    else ""
                )
                raise AgentError(
                    f"resolve.agent.key_env names {self.key_env}, which the operator has not allowed as an agent "
                    f"key{why}: a repository's config cannot send the worker's variables to an endpoint it chose",
                    f"the operator sets {AGENT_KEYS_VAR}={self.key_env} on the worker (names only) to allow it",
                )
            key = os.environ.get(self.key_env)
            if not key:
                raise AgentError(
                    f"the agent's key variable {self.key_env} is not set",
                    f"export {self.key_env} in the worker's environment",
                )
            headers["Authorization"] = f"Bearer {key}"
        body = {
            "model": self.model_name or "default",
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": json.dumps(request)},
            ],
        }
        req = urllib.request.Request(
            self.url.rstrip("/") + "/chat/completions",
            data=json.dumps(body).encode(),
            headers=headers,
            method="POST",
        )
        try:
            with self.opener(req, timeout=self.timeout_s) as resp:
                raw = resp.read(self.max_output_bytes + 1)
        except urllib.error.HTTPError as exc:
            raise AgentError(
                f"the agent endpoint answered HTTP {exc.code}",
                "check resolve.agent.url, the model and the key",
            ) from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise AgentError(
                f"the agent endpoint is unreachable ({str(exc)[:100]})", "check resolve.agent.url"
            ) from None
        if len(raw) > self.max_output_bytes:
            raise AgentError(
                f"the agent endpoint answered more than {self.max_output_bytes} bytes",
                "raise resolve.agent.max_output_kb",
            )
        try:
            content = json.loads(raw.decode("utf-8"))["choices"][0]["message"]["content"]
            doc: dict[str, Any] = json.loads(content)
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, IndexError, TypeError) as exc:
            raise AgentError(
                f"the agent endpoint's answer is not a JSON completion ({exc.__class__.__name__})",
                "the model must answer one JSON object (response_format json_object)",
            ) from None
        return doc


AGENT_KEYS_VAR = "FORKSYNC_AGENT_KEY_ENV"


def agent_key_names(env: Mapping[str, str]) -> frozenset[str]:
    """The variable names a repository's ``resolve.agent.key_env`` may name: those the operator
    lists in ``FORKSYNC_AGENT_KEY_ENV`` (comma-separated), never the App's own secrets."""
    from workers.testing.sandbox import SECRET_NAMES

    names = {n.strip() for n in (env.get(AGENT_KEYS_VAR) or "").split(",") if n.strip()}
    return frozenset(
        n for n in names if n.upper() not in SECRET_NAMES and not n.upper().startswith("GIT_CONFIG_")
    )


def from_config(cfg: AgentConfig, command: Sequence[str] | None = None) -> Agent | None:
    """The configured agent (``command`` overrides the config's, as ``forksync resolve --agent`` does:
    the operator's own command, which keeps the environment)."""
    limit = cfg.max_output_kb * 1024
    if command:
        return CommandAgent(tuple(command), cfg.timeout_s, limit, inherit_env=True)
    if cfg.command:
        return CommandAgent(cfg.command, cfg.timeout_s, limit)
    if cfg.url:
        return HttpAgent(cfg.url, cfg.key_env, cfg.model, cfg.timeout_s, limit)
    return None


def _log(repo_path: str, rev: str, paths: Sequence[str], limit: int) -> list[dict[str, str]]:
    if limit <= 0:
        return []
    out = run_git(repo_path, ["log", f"-n{limit}", "--format=%H%x00%s", rev, "--", *paths], check=False)
    rows = []
    for line in out.decode("utf-8", "replace").splitlines():
        sha, _, subject = line.partition("\x00")
        if sha:
            rows.append({"sha": sha, "subject": subject})
    return rows


def build_request(
    repo: pygit2.Repository,
    pick: pygit2.Commit,
    onto: str | None,
    files: Sequence[tuple[Conflict, Merged | None]],
    history_commits: int = 5,
) -> dict[str, Any]:
    """The agent's request for the files the deterministic pipeline left."""
    entries = []
    for conflict, merged in files:
        entry: dict[str, Any] = {
            "path": conflict.path,
            "base": conflict.base,
            "ours": conflict.ours,
            "theirs": conflict.theirs,
            "diff3": merged.raw if merged is not None else None,
            "fork_history": _log(repo.path, onto, [conflict.path], history_commits) if onto else [],
        }
        entries.append(entry)
    paths = [c.path for c, _ in files]
    related = _log(repo.path, str(pick.parents[0].id), paths, history_commits) if pick.parents else []
    return {
        "protocol": PROTOCOL,
        "upstream_commit": str(pick.id),
        "subject": pick.message.splitlines()[0] if pick.message else "",
        "message": pick.message,
        "files": entries,
        "related_upstream_commits": related,
    }


def agent_step(
    agent: Agent,
    repo: pygit2.Repository,
    *,
    onto: str | None = None,
    checks: Sequence[rails.Check] = (),
    history_commits: int = 5,
) -> Callable[[pygit2.Commit, Sequence[tuple[Conflict, Merged | None]]], dict[str, FileOutcome]]:
    """An ``AgentStep`` for :func:`resolve_pick`: ask the agent once for all files left, rails on each answer."""

    def step(pick: pygit2.Commit, files: Sequence[tuple[Conflict, Merged | None]]) -> dict[str, FileOutcome]:
        request = build_request(repo, pick, onto, files, history_commits)
        return ask_files(agent, request, files, checks)

    return step


def ask_files(
    agent: Agent,
    request: dict[str, Any],
    files: Sequence[tuple[Conflict, Merged | None]],
    checks: Sequence[rails.Check] = (),
) -> dict[str, FileOutcome]:
    """Ask, validate, and put every answered file through the rails; errors leave all files waiting."""
    paths = [c.path for c, _ in files]
    try:
        answers = parse_answer(agent.ask(request), paths)
    except AgentError as exc:
        return {p: FileOutcome(p, waiting=Waiting(p, f"the agent failed: {exc.one_line()}")) for p in paths}
    out: dict[str, FileOutcome] = {}
    for conflict, merged in files:
        answer = answers.get(conflict.path)
        if answer is None:
            out[conflict.path] = FileOutcome(
                conflict.path, waiting=Waiting(conflict.path, f"the agent {agent.name} left this file out")
            )
            continue
        if answer.defer is not None or answer.resolved is None:
            out[conflict.path] = FileOutcome(
                conflict.path,
                waiting=Waiting(conflict.path, f"the agent {agent.name} deferred to a human: {answer.defer}"),
            )
            continue
        if conflict.ours is None or conflict.theirs is None:
            continue
        merge = (
            merged if merged is not None else git_merge(conflict.ours, conflict.base or "", conflict.theirs)
        )
        out[conflict.path] = check_candidate(
            conflict,
            merge,
            answer.resolved,
            strategy=f"{model.AGENT}:{agent.name}",
            action=answer.action,
            reason=answer.reason,
            checks=checks,
        )
    return out
