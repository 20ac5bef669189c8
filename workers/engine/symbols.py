"""Symbols a diff touches (functions, classes, macros, TableGen records), to link risky chains.

The partition links a commit to an open risky chain when both touch a file or a *symbol*.
Symbols come from two places in a unified diff, per file:

* the function context git/libgit2 prints after a hunk header (``@@ -1,2 +1,3 @@ void Foo::bar()``):
  the enclosing definition of the change;
* definitions on ``+``/``-`` lines: names defined, declared or changed there.

Calls are deliberately not symbols: a commit that merely calls ``foo`` does not change ``foo``,
and counting calls would link nearly every commit to every chain. The extraction is a set of
line-level heuristics per language (C/C++, Python, TableGen); they err towards *missing* a
symbol rather than inventing one, because a false link drags an innocent commit into a chain
while a missed symbol is still caught by file links and by the trial pick.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import compress, repeat

# Names so common that linking on them would join every chain to every other one: each Triton
# pass has a ``runOnOperation``, each rewrite pattern a ``matchAndRewrite``, each Python class an
# ``__init__``, each torch module a ``forward``. A change to one of them says nothing about a
# dependency between two commits. Configured ``risk.symbol_stoplist`` entries are added.
BUILTIN_STOPLIST: frozenset[str] = frozenset(
    {
        # entry points and lifecycle
        "main",
        "run",
        "init",
        "__init__",
        "__new__",
        "__del__",
        "__call__",
        "__post_init__",
        "setUp",
        "tearDown",
        "setUpClass",
        "tearDownClass",
        "setup",
        "teardown",
        "test",
        "start",
        "stop",
        "close",
        "reset",
        "update",
        "execute",
        "process",
        "handle",
        # accessors and dunder protocol
        "get",
        "set",
        "__getitem__",
        "__setitem__",
        "__len__",
        "__iter__",
        "__next__",
        "__repr__",
        "__str__",
        "__eq__",
        "__hash__",
        "__enter__",
        "__exit__",
        "__getattr__",
        "__all__",
        "__version__",
        "size",
        "empty",
        "begin",
        "end",
        "data",
        "name",
        "value",
        "clone",
        "copy",
        "str",
        "print",
        "dump",
        "toString",
        "operator",
        # framework hooks implemented by every pass / pattern / module / visitor
        "forward",
        "backward",
        "build",
        "apply",
        "visit",
        "verify",
        "fold",
        "parse",
        "runOnOperation",
        "matchAndRewrite",
        "rewrite",
        "match",
        "getArgument",
        "getName",
        "getDescription",
        "getDependentDialects",
        "initialize",
        "canonicalize",
        "getCanonicalizationPatterns",
        "inferReturnTypes",
        "getEffects",
        # C++ boilerplate
        "Impl",
        "Base",
        "Options",
        "Pattern",
        "Pass",
        "Op",
        "Type",
        "Attr",
        "Value",
        "kernel",
        "logger",
        "log",
        "args",
        "kwargs",
        "self",
        "cls",
    }
)

# Names shorter than this are loop variables, template parameters, helpers: never a link.
MIN_SYMBOL_LENGTH = 3

_CPP_EXT = {
    ".c",
    ".cc",
    ".cpp",
    ".cxx",
    ".cu",
    ".cuh",
    ".h",
    ".hh",
    ".hpp",
    ".hxx",
    ".inc",
    ".def",
    ".m",
    ".mm",
}
_HEADER_EXT = {".h", ".hh", ".hpp", ".hxx", ".cuh", ".inc", ".def"}
_PY_EXT = {".py", ".pyi"}
_TD_EXT = {".td"}
# Every extension :func:`language` gives a language to (lower case).
SOURCE_EXTENSIONS = frozenset(_CPP_EXT | _PY_EXT | _TD_EXT)

_CPP_KEYWORD_TEXT = (
    "if for while switch return else do case default sizeof alignof decltype new delete throw "
    "catch try goto co_return co_await static_assert typedef using namespace template typename "
    "public private protected const constexpr static inline virtual explicit extern friend "
    "unsigned signed volatile mutable override final noexcept operator assert defined "
    "int char bool void float double long short auto struct class enum union"
)
_CPP_KEYWORDS = frozenset(_CPP_KEYWORD_TEXT.split())

# A function's declarator, read from the text before the first `(`: `[template<...>] [specifiers]
# Type [*&] Name` (Name possibly qualified, `Foo::bar`, `Foo::~Foo`). The type part may only hold
# identifiers, `::`, `<...>`, `,`, `*`, `&` and spaces: that excludes calls (`x.foo(`, `p->foo(`,
# `y = foo(`). Checked with plain string tests, not one big regex, so that no line can make the
# matcher backtrack (long template-heavy lines did).
_CPP_NAME_AT_END = re.compile(r"(?:[A-Za-z_]\w*::)*~?[A-Za-z_]\w*$")
_CPP_TYPE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:<>,*& \t")
_CPP_NOT_TYPES = frozenset(
    ("return", "else", "case", "new", "delete", "throw", "goto", "co_return", "sizeof")
)
# Lines longer than this (generated tables, minified code) are not read for symbols.
MAX_LINE = 400
_CPP_RECORD = re.compile(
    r"^\s*(?:template\s*<[^;{}]*>\s*)?(?:typedef\s+)?(?:class|struct|union|enum(?:\s+class|\s+struct)?)\s+"
    r"(?:\[\[[^\]]*\]\]\s*|alignas\([^)]*\)\s*|[A-Z_]+_EXPORT\s+)*(?P<name>[A-Za-z_]\w*)\b(?P<rest>[^;]*)$"
)
_CPP_MACRO = re.compile(r"^\s*#\s*define\s+(?P<name>[A-Za-z_]\w*)")
_CPP_USING = re.compile(r"^\s*using\s+(?P<name>[A-Za-z_]\w*)\s*=")

_PY_DEF = re.compile(r"^(?P<indent>\s*)(?:async\s+)?def\s+(?P<name>[A-Za-z_]\w*)\s*[\[(]")
_PY_CLASS = re.compile(r"^(?P<indent>\s*)class\s+(?P<name>[A-Za-z_]\w*)\s*[:(\[]")
# Module-level assignment (column 0): `NAME = ...`, `NAME: T = ...`; not `==`, not attribute/index.
_ONE_LEVEL = ("    ", "  ", "\t")  # a top-level class's methods' indent, in the usual styles
_PY_ASSIGN = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*(?::[^=]+)?=(?!=)")

_TD_RECORD = re.compile(r"^\s*(?:def|defm|class|multiclass)\s+(?P<name>[A-Za-z_][\w]*)")
_TD_DEFSET = re.compile(r"^\s*defset\s+[^=]*?\b(?P<name>[A-Za-z_]\w*)\s*=")


@dataclass(frozen=True)
class Hunk:
    """One hunk of a file's diff: the function context of its header and its changed lines."""

    context: str
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


