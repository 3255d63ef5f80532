"""dulwich's native parts (gitmem.store.native) load without the dulwich package, once a
process: a later import of the package and of the module finds the same module."""

from __future__ import annotations

import ast
import subprocess
import sys

from gitmem.store.native import native


def _run(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def test_a_native_module_loads_without_the_package_and_is_the_one_dulwich_imports() -> None:
    """The tree parser the readers take is dulwich's own module object: loaded before
    the package, the package's later import reuses it (a native module is set up once)
    and its Python layer reads trees with it."""
    code = (
        "import sys\n"
        "from gitmem.store import trees\n"
        "print(sorted(m for m in ('dulwich', 'typing') if m in sys.modules))\n"
        "held = sys.modules.get('dulwich._objects')\n"
        "import dulwich.objects\n"
        "from dulwich import _objects\n"
        "print(held is not None and _objects is held is sys.modules['dulwich._objects'])\n"
        "tree = dulwich.objects.Tree()\n"
        "tree.add(b'a.md', 0o100644, b'1' * 40)\n"
        "print(trees.parse(tree.as_raw_string()) == [(b'a.md', 0o100644, b'1' * 40)])\n"
    )
    out = _run(code)
    assert ast.literal_eval(out[0]) == []
    assert out[1:] == ["True", "True"]


def test_once_the_package_is_loaded_the_plain_import_is_taken() -> None:
    """With dulwich loaded, a native module is the package's own."""
    import dulwich._pack

    assert native("_pack") is dulwich._pack


def test_a_module_dulwich_does_not_have_is_none() -> None:
    """A name dulwich has no module under reads as a build without that native part."""
    assert native("_no_such_part") is None
