"""The import rules of the README's layout, checked on the source: a walk of the import graph.

The graph is read with ``ast`` from every module of ``core``, ``bot`` and ``workers`` (nothing is
imported to build it). An edge is any ``import`` or ``from ... import`` anywhere in a module,
lazy ones inside functions included (they run too), except under ``if TYPE_CHECKING:``.
Importing ``a.b.c`` also imports the packages ``a`` and ``a.b``, so those are edges as well.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIRST_PARTY = ("core", "bot", "workers")
# What "the engine must not import Flask, PyGithub or Celery" names, as top-level packages.
FRAMEWORKS = {
    "flask": "Flask",
    "werkzeug": "Flask",
    "github": "PyGithub",
    "celery": "Celery",
    "kombu": "Celery",
}
ENGINE = ("workers.engine", "workers.testing")
# The pure planners outside the engine (the engine's own, e.g. workers/testing/l1_plan.py, are in ENGINE).
PLANNERS = ("workers.jobs.ingest_plan", "workers.commands.plan")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_block(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _imports(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """Every module name ``module`` imports (absolute), skipping ``if TYPE_CHECKING:`` blocks."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if _type_checking_block(node):
            stack.extend(getattr(node, "orelse", []))
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target
            # ``from pkg import sub`` imports the submodule pkg.sub when there is one.
            yield from (f"{target}.{alias.name}" for alias in node.names)
        stack.extend(ast.iter_child_nodes(node))


