"""The shape of the code stays readable: no module, class or command grows into a room
that holds several concepts."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gitmem"

MODULE_MAX_LINES = 700
CLASS_MAX_LINES = 400
COMMAND_MAX_LINES = 20


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _classes(tree: ast.AST) -> list[ast.ClassDef]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]


def _is_command(function: ast.FunctionDef) -> bool:
    """Whether click registers ``function``: ``@group.command(...)``, ``@click.group()``."""
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute) and target.attr in ("command", "group"):
            return True
    return False


def _body_lines(function: ast.FunctionDef) -> int:
    """The lines of a function's body, its docstring (the command's help) left out."""
    body = function.body
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        body = body[1:]
    if not body:
        return 0
    end = body[-1].end_lineno or body[-1].lineno
    return end - body[0].lineno + 1


def _commands() -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and _is_command(node):
                found.append((f"{_name(path)}:{node.name}", _body_lines(node)))
    return found


@pytest.mark.parametrize("path", _modules(), ids=_name)
def test_no_module_is_a_room_of_several_concepts(path: Path) -> None:
    """No module of the package is over 700 lines."""
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MODULE_MAX_LINES


def test_no_class_has_several_jobs() -> None:
    """No class of the package is over 400 lines."""
    big: dict[str, int] = {}
    for path in _modules():
        for node in _classes(ast.parse(path.read_text(encoding="utf-8"))):
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            if size > CLASS_MAX_LINES:
                big[f"{_name(path)}:{node.name}"] = size
    assert big == {}


def test_a_command_is_parse_call_print() -> None:
    """No command callback's body (its help text aside) is over 20 lines."""
    commands = _commands()
    assert len(commands) > 30  # the walk finds the commands
    assert {name: n for name, n in commands if n > COMMAND_MAX_LINES} == {}


def test_the_checks_catch_what_they_are_for() -> None:
    """The command finder sees a command in a planted module, and measures its body."""
    planted = ast.parse(
        "@group.command('x')\n"
        "@click.option('--y')\n"
        "def x(y):\n"
        '    """Help."""\n' + "    print(y)\n" * 21
    )
    (function,) = [n for n in ast.walk(planted) if isinstance(n, ast.FunctionDef)]
    assert _is_command(function)
    assert _body_lines(function) == 21
    plain = ast.parse("def helper():\n    return 1\n")
    (helper,) = [n for n in ast.walk(plain) if isinstance(n, ast.FunctionDef)]
    assert not _is_command(helper)
