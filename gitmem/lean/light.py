"""What a light module takes from the standard library's heavier parts, without
loading them: ``cast`` without ``typing``, and ``hashlib``'s SHA-1 without the OpenSSL
``hashlib`` loads to name a file or two. A module imports them from here at run time,
and from ``typing`` and ``hashlib`` for the type checker::

    TYPE_CHECKING = False
    if TYPE_CHECKING:
        from hashlib import sha1
        from typing import cast
    else:
        from gitmem.lean.light import cast, sha1
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hashlib import sha1
    from typing import cast
else:
    try:  # the module itself
        from _sha1 import sha1
    except ImportError:  # a Python built without it
        from hashlib import sha1

    def cast(_: object, value: object) -> object:
        """``value``, as ``typing.cast`` gives it back."""
        return value


__all__ = ["cast", "sha1"]
