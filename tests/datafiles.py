"""Where the tests' data lives: ``tests/data/``, each folder with its licence and provenance.

Tests read nothing outside the repository: a clone anywhere, with nothing beside it, passes.
"""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
GITHUB_PAYLOADS = DATA / "github-payloads"  # octokit/webhooks examples (MIT)
FORKSYNC_PAYLOADS = DATA / "payloads"  # written for forksync's own cases
REST_RECORDINGS = DATA / "github-rest-recordings"  # PyGithub's ReplayData (LGPL-3.0)
