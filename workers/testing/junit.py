"""Read JUnit XML written by pytest ``--junitxml`` or lit ``--xunit-xml-output`` into plain records.

Results come from code under test (a PR), so the reader never raises on bad input: a missing,
empty, truncated, oversized or foreign file yields a :class:`JUnitReport` with ``readable``
False and a ``problem`` that says which, and the watchdog turns that into an omitted suite.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# Results files above this are refused rather than parsed: a runaway suite must not take the
# worker's memory with it. Real suites (Triton's ~20k tests) stay far below.
MAX_RESULTS_BYTES = 64 * 1024 * 1024

# The outcome of one test case, as JUnit says it.
PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"

# How many lines of a failure's text the summaries keep ("the first lines of each").
FIRST_LINES = 12

# "path/to/file.py:42: AssertionError" (pytest's last traceback line), "file.mlir:12:5: error: ..."
# (FileCheck, MLIR, compilers), and  'File "x.py", line 3' (Python tracebacks, last one wins).
_PYTEST_LOC = re.compile(r"^(?P<path>[^\s:][^:\n]*?\.\w+):(?P<line>\d+):(?:\d+:)?(?:\s|$)")
_PY_TRACEBACK_LOC = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)')


@dataclass(frozen=True)
class TestCase:
    """One test case: its id (``classname::name``), outcome and, for failures, what went wrong."""

    __test__ = False  # not a pytest test class, whatever its name says

    id: str
    outcome: str
    time_s: float = 0.0
    message: str = ""
    text: str = ""
    file: str | None = None
    line: int | None = None
    # pytest's xfail shows as a skip with type "pytest.xfail": an expected failure, not a skip.
    expected_failure: bool = False

    @property
    def failed(self) -> bool:
        return self.outcome in (FAILED, ERROR)

    def first_lines(self, limit: int = FIRST_LINES) -> str:
        """The message, then the first lines of the failure text: what a summary shows."""
        lines = [ln.rstrip() for ln in self.text.splitlines() if ln.strip()]
        head = [self.message.strip()] if self.message.strip() else []
        for ln in lines:
            if len(head) >= limit:
                break
            if head and ln.strip() == head[0]:
                continue
            head.append(ln)
        return "\n".join(head)


@dataclass(frozen=True)
class JUnitReport:
    """All test cases of one results file; ``readable`` False means there are none to trust."""

    cases: tuple[TestCase, ...] = ()
    readable: bool = True
    problem: str = ""

    @property
    def total(self) -> int:
        return len(self.cases)

    @property
    def passed(self) -> int:
        return sum(1 for c in self.cases if c.outcome == PASSED)

    @property
    def failed(self) -> int:
        return sum(1 for c in self.cases if c.failed)

    @property
    def skipped(self) -> int:
        return sum(1 for c in self.cases if c.outcome == SKIPPED)

    @property
    def failures(self) -> tuple[TestCase, ...]:
        return tuple(c for c in self.cases if c.failed)


def unreadable(problem: str) -> JUnitReport:
    return JUnitReport(readable=False, problem=problem)


def parse_junit_file(path: Path, *, root: Path | None = None, cwd: str = ".") -> JUnitReport:
    """Parse a results file; a missing or unreadable one is a report that says so, never an error."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return unreadable(f"no results file at {path.name}: the suite did not write its JUnit XML")
    except OSError as exc:
        return unreadable(f"results unreadable: {path.name}: {exc.strerror or exc}")
    if size == 0:
        return unreadable(f"results unreadable: {path.name} is empty")
    if size > MAX_RESULTS_BYTES:
        return unreadable(
            f"results unreadable: {path.name} is {size} bytes, over the {MAX_RESULTS_BYTES} limit"
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        return unreadable(f"results unreadable: {path.name}: {exc.strerror or exc}")
    return parse_junit(data, source=path.name, root=root, cwd=cwd)


def parse_junit(
    data: bytes | str, *, source: str = "results", root: Path | None = None, cwd: str = "."
) -> JUnitReport:
    """Parse JUnit XML text. ``root`` is the checkout, ``cwd`` the suite's directory inside it:
    with them, failure locations are made repository-relative and kept only when the file exists.
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    if not data.strip():
        return unreadable(f"results unreadable: {source} is empty")
    try:
        # Python's expat (2.4+) refuses entity expansion bombs; external entities are never fetched.
        top = ET.fromstring(data)
    except ET.ParseError as exc:
        line, column = exc.position
        return unreadable(
            f"results unreadable: {source} is not well-formed XML (line {line}, column {column})"
        )
    if top.tag == "testsuite":
        suites: list[ET.Element] = [top]
    elif top.tag == "testsuites":
        suites = list(_all_suites(top))
    else:
        return unreadable(
            f"results unreadable: {source} has root <{top.tag}>, not <testsuites> or <testsuite>"
        )
    cases = [_case(el, root, cwd) for suite in suites for el in suite.findall("testcase")]
    return JUnitReport(cases=tuple(cases))


def _all_suites(top: ET.Element) -> Iterable[ET.Element]:
    # Nested <testsuite> elements occur (some runners group by file); take each once.
    return top.iter("testsuite")


def _case(el: ET.Element, root: Path | None, cwd: str) -> TestCase:
    classname = el.get("classname", "").strip()
    name = el.get("name", "").strip() or "<unnamed>"
    test_id = f"{classname}::{name}" if classname else name
    try:
        time_s = float(el.get("time", "0") or 0)
    except ValueError:
        time_s = 0.0
    outcome, message, text, xfail = PASSED, "", "", False
    for child in el:
        tag = child.tag
        if tag in ("failure", "error"):
            outcome = FAILED if tag == "failure" else ERROR
            message = (child.get("message") or "").strip()
            text = (child.text or "").strip()
            break
        if tag == "skipped":
            outcome = SKIPPED
            message = (child.get("message") or "").strip()
            text = (child.text or "").strip()
            xfail = child.get("type", "") == "pytest.xfail"
    file, line = None, None
    if outcome in (FAILED, ERROR):
        file, line = _location(el, text, root, cwd)
        if not message:
            message = _last_error_line(text)
    return TestCase(
        id=test_id,
        outcome=outcome,
        time_s=time_s,
        message=message,
        text=text,
        file=file,
        line=line,
        expected_failure=xfail,
    )


def _last_error_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith("E ") or "error:" in ln.lower():
            return ln.removeprefix("E").strip()
    return lines[-1] if lines else ""


def _location(el: ET.Element, text: str, root: Path | None, cwd: str) -> tuple[str | None, int | None]:
    """Where the failure happened, repository-relative; None when the output does not say."""
    candidates: list[tuple[str, int]] = []
    if el.get("file") and (el.get("line") or "").isdigit():
        # xunit1 attributes: the line is 0-based in pytest's output.
        candidates.append((el.get("file", ""), int(el.get("line", "0")) + 1))
    # Innermost first: the crash site if it is in the checkout, else the deepest frame that is
    # (an exception raised inside torch is annotated at the test line that called it).
    for ln in reversed(text.splitlines()):
        m = _PYTEST_LOC.match(ln.strip())
        if m:
            candidates.append((m.group("path"), int(m.group("line"))))
    candidates += [(path, int(line)) for path, line in reversed(_PY_TRACEBACK_LOC.findall(text))]
    for path, line in candidates:
        rel = _relative(path, root, cwd)
        if rel is not None and line > 0:
            return rel, line
    return None, None


def _relative(path: str, root: Path | None, cwd: str) -> str | None:
    if root is None:
        return path if not Path(path).is_absolute() else None
    root = root.resolve()
    p = Path(path)
    full = p if p.is_absolute() else (root / cwd / p)
    try:
        full = full.resolve()
        rel = full.relative_to(root)
    except (ValueError, OSError):
        return None
    # An annotation on a file that is not in the checkout would be rejected by GitHub.
    return rel.as_posix() if full.is_file() else None
