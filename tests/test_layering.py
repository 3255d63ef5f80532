"""The package's shape: imports point down the layers, no cycles, dulwich only in the store."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gitmem"

# lowest first; a module may import only from lower layers or from its own package
LAYERS = [
    "gitmem.errors",
    "gitmem.types",
    "gitmem.secrets",
    "gitmem.store",
    "gitmem.search",
    "gitmem.limits",
    "gitmem.edits",
    "gitmem.trailers",
    "gitmem.strategies",
    "gitmem.capability",
    "gitmem.binding",
    "gitmem.sandbox",
    "gitmem.guard",
    "gitmem.screens",
    "gitmem.holder",
    "gitmem.sync",
    "gitmem.repository",
    "gitmem.githooks",
    "gitmem.ops",
    "gitmem.demo",
    "gitmem.adapters",
    "gitmem.anthropic",
    "gitmem.cli",
    "gitmem.__main__",
]


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(module: str) -> set[str]:
    """Every module ``module`` imports, anywhere in its file (type-checking imports too)."""
    tree = ast.parse(MODULES[module].read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
    return found


def _group(module: str) -> str:
    for layer in LAYERS:
        if module == layer or module.startswith(layer + "."):
            return layer
    raise AssertionError(f"{module} is in no layer; add it to LAYERS")


def test_every_module_has_a_layer() -> None:
    """Each module of the package belongs to exactly one named layer (the root aside)."""
    for module in MODULES:
        if module != "gitmem":
            _group(module)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m != "gitmem"))
def test_imports_point_down(module: str) -> None:
    """A module imports only from lower layers, or within its own package."""
    here = LAYERS.index(_group(module))
    for imported in _imports(module):
        if not imported.startswith("gitmem.") or imported == "gitmem._runtime":
            assert imported != "gitmem", f"{module} imports the package root"
            continue
        there = LAYERS.index(_group(imported))
        assert there < here or _group(imported) == _group(module), (
            f"{module} (layer {LAYERS[here]}) imports {imported} (layer {LAYERS[there]})"
        )


def test_no_import_cycles() -> None:
    """The module graph has no cycle, within a package or across them."""
    graph = {m: {i for i in _imports(m) if i in MODULES} for m in MODULES}
    state: dict[str, int] = {}  # 1: on the path, 2: done
    for start in graph:
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
                raise AssertionError(" -> ".join([*path[path.index(child) :], child]))
            elif child not in state:
                state[child] = 1
                stack.append((child, iter(sorted(graph[child]))))


def test_dulwich_only_in_the_store() -> None:
    """No module outside ``gitmem.store`` imports dulwich."""
    for module in MODULES:
        if not module.startswith("gitmem.store"):
            assert not any(i.split(".")[0] == "dulwich" for i in _imports(module)), module


@pytest.mark.parametrize("low", ["gitmem.store", "gitmem.trailers", "gitmem.binding"])
def test_no_sandbox_below_the_holder(low: str) -> None:
    """The store, the trailer format and the binding table never reach the sandbox."""
    for module in MODULES:
        if module == low or module.startswith(low + "."):
            assert not any(i.startswith("gitmem.sandbox") for i in _imports(module)), module


def test_the_mcp_sdk_only_in_its_adapter() -> None:
    """Only ``gitmem.adapters.mcp`` imports the optional ``mcp`` SDK."""
    for module in MODULES:
        if module != "gitmem.adapters.mcp":
            roots = {i.split(".")[0] for i in _imports(module)}
            assert not roots & {"mcp", "mcp_types"}, module