def language(path: str) -> str | None:
    """``"cpp"``, ``"python"`` or ``"tablegen"`` from a path's extension; None for the rest."""
    dot = path.rfind(".")
    if dot < 0 or "/" in path[dot:]:
        return None
    ext = path[dot:].lower()
    if ext in _CPP_EXT:
        return "cpp"
    if ext in _PY_EXT:
        return "python"
    if ext in _TD_EXT:
        return "tablegen"
    return None


def stoplist(extra: Iterable[str] = ()) -> frozenset[str]:
    """The built-in stop-list plus ``risk.symbol_stoplist`` from the config."""
    return BUILTIN_STOPLIST | frozenset(extra)


def file_symbols(path: str, hunks: Iterable[Hunk], stop: frozenset[str] = BUILTIN_STOPLIST) -> frozenset[str]:
    """Symbols touched by the hunks of one file's diff, stop-listed names removed.

    Files in other languages (MLIR tests, CMake, docs, data) give no symbols: they still link
    by file, and a guess at their "names" would only add false links.
    """
    return read_file(path, hunks, stop)[0]


# The per-line readers below are pure functions of their text, and the same lines recur (in
# both readers of one file, across files and commits): each is memoised.
_MEMO = 1 << 16
_QUALIFIER = re.compile(r"::|\.")


