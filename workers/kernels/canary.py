"""The runner canary, as a program: is a GPU visible, and does a small Triton kernel compile and
run correctly on it? Prints one JSON line ``{"ok", "backend", "reason", "seconds"}``; exit 0 or 1.

Run as ``python -m workers.kernels.canary [--interpret]`` in a fresh process, so that a driver
crash kills the canary and not the worker. ``--interpret`` checks the CPU interpreter instead
(CI, and runners whose suites are declared ``gpu: false``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def check(interpret: bool) -> tuple[bool, str, str]:
    """(ok, backend, reason). Never raises: every failure is a reason."""
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    else:
        os.environ.pop("TRITON_INTERPRET", None)
    try:
        import torch
    except Exception as exc:
        return False, "none", f"torch does not import: {exc}"
    from workers.kernels import device

    if not interpret and not device.cuda_visible():
        return False, "none", device.why_no_cuda()
    backend = "interpreter" if interpret else f"cuda:{torch.cuda.get_device_name(0)}"
    try:
        from workers.kernels.kernels import vector_add

        n = 4099  # not a multiple of the block: the masked tail is exercised too
        x = torch.arange(n, dtype=torch.float32, device=device.device())
        y = torch.full((n,), 0.5, dtype=torch.float32, device=device.device())
        out = vector_add(x, y)
        if not interpret:
            torch.cuda.synchronize()
        if not torch.equal(out.cpu(), (x + y).cpu()):
            bad = int((out.cpu() != (x + y).cpu()).sum())
            return False, backend, f"vector add gave wrong results in {bad} of {n} elements"
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return False, backend, f"Triton kernel failed to compile or run: {type(exc).__name__}: {first}"
    return True, backend, ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workers.kernels.canary")
    parser.add_argument(
        "--interpret", action="store_true", help="check Triton's CPU interpreter instead of a GPU"
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    ok, backend, reason = check(args.interpret)
    print(
        json.dumps(
            {"ok": ok, "backend": backend, "reason": reason, "seconds": round(time.monotonic() - started, 3)}
        )
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
