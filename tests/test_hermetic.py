"""The tests need nothing beside the clone: no path outside the repository in their sources."""

from __future__ import annotations

import re
from pathlib import Path

from tests.datafiles import DATA, GITHUB_PAYLOADS, REST_RECORDINGS

ROOT = Path(__file__).resolve().parents[1]
# An absolute path into this workplace or the folder above the clone (where `shared/` used to sit).
OUTSIDE = re.compile(r"""["'](/work/|/workspace/shared|\.\./shared)|parents\[[2-9]\]\s*/""")


def test_no_test_source_names_a_path_outside_the_repository() -> None:
    """Tests and fixtures read data from tests/data/, never from beside the clone (benchmarks may
    read the real data sets they measure on)."""
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for folder in ("tests",)
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path.name != "test_hermetic.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert offenders == []


def test_vendored_data_carries_its_licences() -> None:
    """Each vendored folder keeps its licence and a note of where it came from."""
    assert DATA.is_relative_to(ROOT)
    assert (GITHUB_PAYLOADS / "LICENSE.octokit-webhooks").is_file() and (
        GITHUB_PAYLOADS / "README.md"
    ).is_file()
    assert (REST_RECORDINGS / "COPYING.LESSER.PyGithub").is_file() and (
        REST_RECORDINGS / "README.md"
    ).is_file()
    assert len(list(GITHUB_PAYLOADS.glob("*.json"))) >= 12
