"""A package's names imported when first used.

A package that should import cheaply names what it offers in a table (name → the module
that defines it) and takes its module ``__getattr__`` and ``__dir__`` from :func:`on_first_use`:
``import`` of the package loads none of those modules, and the first use of a name
imports its module. This module loads nothing itself (not even ``typing``): the capture
hook and the lean read path import it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Container, Mapping
    from typing import Any


def on_first_use(
    namespace: dict[str, Any], table: Mapping[str, str], fresh: Container[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose globals are ``namespace``.

    ``__getattr__(name)`` imports the module ``table`` names for it and keeps the value
    in ``namespace``, so a later use is a plain lookup; a name in ``fresh`` is looked up
    in its module each time. A name not in ``table`` raises :class:`AttributeError` as
    Python's own lookup does.
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module), name)
        if name not in fresh:
            namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *table})

    return __getattr__, __dir__
