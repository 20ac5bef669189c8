"""Suites, trunk commands and the canary run without the App's secrets, as the suite user, bounded."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from core.config import Suite
from tests.gitrepo import GitRepo
from workers.testing import sandbox
from workers.testing.canary import run_canary
from workers.testing.checkout import run_command
from workers.testing.suites import checkout, run_suite

MakeRepo = Callable[[str], GitRepo]

SECRETS = {
    "GITHUB_PRIVATE_KEY": "-----BEGIN RSA PRIVATE KEY-----\nMIIsecretkeymaterial0001\n-----END RSA PRIVATE KEY-----",
    "FORKSYNC_WEBHOOK_SECRET": "whsec-secret0002",
    "REDIS_URL": "redis://:hunter2secret0003@127.0.0.1:6390/0",
    "FORKSYNC_DATABASE_URL": "postgresql://forksync:pgsecret0004@db/forksync",
    "GITHUB_TOKEN": "ghs_secret0005",
    "GIT_CONFIG_VALUE_0": "Authorization: Basic secret0006",
    "AWS_SECRET_ACCESS_KEY": "awssecret0007",
}

# Prints the whole environment, one NAME=value a line, and writes a passing JUnit file.
DUMP = """\
import os, sys
for k, v in sorted(os.environ.items()):
    print(f"{k}={v}")
path = os.environ.get("FORKSYNC_JUNIT")
if path:
    open(path, "w").write('<testsuite tests="1"><testcase classname="env" name="dump"/></testsuite>')
"""


@pytest.fixture
def secrets_in_worker(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    monkeypatch.setenv(sandbox.PASS_VAR, "MY_TOOLCHAIN,REDIS_URL")  # a secret listed by mistake stays out
    monkeypatch.setenv("MY_TOOLCHAIN", "/opt/llvm")
    monkeypatch.setenv("UNLISTED_VAR", "not-for-suites")
    return SECRETS


def _env_of(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith(" "))


def _assert_clean(text: str) -> None:
    for name, value in SECRETS.items():
        for piece in value.splitlines():
            assert piece not in text or piece.startswith("-----"), f"{name} reached the suite"


def test_suite_environment_holds_no_secret(
    make_repo: MakeRepo, tmp_path: Path, secrets_in_worker: dict[str, str]
) -> None:
    """An L1 suite sees PATH, locale, GPU vars, operator pass-through and its config env; no secret;
    HOME is the job's own temp dir, not the worker's."""
    repo = make_repo("r")
    repo.commit("dump", {"dump.py": DUMP})
    suite = Suite(name="env", run=(sys.executable, "dump.py"), env={"FROM_CONFIG": "yes"}, timeout=60)
    with checkout(repo.path, "HEAD", tmp_path / "wt") as (workdir, _):
        out = run_suite(suite, workdir, tmp_path / "logs")
    log = Path(out.log_path).read_text()
    assert out.status == "passed", out.reason
    _assert_clean(log)
    env = _env_of(log)
    assert (
        env["CUDA_VISIBLE_DEVICES"] == "3"
        and env["MY_TOOLCHAIN"] == "/opt/llvm"
        and env["FROM_CONFIG"] == "yes"
    )
    assert "UNLISTED_VAR" not in env and "REDIS_URL" not in env and "PATH" in env
    assert env["HOME"] != os.environ["HOME"] and "forksync-job-" in env["HOME"]
    assert not Path(env["HOME"]).exists(), "the job's home is removed after the run"


def test_trunk_command_and_canary_hold_no_secret(tmp_path: Path, secrets_in_worker: dict[str, str]) -> None:
    """L2/bisection commands and the runner canary get the same allow-listed environment."""
    (tmp_path / "dump.py").write_text(DUMP)
    result = run_command([sys.executable, "dump.py"], tmp_path, env={"BENCH": "1"}, timeout=60)
    _assert_clean(result.output)
    assert _env_of(result.stdout)["BENCH"] == "1"

    fake_python = tmp_path / "fake-python"
    fake_python.write_text(
        f"#!/bin/sh\nenv > {tmp_path / 'canary-env'}\n"
        'echo \'{"ok": true, "backend": "cpu", "reason": ""}\'\n'
    )
    fake_python.chmod(0o755)
    assert run_canary(python=str(fake_python), timeout=30).ok
    canary_env = (tmp_path / "canary-env").read_text()
    _assert_clean(canary_env)
    assert "PYTHONPATH=" in canary_env


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    """A suite that times out takes its background children with it."""
    pidfile = tmp_path / "child.pid"
    script = f"import subprocess, sys, time\np = subprocess.Popen(['sleep', '300'])\nopen({str(pidfile)!r}, 'w').write(str(p.pid))\ntime.sleep(300)\n"
    (tmp_path / "hang.py").write_text(script)
    result = run_command([sys.executable, "hang.py"], tmp_path, timeout=2)
    assert result.timed_out and result.exit_code is None
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{pid}/stat") as f:  # a zombie waiting for init counts as gone
            if f.read().split()[2] == "Z":
                break
        time.sleep(0.1)
    else:
        pytest.fail("the suite's grandchild survived the timeout")


def test_output_is_bounded_head_and_tail(
    make_repo: MakeRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A suite that prints 20 MB keeps a log of at most the limit: its head, a cut note, its tail."""
    monkeypatch.setattr(sandbox, "OUTPUT_LIMIT", 1024 * 1024)
    repo = make_repo("r")
    repo.commit(
        "chatty",
        {
            "chatty.py": "import sys\nprint('FIRST')\nfor _ in range(20):\n    sys.stdout.write('x' * (1 << 20))\nprint()\nprint('LAST')\n"
        },
    )
    suite = Suite(name="chatty", run=(sys.executable, "chatty.py"), timeout=60)
    with checkout(repo.path, "HEAD", tmp_path / "wt") as (workdir, _):
        out = run_suite(suite, workdir, tmp_path / "logs")
    log = Path(out.log_path).read_bytes()
    assert len(log) < 1024 * 1024 + 1024
    assert log.startswith(b"FIRST") and b"LAST" in log[-64:] and b"bytes of output cut here" in log


SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin")


@pytest.mark.skipif(
    os.geteuid() != 0 or SYSTEM_PYTHON is None, reason="switching user needs root and a system python3"
)
def test_suite_user_cannot_read_the_key_file(
    make_repo: MakeRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With FORKSYNC_SUITE_USER the suite runs as that user: the App key file (0600) is unreadable,
    the suite can still write its results and build in its checkout."""
    key = tmp_path / "app.pem"
    key.write_text("KEYFILESECRET0008")
    key.chmod(0o600)
    monkeypatch.setenv("GITHUB_PRIVATE_KEY_PATH", str(key))
    monkeypatch.setenv(sandbox.USER_VAR, "nobody")
    probe = (
        DUMP
        + f"""
try:
    print("KEY:", open({str(key)!r}).read())
except PermissionError:
    print("KEY: denied")
open("built.o", "w").write("ok")
print("UID:", os.getuid())
"""
    )
    repo = make_repo("r")
    repo.commit("probe", {"probe.py": probe})
    suite = Suite(name="probe", run=(str(SYSTEM_PYTHON), "probe.py"), timeout=60)
    with checkout(repo.path, "HEAD", sandbox.worktree_parent(tmp_path / "wt")) as (workdir, _):
        out = run_suite(suite, workdir, tmp_path / "logs")
    log = Path(out.log_path).read_text()
    assert "KEY: denied" in log and "KEYFILESECRET0008" not in log
    assert f"UID: {65534}" in log
    assert out.status == "passed", (out.reason, log)
