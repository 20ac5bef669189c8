"""The ``resolve:`` section of .github/forksync.yml: defaults, the agent, checks, and errors quoting the line."""

from __future__ import annotations

import pytest

from core.config import DEFAULT_RULES_OFF, RESOLVE_RULES, ConfigError, load_repo_config
from workers.engine.resolve.strategies import NAMED


def test_defaults_have_no_agent_and_the_standard_memory_ref() -> None:
    """An empty config: no agent, no checks, memory at refs/forksync/resolutions."""
    cfg = load_repo_config("").resolve
    assert not cfg.agent.configured and cfg.checks == () and cfg.memory_ref == "refs/forksync/resolutions"


def test_agent_command_and_checks_are_read() -> None:
    """A command agent and a per-suffix check."""
    cfg = load_repo_config(
        "resolve:\n  agent:\n    command: [python3, agent.py]\n    timeout_s: 9\n"
        '  checks:\n    ".c": [cc, -fsyntax-only, "{file}"]\n'
    ).resolve
    assert cfg.agent.command == ("python3", "agent.py") and cfg.agent.timeout_s == 9
    assert cfg.checks == ((".c", ("cc", "-fsyntax-only", "{file}")),)


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("resolve:\n  agent:\n    command: [a]\n    url: https://x/v1\n", "either command or url"),
        ("resolve:\n  agent:\n    url: ftp://x\n", "expected an http(s) URL"),
        ("resolve:\n  agent:\n    url: https://x/v1\n    key_env: sk-123abc\n", "environment variable name"),
        ('resolve:\n  checks:\n    ".c": [cc, -fsyntax-only]\n', "must name {file}"),
        ("resolve:\n  agent:\n    command: python3 agent.py\n", "expected a list of arguments"),
        ("resolve:\n  memory_ref: resolutions\n", "a ref under refs/"),
        ("resolve:\n  agnet: {}\n", "unknown key"),
        ("resolve:\n  rules_off: [token_merge]\n", "unknown resolution rule 'token_merge'"),
    ],
)
def test_bad_resolve_config_names_the_line(text: str, expect: str) -> None:
    """Each mistake is a ConfigError with file:line and a remedy."""
    with pytest.raises(ConfigError) as info:
        load_repo_config(text)
    assert expect in str(info.value) and info.value.line is not None


def test_rules_off_names_pipeline_rules() -> None:
    """``rules_off`` takes the names the pipeline's rules record; the config's list is the pipeline's."""
    assert tuple(name for name, _ in NAMED) == RESOLVE_RULES
    cfg = load_repo_config("resolve:\n  rules_off: [token-merge, upstream-inserts]\n").resolve
    assert cfg.rules_off == ("token-merge", "upstream-inserts")
    assert load_repo_config("").resolve.rules_off == DEFAULT_RULES_OFF == ("upstream-inserts",)
    assert load_repo_config("resolve:\n  rules_off: []\n").resolve.rules_off == ()
