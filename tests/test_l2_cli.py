"""``forksync l2``: local trunk runs recorded in the store, judged, and a new break bisected."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from tests.fixtures.trunk import TrunkCommit
from workers.cli import main

MakeTrunk = Callable[[str, Sequence[TrunkCommit]], tuple[Path, list[str]]]

BENCH = """\
import json, pathlib
root = pathlib.Path(__file__).parent
print(json.dumps({"metrics": {"tokens_per_s": float((root / "speed").read_text())}}))
"""
CONFIG = (
    "l2:\n  benchmarks:\n    - name: decode\n"
    f"      run: [{sys.executable}, bench.py]\n"
    "      metrics: [{name: tokens_per_s, direction: higher, threshold: 5}]\n"
)


def test_local_nightlies_then_a_drop_is_judged_and_bisected(
    make_trunk: MakeTrunk, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runs at three commits build the baseline; the fourth regresses (exit 1) and names the culprit."""
    commits = [TrunkCommit("base", {".github/forksync.yml": CONFIG, "bench.py": BENCH, "speed": "1000\n"})]
    for i in range(1, 16):
        commits.append(
            TrunkCommit("Cache less" if i == 11 else f"c{i}", {"speed": "800\n" if i >= 11 else "1000\n"})
        )
    path, shas = make_trunk("fork", commits)
    common = ["l2", "--repo", str(path), "--data-dir", str(tmp_path / "data")]
    for i in (0, 4, 8):
        assert main([*common, "--ref", shas[i]]) == 0
    capsys.readouterr()
    assert main([*common, "--ref", shas[15], "--json"]) == 1
    [out] = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "regressed" and out["bisect"]["culprit"] == shas[11]
    assert main([*common, "--ref", shas[15]]) == 1
    text = capsys.readouterr().out
    assert text.startswith(f"decode: regressed at {shas[15][:12]}")
    assert f"bad since {shas[15][:12]}" in text  # the second sighting does not bisect again


def test_usage_errors(make_trunk: MakeTrunk, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No benchmarks configured, an unknown benchmark, or a bad ref: exit 2 with the remedy."""
    path, _ = make_trunk("fork", [TrunkCommit("base", {".github/forksync.yml": CONFIG, "bench.py": BENCH})])
    assert main(["l2", "--repo", str(path), "--benchmark", "nope", "--data-dir", str(tmp_path)]) == 2
    assert "no L2 benchmark named nope; known: decode" in capsys.readouterr().err
    assert main(["l2", "--repo", str(path), "--ref", "zzz"]) == 2
    assert "--ref zzz is not a commit" in capsys.readouterr().err
    empty = tmp_path / "empty.yml"
    empty.write_text("l2: {}\n")
    assert main(["l2", "--repo", str(path), "--config", str(empty)]) == 2
    assert "no l2.benchmarks" in capsys.readouterr().err