@functools.lru_cache(maxsize=_MEMO)
def _keep(symbol: str, stop: frozenset[str]) -> bool:
    if symbol in stop:
        return False
    last = _QUALIFIER.split(symbol)[-1].lstrip("~")
    if len(last) < MIN_SYMBOL_LENGTH:
        return False
    # A qualified name (`Foo::run`) is specific even when its last part is generic; a bare one is not.
    return not ("::" not in symbol and "." not in symbol and last in stop)


# --------------------------------------------------------------------------- C / C++


@functools.lru_cache(maxsize=_MEMO)
def _cpp_context(context: str) -> tuple[str, ...]:
    line = context.strip()
    if not line or line.startswith("namespace") or line.startswith("}"):
        return ()
    return tuple(_cpp_definitions(line, declarations=True))


@functools.lru_cache(maxsize=_MEMO)
def _cpp_line(line: str, header: bool) -> tuple[str, ...]:
    stripped = line.strip()
    if not stripped or stripped.startswith(("//", "/*", "*")):
        return ()
    macro = _CPP_MACRO.match(line)
    if macro:
        return (macro.group("name"),)
    # In a .cpp, `Type name(args);` inside a body is far more often a local object than a
    # declaration; in a header it is the declaration of an API.
    return tuple(_cpp_definitions(line, declarations=header or not stripped.endswith(";")))


def _cpp_definitions(line: str, declarations: bool) -> list[str]:
    record = _CPP_RECORD.match(line)
    if record:
        # `class Foo;` (forward declaration) is excluded by the pattern; `enum class Kind {` is not.
        return [record.group("name")]
    using = _CPP_USING.match(line)
    if using:
        return [using.group("name")]
    if not declarations:
        return []
    paren = line.find("(")
    if paren <= 0:
        return []
    head = line[:paren].rstrip()
    found = _CPP_NAME_AT_END.search(head)
    if not found:
        return []
    name, prefix = found.group(0), head[: found.start()]
    if prefix.strip():
        # A return type (and specifiers) before the name, separated from it by space, * or &.
        if not set(prefix) <= _CPP_TYPE_CHARS or prefix[-1] not in " \t*&":
            return []
        words = re.findall(r"[A-Za-z_]\w*", prefix)
        if not words or _CPP_NOT_TYPES.intersection(words):
            return []
    elif "::" not in name or line[:1].isspace():
        return []  # no return type: only an out-of-line constructor or destructor, `Foo::Foo(`
    if name.split("::")[-1].lstrip("~") in _CPP_KEYWORDS:
        return []
    return [_cpp_normalise(name)]


def _cpp_normalise(name: str) -> str:
    return re.sub(r"\s+", "", name)


# --------------------------------------------------------------------------- Python


def _py_class_of(context: str) -> str | None:
    match = _PY_CLASS.match(context)
    return match.group("name") if match and not match.group("indent") else None


def _py_context(context: str) -> list[str]:
    for pattern in (_PY_DEF, _PY_CLASS):
        match = pattern.match(context)
        if match:
            return [match.group("name")]
    return []


@functools.lru_cache(maxsize=_MEMO)
def _py_line(line: str, cls: str | None) -> tuple[str, ...]:
    match = _PY_DEF.match(line)
    if match:
        name = match.group("name")
        # A method inside a hunk whose context is `class Foo:` is `Foo.name`: a generic method
        # name stays specific to its class instead of linking every class that has one. Only a
        # `def` one level under the (top-level) class is its method; one deeper is a helper nested
        # in a method (two tests that each define their own `def test():` share nothing).
        return (f"{cls}.{name}" if cls and match.group("indent") in _ONE_LEVEL else name,)
    match = _PY_CLASS.match(line)
    if match:
        return (match.group("name"),)
    match = _PY_ASSIGN.match(line)
    if match and not line.startswith((" ", "\t")):
        return (match.group("name"),)
    return ()


