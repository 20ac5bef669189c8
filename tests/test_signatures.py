"""Failure signatures on real-looking pytest, lit and C++ crash logs: variants group, near-misses do not."""

from __future__ import annotations

from workers.testing.signatures import Failure, group, infra_reason, normalise, normalise_test_id, signature

# --------------------------------------------------------------------------- pytest

PYTEST = """\
_________________________ test_matmul[{params}] _________________________

M = {m}, N = {n}, dtype = 'float16'

    @pytest.mark.parametrize("M,N,dtype", SHAPES)
    def test_matmul(M, N, dtype):
        a = torch.randn((M, N), device="cuda", dtype=getattr(torch, dtype))
>       torch.testing.assert_close(triton_mm(a, a.T), torch.mm(a, a.T))
E       AssertionError: Tensor-likes are not close!
E
E       Mismatched elements: {bad} / {total} ({pct}%)
E       Greatest absolute difference: {diff} at index ({i}, {j}) (up to 1e-05 allowed)

{root}/python/test/unit/language/test_matmul.py:{line}: AssertionError
----------------------------- Captured stderr call -----------------------------
[{stamp}] compiled kernel at {tmp}/triton_cache/{hexdir}/matmul_kernel.ptx (obj at {addr})
"""


def pytest_log(**over: object) -> str:
    values: dict[str, object] = dict(
        params="float16-128-64",
        m=128,
        n=64,
        bad=17,
        total=8192,
        pct=0.2,
        diff=0.0313,
        i=3,
        j=45,
        root="/home/ci/triton",
        line=142,
        stamp="2026-11-28 02:13:07.512",
        tmp="/tmp/pytest-of-ci/pytest-41",
        hexdir="3f9a0c1b2d4e5f60718293a4b5c6d7e8",
        addr="0x7f3c2a10b8d0",
    )
    values.update(over)
    return PYTEST.format(**values)


PY_TRACEBACK = """\
Traceback (most recent call last):
  File "{root}/python/triton/compiler/compiler.py", line {l1}, in compile
    next_module = compile_ir(module, metadata)
  File "{root}/python/triton/backends/nvidia/compiler.py", line {l2}, in {func}
    pm.run(mod)
{exc}: {msg}
"""


def test_pytest_variants_group_together() -> None:
    """The same assertion with other shapes, numbers, paths, timestamps and addresses is one signature."""
    a = signature(pytest_log(), "python/test/unit/language/test_matmul.py::test_matmul[float16-128-64]")
    b = signature(
        pytest_log(
            params="bfloat16-256-256",
            m=256,
            n=256,
            bad=3001,
            total=65536,
            pct=4.6,
            diff=1.5,
            i=0,
            j=7,
            root="/workspace/src/triton",
            line=151,
            stamp="2026-11-29T02:14:55Z",
            tmp="/tmp/pytest-of-runner/pytest-7",
            hexdir="aa01bb02cc03dd04ee05ff0611223344",
            addr="0x55d0c0ffee00",
        ),
        "python/test/unit/language/test_matmul.py::test_matmul[bfloat16-256-256]",
    )
    assert a.key == b.key
    assert a.kind == "python"
    assert a.test == "python/test/unit/language/test_matmul.py::test_matmul"
    assert "AssertionError: Tensor-likes are not close!" in a.title
    assert "128" not in a.essence and "0x7f3c" not in a.essence and "pytest-41" not in a.essence


def test_pytest_other_test_or_other_exception_is_a_different_signature() -> None:
    """Near-misses stay apart: the same message in another test, or another exception type in the same test."""
    base = signature(pytest_log(), "python/test/unit/language/test_matmul.py::test_matmul[float16-128-64]")
    other_test = signature(pytest_log(), "python/test/unit/language/test_matmul.py::test_matmul_tma[float16]")
    other_exc = signature(
        pytest_log()
        .replace("E       AssertionError: Tensor-likes", "E       ValueError: Tensor-likes")
        .replace(": AssertionError", ": ValueError"),
        "python/test/unit/language/test_matmul.py::test_matmul[float16-128-64]",
    )
    assert len({base.key, other_test.key, other_exc.key}) == 3


