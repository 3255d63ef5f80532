"""dulwich's native parts a reader calls (a tree's parser, a delta's applier), loaded
without the ``dulwich`` package itself.

The package's ``__init__`` loads ``typing`` (a twentieth of a push hook's whole run);
its native modules need nothing of it. So, while the package is not loaded, a native
module is found where the package's would be (the same search of ``sys.path`` an
import makes) and loaded under its own name, where a later ``import`` of it finds it:
a native module is set up once per process. Once the package is loaded, or where a
module is not found this way, the import is the plain one; ``None`` when dulwich was
built without it (the caller then takes dulwich's Python version).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.machinery import PathFinder
    from importlib.util import module_from_spec
    from types import ModuleType
else:  # the import system's own, which importlib's modules re-export (and load more)
    from _frozen_importlib import module_from_spec
    from _frozen_importlib_external import PathFinder

__all__ = ["native"]


def native(name: str) -> ModuleType | None:
    """dulwich's native module ``name`` (``"_pack"``, ``"_objects"``), or ``None``."""
    full = f"dulwich.{name}"
    held = sys.modules.get(full)
    if held is not None:
        return held
    if "dulwich" not in sys.modules:
        package = PathFinder.find_spec("dulwich")
        places = package.submodule_search_locations if package is not None else None
        where = PathFinder.find_spec(full, list(places)) if places else None
        loader = where.loader if where is not None else None
        if where is not None and loader is not None and not (where.origin or "").endswith(".py"):
            module = module_from_spec(where)
            sys.modules[full] = module
            try:
                loader.exec_module(module)
            except BaseException as exc:
                del sys.modules[full]
                if isinstance(exc, ImportError):
                    return None
                raise
            return module
    try:
        __import__(full)
    except ImportError:
        return None
    return sys.modules[full]
