"""Fused softmax, one row per program: odd row lengths (masked columns), every dtype."""

from __future__ import annotations

import pytest
import torch

from workers.kernels import device
from workers.kernels.kernels import softmax

SHAPES = ((1823, 781), (4, 1), (64, 4096)) if device.big() else ((7, 97), (3, 1), (2, 256))


@pytest.mark.parametrize("dtype", device.DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_softmax_matches_torch(dtype: torch.dtype, shape: tuple[int, int]) -> None:
    x = torch.randn(*shape, dtype=dtype, device=device.device()) * 4
    tol = device.ELEMENTWISE[dtype]
    expected = torch.softmax(x.float(), dim=1).to(dtype)
    out = softmax(x)
    torch.testing.assert_close(out, expected, atol=tol.atol, rtol=tol.rtol)
    # Rows sum to one: a masked-out column leaking -inf or garbage in would break this.
    torch.testing.assert_close(
        out.float().sum(dim=1), torch.ones(shape[0], device=x.device), atol=2e-2, rtol=0
    )
