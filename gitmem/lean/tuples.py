"""Named tuples declared as ``typing.NamedTuple`` declares them, made without loading
``typing``.

``typing.NamedTuple`` checks each field's annotation as it makes the class, and with
postponed annotations every one of them is a string it compiles: a few tenths of a
millisecond a field, and ``typing`` itself to load, which a fresh process that reads
a memory's history pays for nothing. Here a class body's annotated names become the
fields of a ``collections.namedtuple`` (the assigned ones their defaults, in order),
and its docstring, methods and properties are set on it; the annotations are left to
the type checker, which reads such a class as ``typing.NamedTuple``'s::

    TYPE_CHECKING = False
    if TYPE_CHECKING:
        from typing import NamedTuple
    else:
        from gitmem.lean.tuples import NamedTuple
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T", bound=tuple[object, ...])

    def made(cls: type[T], values: tuple[object, ...], /) -> T:
        """A named tuple of class ``cls`` holding ``values`` (one for each field)."""
        ...
else:
    # what a named tuple's class makes of all its values, less the Python-level
    # __new__ it calls for them: a push hook makes several for each commit it reads
    made = tuple.__new__

__all__ = ["NamedTuple", "made"]

_MADE_BY_CLASS = frozenset(("__module__", "__qualname__", "__dict__"))


class _Fields(type):
    def __new__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> Any:
        if not bases:
            return super().__new__(cls, name, bases, namespace)
        fields = list(namespace.get("__annotations__", {}))
        defaults = [namespace[field] for field in fields if field in namespace]
        if any(field not in namespace for field in fields[len(fields) - len(defaults) :]):
            raise TypeError(f"{name}: a field without a default follows one with a default")
        module = namespace["__module__"]
        made: Any = namedtuple(name, fields, defaults=defaults, module=module)  # pyright: ignore[reportUntypedNamedTuple]
        made.__qualname__ = namespace["__qualname__"]
        for key, value in namespace.items():
            if key not in _MADE_BY_CLASS and key not in fields:
                setattr(made, key, value)
        return made


class NamedTuple(metaclass=_Fields):
    """Subclass it as ``typing.NamedTuple``: the subclass is a named tuple."""
