"""``forksync kernels``: run the built-in Triton kernel pack (pytest) natively on a GPU, or in the CPU interpreter."""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from core.errors import ForksyncError
from workers.testing.junit import parse_junit_file


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "kernels",
        help="run the built-in Triton kernel correctness pack",
        description=(
            "Run the built-in Triton kernel pack (vector add, fused softmax, layer norm, matmul with odd "
            "shapes, reductions; fp32, fp16, bf16) against torch references. On a machine with a CUDA "
            "device it compiles natively; with none visible it sets TRITON_INTERPRET=1 and says so."
        ),
    )
    p.add_argument("--junitxml", metavar="FILE", help="also write JUnit XML results to FILE")
    p.add_argument("-k", dest="keyword", metavar="EXPR", help="only tests matching this pytest -k expression")
    p.add_argument(
        "--interpret", action="store_true", help="use Triton's CPU interpreter even if a GPU is visible"
    )
    p.add_argument(
        "--timeout", type=int, default=1800, help="seconds before the run is stopped (default 1800)"
    )
    p.set_defaults(func=run)


def backend_env(force_interpret: bool) -> tuple[dict[str, str], str]:
    """The environment for the pack and a one-line note saying where the kernels run."""
    for module in ("torch", "triton"):
        if importlib.util.find_spec(module) is None:
            raise ForksyncError(
                f"the kernel pack needs {module}, which is not installed",
                "pip install 'torch==2.13.0' then pip install -e '.[kernels]'",
            )
    env = dict(os.environ)
    if force_interpret:
        env["TRITON_INTERPRET"] = "1"
        return env, "Triton CPU interpreter (TRITON_INTERPRET=1, --interpret)"
    if env.get("TRITON_INTERPRET", "") not in ("", "0"):
        return env, "Triton CPU interpreter (TRITON_INTERPRET is set in the environment)"
    from workers.kernels.device import cuda_visible, why_no_cuda

    if cuda_visible():
        import torch

        env.pop("TRITON_INTERPRET", None)
        return env, f"CUDA device {torch.cuda.get_device_name(0)} (native compilation)"
    env["TRITON_INTERPRET"] = "1"
    return env, f"Triton CPU interpreter (set TRITON_INTERPRET=1: {why_no_cuda()})"


def run(args: argparse.Namespace) -> int:
    from workers.kernels import PACK_DIR

    env, note = backend_env(args.interpret)
    # The pack needs no third-party pytest plugins, and autoloading them (hypothesis, celery...)
    # costs seconds and lets the host environment change the run.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    print(f"forksync kernels: running the pack on {note}", flush=True)
    with tempfile.TemporaryDirectory(prefix="forksync-kernels-") as tmp:
        xml = Path(args.junitxml).resolve() if args.junitxml else Path(tmp) / "kernels.xml"
        xml.parent.mkdir(parents=True, exist_ok=True)
        argv = [
            sys.executable,
            "-m",
            "pytest",
            str(PACK_DIR),
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            # The pack is self-contained: no ini file of whatever project it is run from applies.
            "-c",
            os.devnull,
            "--rootdir",
            str(PACK_DIR),
            f"--junitxml={xml}",
        ]
        if args.keyword:
            argv += ["-k", args.keyword]
        started = time.monotonic()
        try:
            code = subprocess.run(argv, env=env, timeout=args.timeout, check=False).returncode
        except subprocess.TimeoutExpired:
            print(f"forksync kernels: FAILED: stopped after {args.timeout} s", flush=True)
            return 1
        elapsed = time.monotonic() - started
        report = parse_junit_file(xml)
    if not report.readable:
        print(f"forksync kernels: FAILED: {report.problem} (pytest exit code {code})")
        return 1
    verdict = "passed" if code == 0 and report.failed == 0 and report.total else "FAILED"
    print(
        f"forksync kernels: {verdict}: {report.passed} passed, {report.failed} failed, "
        f"{report.skipped} skipped in {elapsed:.1f} s on {note}"
        + (f"; JUnit XML in {args.junitxml}" if args.junitxml else "")
    )
    if report.total == 0:
        print("forksync kernels: no test ran: check the -k expression")
        return 1
    return 0 if verdict == "passed" else 1
