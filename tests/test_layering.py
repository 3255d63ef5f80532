"""The package's shape: imports point down the layers and down each package's declared
order, no cycles, dulwich only in the store, adapters only through the library's front.

The checker reads a package directory (``problems(root)``), so each check is shown to
fail on a small tree planted in ``tmp_path``. Every form of import counts: ``import``,
``from ... import`` (relative too), ``importlib.import_module("...")`` and
``__import__("...")`` with a literal name, at any depth of the file (type-checking
imports too).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gitmem"

# -- the tables ------------------------------------------------------------------------

LAYERS = [
    "gitmem.lazy",
    "gitmem.errors",
    "gitmem.lean",
    "gitmem.names",
    "gitmem.types",
    "gitmem.secrets",
    "gitmem.store",
    "gitmem.search",
    "gitmem.quick",
    "gitmem.limits",
    "gitmem.state",
    "gitmem.edits",
    "gitmem.trailers",
    "gitmem.strategies",
    "gitmem.capability",
    "gitmem.binding",
    "gitmem.sandbox",
    "gitmem.guard",
    "gitmem.screens",
    "gitmem.holder",
    "gitmem.pushrecord",
    "gitmem.pushchain",
    "gitmem.githooks",
    "gitmem.sync",
    "gitmem.review",
    "gitmem.undo",
    "gitmem.repository",
    "gitmem.ops",
    "gitmem.observe",
    "gitmem.demo",
    "gitmem",
    "gitmem.adapters",
    "gitmem.anthropic",
    "gitmem.cli",
    "gitmem.__main__",
]
"""The layers, lowest first: a module imports only from lower layers or its own. A layer
is a module or a package with everything under it; ``gitmem`` alone is the package's
front (its ``__init__``), which only the layers above it may import."""

ORDER: dict[str, list[str]] = {
    "gitmem.store": [
        "permissions",
        "lineage",
        "collector",
        "native",
        "pushobjects",
        "packscan",
        "locking",
        "layout",
        "settings",
        "message",
        "memoryfiles",
        "packreader",
        "treefind",
        "trees",
        "rows",
        "objects",
        "blobids",
        "historyfile",
        "history",
        "view",
        "summaries",
        "kept",
        "outline",
        "snapshot",
        "filestore",
        "check",
        "packing",
        "refs",
        "transfer",
        "markers",
        "blame",
        "moments",
        "lease",
        "watched",
        "remote",
        "screen",
        "treeform",
        "incoming",
        "pushtrailers",
        "pushcheck",
        "sharing",
        "commit",
        "merge",
        "proposals",
        "storage",
    ],
    "gitmem.lean": [
        "light",
        "ending",
        "files",
        "halves",
        "tuples",
        "text",
        "shapes",
        "totals",
        "alike",
        "layout",
        "objects",
        "refs",
        "repository",
        "argv",
        "listing",
        "survey",
        "heads",
        "asof",
        "commits",
        "lines",
        "rendered",
        "grammar",
    ],
    "gitmem.search": ["words", "ranked", "stored", "hits", "index"],
    "gitmem.strategies": [
        "base",
        "calls",
        "markdown",
        "scratchpad",
        "keyword_search",
        "notebook",
        "curated",
        "registry",
        "operator",
        "notebook_ops",
        "curated_ops",
    ],
    "gitmem.strategies.curated": [
        "rows",
        "parse",
        "checks",
        "build",
        "render",
        "conflicts",
        "index",
        "handlers",
    ],
    "gitmem.sandbox": ["keys", "launch", "process", "pool", "runner"],
    "gitmem.holder": [
        "framing",
        "telemetry",
        "code",
        "context",
        "written",
        "notices",
        "tools",
        "turn",
    ],
    "gitmem.sync": ["text", "reconcile"],
    "gitmem.ops": [
        "diffs",
        "finding",
        "record",
        "sharing",
        "writing",
        "reading",
        "folding",
        "ledger",
        "ledgers",
        "fold_worker",
        "console",
        "health",
        "reports",
        "review",
        "program",
    ],
    "gitmem.adapters": [
        "extras",
        "heap",
        "schemas",
        "sessions",
        "startup",
        "own_names",
        "anthropic",
        "mcp",
        "claude_code",
        "console_requests",
        "console_pages",
        "console",
    ],
    "gitmem.cli": [
        "output",
        "options",
        "memories",
        "stores",
        "sync",
        "review",
        "guards",
        "notebook",
        "rows",
        "agents",
        "console",
        "observe",
        "recall",
    ],
    "gitmem.observe": [
        "finding",
        "capture",
        "model",
        "prompts",
        "trust",
        "config",
        "entries",
        "answers",
        "logbook",
        "transcripts",
        "recall",
        "lease",
        "extract",
        "consolidate",
        "proposals",
        "retain",
        "pipeline",
        "blocks",
        "worker",
        "panel",
        "search",
        "tools",
    ],
}
"""Each package's modules (and subpackages), lowest first: a module imports only the
ones before it. The package's ``__init__`` is its front, above them all; a module never
imports its own package's front."""