# --------------------------------------------------------------------------- TableGen


@functools.lru_cache(maxsize=_MEMO)
def _td_line(line: str) -> tuple[str, ...]:
    defset = _TD_DEFSET.match(line)
    if defset:
        return (defset.group("name"),)
    match = _TD_RECORD.match(line)
    return (match.group("name"),) if match else ()


# --------------------------------------------------------------------------- unified diff text


_HUNK_HEADER = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(?P<context>.*)$")


def parse_hunks(patch: str) -> list[Hunk]:
    """The hunks of one file's unified diff text (what ``git diff`` prints after ``+++``)."""
    hunks: list[Hunk] = []
    context: str | None = None
    added: list[str] = []
    removed: list[str] = []
    for line in patch.splitlines():
        header = _HUNK_HEADER.match(line)
        if header:
            if context is not None:
                hunks.append(Hunk(context, tuple(added), tuple(removed)))
            context, added, removed = header.group("context"), [], []
        elif context is None:
            continue
        elif line.startswith("+"):
            added.append(line[1:])
        elif line.startswith("-"):
            removed.append(line[1:])
    if context is not None:
        hunks.append(Hunk(context, tuple(added), tuple(removed)))
    return hunks


# --------------------------------------------------------------------------- definitions and uses


@dataclass(frozen=True)
class FileSymbols:
    """What one file's diff defines and uses, for line-mode links.

    ``introduced``: defined on added lines and not on removed ones (a new name); ``defined``:
    every name whose definition line is added or removed (introduced, changed or deleted), a
    Python one scoped to its module (:func:`module_scoped`);
    ``used``: identifiers on changed lines, a use of whatever they name; in C++, one written as
    a member access (``op.getNumBuffers()``, ``p->x``) is kept as ``.name``: it can only name a
    method, never a free function, class or macro.
    """

    introduced: frozenset[str] = frozenset()
    defined: frozenset[str] = frozenset()
    used: frozenset[str] = frozenset()


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
# A C++ identifier that follows ``.`` or ``->``: ``op.getNumBuffers()`` calls a member, never a
# free function of that name. Such uses are kept as ``.name`` (see FileSymbols.used).
_CPP_MEMBER_USE = re.compile(r"(?:\.|->)\s*([A-Za-z_]\w*)")
_USE_KEYWORDS = _CPP_KEYWORDS | frozenset(
    [
        "def",
        "class",
        "import",
        "from",
        "as",
        "return",
        "yield",
        "lambda",
        "pass",
        "and",
        "or",
        "not",
        "is",
        "in",
        "None",
        "True",
        "False",
        "self",
        "cls",
        "def",
        "defm",
        "let",
        "multiclass",
        "include",
        "field",
        "bit",
        "bits",
        "list",
        "dag",
        "code",
        "string",
    ]
)


def file_definitions(
    path: str, hunks: Iterable[Hunk], stop: frozenset[str] = BUILTIN_STOPLIST
) -> FileSymbols:
    """Definitions on the changed lines of one file (never the hunk's enclosing context: that is
    where a change is, not what it defines), and the identifiers those lines use."""
    return read_file(path, hunks, stop)[1]


