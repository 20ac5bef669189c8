"""Every ``forksync`` error is one line on stderr with exit status 2, and nothing is written.

Usage errors (unknown flags and commands, bad values, missing arguments) for every subcommand;
``serve`` refusing to start without its settings or on a busy port; broken pipes; the demo run
twice in one folder; a worktree whose metadata is gone.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fixtures.demo import DemoRuns
from tests.fixtures.ledger import CliResult, ForkedPair, run_cli
from workers.cli import SUBCOMMANDS

Forked = Callable[[], ForkedPair]
ROOT = Path(__file__).resolve().parents[1]
APP_ENV = (
    "GITHUB_APP_ID",
    "GITHUB_PRIVATE_KEY",
    "GITHUB_PRIVATE_KEY_PATH",
    "FORKSYNC_WEBHOOK_SECRET",
    "REDIS_URL",
)


def one_line_usage_error(result: CliResult) -> str:
    """The single stderr line of a refused command (asserting there is exactly one, and exit 2)."""
    lines = result.err.splitlines()
    assert result.code == 2, result
    assert len(lines) == 1 and lines[0].startswith("forksync: error: "), result.err
    assert "usage:" not in result.err and "Traceback" not in result.err
    return lines[0]


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_unknown_flag_of_every_subcommand_is_one_line(command: str) -> None:
    """`forksync CMD --no-such-flag` is one line and exit 2, for every subcommand."""
    one_line_usage_error(run_cli(command, "--no-such-flag"))


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_bad_values_and_stray_words_of_every_subcommand_are_one_line(command: str) -> None:
    """A value of the wrong type or a stray positional is one line too."""
    one_line_usage_error(run_cli(command, "--timeout", "soon", "stray", "words", "--port", "x"))


def test_unknown_flag_is_named_by_its_subcommand(tmp_path: Path) -> None:
    """With the required arguments present, the refusal names the flag and the subcommand's --help."""
    line = one_line_usage_error(
        run_cli("status", "--upstream", str(tmp_path), "--fork", str(tmp_path), "--bogus")
    )
    assert "unrecognized arguments: --bogus" in line and "see forksync status --help" in line


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["nosuch"], "invalid choice: 'nosuch'"),
        ([], "required: COMMAND"),
        (["bisect", "--repo", "."], "required: --good, --bad"),
        (["kernels", "--timeout", "soon"], "invalid int value: 'soon'"),
        (["serve", "--port", "eighty"], "invalid int value: 'eighty'"),
        (
            ["chain", "--upstream", "u", "--fork", "f", "#1", "remove", "--into", "c"],
            "--into goes with add only",
        ),
    ],
)
def test_usage_errors_are_one_line(argv: list[str], words: str) -> None:
    """Top-level and subcommand usage errors say what is wrong in one line (argparse's usage block is gone)."""
    assert words in one_line_usage_error(run_cli(*argv))


def test_bisect_without_a_command_is_one_line(tmp_path: Path) -> None:
    """bisect with GOOD and BAD but nothing after -- says where the command goes."""
    assert "put it after --" in one_line_usage_error(
        run_cli("bisect", "--repo", str(tmp_path), "--good", "a", "--bad", "b")
    )