def import_graph(root: Path = ROOT, packages: Iterable[str] = FIRST_PARTY) -> dict[str, set[str]]:
    """module -> the modules it imports: first-party ones that exist, and top-level third-party names."""
    sources = {module_name(p, root): p for pkg in packages for p in sorted((root / pkg).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for module, path in sources.items():
        edges: set[str] = set()
        for name in _imports(ast.parse(path.read_text(), str(path)), module, path.name == "__init__.py"):
            if name.split(".")[0] in FIRST_PARTY:
                parts = name.split(".")
                edges |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & sources.keys()
            else:
                edges.add(name.split(".")[0])
        edges.discard(module)
        graph[module] = edges
    # Importing a.b.c runs a and a.b first.
    for module in list(graph):
        parts = module.split(".")
        graph[module] |= {".".join(parts[:i]) for i in range(1, len(parts))}
    return graph


def reach(graph: dict[str, set[str]], start: str) -> dict[str, list[str]]:
    """Every module ``start`` imports, directly or not, each with one import path to it."""
    paths: dict[str, list[str]] = {start: [start]}
    todo = [start]
    while todo:
        here = todo.pop()
        for nxt in sorted(graph.get(here, ())):
            if nxt not in paths:
                paths[nxt] = [*paths[here], nxt]
                todo.append(nxt)
    return paths


def write_tree(root: Path, files: dict[str, str]) -> None:
    """A made-up tree for the probes: each path under ``root`` with its text."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def within(module: str, prefixes: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def violations(graph: dict[str, set[str]], sources: Iterable[str], forbidden: Iterable[str]) -> list[str]:
    forbidden = tuple(forbidden)
    found = []
    for module in sorted(m for m in graph if within(m, sources)):
        for target, path in sorted(reach(graph, module).items()):
            if target != module and within(target, forbidden):
                found.append(" -> ".join(path))
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), first-party edges only."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v] & graph.keys()):
            # A package's own __init__ being imported by its submodules is how Python works, not a cycle.
            if v.startswith(w + "."):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_the_graph_sees_the_tree(graph: dict[str, set[str]]) -> None:
    """The walk finds the packages and real edges (a broken walk would pass every rule below)."""
    assert {
        "core.config",
        "bot.webhooks",
        "workers.engine.ledger.cache",
        "core.github.adapter",
    } <= graph.keys()
    assert "core.config" in graph["workers.engine.ledger.cache"]
    assert "github" in graph["core.github.adapter"] and "flask" in graph["bot.webhooks"]
    assert "core.github" in graph["core.github.records"]  # the package runs before its module


@pytest.mark.parametrize("framework", sorted(set(FRAMEWORKS.values())))
def test_engine_imports_no_framework(graph: dict[str, set[str]], framework: str) -> None:
    """workers/engine and workers/testing reach none of Flask, PyGithub or Celery, even indirectly."""
    names = [name for name, what in FRAMEWORKS.items() if what == framework]
    assert violations(graph, ENGINE, names) == []


@pytest.mark.parametrize("planner", PLANNERS)
def test_planners_import_no_framework(graph: dict[str, set[str]], planner: str) -> None:
    """The pure planners of ingestion and the comment commands reach none of Flask, PyGithub or
    Celery, nor the bot, nor their own executors (plans are plain data)."""
    assert planner in graph
    assert violations(graph, [planner], [*FRAMEWORKS, "bot"]) == []
    executors = {
        "workers.jobs.ingest_plan": "workers.jobs.ingestion",
        "workers.commands.plan": "workers.commands.execute",
    }
    assert violations(graph, [planner], [executors[planner]]) == []


def test_engine_imports_no_bot(graph: dict[str, set[str]]) -> None:
    """The engine imports core, never the Flask process (bot)."""
    assert violations(graph, ENGINE, ["bot"]) == []


def test_core_imports_neither_bot_nor_workers(graph: dict[str, set[str]]) -> None:
    """core is neutral: both halves import it, it imports neither."""
    assert violations(graph, ["core"], ["bot", "workers"]) == []


def test_bot_reaches_workers_only_by_task_name(graph: dict[str, set[str]]) -> None:
    """bot imports no workers module: it sends tasks by name (core/tasknames.py)."""
    assert violations(graph, ["bot"], ["workers"]) == []


def test_no_import_cycles(graph: dict[str, set[str]]) -> None:
    """No two first-party modules import each other, directly or through others."""
    assert cycles(graph) == []


# The HTTP clients beside PyGithub, each said in core/github/__init__.py: the adapter (PyGithub's
# own ``requests`` exceptions, classified), the outgoing webhook and the conflict agent's endpoint.
HTTP_ALLOWED = {"core.github.adapter", "workers.adapters.notify", "workers.engine.resolve.agent"}


def http_clients(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the HTTP client modules it imports (requests, httpx, aiohttp, urllib3, urllib.request, http.client)."""
    found: dict[str, set[str]] = {}
    for pkg in FIRST_PARTY:
        for path in sorted((root / pkg).rglob("*.py")):
            module = module_name(path, root)
            names = set(_imports(ast.parse(path.read_text(), str(path)), module, path.name == "__init__.py"))
            hits = {
                n
                for n in names
                if n.split(".")[0] in ("requests", "httpx", "aiohttp", "urllib3")
                or n.startswith(("urllib.request", "http.client"))
            }
            if hits:
                found[module] = hits
    return found


def test_no_raw_http_beside_pygithub() -> None:
    """GitHub is reached through PyGithub only: the modules with another HTTP client are the
    documented ones (none of them talks to GitHub's API), and the GitHub package names them."""
    found = http_clients()
    assert set(found) <= HTTP_ALLOWED, sorted(set(found) - HTTP_ALLOWED)
    said = (ROOT / "core" / "github" / "__init__.py").read_text()
    assert all(f"{m.replace('.', '/')}.py" in said for m in HTTP_ALLOWED - {"core.github.adapter"})


def test_the_http_probe_sees_an_import(tmp_path: Path) -> None:
    """A made-up module with a lazy ``import requests`` is found (the probe above can fail)."""
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "views.py").write_text(
        "def f():\n    import requests\n    from urllib.parse import x\n"
    )
    assert http_clients(tmp_path) == {"bot.views": {"requests"}}


# The one seam through which the workers get the GitHub App: ``runtime.use(app=...)`` then
# replaces it for every task (the demo's DemoApp), not for some of them.
APP_SEAM = "workers.app.runtime"
APP_FOR = "core.github.app.app_for"


def app_for_callers(root: Path = ROOT) -> set[str]:
    """Modules outside ``core.github.app`` that reach its ``app_for``: ``from core.github.app import
    app_for`` (any alias, lazy ones too), or ``.app_for`` on a name the module is imported as."""
    found: set[str] = set()
    for pkg in FIRST_PARTY:
        for path in sorted((root / pkg).rglob("*.py")):
            module = module_name(path, root)
            if module == "core.github.app":
                continue
            tree = ast.parse(path.read_text(), str(path))
            names = set(_imports(tree, module, path.name == "__init__.py"))
            bound = _names_of_the_app_module(tree)
            attribute = any(
                isinstance(n, ast.Attribute) and n.attr == "app_for" and _dotted(n.value) in bound
                for n in ast.walk(tree)
            )
            if APP_FOR in names or attribute:
                found.add(module)
    return found


def _names_of_the_app_module(tree: ast.AST) -> set[str]:
    """The names ``core.github.app`` is bound to here (``import core.github.app [as x]``,
    ``from core.github import app [as x]``)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound |= {a.asname or a.name for a in node.names if a.name == "core.github.app"}
        elif isinstance(node, ast.ImportFrom) and node.module == "core.github":
            bound |= {a.asname or a.name for a in node.names if a.name == "app"}
    return bound


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def test_the_app_comes_from_one_seam() -> None:
    """Only ``workers/app/runtime.py`` calls ``core.github.app.app_for``: every task asks the seam
    (``runtime.app_for``), so swapping the App there swaps it everywhere."""
    assert app_for_callers() == {APP_SEAM}


def test_the_app_probe_sees_each_way_in(tmp_path: Path) -> None:
    """A made-up tree: a lazy aliased import, ``.app_for`` on the module imported whole or under an
    alias, and the seam are found; importing another name of ``core.github.app``, or calling the
    seam, is not (the check above can fail)."""
    files = {
        "workers/tasks/a.py": "def f():\n    from core.github.app import app_for as make\n    return make\n",
        "workers/tasks/b.py": "import core.github.app\n\ndef f(s):\n    return core.github.app.app_for(s)\n",
        "workers/tasks/d.py": "from core.github import app as gh\n\ndef f(s):\n    return gh.app_for(s)\n",
        "workers/tasks/c.py": "from core.github.app import GitHubApp\nfrom workers.app import runtime\n"
        "\ndef f(s):\n    return runtime.app_for(s)\n",
        "workers/app/runtime.py": "def app_for(s):\n    from core.github.app import app_for\n    return app_for(s)\n",
    }
    write_tree(tmp_path, files)
    assert app_for_callers(tmp_path) == {"workers.tasks.a", "workers.tasks.b", "workers.tasks.d", APP_SEAM}


def test_the_rules_catch_a_breach(tmp_path: Path) -> None:
    """A made-up tree that breaks each rule is caught: the checks above can fail."""
    files = {
        "core/__init__.py": "",
        "core/config.py": "from bot.views import x\n",
        "bot/__init__.py": "",
        "bot/views.py": "import flask\nfrom workers.jobs import run\n",
        "workers/__init__.py": "",
        "workers/jobs.py": "def run():\n    from workers.engine import ledger\n",
        "workers/engine/__init__.py": "",
        "workers/engine/ledger.py": "from ..jobs import run\nfrom core.config import x\nfrom typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import celery\n",
    }
    write_tree(tmp_path, files)
    made_up = import_graph(tmp_path)
    assert violations(made_up, ["workers.engine"], ["flask"]) == [
        "workers.engine.ledger -> core.config -> bot.views -> flask"
    ]
    assert violations(made_up, ["workers.engine"], ["celery"]) == []  # under TYPE_CHECKING only
    assert "workers.engine.ledger -> core.config -> bot.views" in violations(
        made_up, ["workers.engine"], ["bot"]
    )
    assert "core.config -> bot.views -> workers.jobs" in violations(made_up, ["core"], ["bot", "workers"])
    assert "bot.views -> workers" in violations(made_up, ["bot"], ["workers"])
    assert cycles(made_up) == [["bot.views", "core.config", "workers.engine.ledger", "workers.jobs"]]


# The ledger's recognisers: the package runs the families in order; a family never imports the
# package (it would run the registry from inside itself), and what the families share imports no family.
RECOGNISE = "workers.engine.recognise"
RECOGNISE_SHARED = ("model", "rules", "index", "tokens", "body")


def named_imports(root: Path, package: str) -> dict[str, set[str]]:
    """module of ``package`` -> the modules its own import statements name (not the parent
    packages Python runs first, which the graph above adds to every submodule)."""
    found: dict[str, set[str]] = {}
    for path in sorted((root / package.replace(".", "/")).glob("*.py")):
        module = module_name(path, root)
        found[module] = set(
            _imports(ast.parse(path.read_text(), str(path)), module, path.name == "__init__.py")
        )
    return found


def recognise_breaches(root: Path = ROOT) -> list[str]:
    imports = named_imports(root, RECOGNISE)
    shared = {f"{RECOGNISE}.{name}" for name in RECOGNISE_SHARED}
    families = set(imports) - shared - {RECOGNISE}
    out = [f"{m} -> {RECOGNISE}" for m in sorted(imports) if m != RECOGNISE and RECOGNISE in imports[m]]
    out += [f"{m} -> {f}" for m in sorted(shared & imports.keys()) for f in sorted(imports[m] & families)]
    return out


def test_recognise_families_never_import_the_registry() -> None:
    """No module of ``workers/engine/recognise`` imports the package that runs them, and the shared
    modules (model, rules, index, tokens, body) import no family; the walk finds the package."""
    assert {f"{RECOGNISE}.{name}" for name in RECOGNISE_SHARED} <= named_imports(ROOT, RECOGNISE).keys()
    assert recognise_breaches() == []


def test_the_recognise_rule_catches_a_breach(tmp_path: Path) -> None:
    """A made-up package whose family imports the registry and whose index imports a family is
    caught; a family importing a shared module is not (the check above can fail)."""
    files = {
        "workers/engine/recognise/__init__.py": "from workers.engine.recognise.bundles import x\n",
        "workers/engine/recognise/bundles.py": "def f():\n    from workers.engine.recognise import recognise\n"
        "from workers.engine.recognise.index import UpstreamIndex\n",
        "workers/engine/recognise/index.py": "from workers.engine.recognise.bundles import y\n",
    }
    write_tree(tmp_path, files)
    assert recognise_breaches(tmp_path) == [
        "workers.engine.recognise.bundles -> workers.engine.recognise",
        "workers.engine.recognise.index -> workers.engine.recognise.bundles",
    ]