FRONT = {
    "gitmem.adapters": ["gitmem.store", "gitmem.binding", "gitmem.limits"],
    "gitmem.anthropic": ["gitmem.store", "gitmem.binding", "gitmem.limits"],
}
"""Modules that enter through the library's front, and the modules (with everything under
them) they may not import; nor any private name or module of the library."""

ONLY_IN = {
    "dulwich": "gitmem.store",
    "mcp": "gitmem.adapters.mcp",
    "mcp_types": "gitmem.adapters.mcp",
}
"""A third-party package, and the module (or package) that alone may import it."""

NO_SANDBOX = ["gitmem.store", "gitmem.trailers", "gitmem.binding"]
"""Layers that never reach the sandbox."""


# -- reading a tree --------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    """One import: the module reached, and the name taken from it (``""`` for none)."""

    module: str
    name: str = ""


@dataclass
class Tree:
    """A package's modules and what each imports."""

    modules: dict[str, Path]
    imports: dict[str, set[Import]]

    def reached(self, module: str) -> set[str]:
        return {i.module for i in self.imports[module]}


def _name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def read_tree(root: Path) -> Tree:
    """Every module under the package directory ``root`` and its imports."""
    modules = {_name(root, p): p for p in sorted(root.rglob("*.py"))}
    imports = {m: set(_imports(m, p, modules)) for m, p in modules.items()}
    return Tree(modules, imports)


def _absolute(module: str, is_package: bool, target: str, level: int) -> str:
    """``target`` of a relative import (``level`` dots) made absolute."""
    if level == 0:
        return target
    base = module.split(".")
    if not is_package:
        base.pop()
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, target] if target else base)


def _imports(module: str, path: Path, modules: dict[str, Path]) -> Iterator[Import]:
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(alias.name)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, is_package, node.module or "", node.level)
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                yield Import(sub) if sub in modules else Import(source, alias.name)
        elif isinstance(node, ast.Call):
            found = _dynamic(module, is_package, node)
            if found:
                yield Import(found)


