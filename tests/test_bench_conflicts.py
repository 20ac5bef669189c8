"""The conflict benchmark runs on a vendored subset of real backport conflicts (hermetic)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from benchmarks.bench_conflicts import main, norm_loose, run_case

SUBSET = Path(__file__).parent / "data" / "conflict-bench"


def test_subset_scores_exact_matches_and_proposes_nothing_wrong() -> None:
    """On the subset: the two files a rule can take match the humans exactly; nothing wrong is proposed."""
    results = [r for c in sorted(SUBSET.glob("case-*")) for r in run_case(c)]
    assert len(results) == 7
    exact = sorted((r.case, r.path) for r in results if r.exact)
    assert exact == [("case-005", ".github/workflows/deploy.yml"), ("case-081", "src/functions.h")]
    # case-044 doc.txt: the branch adds a line and moves a pin on the line upstream bumps (sphinx 4.3.2 -> 4.3.1
    # vs -> 5.1.1); the token merge only matched the human by a coincidence of digits, and edits clashing on one
    # line are declined now.
    assert not [
        r for r in results if r.case == "case-044" and r.path == "requirements/doc.txt" and r.proposed
    ]
    assert not [r for r in results if r.proposed and not r.exact]
    # The baselines are computed from git on the same files: --ours is right on case-005 (the branch already
    # pinned a newer action than upstream's bump), --theirs is not; the pin rule keeps the newer one.
    assert [(r.baselines["ours"], r.baselines["theirs"]) for r in results if r.case == "case-005"] == [
        (True, False)
    ]
    # case-085: a product version (#define) is the branch's own: no rule takes it.
    assert not [r for r in results if r.case == "case-085" and r.proposed]


def test_report_and_json(tmp_path: Path) -> None:
    """The table has both halves and all; --json writes one record per file."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([str(SUBSET), "--json", str(tmp_path / "r.json")]) == 0
    assert "held out (even)" in out.getvalue() and "**wrong and proposed**" in out.getvalue()
    assert len(json.loads((tmp_path / "r.json").read_text())) == 7


def test_loose_comparison_ignores_whitespace_and_import_order() -> None:
    """'Same after whitespace and import order' equates reordered imports and re-indented lines."""
    assert norm_loose("import b\nimport a\n\nx =  1\n") == norm_loose("import a\nimport b\nx = 1\n")
    assert norm_loose("x = 1\n") != norm_loose("x = 2\n")
