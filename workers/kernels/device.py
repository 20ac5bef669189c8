"""Where the pack runs (CUDA or the CPU interpreter), which dtypes it checks, and their tolerances.

Import this before ``triton``: when no CUDA device is visible it sets ``TRITON_INTERPRET=1``,
which Triton reads when a kernel is decorated.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

INTERPRET_VAR = "TRITON_INTERPRET"


def cuda_visible() -> bool:
    """True when torch sees a usable CUDA device."""
    try:
        return bool(torch.cuda.is_available() and torch.cuda.device_count() > 0)
    except Exception:  # a broken driver must read as "no device", not crash the pack
        return False


def why_no_cuda() -> str:
    """Why torch sees no CUDA device, in words a user can act on."""
    if getattr(torch.version, "cuda", None) is None:
        hint = (
            " although an NVIDIA device is present (/dev/nvidia0)" if os.path.exists("/dev/nvidia0") else ""
        )
        return (
            f"torch {torch.__version__} is a CPU-only build{hint}; install a CUDA build of torch "
            "to run the pack natively"
        )
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) == "":
        return "CUDA_VISIBLE_DEVICES is empty"
    return "no CUDA device visible (torch.cuda.is_available() is False)"


def interpreting() -> bool:
    return os.environ.get(INTERPRET_VAR, "") not in ("", "0")


def ensure_backend() -> str:
    """Choose the backend; set the interpreter when no GPU is visible. Returns a one-line note."""
    if interpreting():
        return f"{INTERPRET_VAR}=1 is set: kernels run in Triton's CPU interpreter"
    if cuda_visible():
        return f"CUDA device: {torch.cuda.get_device_name(0)} (native Triton compilation)"
    os.environ[INTERPRET_VAR] = "1"
    return f"{why_no_cuda()}: set {INTERPRET_VAR}=1, kernels run in Triton's CPU interpreter"


def device() -> str:
    """The torch device kernels' tensors live on."""
    return "cpu" if interpreting() else "cuda"


DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


# Per dtype, for outputs of O(1) magnitude computed in fp32 and stored in the dtype: about two
# units in the last place of the stored type.
ELEMENTWISE = {
    torch.float32: Tolerance(1e-5, 1e-5),
    torch.float16: Tolerance(2e-3, 2e-3),
    torch.bfloat16: Tolerance(1.6e-2, 1.6e-2),
}
# Matmul: fp32 inputs go through TF32 tensor cores on the GPU (10-bit mantissa), and the output
# of a K-long dot product is O(sqrt(K)).
MATMUL = {
    torch.float32: Tolerance(2e-2, 1e-2),
    torch.float16: Tolerance(2e-2, 1e-2),
    torch.bfloat16: Tolerance(8e-2, 2e-2),
}

# Triton's interpreter stores bfloat16 as raw uint16 bits: loads, stores and explicit casts
# are right, but tl.dot on bf16 operands multiplies the bits as integers (checked with
# Triton 3.9: errors of 1e10 on a 37x29x45 product). Kernels that upcast before computing are
# fine; tl.dot on bf16 is genuinely unsupported there.
BF16_DOT_IN_INTERPRETER = (
    "bf16 tl.dot is not supported by Triton's CPU interpreter (it stores bf16 as uint16 and "
    "multiplies the raw bits); this case runs natively on a GPU"
)


def bf16_dot_unsupported() -> str | None:
    return BF16_DOT_IN_INTERPRETER if interpreting() else None


def big() -> bool:
    """Full sizes on a GPU; small ones in the interpreter so the pack runs in seconds on a CPU."""
    return not interpreting()
