"""Symbols from diffs: per language on real-looking code, calls excluded, the stop-list honoured."""

from __future__ import annotations

from collections.abc import Callable

import pygit2

from tests.gitrepo import GitRepo
from workers.engine.changes import commit_changes
from workers.engine.symbols import BUILTIN_STOPLIST, file_definitions, file_symbols, parse_hunks, stoplist

CPP_PASS = """\
#include "triton/Dialect/TritonGPU/Transforms/Passes.h"

namespace mlir {
namespace triton {
namespace gpu {

#define GEN_PASS_DEF_TRITONGPUCOALESCE
#include "triton/Dialect/TritonGPU/Transforms/Passes.h.inc"

static Value getMemAccessPtr(Operation *op) {
  if (auto ld = dyn_cast<triton::LoadOp>(op))
    return ld.getPtr();
  return nullptr;
}

struct CoalescePass : public impl::TritonGPUCoalesceBase<CoalescePass> {
  void setCoalescedEncoding(ModuleAxisInfoAnalysis &axisInfoAnalysis, Operation *op,
                            int numWarps, int threadsPerWarp) {
    Value ptr = getMemAccessPtr(op);
    auto refTensorType = cast<RankedTensorType>(ptr.getType());
    unsigned perThread = getNumElementsPerThread(op, order, axisInfoAnalysis);
    layoutMap[op] = perThread;
  }

  void runOnOperation() override {
    ModuleOp moduleOp = getOperation();
    ModuleAxisInfoAnalysis axisInfoAnalysis(moduleOp);
    moduleOp.walk([&](Operation *curr) { setCoalescedEncoding(axisInfoAnalysis, curr, 4, 32); });
  }
};

} // namespace gpu
} // namespace triton
} // namespace mlir
"""

PY_MODULE = """\
import functools

MAX_NUM_WARPS = 8
_cache: dict[str, int] = {}


class JITFunction:
    def __init__(self, fn):
        self.fn = fn

    def run(self, *args, grid, **kwargs):
        return self.fn(*args)

    def warmup(self, *args, grid, **kwargs):
        return self.run(*args, grid=grid, warmup=True, **kwargs)


def jit(fn=None, *, do_not_specialize=None):
    return JITFunction(fn)
"""

TD_OPS = """\
include "triton/Dialect/Triton/IR/TritonDialect.td"

class TT_Op<string mnemonic, list<Trait> traits = []> :
    Op<Triton_Dialect, mnemonic, !listconcat(traits, [TensorSizeTrait])> {
}

def TT_LoadOp : TT_Op<"load", [SameLoadStoreOperandsAndResultShape]> {
  let summary = "Load from a tensor of pointers or from a tensor pointer";
  let arguments = (ins AnyTypeOf<[TT_PtrLike, TT_TensorPtr]>:$ptr);
  let results = (outs TT_Type:$result);
}

multiclass TT_Reduce<string name> {
  def _sum : TT_Op<name # "_sum">;
}
"""


def _commit_pair(make_repo: Callable[[str], GitRepo], path: str, before: str, after: str) -> frozenset[str]:
    repo = make_repo("up")
    repo.commit("base", {path: before})
    sha = repo.commit("change", {path: after})
    return commit_changes(pygit2.Repository(str(repo.path)), sha, stoplist()).symbols


def test_cpp_pass_change_yields_enclosing_struct_and_changed_definitions(
    make_repo: Callable[[str], GitRepo],
) -> None:
    """A body edit in a C++ pass names its enclosing record (hunk context) and a renamed helper."""
    after = CPP_PASS.replace("layoutMap[op] = perThread;", "layoutMap[op] = perThread * 2;").replace(
        "static Value getMemAccessPtr(Operation *op) {", "static Value getMemAccessPointer(Operation *op) {"
    )
    symbols = _commit_pair(make_repo, "lib/Dialect/TritonGPU/Transforms/Coalesce.cpp", CPP_PASS, after)
    assert "getMemAccessPtr" in symbols and "getMemAccessPointer" in symbols
    assert "CoalescePass" in symbols
    # Calls and locals on changed lines are not symbols; namespaces never are.
    assert "cast" not in symbols and "layoutMap" not in symbols and "gpu" not in symbols


def test_cpp_macros_methods_and_records_on_changed_lines() -> None:
    """Macros, qualified out-of-line methods, classes and enums defined on +/- lines are symbols."""
    hunks = parse_hunks(
        "@@ -10,3 +10,9 @@ namespace mlir {\n"
        "+#define TRITON_MAX_TENSOR_NUMEL 1048576\n"
        "+LogicalResult WarpGroupDotOp::verify() {\n"
        "+enum class CacheModifier : uint32_t {\n"
        "+class SharedEncodingAttr : public Attribute {\n"
        "+  rewriter.replaceOp(op, newOp);\n"
        '+  return emitError("bad");\n'
        "-  SmallVector<Value> results(numResults);\n"
    )
    symbols = file_symbols("lib/Dialect/TritonNvidiaGPU/IR/Ops.cpp", hunks)
    assert symbols == {
        "TRITON_MAX_TENSOR_NUMEL",
        "WarpGroupDotOp::verify",
        "CacheModifier",
        "SharedEncodingAttr",
    }


