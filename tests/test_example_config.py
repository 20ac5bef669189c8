"""docs/forksync.example.yml: valid, and it shows every key the schema knows."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from core.config import RepoConfig, load_repo_config

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "forksync.example.yml"


def _fields(cls: Any) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def test_example_config_loads() -> None:
    """The shipped example is accepted by load_repo_config and differs from the defaults."""
    config = load_repo_config(EXAMPLE.read_text(), str(EXAMPLE))
    assert config != RepoConfig()
    assert config.upstream.url == "https://github.com/triton-lang/triton"
    assert "cmake/llvm-hash.txt" in config.risk.risky_paths


def test_example_config_documents_every_key() -> None:
    """Every section and key of the schema appears in the example (suites, benchmarks, workloads too)."""
    doc = yaml.safe_load(EXAMPLE.read_text())
    assert set(doc) == _fields(RepoConfig)
    for section in _fields(RepoConfig):
        cls = type(getattr(RepoConfig(), section))
        if not dataclasses.is_dataclass(cls):  # owners: a mapping of path globs, shown with examples
            assert isinstance(doc[section], dict) and doc[section], section
            continue
        assert set(doc[section]) == _fields(cls), section
    suite_keys = set().union(*(set(s) for s in doc["l1"]["suites"]))
    config = load_repo_config(EXAMPLE.read_text())
    assert suite_keys == _fields(type(config.l1.suites[0]))
    assert set(doc["l2"]["benchmarks"][0]) == _fields(type(config.l2.benchmarks[0]))
    assert set(doc["l2"]["benchmarks"][0]["metrics"][0]) == _fields(type(config.l2.benchmarks[0].metrics[0]))
    assert set(doc["l3"]["workloads"][0]) == _fields(type(config.l3.workloads[0]))