def test_python_traceback_keeps_innermost_frame_and_message() -> None:
    """A plain traceback: line numbers and roots vary freely; another function or message is another bug."""
    t1 = PY_TRACEBACK.format(
        root="/a", l1=290, l2=410, func="make_llir", exc="RuntimeError", msg="PassManager::run failed"
    )
    t2 = PY_TRACEBACK.format(
        root="/opt/b/site",
        l1=301,
        l2=398,
        func="make_llir",
        exc="RuntimeError",
        msg="PassManager::run failed",
    )
    other_func = PY_TRACEBACK.format(
        root="/a", l1=290, l2=410, func="make_ptx", exc="RuntimeError", msg="PassManager::run failed"
    )
    other_msg = PY_TRACEBACK.format(
        root="/a",
        l1=290,
        l2=410,
        func="make_llir",
        exc="RuntimeError",
        msg="PassManager::run crashed on layout",
    )
    assert signature(t1, "t::x").key == signature(t2, "t::x").key
    assert signature(t1, "t::x").key != signature(other_func, "t::x").key
    assert signature(t1, "t::x").key != signature(other_msg, "t::x").key
    assert "compiler.py:make_llir" in signature(t1).essence


# --------------------------------------------------------------------------- lit

LIT = """\
******************** TEST 'TRITON :: Conversion/{test}' FAILED ********************
Exit Code: 1

Command Output (stderr):
--
RUN: at line {run}: {root}/build/bin/triton-opt {root}/test/Conversion/{test} -split-input-file --convert-triton-gpu-to-llvm | {root}/build/bin/FileCheck {root}/test/Conversion/{test}
+ {root}/build/bin/FileCheck {root}/test/Conversion/{test}
{root}/test/Conversion/{test}:{l}:{c}: error: {directive}: expected string not found in input
// {directive}: {pattern}
           ^
<stdin>:{sl}:{sc}: note: scanning from here
  llvm.func @kernel_{n}(%arg0: !llvm.ptr<1>) attributes {{nvvm.kernel = 1 : ui1}} {{
                                                ^

Input file: <stdin>
Check file: {root}/test/Conversion/{test}

--

********************
"""


def lit_log(**over: object) -> str:
    values: dict[str, object] = dict(
        test="tritongpu_to_llvm.mlir",
        run=1,
        root="/tmp/lit-build-x1y2",
        l=823,
        c=12,
        directive="CHECK",
        pattern="llvm.mlir.global external @global_smem",
        sl=812,
        sc=1,
        n=3,
    )
    values.update(over)
    return LIT.format(**values)


def test_lit_filecheck_variants_group_together() -> None:
    """A FileCheck miss at other lines/columns under another build root is the same signature."""
    name = "TRITON :: Conversion/tritongpu_to_llvm.mlir"
    a = signature(lit_log(), name)
    b = signature(lit_log(root="/home/ci/triton", l=851, c=14, sl=840, sc=3, n=9), name)
    assert a.key == b.key
    assert a.kind == "lit"
    assert "expected string not found" in a.title and "tritongpu_to_llvm.mlir" in a.title


def test_lit_near_misses_stay_apart() -> None:
    """Another failing check pattern, another directive or another test file is another signature."""
    name = "TRITON :: Conversion/tritongpu_to_llvm.mlir"
    base = signature(lit_log(), name)
    other_pattern = signature(lit_log(pattern="nvvm.barrier0"), name)
    other_directive = signature(lit_log(directive="CHECK-NEXT"), name)
    other_test = signature(lit_log(test="amd_to_llvm.mlir"), "TRITON :: Conversion/amd_to_llvm.mlir")
    assert len({base.key, other_pattern.key, other_directive.key, other_test.key}) == 4


# --------------------------------------------------------------------------- crashes

LLVM_CRASH = """\
PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace.
Stack dump:
0.\tProgram arguments: {root}/bin/triton-opt --tritongpu-remove-layout-conversions {tmp}/input-{n}.mlir
 #0 {a0} llvm::sys::PrintStackTrace(llvm::raw_ostream&, int) ({root}/bin/triton-opt+{o0})
 #1 {a1} llvm::sys::RunSignalHandlers() ({root}/bin/triton-opt+{o1})
 #2 {a2} SignalHandler(int) Signals.cpp:0:0
 #3 {a3} (/lib/x86_64-linux-gnu/libc.so.6+0x42520)
 #4 {a4} {frame} ({root}/bin/triton-opt+{o4})
 #5 {a5} mlir::triton::gpu::RemoveLayoutConversionsPass::runOnOperation() ({root}/bin/triton-opt+{o5})
 #6 {a6} mlir::detail::OpToOpPassAdaptor::run(mlir::Pass*, mlir::Operation*, mlir::AnalysisManager, bool, unsigned int) ({root}/bin/triton-opt+{o6})
Segmentation fault (core dumped)
"""


