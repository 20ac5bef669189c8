"""Vector add: masked tail (sizes not a multiple of the block), every dtype."""

from __future__ import annotations

import pytest
import torch

from workers.kernels import device
from workers.kernels.kernels import vector_add

SIZES = (98_432 + 3, 1, 4097) if device.big() else (1, 257, 1000)


@pytest.mark.parametrize("dtype", device.DTYPES, ids=str)
@pytest.mark.parametrize("n", SIZES)
def test_vector_add_matches_torch(dtype: torch.dtype, n: int) -> None:
    x = torch.randn(n, dtype=dtype, device=device.device())
    y = torch.randn(n, dtype=dtype, device=device.device())
    tol = device.ELEMENTWISE[dtype]
    expected = (x.float() + y.float()).to(dtype)
    torch.testing.assert_close(vector_add(x, y), expected, atol=tol.atol, rtol=tol.rtol)
