"""Failure signatures: a normalised fingerprint of a failure, to group errors and dedupe issues.

``signature(text, test_id)`` strips what varies between runs of the same bug (numbers, hex
addresses, temp paths, timestamps, test parameters, line numbers) and keeps what identifies
it (the exception type and message, the lit check that failed, the crashing frame or the
assertion). ``group(failures)`` buckets failures by that key. Pure functions, no I/O.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from workers.testing.infra import infrastructure_cause

# --------------------------------------------------------------------------- records

KINDS = ("python", "lit", "crash", "assertion", "infra", "timeout", "generic")


@dataclass(frozen=True)
class Signature:
    """What identifies a failure. ``key`` is a short stable hash: same bug → same key."""

    key: str
    title: str
    kind: str
    # The normalised text the key hashes (without the test), for humans and debugging.
    essence: str
    # The test id with parameters stripped, or None when the failure is not tied to one test.
    test: str | None = None
    # Why this failure is infrastructure (kind "infra"), e.g. "disk full"; empty otherwise.
    infra_reason: str = ""


@dataclass(frozen=True)
class Failure:
    """One failure as a test runner reports it: which test (if any) and the text it printed."""

    test_id: str | None
    text: str


@dataclass(frozen=True)
class Group:
    """Failures that share a signature, in the order they were seen."""

    signature: Signature
    failures: tuple[Failure, ...]

    @property
    def count(self) -> int:
        return len(self.failures)

    @property
    def tests(self) -> tuple[str, ...]:
        """The distinct (original) test ids of the group, in first-seen order."""
        seen: dict[str, None] = {}
        for f in self.failures:
            if f.test_id:
                seen.setdefault(f.test_id, None)
        return tuple(seen)


# --------------------------------------------------------------------------- normalising

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_TIMESTAMP = re.compile(
    r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?\b"
    r"|\b\d{2}:\d{2}:\d{2}(\.\d+)?\b"
    r"|\b\d{4}-\d{2}-\d{2}\b"
)
_HEX_ADDR = re.compile(r"\b0x[0-9a-fA-F]+\b")
# Long hex runs with at least one digit: shas, uuids, object ids (not words like "deadbeef").
_HEX_RUN = re.compile(r"\b(?=[0-9a-fA-F-]*\d)[0-9a-fA-F]{8,}(?:-[0-9a-fA-F]{4,})*\b")
_TEMP_PATH = re.compile(
    r"(?:/private)?(?:/tmp|/var/tmp|/var/folders|/dev/shm|[A-Za-z]:\\[^\s]*\\Temp)[^\s:'\"),]*"
    r"|\S*pytest-of-[^\s/]+/pytest-\d+[^\s:'\"),]*"
    r"|\btmp[a-z0-9_]{6,}\b"
)
# Durations ("3.5s", "120ms") and shapes ("128x64x32") vary with the run and the parameters.
_DURATION_SHAPE = re.compile(r"\b\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h)\b|\b\d+(?:x\d+)+\b")
_NUMBER = re.compile(r"(?<![A-Za-z_0-9.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![A-Za-z_])")
_SPACE = re.compile(r"\s+")


def normalise_test_id(test_id: str) -> str:
    """``tests/test_x.py::test_add[fp16-128]`` → ``tests/test_x.py::test_add`` (parameters stripped)."""
    text = test_id.strip()
    if not text.endswith("]"):
        return text
    # Parameters may nest brackets ("[a[1]-b]"): cut at the first "[" of the last name.
    head, sep, last = text.rpartition("::")
    cut = last.find("[")
    return f"{head}{sep}{last[:cut]}" if cut > 0 else text


def normalise(text: str) -> str:
    """Strip what varies between runs of one bug: temp paths, timestamps, addresses, numbers."""
    text = _ANSI.sub("", text)
    text = _TEMP_PATH.sub("<tmp>", text)
    text = _TIMESTAMP.sub("<time>", text)
    text = _HEX_ADDR.sub("<addr>", text)
    text = _HEX_RUN.sub("<hex>", text)
    text = _DURATION_SHAPE.sub("N", text)
    text = _NUMBER.sub("N", text)
    return _SPACE.sub(" ", text).strip()


def _short_path(path: str) -> str:
    """A source path reduced to what is stable across machines: its file name."""
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


# --------------------------------------------------------------------------- infrastructure

# Failures of the machine rather than the code: they must skip bisection and go to infra issues.
# The shared list lives in workers/testing/infra.py (L1 uses it too); these are the causes
# trunk runs meet beyond it.
_MORE_INFRA: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (reason, re.compile(pattern, re.IGNORECASE | re.MULTILINE))
    for reason, pattern in (
        ("network failure", r"Connection refused|Name or service not known"),
        ("runner lost", r"The runner has received a shutdown signal|lost communication with the server"),
        ("toolchain missing", r": command not found$|No such file or directory: '(nvcc|ptxas|clang|cmake)'"),
    )
)


def infra_reason(text: str) -> str:
    """Why ``text`` looks like an infrastructure failure ("out of disk space"...), or ''."""
    known = infrastructure_cause(text)
    if known is not None:
        return known.cause
    for reason, pattern in _MORE_INFRA:
        if pattern.search(text):
            return reason
    return ""


# --------------------------------------------------------------------------- extractors


@dataclass(frozen=True)
class _Essence:
    kind: str
    essence: str
    title: str
    # Crashes and assertions identify the bug by where it happened, whatever test tripped it.
    test_bound: bool = True


# LLVM's own crash banner, a stack dump, a signal or a fatal Python error.
_CRASH_MARK = re.compile(
    r"PLEASE submit a bug report|^Stack dump:|Segmentation fault|Fatal Python error"
    r"|^\s*#\d+\s+0x[0-9a-fA-F]+|signal SIG[A-Z]+|\bSIGSEGV\b|\bSIGABRT\b|Aborted \(core dumped\)"
    r"|Illegal instruction|Bus error|terminate called after throwing",
    re.MULTILINE,
)
_ASSERTION = re.compile(
    r"^(?:.*?: )?(?P<file>[^\s:]+):(?P<line>\d+): (?P<func>.*?): Assertion [`'](?P<cond>.*)' failed\.?\s*$",
    re.MULTILINE,
)
_LLVM_FATAL = re.compile(r"^(?:LLVM ERROR|UNREACHABLE executed at .*?:\d+!?)[: ]*(?P<msg>.*)$", re.MULTILINE)
_TERMINATE = re.compile(
    r"terminate called after throwing an instance of '(?P<type>[^']+)'(?:\s*what\(\):\s*(?P<what>.*))?"
)
# "#4 0x000055d5 mlir::foo(int) (/bin/x+0x2b3c)" (LLVM) or "#4  0x00007f in foo (a=1) at x.cpp:12" (gdb).
_NATIVE_FRAME = re.compile(r"^\s*#\d+\s+(?:0x[0-9a-fA-F]+\s+)?(?:in\s+)?(?P<sym>.+?)\s*$", re.MULTILINE)
_PY_FRAME = re.compile(r'File "(?P<path>[^"]+)", line \d+, in (?P<func>[\w<>.]+)')
_PYTEST_FRAME = re.compile(r"^(?P<path>[\w./\\-]+\.py):\d+: (?P<exc>[A-Za-z_][\w.]*)\s*$", re.MULTILINE)
_SIGNAL = re.compile(
    r"\b(SIG[A-Z]{3,5})\b|(Segmentation fault|Bus error|Illegal instruction|Aborted|Floating point exception)"
)
# Frames that say nothing about the bug: the crash machinery itself.
_BORING_FRAME = re.compile(
    r"llvm::sys::|SignalHandler|PrintStackTrace|RunSignalHandlers|CleanupOnSignal|__restore_rt|^\(/"
    r"|\b(raise|abort|gsignal|__GI_\w+|__assert_fail\w*|__libc_\w+|pthread_kill|__pthread_kill\w*"
    r"|_start|__clone\d*|start_thread|std::terminate|__cxa_\w+|__gnu_cxx::\w+|llvm_unreachable_internal"
    r"|llvm::report_fatal_error)\b|libc\.so|libpthread|libstdc\+\+|^\?\?|^0x[0-9a-fA-F]+$"
)
_PY_EXC = re.compile(
    r"^(?:E\s+)?(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Failed|Warning|Timeout))"
    r"(?::\s*(?P<msg>.*))?$",
    re.MULTILINE,
)
_PYTEST_SUMMARY = re.compile(r"^FAILED (?P<test>\S+) - (?P<type>[\w.]+)(?::\s*(?P<msg>.*))?$", re.MULTILINE)
_LIT_TEST = re.compile(r"\*{5,} TEST '(?P<name>[^']+)' FAILED \*{5,}")
_FILECHECK = re.compile(
    r"^(?P<loc>\S+?):\d+:\d+: error: (?P<what>(?:[A-Z][A-Z0-9_-]*)(?:-[A-Z]+)?:? .*)$", re.MULTILINE
)
_TIMEOUT = re.compile(r"\bTimed? ?out\b|\btimeout\b.*\bexceeded\b|Timeout \(\d+", re.IGNORECASE)


def _frames(text: str) -> list[str]:
    """Interesting native frames, innermost first: symbol names with addresses and args dropped."""
    out = []
    for m in _NATIVE_FRAME.finditer(text):
        sym = m.group("sym")
        sym = re.sub(r"\s+\((?:/|\S+\+0x)[^)]*\)\s*$", "", sym)  # "(/usr/bin/x+0x123)" module suffix
        sym = re.sub(r"\s+at\s+\S+$", "", sym)  # gdb "at file.cpp:12"
        sym = re.sub(r"\s+\S+\.(?:cpp|cc|c|h|hpp):\d+(?::\d+)?$", "", sym)  # "Signals.cpp:0:0"
        sym = re.sub(r"\s+\(.*=.*\)$", "", sym)  # gdb argument values "(a=1, b=0x0)"
        sym = re.sub(r"\s*\+\s*0x[0-9a-fA-F]+$", "", sym)
        sym = sym.strip()
        if not sym or _BORING_FRAME.search(sym):
            continue
        out.append(normalise(sym))
    return out


def _crash(text: str) -> _Essence | None:
    assertion = list(_ASSERTION.finditer(text))
    if assertion:
        a = assertion[-1]
        func = normalise(a.group("func"))
        cond = normalise(a.group("cond"))
        return _Essence(
            "assertion",
            f"assert {cond} in {func} ({_short_path(a.group('file'))})",
            f"Assertion `{cond}` failed in {_short_name(func)}",
            test_bound=False,
        )
    if not _CRASH_MARK.search(text):
        return None
    frames = _frames(text)
    fatal = _LLVM_FATAL.search(text)
    terminate = _TERMINATE.search(text)
    sig = _SIGNAL.search(text)
    if fatal:
        what = normalise(fatal.group(0))
    elif terminate:
        what = f"uncaught {terminate.group('type')}" + (
            f": {normalise(terminate.group('what'))}" if terminate.group("what") else ""
        )
    elif sig:
        what = _signal_name(sig.group(0))
    else:
        what = "crash"
    py_frames = _PY_FRAME.findall(text)
    if frames:
        where = " < ".join(frames[:2])
    elif py_frames:
        # faulthandler dumps list the most recent call first.
        path, func = py_frames[0]
        where = f"{_short_path(path)}:{func}"
    else:
        where = ""
    essence = f"{what} at {where}" if where else what
    title = f"{what} in {_short_name(frames[0])}" if frames else (f"{what} at {where}" if where else what)
    return _Essence("crash", essence, title, test_bound=not (frames or fatal))


def _signal_name(found: str) -> str:
    names = {
        "Segmentation fault": "SIGSEGV",
        "Bus error": "SIGBUS",
        "Illegal instruction": "SIGILL",
        "Aborted": "SIGABRT",
        "Floating point exception": "SIGFPE",
    }
    return names.get(found, found)


def _short_name(symbol: str) -> str:
    """``mlir::triton::gpu::getOrder(mlir::Attribute)`` → ``getOrder``: for titles only."""
    for name in re.findall(r"([A-Za-z_~][\w:~]*)\s*\(", symbol):
        if name not in ("decltype", "const", "static"):
            return str(name).rsplit("::", 1)[-1]
    return symbol


def _lit(text: str) -> _Essence | None:
    test = _LIT_TEST.search(text)
    check = _FILECHECK.search(text)
    if not test and not check:
        return None
    parts = []
    title_what = "lit test failed"
    if check:
        what = normalise(check.group("what"))
        parts.append(what)
        title_what = what
        # The check directive that did not match is the line under the error, e.g. "// CHECK: foo".
        after = text[check.end() :].lstrip("\n").splitlines()
        if after and not after[0].lstrip().startswith("^"):
            parts.append(normalise(after[0]))
    else:
        err = re.search(r"^(?:\S+: )?error: (.*)$", text, re.MULTILINE)
        if err:
            parts.append(normalise(err.group(1)))
            title_what = parts[-1]
        code = re.search(r"^Exit Code: (-?\d+)", text, re.MULTILINE)
        if code:
            parts.append(f"exit {code.group(1)}")  # the exit status says how it broke: keep it
    essence = " | ".join(parts) or "lit test failed"
    name = test.group("name") if test else None
    return _Essence("lit", essence, f"{_lit_short(name)}: {title_what}" if name else title_what)


def _lit_short(name: str) -> str:
    return name.split(" :: ", 1)[-1]


def _python(text: str) -> _Essence | None:
    matches = [m for m in _PY_EXC.finditer(text) if not m.group("type").endswith("Warning")]
    summary = _PYTEST_SUMMARY.search(text)
    if matches:
        m = matches[-1]
        exc_type, msg = m.group("type"), (m.group("msg") or "")
        if _weak(msg):
            msg = f"{msg} {_cause_after(text[m.end() :])}".strip()
    elif summary:
        exc_type, msg = summary.group("type"), (summary.group("msg") or "")
    else:
        return None
    msg = normalise(msg)[:200]
    frames = _PY_FRAME.findall(text)
    pytest_frames = _PYTEST_FRAME.findall(text)
    if frames:
        path, func = frames[-1]
        where = f"{_short_path(path)}:{func}"
    elif pytest_frames:
        where = _short_path(pytest_frames[-1][0])
    else:
        where = ""
    exc_short = exc_type.rsplit(".", 1)[-1]
    essence = f"{exc_short}: {msg}" + (f" @ {where}" if where else "")
    title = f"{exc_short}: {msg}" if msg else exc_short
    return _Essence("python", essence, title)


def _weak(msg: str) -> bool:
    """A message that names no problem, such as Triton's ``CompilationError: at 12:8:``."""
    return not re.search(r"[A-Za-z]{3,}", re.sub(r"\bat\b", "", msg))


