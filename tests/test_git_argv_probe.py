"""Probe of issue 14 finding 2 over the whole source: every network git command forksync builds
(fetch, push, ls-remote, clone) puts ``--`` before its URLs and refs, so a value from outside
(a config's URL, a PR's branch name) can never be read as an option. Read with ``ast``: any call
to a git runner (``repo.git``, ``run_git``, ``remote_git``...) whose arguments (or a list among
them) start with a network verb must also hold a ``"--"``."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NETWORK = {"fetch", "push", "ls-remote", "clone"}


def _strings(node: ast.AST) -> list[str]:
    """String constants among a call's positional arguments, lists flattened, in order."""
    out: list[str] = []
    items = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
    for item in items:
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            out.append(item.value)
        elif isinstance(item, (ast.List, ast.Tuple)):
            out.extend(_strings(item))
    return out


def _callee(call: ast.Call) -> str:
    """The called name (``repo.git`` -> ``git``, ``run_git`` -> ``run_git``)."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def offenders() -> list[str]:
    found = []
    for path in sorted([*ROOT.glob("workers/**/*.py"), *ROOT.glob("core/**/*.py")]):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or "git" not in _callee(node).lower():
                continue
            words = [w for arg in node.args for w in _strings(arg)]
            verbs = [w for w in words[:3] if w in NETWORK]
            if verbs and "--" not in words:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: git {verbs[0]} without --")
    return found


def test_every_network_git_argv_ends_its_options_with_a_double_dash() -> None:
    assert offenders() == []


def test_the_probe_sees_a_fetch_without_double_dash(tmp_path: Path) -> None:
    call = ast.parse('repo.git("fetch", "--quiet", remote, "+refs/heads/x:y")').body[0]
    assert isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)
    words = [w for arg in call.value.args for w in _strings(arg)]
    assert _callee(call.value) == "git" and "fetch" in words[:3] and "--" not in words
