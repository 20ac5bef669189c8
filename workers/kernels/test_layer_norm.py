"""Layer norm forward with weight and bias: odd widths, every dtype."""

from __future__ import annotations

import pytest
import torch

from workers.kernels import device
from workers.kernels.kernels import layer_norm

SHAPES = ((1151, 8192), (3, 1), (17, 777)) if device.big() else ((5, 123), (3, 1), (2, 64))


@pytest.mark.parametrize("dtype", device.DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_layer_norm_matches_torch(dtype: torch.dtype, shape: tuple[int, int]) -> None:
    dev = device.device()
    x = torch.randn(*shape, dtype=dtype, device=dev) * 3 + 1
    w = torch.rand(shape[1], dtype=dtype, device=dev) + 0.5
    b = torch.randn(shape[1], dtype=dtype, device=dev)
    tol = device.ELEMENTWISE[dtype]
    expected = torch.nn.functional.layer_norm(x.float(), (shape[1],), w.float(), b.float(), eps=1e-5).to(
        dtype
    )
    # Normalised values reach a few units: allow a couple of ulps at that magnitude.
    torch.testing.assert_close(layer_norm(x, w, b), expected, atol=tol.atol * 4, rtol=tol.rtol)