def llvm_crash(**over: object) -> str:
    values: dict[str, object] = dict(
        root="/home/ci/triton/build",
        tmp="/tmp/tmpa8x2kq1z",
        n=1,
        a0="0x000055d5c1a2b3c4",
        a1="0x000055d5c1a28f1e",
        a2="0x000055d5c1a2ba7f",
        a3="0x00007f8b2c242520",
        a4="0x000055d5c2b3c4d5",
        a5="0x000055d5c2b40012",
        a6="0x000055d5c3000abc",
        o0="0x1a2b3c4",
        o1="0x1a28f1e",
        o4="0x2b3c4d5",
        o5="0x2b40012",
        o6="0x3000abc",
        frame="mlir::triton::gpu::getOrder(mlir::Attribute)",
    )
    values.update(over)
    return LLVM_CRASH.format(**values)


ASSERTION = """\
triton-opt: {root}/llvm-project/llvm/include/llvm/Support/Casting.h:{line}: decltype(auto) llvm::cast(From*) [with To = mlir::triton::gpu::BlockedEncodingAttr; From = mlir::Attribute]: Assertion `isa<To>(Val) && "cast<Ty>() argument of incompatible type!"' failed.
PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace.
Stack dump:
 #0 {addr} llvm::sys::PrintStackTrace(llvm::raw_ostream&, int) (/x/triton-opt+0x1)
Aborted (core dumped)
"""


def test_llvm_crash_variants_group_across_tests() -> None:
    """The same crashing frame with other addresses, offsets, temp inputs and tests is one signature."""
    a = signature(llvm_crash(), "TRITON :: TritonGPU/combine.mlir")
    b = signature(
        llvm_crash(
            root="/opt/build",
            tmp="/tmp/tmpzz91ab00",
            n=7,
            a4="0x00005612aa0b0c0d",
            o4="0x2b3c9f1",
            a0="0x0000561200000001",
            a5="0x0000561200000abc",
        ),
        "TRITON :: TritonGPU/reorder.mlir",
    )
    assert a.key == b.key
    assert a.kind == "crash"
    assert a.title.startswith("SIGSEGV in getOrder")
    assert "PrintStackTrace" not in a.essence and "libc" not in a.essence


def test_llvm_crash_in_another_function_is_another_signature() -> None:
    """A near-miss: the same pass crashing in a different innermost frame must not group."""
    a = signature(llvm_crash())
    b = signature(
        llvm_crash(frame="mlir::triton::gpu::getShapePerCTA(mlir::Attribute, llvm::ArrayRef<long>)")
    )
    assert a.key != b.key


def test_assertion_failure_keys_on_condition_and_function_not_line() -> None:
    """An LLVM assertion: line numbers and roots vary; another cast target type is another bug."""
    a = signature(ASSERTION.format(root="/a", line=566, addr="0x1"), "t1")
    b = signature(ASSERTION.format(root="/b/c", line=572, addr="0x2"), "t2")
    other = signature(
        ASSERTION.format(root="/a", line=566, addr="0x1").replace("BlockedEncodingAttr", "SliceEncodingAttr"),
        "t1",
    )
    assert a.key == b.key
    assert a.kind == "assertion"
    assert a.key != other.key
    assert "isa<To>(Val)" in a.title


FAULTHANDLER = """\
Fatal Python error: Segmentation fault

Current thread 0x{tid} (most recent call first):
  File "{root}/triton/runtime/jit.py", line {l1}, in {func}
  File "{root}/triton/runtime/jit.py", line {l2}, in <lambda>
  File "{root}/test_core.py", line {l3}, in test_load
"""


def test_python_segfault_groups_on_innermost_python_frame() -> None:
    """A faulthandler dump: thread ids and lines vary; the innermost function decides."""
    a = signature(FAULTHANDLER.format(tid="00007f12", root="/a", l1=10, l2=20, l3=30, func="run"), "t::x[1]")
    b = signature(FAULTHANDLER.format(tid="00007fff", root="/b", l1=11, l2=22, l3=33, func="run"), "t::x[2]")
    c = signature(
        FAULTHANDLER.format(tid="00007f12", root="/a", l1=10, l2=20, l3=30, func="launch"), "t::x[1]"
    )
    assert a.key == b.key and a.kind == "crash"
    assert a.key != c.key


# --------------------------------------------------------------------------- infra, grouping, normalising


def test_infrastructure_failures_are_marked_and_do_not_look_like_code_bugs() -> None:
    """Disk full, network and busy GPUs are infra with a reason; an ordinary assertion is not."""
    assert infra_reason("OSError: [Errno 28] No space left on device: '/tmp/x'") == "out of disk space"
    assert (
        infra_reason(
            "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable".replace(
                "is/are", "is"
            )
        )
        == "CUDA device busy or unavailable"
    )
    assert infra_reason("curl: (6) Could not resolve host: github.com") == "network failure"
    assert infra_reason("bash: nvcc: command not found") == "toolchain missing"
    assert signature("OSError: No space left on device", "t::a").kind == "infra"
    # Infra signatures ignore the test: one disk-full issue, not one per test.
    assert (
        signature("No space left on device", "t::a").key == signature("No space left on device", "t::b").key
    )
    assert infra_reason(pytest_log()) == ""