def test_cpp_header_declarations_count_but_cpp_locals_do_not() -> None:
    """``Type name(args);`` is an API declaration in a header and a local object in a .cpp."""
    hunks = parse_hunks("@@ -1 +1 @@ class Foo {\n+  unsigned getTotalElemsPerThread(Type type) const;\n")
    assert "getTotalElemsPerThread" in file_symbols("include/triton/Analysis/Utility.h", hunks)
    assert "getTotalElemsPerThread" not in file_symbols("lib/Analysis/Utility.cpp", hunks)


def test_python_module_methods_are_qualified_and_assignments_counted(
    make_repo: Callable[[str], GitRepo],
) -> None:
    """Python: a changed method is ``Class.method``; module constants and new functions are symbols."""
    after = (
        PY_MODULE.replace("return self.run(*args, grid=grid, warmup=True, **kwargs)", "return None").replace(
            "MAX_NUM_WARPS = 8", "MAX_NUM_WARPS = 16"
        )
        + "\n\ndef autotune(configs):\n    return configs\n"
    )
    symbols = _commit_pair(make_repo, "python/triton/runtime/jit.py", PY_MODULE, after)
    assert {"MAX_NUM_WARPS", "autotune"} <= symbols
    assert "JITFunction" in symbols  # hunk context of the warmup edit: the enclosing class
    assert "self" not in symbols and "kwargs" not in symbols


def test_python_method_names_qualified_by_hunk_class() -> None:
    """A generic method name (``run``) defined in a class hunk survives as ``JITFunction.run``."""
    hunks = parse_hunks(
        "@@ -8,2 +8,3 @@ class JITFunction:\n+    def run(self, *args):\n+    def __init__(self):\n"
    )
    assert file_symbols("python/triton/runtime/jit.py", hunks) == {
        "JITFunction",
        "JITFunction.run",
        "JITFunction.__init__",
    }


def test_tablegen_records_defs_classes_multiclasses(make_repo: Callable[[str], GitRepo]) -> None:
    """TableGen: def/class/multiclass names on changed lines and in the hunk context."""
    after = TD_OPS.replace('let summary = "Load from', 'let summary = "Loads from').replace(
        "multiclass TT_Reduce<string name> {", "multiclass TT_ReduceOps<string name> {"
    )
    symbols = _commit_pair(make_repo, "include/triton/Dialect/Triton/IR/TritonOps.td", TD_OPS, after)
    assert {"TT_LoadOp", "TT_Reduce", "TT_ReduceOps"} <= symbols
    assert "summary" not in symbols and "TT_PtrLike" not in symbols


def test_builtin_stoplist_drops_generic_names() -> None:
    """Generic names (main, run, __init__, get, runOnOperation) never become symbols on their own."""
    hunks = parse_hunks(
        "@@ -1 +1 @@\n+int main(int argc, char **argv) {\n+void runOnOperation() override {\n"
        "+def run(x):\n+Value get(int i) {\n"
    )
    assert file_symbols("lib/Foo.cpp", hunks) == frozenset()
    assert (
        file_symbols("python/foo.py", parse_hunks("@@ -1 +1 @@\n+def run(x):\n+def __init__(self):\n"))
        == frozenset()
    )
    assert {"main", "run", "__init__", "get"} <= BUILTIN_STOPLIST


def test_configured_stoplist_extends_builtin() -> None:
    """``risk.symbol_stoplist`` entries are dropped too; others are kept."""
    hunks = parse_hunks("@@ -1 +1 @@\n+def lower_layouts(mod):\n+def make_ttir(mod):\n")
    assert file_symbols("python/triton/compiler.py", hunks, stoplist(["make_ttir"])) == {"lower_layouts"}


def test_other_languages_give_no_symbols() -> None:
    """MLIR tests, CMake and docs link by file only: a guessed name would only add false links."""
    hunks = parse_hunks(
        "@@ -1 +1 @@ tt.func @kernel\n+  tt.func public @matmul_kernel(%arg0: !tt.ptr<f16>) {\n"
    )
    assert file_symbols("test/TritonGPU/coalesce.mlir", hunks) == frozenset()
    assert file_symbols("CMakeLists.txt", parse_hunks("@@ -1 +1 @@\n+add_library(foo)\n")) == frozenset()