def _dynamic(module: str, is_package: bool, call: ast.Call) -> str | None:
    """The module an ``import_module``/``__import__`` call with a literal name reaches."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in ("import_module", "__import__") or not call.args:
        return None
    first = call.args[0]
    if not isinstance(first, ast.Constant) or not isinstance(first.value, str):
        return None
    target: str = first.value
    if name == "import_module" and target.startswith("."):
        dots = len(target) - len(target.lstrip("."))
        return _absolute(module, is_package, target[dots:], dots)
    return target


# -- the checks ------------------------------------------------------------------------


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _layer(module: str) -> str | None:
    if module == "gitmem":
        return "gitmem"
    found = [layer for layer in LAYERS if layer != "gitmem" and _within(module, layer)]
    return found[0] if found else None


def layer_problems(tree: Tree) -> list[str]:
    """Every module has a layer, and imports only from lower layers or its own."""
    problems: list[str] = []
    for module in tree.modules:
        here = _layer(module)
        if here is None:
            problems.append(f"{module} is in no layer; add it to LAYERS")
            continue
        for imported in sorted(tree.reached(module)):
            there = _layer(imported) if _within(imported, "gitmem") else None
            if there is None or there == here:
                continue
            if LAYERS.index(there) > LAYERS.index(here):
                problems.append(f"{module} (layer {here}) imports {imported} (layer {there})")
    return problems


def _package(module: str) -> str | None:
    """The package ``module`` is a part of (``None`` for the root)."""
    if "." not in module:
        return None
    return module.rsplit(".", 1)[0]


def order_problems(tree: Tree) -> list[str]:
    """Inside each package, a module imports only the parts declared before it."""
    problems: list[str] = []
    packages = {m for m in tree.modules if tree.modules[m].name == "__init__.py"}
    for package in sorted(packages - {"gitmem"}):
        declared = ORDER.get(package)
        if declared is None:
            problems.append(
                f"package {package} declares no order; add ORDER[{package!r}], lowest first"
            )
            continue
        for module in tree.modules:
            if _package(module) != package:
                continue
            part = module.rsplit(".", 1)[1]
            if part not in declared:
                problems.append(f"{module} is missing from ORDER[{package!r}]")
    for module in sorted(tree.modules):
        package = _package(module)
        declared = ORDER.get(package or "")
        if package is None or declared is None:
            continue
        part = module.rsplit(".", 1)[1]
        for imported in sorted(tree.reached(module)):
            if imported == package:
                problems.append(f"{module} imports its own package's front {package}")
                continue
            if not imported.startswith(package + "."):
                continue
            other = imported[len(package) + 1 :].split(".")[0]
            if other == part or other not in declared or part not in declared:
                continue
            if declared.index(other) > declared.index(part):
                problems.append(
                    f"{module} imports {imported}, declared above it in ORDER[{package!r}]"
                )
    return problems


def front_problems(tree: Tree) -> list[str]:
    """Adapters import neither the forbidden layers nor a private name of the library."""
    problems: list[str] = []
    for module in sorted(tree.modules):
        for entry, forbidden in FRONT.items():
            if not _within(module, entry):
                continue
            for found in sorted(tree.imports[module], key=lambda i: (i.module, i.name)):
                if not _within(found.module, "gitmem") or _within(found.module, entry):
                    continue
                if any(_within(found.module, f) for f in forbidden):
                    problems.append(f"{module} imports {found.module}; use the library's front")
                elif any(p.startswith("_") for p in found.module.split(".")):
                    problems.append(f"{module} imports the private module {found.module}")
                elif found.name.startswith("_"):
                    problems.append(
                        f"{module} imports the private name {found.name} from {found.module}"
                    )
    return problems


def cycle_problems(tree: Tree) -> list[str]:
    """The module graph has no cycle, within a package or across them."""
    graph = {m: {i for i in tree.reached(m) if i in tree.modules} for m in tree.modules}
    state: dict[str, int] = {}  # 1: on the path, 2: done
    for start in sorted(graph):
        if start in state:
            continue
        stack = [(start, iter(sorted(graph[start])))]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state.get(child) == 1:
                path = [n for n, _ in stack]
                return [" -> ".join([*path[path.index(child) :], child])]
            elif child not in state:
                state[child] = 1
                stack.append((child, iter(sorted(graph[child]))))
    return []


def third_party_problems(tree: Tree) -> list[str]:
    """Each package in ``ONLY_IN`` is imported only by its one module, and no layer in
    ``NO_SANDBOX`` reaches the sandbox."""
    problems: list[str] = []
    for module in sorted(tree.modules):
        roots = {i.split(".")[0] for i in tree.reached(module)}
        for package, home in ONLY_IN.items():
            if package in roots and not _within(module, home):
                problems.append(f"{module} imports {package}, which only {home} may")
        if any(_within(module, low) for low in NO_SANDBOX) and any(
            _within(i, "gitmem.sandbox") for i in tree.reached(module)
        ):
            problems.append(f"{module} reaches the sandbox")
    return problems


CHECKS = [layer_problems, order_problems, front_problems, cycle_problems, third_party_problems]


def problems(root: Path) -> list[str]:
    """Every problem of the package at ``root``, each check in turn."""
    tree = read_tree(root)
    return [p for check in CHECKS for p in check(tree)]


# -- the package as it is --------------------------------------------------------------


@pytest.fixture(scope="module")
def tree() -> Tree:
    return read_tree(PACKAGE)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_the_package_keeps_its_shape(tree: Tree, check: object) -> None:
    """Each check passes on the package as it stands."""
    assert callable(check)
    assert check(tree) == []


def test_every_package_declares_each_of_its_parts() -> None:
    """ORDER names only parts that exist, so a rename shows up here too."""
    tree = read_tree(PACKAGE)
    for package, parts in ORDER.items():
        for part in parts:
            assert f"{package}.{part}" in tree.modules, f"{package}.{part} no longer exists"


# -- each check fails on a planted violation -------------------------------------------


def _plant(tmp_path: Path, files: dict[str, str]) -> Path:
    """A package ``gitmem`` under ``tmp_path`` holding ``files`` (path → source),
    with every ``__init__.py`` on the way."""
    root = tmp_path / "gitmem"
    for rel, source in {"__init__.py": "", "errors.py": "", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(root).parents:
            init = root / parent / "__init__.py"
            if not init.exists():
                init.write_text("")
        path.write_text(source)
    return root


def test_a_planted_tree_that_keeps_the_rules_passes(tmp_path: Path) -> None:
    """The planted trees below differ from this one by their one violation."""
    root = _plant(
        tmp_path,
        {
            "store/layout.py": "from gitmem.errors import GitmemError\n",
            "store/storage.py": "from .layout import x\nfrom . import layout\n",
            "holder/__init__.py": "from gitmem.holder.tools import ToolResult\n",
            "holder/tools.py": "from ..store import storage\n",
            "adapters/mcp.py": "from gitmem import Holder\nfrom gitmem.holder import Turn\n",
        },
    )
    assert problems(root) == []


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            {"store/objects.py": "from ..holder import tools\n", "holder/tools.py": ""},
            "gitmem.store.objects (layer gitmem.store) imports gitmem.holder.tools "
            "(layer gitmem.holder)",
            id="relative import up a layer",
        ),
        pytest.param(
            {"store/objects.py": "from .. import holder\n", "holder/__init__.py": ""},
            "gitmem.store.objects (layer gitmem.store) imports gitmem.holder (layer gitmem.holder)",
            id="relative import of a package up a layer",
        ),
        pytest.param(
            {"errors.py": 'import importlib\nimportlib.import_module("gitmem.holder")\n'},
            "gitmem.errors (layer gitmem.errors) imports gitmem.holder (layer gitmem.holder)",
            id="importlib string up a layer",
        ),
        pytest.param(
            {"types.py": 'from importlib import import_module\nimport_module("gitmem.cli")\n'},
            "gitmem.types (layer gitmem.types) imports gitmem.cli (layer gitmem.cli)",
            id="import_module string up a layer",
        ),
        pytest.param(
            {"types.py": '__import__("gitmem.sandbox")\n'},
            "gitmem.types (layer gitmem.types) imports gitmem.sandbox (layer gitmem.sandbox)",
            id="__import__ string up a layer",
        ),
        pytest.param(
            {"store/objects.py": "import gitmem\n"},
            "gitmem.store.objects (layer gitmem.store) imports gitmem (layer gitmem)",
            id="the front from below it",
        ),
        pytest.param(
            {"weather.py": ""},
            "gitmem.weather is in no layer; add it to LAYERS",
            id="a module in no layer",
        ),
    ],
)
def test_the_layers_catch_a_planted_import(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    """An import up the layers is found in every form an import can take."""
    assert expected in layer_problems(read_tree(_plant(tmp_path, files)))


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            {"store/layout.py": "from gitmem.store.storage import Storage\n"},
            "gitmem.store.layout imports gitmem.store.storage, declared above it in "
            "ORDER['gitmem.store']",
            id="absolute import up the order",
        ),
        pytest.param(
            {"store/layout.py": "from .storage import Storage\n"},
            "gitmem.store.layout imports gitmem.store.storage, declared above it in "
            "ORDER['gitmem.store']",
            id="relative import up the order",
        ),
        pytest.param(
            {"holder/code.py": 'import importlib\nimportlib.import_module(".turn", __package__)\n'},
            "gitmem.holder.code imports gitmem.holder.turn, declared above it in "
            "ORDER['gitmem.holder']",
            id="relative importlib string up the order",
        ),
        pytest.param(
            {"holder/code.py": "from gitmem.holder import Holder\n"},
            "gitmem.holder.code imports its own package's front gitmem.holder",
            id="a part importing its package's front",
        ),
        pytest.param(
            {"weather/__init__.py": "", "weather/rain.py": ""},
            "package gitmem.weather declares no order; add ORDER['gitmem.weather'], lowest first",
            id="a package with no order",
        ),
        pytest.param(
            {"holder/extra.py": ""},
            "gitmem.holder.extra is missing from ORDER['gitmem.holder']",
            id="a module missing from its package's order",
        ),
    ],
)
def test_the_order_inside_a_package_catches_a_planted_import(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    """Inside a package, an import up the declared order is found."""
    assert expected in order_problems(read_tree(_plant(tmp_path, files)))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "from gitmem.store import Repository\n",
            "gitmem.adapters.tool imports gitmem.store; use the library's front",
        ),
        (
            "from gitmem.store.files import FileSnapshot\n",
            "gitmem.adapters.tool imports gitmem.store.files; use the library's front",
        ),
        (
            "from gitmem.binding import Binding\n",
            "gitmem.adapters.tool imports gitmem.binding; use the library's front",
        ),
        (
            "from ..limits import FileLimits\n",
            "gitmem.adapters.tool imports gitmem.limits; use the library's front",
        ),
        (
            'import importlib\nimportlib.import_module("gitmem.limits")\n',
            "gitmem.adapters.tool imports gitmem.limits; use the library's front",
        ),
        (
            "from gitmem.holder.tools import _Desk\n",
            "gitmem.adapters.tool imports the private name _Desk from gitmem.holder.tools",
        ),
        (
            "import gitmem._runtime\n",
            "gitmem.adapters.tool imports the private module gitmem._runtime",
        ),
    ],
)
def test_the_front_catches_an_adapter_stepping_around_it(
    tmp_path: Path, source: str, expected: str
) -> None:
    """An adapter that reaches past the library's front is found."""
    files = {
        "adapters/tool.py": source,
        "holder/tools.py": "",
        "store/files.py": "",
        "binding.py": "",
        "limits.py": "",
    }
    assert expected in front_problems(read_tree(_plant(tmp_path, files)))


def test_a_cycle_is_found(tmp_path: Path) -> None:
    """Two modules importing each other are a cycle, relative imports too."""
    files = {
        "sync/text.py": "from . import reconcile\n",
        "sync/reconcile.py": "from . import text\n",
    }
    found = cycle_problems(read_tree(_plant(tmp_path, files)))
    assert found == ["gitmem.sync.reconcile -> gitmem.sync.text -> gitmem.sync.reconcile"]


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"holder/tools.py": "import dulwich.repo\n"}, "gitmem.holder.tools imports dulwich"),
        ({"adapters/console.py": "from mcp.server import Server\n"}, "imports mcp"),
        (
            {"binding.py": "from gitmem.sandbox import Sandbox\n"},
            "gitmem.binding reaches the sandbox",
        ),
    ],
)
def test_third_party_and_sandbox_homes_are_kept(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    """dulwich stays in the store, the MCP SDK in its adapter, the sandbox above binding."""
    found = third_party_problems(read_tree(_plant(tmp_path, files)))
    assert any(expected in p for p in found), found
