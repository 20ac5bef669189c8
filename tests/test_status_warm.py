"""The warm ``forksync status``: the remembered answer only while nothing it depends on moved."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fixtures.ledger import CliResult, ForkedPair, run_cli
from workers.cli import warm
from workers.engine import pair as pair_module
from workers.engine.ledger import records as ledger_module

Forked = Callable[[], ForkedPair]
ROOT = Path(__file__).resolve().parent.parent

# Run status in a fresh interpreter and report which heavy modules it imported.
PROBE = (
    "import sys\n"
    "from workers.cli import main\n"
    "rc = main(sys.argv[1:])\n"
    "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('yaml', 'argparse', 'pygit2', 'typing')"
    " or m.startswith(('workers.engine', 'bot.')))\n"
    "sys.stderr.write('LOADED ' + ' '.join(heavy) + '\\n')\n"
    "sys.exit(rc)\n"
)


def _records() -> list[Path]:
    return sorted(Path(warm.cache_root(), "warm-status").glob("*.json"))


def _probe(*argv: str) -> tuple[str, str, list[str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=env, check=True
    )
    err_lines = proc.stderr.splitlines()
    loaded = err_lines[-1].removeprefix("LOADED ").split()
    return proc.stdout, "\n".join(err_lines[:-1]), loaded


def test_warm_status_prints_the_cold_answer_without_importing_the_engine(forked: Forked) -> None:
    """A repeated status prints byte-for-byte the cold answer and imports no engine, YAML or argparse."""
    p = forked()
    a, b = p.up(10), p.up(11)
    p.pick(b)
    args = ("status", "--upstream", str(p.upstream.path), "--fork", str(p.fork.path))
    for extra in ((), ("--json",)):
        cold_out, cold_err, cold_loaded = _probe(*args, *extra)
        warm_out, warm_err, warm_loaded = _probe(*args, *extra)
        assert "workers.engine.ledger" in cold_loaded  # the first run computed it
        assert (warm_out, warm_err) == (cold_out, cold_err)
        assert warm_loaded == [], warm_loaded
    assert a[:12] in warm_out or a in warm_out


def _fresh(p: ForkedPair, *extra: str) -> CliResult:
    """The answer with the warm records removed (what a cold status says now)."""
    for record in _records():
        record.unlink()
    return p.status(*extra)


def test_each_dependency_of_the_answer_invalidates_it(forked: Forked, tmp_path: Path) -> None:
    """A new fork commit, an upstream commit, a decision, the config file and remote.origin.url
    each change the answer; the warm path never repeats the stale one."""
    p = forked()
    a = p.up(10)
    first = p.status().json()
    assert first["pending"] == 1 and _records()

    p.pick(a)  # fork branch moves
    now = p.status()
    assert now.json() != first and now.json()["picked"] == 1
    assert now.out == _fresh(p).out

    b = p.up(11)  # upstream branch moves
    assert p.status().json()["upstream_tip"] == b

    assert p.mark(b, "wont_port").code == 0  # the decisions notes ref moves
    assert p.status().json()["wont_port"] == 1

    p.fork.commit("Port (#2)\n\nhttps://github.com/other/repo/pull/11", {"x": "1\n"})
    cfg = tmp_path / "cfg.yml"
    cfg.write_text("upstream: {url: https://github.com/other/repo}\n")
    p.mark(b, "clear")
    assert p.status("--config", str(cfg)).json()["picked"] == 2  # the body link names upstream
    cfg.write_text("upstream: {url: https://github.com/elsewhere/repo}\n")
    assert p.status("--config", str(cfg)).json()["picked"] == 1  # same path, new content

    assert p.status().json()["picked"] == 2  # upstream url unknown: any non-fork link counts
    p.upstream.git("remote", "add", "origin", "https://github.com/elsewhere/repo")
    assert p.status().json()["picked"] == 1  # remote.origin.url now names another upstream
    assert p.status().out == _fresh(p).out


def test_packed_refs_are_read(forked: Forked) -> None:
    """Refs packed by git gc are read from packed-refs: still answered warm, still invalidated."""
    p = forked()
    a = p.up(10)
    p.pick(a)
    p.fork.git("pack-refs", "--all")
    p.upstream.git("pack-refs", "--all")
    cold = p.status()
    assert warm.answer(["--upstream", str(p.upstream.path), "--fork", str(p.fork.path), "--json"]) == 0
    b = p.up(11)
    p.upstream.git("pack-refs", "--all")
    assert warm.answer(["--upstream", str(p.upstream.path), "--fork", str(p.fork.path), "--json"]) is None
    assert p.status().json()["upstream_tip"] == b != cold.json()["upstream_tip"]


def test_a_ref_moving_during_the_run_is_not_remembered(
    forked: Forked, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the fork moves while status computes, the answer is printed but not kept for later."""
    p = forked()
    a = p.up(10)
    import workers.cli.status as status_cli

    real = status_cli.load_status

    def racing(*args: object, **kwargs: object) -> object:
        result = real(*args, **kwargs)  # type: ignore[arg-type]
        p.pick(a)  # lands after the pair was read
        return result

    monkeypatch.setattr(status_cli, "load_status", racing)
    raced = p.status()
    assert raced.json()["picked"] == 0
    assert _records() == []
    monkeypatch.setattr(status_cli, "load_status", real)
    assert p.status().json()["picked"] == 1


def test_unusual_arguments_and_urls_take_the_normal_path(forked: Forked) -> None:
    """URLs, unknown or repeated options and missing repositories are left to the normal path."""
    p = forked()
    p.up(10)
    up, fk = str(p.upstream.path), str(p.fork.path)
    assert p.status().code == 0
    for argv in (
        ["--upstream", f"file://{up}", "--fork", fk, "--json"],
        ["--upstream", up, "--fork", fk, "--json", "--json"],
        ["--upstream", up, "--fork", fk, "--bogus"],
        ["--upstream", up, "--fork", fk, "--fork", fk],
        ["--upstream", up],
        ["--upstream", up, "--fork", str(p.fork.path / "missing")],
        ["--ups", up, "--fork", fk, "--json"],
    ):
        assert warm.answer(argv) is None, argv
    bad = run_cli("status", "--upstream", up, "--fork", fk, "--bogus")
    assert bad.code == 2 and "--bogus" in bad.err


def test_worktree_fork_is_answered_by_the_normal_path(forked: Forked, tmp_path: Path) -> None:
    """A fork given as a linked worktree (.git is a file) is never answered warm, and is right."""
    p = forked()
    a = p.up(10)
    p.pick(a)
    tree = tmp_path / "wt"
    p.fork.git("worktree", "add", "-q", "-b", "side", str(tree))
    args = ["--upstream", str(p.upstream.path), "--fork", str(tree), "--fork-branch", "main", "--json"]
    assert run_cli("status", *args).json()["picked"] == 1
    assert warm.answer(args) is None


def test_warm_module_agrees_with_the_engine() -> None:
    """The warm path's copies of the cache location and ledger version match the engine's."""
    assert warm.LEDGER_VERSION == ledger_module.LEDGER_VERSION
    assert Path(warm.cache_root()) == pair_module.cache_root()