_REPR_EXC = re.compile(r"^(?P<type>[A-Z]\w*(?:Error|Exception))\((?P<q>['\"])(?P<msg>.*)(?P=q)\)$")


def _cause_after(rest: str) -> str:
    """The last meaningful line after a weak message: the underlying error (not the source or caret)."""
    lines = [re.sub(r"^E\s+", "", line).strip() for line in rest.splitlines()]
    lines = [line for line in lines if line and not set(line) <= set("^~ ")]
    if not lines:
        return ""
    last = lines[-1]
    m = _REPR_EXC.match(last)  # AssertionError('...') as Triton re-raises it
    return f"{m.group('type')}: {m.group('msg')}" if m else last


def _generic(text: str) -> _Essence:
    if _TIMEOUT.search(text):
        return _Essence("timeout", "timed out", "timed out")
    lines = [normalise(line) for line in text.splitlines() if line.strip()]
    # The last line that says "error" is usually the one that matters; else the last line.
    chosen = next((line for line in reversed(lines) if "error" in line.lower()), lines[-1] if lines else "")
    chosen = chosen[:200]
    return _Essence("generic", chosen or "failed without output", chosen or "failed without output")


# --------------------------------------------------------------------------- API


def signature(failure_text: str, test_id: str | None = None) -> Signature:
    """The normalised fingerprint of one failure: same bug in another run → same ``key``.

    Test parameters are stripped from ``test_id``; the key includes the test for Python, lit
    and generic failures (the message alone is too weak: ``assert N == N`` is everywhere) and
    leaves it out for native crashes and assertions, where the crashing frame names the bug
    whatever test tripped it.
    """
    text = failure_text.replace("\r\n", "\n")
    test = normalise_test_id(test_id) if test_id else None
    reason = infra_reason(text)
    if reason:
        found = _Essence("infra", reason, f"infrastructure: {reason}", test_bound=False)
    else:
        found = _crash(text) or _lit(text) or _python(text) or _generic(text)
    bound_test = test if found.test_bound else None
    digest = hashlib.sha1(f"{found.kind}\0{bound_test or ''}\0{found.essence}".encode()).hexdigest()[:12]
    title = found.title
    if bound_test and found.kind != "lit":
        title = f"{_test_short(bound_test)}: {title}"
    if len(title) > 120:
        title = title[:119] + "…"
    return Signature(
        key=digest,
        title=title,
        kind=found.kind,
        essence=found.essence,
        test=test,
        infra_reason=reason,
    )


def _test_short(test: str) -> str:
    """``tests/test_x.py::TestA::test_add`` → ``test_x.py::TestA::test_add``."""
    path, sep, rest = test.partition("::")
    return f"{_short_path(path)}{sep}{rest}" if sep else test


def group(failures: Iterable[Failure]) -> list[Group]:
    """Bucket failures by signature; biggest group first, ties in first-seen order (deterministic)."""
    buckets: dict[str, tuple[Signature, list[Failure]]] = {}
    for failure in failures:
        sig = signature(failure.text, failure.test_id)
        if sig.key not in buckets:
            buckets[sig.key] = (sig, [])
        buckets[sig.key][1].append(failure)
    order = {key: i for i, key in enumerate(buckets)}
    groups = [Group(sig, tuple(items)) for sig, items in buckets.values()]
    return sorted(groups, key=lambda g: (-g.count, order[g.signature.key]))