@pytest.fixture
def no_app(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in APP_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FORKSYNC_DATA_DIR", raising=False)
    return tmp_path


def test_serve_without_the_app_says_what_is_missing_and_writes_nothing(no_app: Path) -> None:
    """No App id, key or webhook secret: serve names each, exits 2, and creates no .forksync/."""
    line = one_line_usage_error(run_cli("serve", "--port", "0"))
    for name in ("GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "FORKSYNC_WEBHOOK_SECRET"):
        assert name in line
    assert not (no_app / ".forksync").exists()


def test_serve_with_a_broken_key_says_so_without_echoing_it(
    no_app: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key that is not an RSA PEM is refused in one line that does not quote it."""
    monkeypatch.setenv("GITHUB_APP_ID", "123")
    monkeypatch.setenv(
        "GITHUB_PRIVATE_KEY", "-----BEGIN PRIVATE KEY-----\nsecretbytes\n-----END PRIVATE KEY-----\n"
    )
    monkeypatch.setenv("FORKSYNC_WEBHOOK_SECRET", "s")
    line = one_line_usage_error(run_cli("serve", "--port", "0"))
    assert "private key" in line and "secretbytes" not in line
    assert not (no_app / ".forksync").exists()


def test_serve_on_a_busy_port_is_one_line_and_writes_nothing(
    no_app: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A port in use: one line naming it and the remedy, exit 2, before .forksync/ is created."""
    monkeypatch.setenv("GITHUB_APP_ID", "123")
    monkeypatch.setenv("GITHUB_PRIVATE_KEY", _rsa_pem())
    monkeypatch.setenv("FORKSYNC_WEBHOOK_SECRET", "s")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        line = one_line_usage_error(run_cli("serve", "--port", str(port)))
    assert f"cannot listen on 127.0.0.1:{port}" in line and "--port" in line
    assert not (no_app / ".forksync").exists()


def _rsa_pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def test_plan_into_a_closed_pipe_is_quiet(forked: Forked) -> None:
    """`forksync plan | head`: the reader goes away; no traceback, SIGPIPE's status (141)."""
    p = forked()
    for n in range(10, 14):
        p.up(n)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "workers.cli",
            "plan",
            "--upstream",
            str(p.upstream.path),
            "--fork",
            str(p.fork.path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=dict(os.environ),
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before plan writes a byte
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(60) == 141
    assert err == ""


def test_demo_dir_is_reusable_and_a_foreign_folder_is_refused(tmp_path: Path) -> None:
    """`demo --dir D` twice works (it clears only what it wrote); a non-empty folder it did not make is refused."""
    from workers.cli.demo import MARKER, prepare_dir

    demo = tmp_path / "demo"
    prepare_dir(demo)
    (demo / "github").mkdir()
    (demo / "github" / "stale").write_text("left by the last run")
    (demo / "notes.txt").write_text("the user's")
    prepare_dir(demo)
    assert not (demo / "github").exists() and (demo / "notes.txt").exists() and (demo / MARKER).exists()
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "data").mkdir()
    line = one_line_usage_error(run_cli("demo", "--dir", str(foreign), "--no-loop"))
    assert "not made by forksync demo" in line and (foreign / "data").is_dir()


@pytest.mark.slow
def test_demo_twice_in_one_dir_runs_the_loop_both_times(demo_runs: DemoRuns) -> None:
    """The whole demo (the ingestion loop included) runs twice in one --dir, with the same story."""
    outputs = []
    for proc in (demo_runs.first, demo_runs.second):  # real processes (tests/fixtures/demo.py)
        assert proc.returncode == 0, proc.stderr[-2000:]
        outputs.append(
            [line for line in proc.stdout.splitlines() if "ledger moved" in line or "now " in line]
        )
    assert outputs[0] == outputs[1] and outputs[0]
    assert (demo_runs.dir / "cache").is_dir()  # the demo's pair caches stay with it, not in ~/.cache


def test_worktree_whose_metadata_is_gone_points_at_git_worktree_prune(forked: Forked, tmp_path: Path) -> None:
    """--fork at a linked worktree whose admin folder lost its HEAD: one line saying git worktree prune."""
    p = forked()
    linked = tmp_path / "linked"
    p.fork.git("worktree", "add", "-q", "--detach", str(linked))
    gitdir = (
        Path(p.fork.git("rev-parse", "--path-format=absolute", "--git-common-dir").strip())
        / "worktrees"
        / "linked"
    )
    (gitdir / "HEAD").unlink()
    line = one_line_usage_error(run_cli("status", "--upstream", str(p.upstream.path), "--fork", str(linked)))
    assert "git worktree prune" in line and "metadata is gone" in line
