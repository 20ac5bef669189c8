"""README's layout section matches the tree: every package and module a newcomer can open under
core/, bot/ and workers/ (one level into each package) is named there."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Packages whose modules are named one by one (cli/ and kernels/ are described as a whole).
LISTED = (
    "core",
    "core/github",
    "core/render",
    "bot",
    "workers",
    "workers/engine",
    "workers/engine/recognise",
    "workers/engine/partition",
    "workers/engine/ledger",
    "workers/testing",
    "workers/jobs",
    "workers/adapters",
    "workers/app",
    "workers/tasks",
    "workers/commands",
    "workers/demo",
)


def layout() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Layout\n", 1)[1]
    return section.split("```", 2)[1]


def names(package: str) -> set[str]:
    out = set()
    for child in (ROOT / package).iterdir():
        if child.name.startswith(("_", ".")):
            continue
        if child.is_dir() and (child / "__init__.py").exists():
            out.add(child.name)
        elif child.suffix == ".py":
            out.add(child.stem)
    return out


def test_every_module_is_named_in_the_layout() -> None:
    """A module added without a word in README's layout fails here."""
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", layout()))
    missing = sorted(f"{pkg}/{name}" for pkg in LISTED for name in names(pkg) if name not in words)
    assert missing == []


def test_the_layout_names_nothing_that_is_gone() -> None:
    """Each package the layout names with a slash (``engine/``, ``jobs/``…) exists."""
    named = set(re.findall(r"\b([a-z_]+)/(?=[\s(:,)])", layout()))
    dirs = {p.name for p in ROOT.rglob("*") if p.is_dir() and "__pycache__" not in p.parts}
    assert named - dirs == set()