def test_group_buckets_variants_and_orders_biggest_first() -> None:
    """group() puts parametrised variants together, keeps near-misses apart, biggest group first."""
    failures = [
        Failure("t.py::test_other[a]", "E   ValueError: bad block size 64"),
        Failure("python/test/unit/language/test_matmul.py::test_matmul[float16-128-64]", pytest_log()),
        Failure(
            "python/test/unit/language/test_matmul.py::test_matmul[bfloat16-256-256]",
            pytest_log(m=256, bad=99, line=150),
        ),
        Failure("t.py::test_other[b]", "E   ValueError: bad block size 128"),
        Failure("t.py::test_other[c]", "E   ValueError: bad grid"),
        Failure("TRITON :: a.mlir", llvm_crash()),
        Failure("TRITON :: b.mlir", llvm_crash(a4="0x1234567890")),
        Failure("python/test/unit/language/test_matmul.py::test_matmul[float32-1-1]", pytest_log(line=1)),
    ]
    groups = group(failures)
    assert [g.count for g in groups] == [3, 2, 2, 1]
    assert groups[0].signature.kind == "python" and "test_matmul" in groups[0].signature.title
    assert groups[1].tests == ("t.py::test_other[a]", "t.py::test_other[b]")
    assert groups[2].tests == ("TRITON :: a.mlir", "TRITON :: b.mlir")
    assert groups[3].failures[0].text == "E   ValueError: bad grid"
    assert group(failures) == groups  # deterministic


def test_normalisers() -> None:
    """Test ids lose all parameter brackets; text loses numbers but keeps names with digits (fp16)."""
    assert normalise_test_id("a.py::T::test_x[fp16-128]") == "a.py::T::test_x"
    assert normalise_test_id("a.py::test_x[a[1]-b]") == "a.py::test_x"
    assert normalise("fp16 tile 128x64 took 3.5s at 12:01:02") == "fp16 tile N took N at <time>"
    assert "fp16" in normalise("dtype fp16 size 4096")
    assert "4096" not in normalise("dtype fp16 size 4096")


TRITON_COMPILE = """\
E       triton.compiler.errors.CompilationError: at {l}:{c}:
E           acc = tl.dot(a, b)
E                 ^
E       AssertionError('Both operands must be same dtype. Got {x} and fp32')
"""


def test_triton_compilation_error_keys_on_the_underlying_cause() -> None:
    """``CompilationError: at L:C:`` says nothing; the cause under the caret decides, positions do not."""
    a = signature(TRITON_COMPILE.format(l=12, c=8, x="fp16"), "t.py::test_dot[fp16]")
    b = signature(TRITON_COMPILE.format(l=40, c=12, x="fp16"), "t.py::test_dot[bf16]")
    other = signature(
        TRITON_COMPILE.format(l=12, c=8, x="fp16").replace("same dtype", "2D tensors"), "t.py::test_dot[x]"
    )
    assert a.key == b.key and a.key != other.key
    assert "AssertionError: Both operands must be same dtype" in a.title


def test_uncaught_cpp_exception_and_mlir_verifier_errors() -> None:
    """``terminate called`` keys on the exception type and what(); an MLIR verifier error on its message."""
    crash = "terminate called after throwing an instance of 'std::out_of_range'\n  what():  vector::_M_range_check: __n (which is {n})\nAborted (core dumped)\n"
    assert signature(crash.format(n=7), "a").key == signature(crash.format(n=9), "a").key
    assert signature(crash.format(n=7), "a").title.startswith("a: uncaught std::out_of_range")
    verify = "{f}:42:10: error: 'tt.dot' op operand #0 must be {what}, but got 'f32'\n"
    lit = "******************** TEST 'TRITON :: TritonGPU/verify.mlir' FAILED ********************\nExit Code: 1\n"
    one = signature(
        lit + verify.format(f="/tmp/lit-1/verify.mlir", what="ranked tensor"),
        "TRITON :: TritonGPU/verify.mlir",
    )
    two = signature(
        lit + verify.format(f="/home/ci/verify.mlir", what="ranked tensor"), "TRITON :: TritonGPU/verify.mlir"
    )
    near = signature(
        lit + verify.format(f="/tmp/lit-1/verify.mlir", what="a pointer"), "TRITON :: TritonGPU/verify.mlir"
    )
    assert one.key == two.key != near.key and one.kind == "lit"