def read_file(
    path: str, hunks: Iterable[Hunk], stop: frozenset[str] = BUILTIN_STOPLIST
) -> tuple[frozenset[str], FileSymbols]:
    """(:func:`file_symbols`, :func:`file_definitions`) of one file's diff, read in one pass.

    Both come from the same changed lines: each distinct line (the results are sets, so a line
    repeated in a file counts once) goes through the memoised per-line reader of its language
    once, and only the lines that name something are walked in Python. A definition that can
    matter outside the file is kept: a macro of a .cpp, a Python name that is private (``_x``)
    or nested (an indented ``def`` whose class is unknown, or a ``def`` nested in a method) and a
    top-level ``static`` of a .cpp are local to their file, where line links see them already.
    The identifiers used are found by one regex scan over the file's changed lines joined by
    NUL, which no identifier, space or member access (``.``, ``->``)
    matches: the same matches as a scan of each line.
    """
    lang = language(path)
    if lang is None:
        return frozenset(), FileSymbols()
    header = path[path.rfind(".") :].lower() in _HEADER_EXT
    found: set[str] = set()
    plus: set[str] = set()
    minus: set[str] = set()
    # (class of the hunk's context, for Python) → the changed lines that can hold definitions
    added: dict[str | None, set[str]] = {}
    removed: dict[str | None, set[str]] = {}
    for hunk in hunks:
        if lang == "cpp":
            found.update(_cpp_context(hunk.context))
            cls = None
        elif lang == "python":
            found.update(_py_context(hunk.context))
            cls = _py_class_of(hunk.context)
        else:
            found.update(_td_line(hunk.context))
            cls = None
        added.setdefault(cls, set()).update(hunk.added)
        removed.setdefault(cls, set()).update(hunk.removed)
    usable: list[str] = []  # the lines whose identifiers count as uses
    for side, into in ((added, plus), (removed, minus)):
        for cls, lines in side.items():
            short = [line for line in lines if len(line) <= MAX_LINE]
            usable += [line for line in short if not line.lstrip().startswith(("//", "#", "*", "/*"))]
            # Most lines define nothing: only those that do are walked here (the readers are memoised).
            if lang == "cpp":
                for line in compress(short, map(_cpp_line, short, repeat(header))):
                    names = _cpp_line(line, header)
                    found.update(names)
                    # A macro of a .cpp is local to it, and so is a `static` at its top level
                    # (internal linkage: another file's `Parse` is another function).
                    if header or not (_CPP_MACRO.match(line) or line.startswith("static ")):
                        into.update(names)
            elif lang == "python":
                for line in compress(short, map(_py_line, short, repeat(cls))):
                    names = _py_line(line, cls)
                    found.update(names)
                    if line[:1].isspace() and "." not in names[0]:
                        continue  # nested def, or a method of a class the hunk does not name
                    into.update(n for n in names if not n.rsplit(".", 1)[-1].startswith("_"))
            else:
                for line in compress(short, map(_td_line, short)):
                    found.update(_td_line(line))
                    into.update(_td_line(line))
    text = "\x00".join(usable)
    if lang == "cpp":
        # Member accesses first, then the other identifiers of what is left: two plain scans
        # are quicker than one with an optional prefix, and find the same uses.
        used = {"." + name for name in set(_CPP_MEMBER_USE.findall(text))}
        used.update(_IDENTIFIER.findall(_CPP_MEMBER_USE.sub("\x00", text)))
    else:
        used = set(_IDENTIFIER.findall(text))
    both = plus | minus
    keep = set(compress(both, map(_keep, both, repeat(stop))))
    return frozenset(compress(found, map(_keep, found, repeat(stop)))), FileSymbols(
        introduced=frozenset(s for s in plus - minus if s in keep),
        defined=frozenset(module_scoped(s, path) for s in keep) if lang == "python" else frozenset(keep),
        used=frozenset(compress(used, map(_use, used, repeat(stop)))),
    )


@functools.lru_cache(maxsize=_MEMO)
def _use(name: str, stop: frozenset[str]) -> bool:
    """Whether an identifier on a changed line counts as a use (``.name``: a member access)."""
    bare = name.lstrip(".")
    return bare not in _USE_KEYWORDS and _keep(bare, stop)


def module_scoped(name: str, path: str) -> str:
    """A Python definition as the one thing it is: ``name in path``.

    A Python ``def``/``class`` belongs to its module: two tutorials that each define their own
    ``is_hopper`` do not change one function, while a C++ or TableGen name declared in a header
    and defined in a source file is one symbol across files (those stay bare). Uses still link
    by the bare name (``introduced``): a use in another module imports it.
    """
    return f"{name} in {path}"


def last_name(symbol: str) -> str:
    """``Foo::bar`` → ``bar``, ``Cls.method`` → ``method``: what a call site writes."""
    return re.split(r"::|\.", symbol)[-1].lstrip("~")
