"""The built-in Triton kernel pack: correctness tests of common kernels against torch references.

It is L1's kernel suite, the runner canary, and a template for users' own kernel suites. The
tests are plain pytest files in this directory; ``forksync kernels`` runs them (natively on a
CUDA device, or with ``TRITON_INTERPRET=1`` on the CPU when none is visible).
"""

from __future__ import annotations

from pathlib import Path

PACK_DIR = Path(__file__).resolve().parent
