"""``forksync plan`` and ``forksync bundle`` start fast: they import none of the bot's server-side
stack (PyGithub, Celery, Flask, Redis) nor torch/triton, and PyYAML only when there is a config file
to read. Checked in a fresh interpreter on a real pair, after the command has run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.bundling import TritonPair

ROOT = Path(__file__).resolve().parents[1]
HEAVY = (
    "github",
    "celery",
    "kombu",
    "flask",
    "werkzeug",
    "redis",
    "sqlalchemy",
    "torch",
    "triton",
    "requests",
)

PROBE = """
import contextlib, io, json, sys
from workers.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _modules_after(*argv: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["code"] == 0
    return {name.split(".")[0] for name in result["modules"]}


@pytest.mark.parametrize("command", ["plan", "bundle"])
def test_plan_and_bundle_import_no_server_stack(triton_pair: TritonPair, command: str) -> None:
    """After a real run, none of PyGithub, Celery/kombu, Flask, Redis, SQLAlchemy, torch or triton was imported."""
    loaded = _modules_after(command, *triton_pair.args, "--json")
    assert "pygit2" in loaded and "workers" in loaded  # the probe ran the engine for real
    assert "yaml" in loaded  # the fork has a .github/forksync.yml: it had to be read
    assert sorted(loaded.intersection(HEAVY)) == []


def test_yaml_is_not_imported_without_a_config_file(triton_pair: TritonPair) -> None:
    """A fork without .github/forksync.yml (and no --config) plans without importing PyYAML."""
    triton_pair.fork.commit("drop the config", {".github/forksync.yml": None})
    loaded = _modules_after("plan", *triton_pair.args, "--json")
    assert "pygit2" in loaded
    assert "yaml" not in loaded and "tempfile" not in loaded
