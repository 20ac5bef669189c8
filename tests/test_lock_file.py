"""The dev lock file pins every package pyproject.toml asks for (a fresh machine installs from it)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement string (extras and versions dropped)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def test_every_declared_dependency_is_pinned_in_the_lock() -> None:
    """A dependency added to pyproject without `scripts/dev lock` would be missing on a fresh machine
    (CI's clean clone), where mypy and the tests then see a different world than the developer's venv."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_name(r) for r in project["dependencies"]}
    for extra in ("dev", "kernels"):
        declared |= {_name(r) for r in project["optional-dependencies"][extra]}
    lines = (ROOT / "requirements-dev.lock").read_text().splitlines()
    pinned = {_name(line) for line in lines if line.strip() and not line.startswith("#")}
    assert declared - pinned == set(), "run `scripts/dev lock` and commit requirements-dev.lock"