def test_tablegen_defm_and_anonymous_records() -> None:
    """``defm`` instances are symbols; anonymous ``defm :`` and ``let`` bodies are not."""
    hunks = parse_hunks(
        "@@ -3 +3,4 @@ multiclass TT_Reduce<string name> {\n"
        '+defm TT_ReduceSum : TT_Reduce<"sum">;\n'
        '+defm : TT_Reduce<"max">;\n'
        "+  let hasVerifier = 1;\n"
        '-def TT_OldReduce : TT_Op<"reduce">;\n'
    )
    assert file_symbols("include/triton/Dialect/Triton/IR/TritonOps.td", hunks) == {
        "TT_Reduce",
        "TT_ReduceSum",
        "TT_OldReduce",
    }


def test_template_heavy_long_lines_do_not_backtrack() -> None:
    """Long template-heavy lines (which made a one-regex matcher backtrack for minutes) stay instant."""
    import time

    start = time.perf_counter()
    line = "std::vector<std::pair<int, Value>> " * 11 + "x"
    hunks = parse_hunks("@@ -1 +1 @@\n+" + line + "\n+" + "a<b " * 2000 + ">\n")
    assert file_symbols("include/triton/Big.h", hunks) == frozenset()
    assert time.perf_counter() - start < 1.0


def test_uses_are_read_line_by_line_in_one_pass_over_the_file() -> None:
    """read_file gives file_symbols' and file_definitions' answers at once; a use is read within its
    line: a line ending in ``->`` or ``.`` does not make the next line's first name a member access,
    a NUL inside a line splits names as any other non-identifier does, a long or comment line gives
    none, and a line repeated in another hunk is read once (the same sets)."""
    from workers.engine.symbols import FileSymbols, Hunk, file_definitions, read_file

    hunks = [
        Hunk("void Pass::run()", added=("  auto *op = state->", "  helperCall(x);", "  a\x00b.member();")),
        Hunk(
            "",
            added=("  helperCall(x);", "// commentName(y);", "  " + "z" * 401 + "(q);"),
            removed=("int Old(int x) {",),
        ),
    ]
    symbols, definitions = read_file("lib/x.cpp", hunks)
    assert (symbols, definitions) == (file_symbols("lib/x.cpp", hunks), file_definitions("lib/x.cpp", hunks))
    assert {"helperCall", "state", "Old"} <= definitions.used and ".member" in definitions.used
    assert not {".helperCall", "commentName", "q"} & definitions.used
    assert definitions.defined == {"Old"} and definitions.introduced == frozenset()
    assert "Pass::run" in symbols
    assert read_file("README.md", hunks) == (frozenset(), FileSymbols())


def test_python_helpers_nested_in_methods_are_local() -> None:
    """A ``def`` nested in a method of a class hunk is local: it is neither ``Class.name`` nor a
    definition another commit could change (onnx's version-converter tests: each test method
    defines its own ``def test():``, #7872 and #7880 were linked by it)."""
    patch = (
        "@@ -276,0 +277,3 @@ class TestVersionConverter(unittest.TestCase):\n"
        "+    def test_gemm_7_6_rejects_1d_input(self) -> None:\n"
        "+        # Regression test: heap-buffer-overflow when B has rank < 2 (advisory)\n"
        "+        def test() -> None:\n"
    )
    path = "onnx/test/version_converter_test.py"
    assert file_symbols(path, parse_hunks(patch)) == {
        "TestVersionConverter",
        "TestVersionConverter.test_gemm_7_6_rejects_1d_input",
    }  # not TestVersionConverter.test (and a bare `test` is on the stop-list)
    defined = file_definitions(path, parse_hunks(patch)).defined
    assert defined == {f"TestVersionConverter.test_gemm_7_6_rejects_1d_input in {path}"}


def test_a_static_function_of_a_cpp_is_local_to_it() -> None:
    """A top-level ``static`` function of a .cpp (internal linkage) defines nothing another file
    can change: onnx's ``static ... Parse(const char*)`` in ``cpp2py_export.cpp`` (#7276) is not
    ``OnnxParser``'s ``Parse`` in ``parser.h`` (#7179). The same line in a header still counts."""
    patch = (
        "@@ -262 +262 @@ PYBIND11_MODULE(onnx_cpp2py_export, onnx_cpp2py_export) {\n"
        "-static std::tuple<bool, py::bytes, py::bytes> Parse(const char* cstr) {\n"
        "+static std::tuple<bool, nb::bytes, nb::bytes> Parse(const char* cstr) {\n"
    )
    assert "Parse" not in file_definitions("onnx/cpp2py_export.cpp", parse_hunks(patch)).defined
    assert "Parse" in file_definitions("onnx/defs/parser.h", parse_hunks(patch)).defined
