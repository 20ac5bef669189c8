"""Pack-wide set-up: choose the backend before any test module imports triton."""

from __future__ import annotations

import pytest
import torch

from workers.kernels import device

BACKEND_NOTE = device.ensure_backend()


def pytest_report_header(config: pytest.Config) -> str:
    return f"forksync kernel pack: {BACKEND_NOTE}"


@pytest.fixture(autouse=True)
def _seeded() -> None:
    torch.manual_seed(0)
