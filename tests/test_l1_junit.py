"""JUnit XML from pytest and lit: counts, test ids, failure text and locations; garbage is an outcome."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.fixtures.l1 import FAILING_TEST, PYTEST, PYTEST_ENV
from workers.testing.junit import parse_junit, parse_junit_file

LIT_XML = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites time="2.50">
<testsuite name="TRITON" tests="4" failures="1" skipped="1">
<testcase classname="TRITON.Conversion" name="tritongpu_to_llvm.mlir" time="0.41"/>
<testcase classname="TRITON.Conversion" name="amd/buffer_ops.mlir" time="0.22">
  <failure><![CDATA[Exit Code: 1

Command Output (stderr):
--
{root}/test/Conversion/amd/buffer_ops.mlir:12:11: error: CHECK: expected string not found in input
// CHECK: amdgpu.buffer_load
          ^
]]></failure>
</testcase>
<testcase classname="TRITON.Analysis" name="test-alias.mlir" time="0.01">
  <skipped message="Unsupported configuration"/>
</testcase>
<testcase classname="TRITON.Analysis" name="test-alignment.mlir" time="0.05"/>
</testsuite>
</testsuites>
"""


def test_real_pytest_results_counts_ids_and_location(tmp_path: Path) -> None:
    """pytest --junitxml: passes, failures, errors and skips are counted, ids are classname::name,
    and a failure carries its message, first lines and repository-relative file:line."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(
        FAILING_TEST
        + "import pytest\n\n\ndef test_ok():\n    pass\n\n\n@pytest.mark.skip(reason='later')\ndef test_skip():\n    pass\n\n\n"
        "@pytest.fixture\ndef broken():\n    raise RuntimeError('fixture broke')\n\n\ndef test_error(broken):\n    pass\n\n\n"
        "@pytest.mark.xfail(reason='known')\ndef test_xfail():\n    assert False\n"
    )
    out = tmp_path / "out.xml"
    subprocess.run(
        [*PYTEST, "tests", f"--junitxml={out}"],
        cwd=tmp_path,
        capture_output=True,
        check=False,
        env={**os.environ, **PYTEST_ENV},
    )
    report = parse_junit_file(out, root=tmp_path)
    assert report.readable and report.problem == ""
    assert (report.total, report.passed, report.failed, report.skipped) == (5, 1, 2, 2)
    by_id = {c.id: c for c in report.cases}
    bad = by_id["tests.test_a::test_adds_one"]
    assert bad.outcome == "failed" and "helper is off by one" in bad.message
    assert (bad.file, bad.line) == ("tests/test_a.py", 6)
    assert "assert helper(1) == 3" in bad.first_lines()
    assert by_id["tests.test_a::test_error"].outcome == "error"
    assert by_id["tests.test_a::test_xfail"].expected_failure
    assert not by_id["tests.test_a::test_skip"].expected_failure
    assert by_id["tests.test_a::test_ok"].file is None  # passes carry no location


def test_lit_xunit_results_with_filecheck_location(tmp_path: Path) -> None:
    """lit --xunit-xml-output: UNSUPPORTED is a skip; a FileCheck error gives the .mlir file:line."""
    test_file = tmp_path / "test" / "Conversion" / "amd" / "buffer_ops.mlir"
    test_file.parent.mkdir(parents=True)
    test_file.write_text("// RUN: true\n")
    report = parse_junit(LIT_XML.replace("{root}", str(tmp_path)), root=tmp_path)
    assert (report.total, report.passed, report.failed, report.skipped) == (4, 2, 1, 1)
    failure = report.failures[0]
    assert failure.id == "TRITON.Conversion::amd/buffer_ops.mlir"
    assert (failure.file, failure.line) == ("test/Conversion/amd/buffer_ops.mlir", 12)
    assert "expected string not found" in failure.message


def test_location_outside_the_checkout_is_dropped(tmp_path: Path) -> None:
    """A file:line that is not a file in the checkout gives no location (GitHub would reject it)."""
    report = parse_junit(LIT_XML.replace("{root}", "/elsewhere"), root=tmp_path)
    assert report.failures[0].file is None and report.failures[0].line is None


def test_truncated_xml_is_unreadable_not_an_exception(tmp_path: Path) -> None:
    """Truncated or garbage XML, an empty file, a foreign root and a missing file are each a clear
    'results unreadable' outcome with no test cases, never an exception."""
    truncated = parse_junit(LIT_XML[: len(LIT_XML) // 2], source="unit.xml")
    assert not truncated.readable and truncated.total == 0
    assert truncated.problem.startswith("results unreadable: unit.xml is not well-formed XML (line")
    assert not parse_junit(b"\x00\xff garbage", source="g.xml").readable
    assert "root <html>" in parse_junit("<html><body/></html>", source="h.xml").problem
    (tmp_path / "empty.xml").write_text("")
    assert parse_junit_file(tmp_path / "empty.xml").problem == "results unreadable: empty.xml is empty"
    missing = parse_junit_file(tmp_path / "nope.xml")
    assert not missing.readable and "did not write its JUnit XML" in missing.problem


def test_entity_expansion_bomb_is_refused() -> None:
    """Results come from the code under test: an entity-expansion bomb is unreadable, not a hang."""
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
        + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(8))
        + ']><testsuite><testcase name="&i;"/></testsuite>'
    )
    report = parse_junit(bomb)
    assert not report.readable


def test_exception_raised_in_a_library_is_located_at_the_test_line(tmp_path: Path) -> None:
    """When the crash site is outside the checkout (inside a library), the annotation goes to the
    deepest frame that is in the checkout: the test line that called it."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_lib.py").write_text(
        "import json\n\n\ndef test_parse():\n    json.loads('{not json')\n"
    )
    out = tmp_path / "out.xml"
    subprocess.run(
        [*PYTEST, "tests", f"--junitxml={out}"],
        cwd=tmp_path,
        capture_output=True,
        check=False,
        env={**os.environ, **PYTEST_ENV},
    )
    (failure,) = parse_junit_file(out, root=tmp_path).failures
    assert (failure.file, failure.line) == ("tests/test_lib.py", 5)
    assert "JSONDecodeError" in failure.message
