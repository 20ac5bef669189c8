"""Matmul with masks: shapes that are not multiples of the block, tall/skinny, K smaller than a block."""

from __future__ import annotations

import pytest
import torch

from workers.kernels import device
from workers.kernels.kernels import matmul

SHAPES: tuple[tuple[int, int, int], ...] = (
    ((513, 257, 129), (1, 4096, 64), (1000, 1, 333), (2048, 2048, 2048))
    if device.big()
    else ((37, 29, 45), (1, 17, 33), (40, 3, 7))
)


@pytest.mark.parametrize("dtype", device.DTYPES, ids=str)
@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul_matches_torch(dtype: torch.dtype, mnk: tuple[int, int, int]) -> None:
    unsupported = device.bf16_dot_unsupported()
    if dtype == torch.bfloat16 and unsupported:
        pytest.skip(unsupported)
    m, n, k = mnk
    dev = device.device()
    a = torch.randn(m, k, dtype=dtype, device=dev)
    b = torch.randn(k, n, dtype=dtype, device=dev)
    tol = device.MATMUL[dtype]
    expected = (a.double() @ b.double()).to(dtype)
    # The error of a K-long dot product grows like sqrt(K).
    scale = max(1.0, (k / 64) ** 0.5)
    torch.testing.assert_close(matmul(a, b), expected, atol=tol.atol * scale, rtol=tol.rtol)


@pytest.mark.parametrize("dtype", device.DTYPES, ids=str)
def test_matmul_of_transposed_view_matches_torch(dtype: torch.dtype) -> None:
    unsupported = device.bf16_dot_unsupported()
    if dtype == torch.bfloat16 and unsupported:
        pytest.skip(unsupported)
    dev = device.device()
    a = torch.randn(21, 35, dtype=dtype, device=dev).t()  # non-contiguous: strides matter
    b = torch.randn(21, 13, dtype=dtype, device=dev)
    tol = device.MATMUL[dtype]
    torch.testing.assert_close(
        matmul(a, b), (a.double() @ b.double()).to(dtype), atol=tol.atol, rtol=tol.rtol
    )
