"""Row reductions (sum, max) over rows longer than one block, with a masked tail, every dtype."""

from __future__ import annotations

import pytest
import torch

from workers.kernels import device
from workers.kernels.kernels import row_max, row_sum

SHAPES = ((1031, 5003), (1, 1), (64, 64)) if device.big() else ((6, 77), (1, 1), (3, 64))


@pytest.mark.parametrize("dtype", device.DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_row_sum_matches_torch(dtype: torch.dtype, shape: tuple[int, int]) -> None:
    x = torch.randn(*shape, dtype=dtype, device=device.device())
    tol = device.ELEMENTWISE[dtype]
    expected = x.double().sum(dim=1).to(dtype)
    scale = max(1.0, shape[1] ** 0.5)  # a sum of n O(1) terms is O(sqrt(n))
    torch.testing.assert_close(row_sum(x), expected, atol=tol.atol * scale, rtol=tol.rtol)


@pytest.mark.parametrize("dtype", device.DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_row_max_is_exact(dtype: torch.dtype, shape: tuple[int, int]) -> None:
    # All-negative input: a masked tail read as 0 instead of -inf would win the max.
    x = -torch.rand(*shape, dtype=dtype, device=device.device()) - 1
    assert torch.equal(row_max(x), x.max(dim=1).values)
