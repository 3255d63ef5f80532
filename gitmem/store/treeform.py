"""The form git's fsck asks of a tree, held for every tree a push or a sync brings.

git writes a tree's entries in one order (by name, a folder's name read with a ``/``
after it), each name once, each mode one of the five it writes and spelled as it
spells them (``100644``, ``100755``, ``40000``, ``120000``, ``160000``). ``git fsck
--strict`` (and a host that sets ``receive.fsckObjects``) refuses a tree that is not so,
and readers part ways on one: a name given twice is the first entry to git and the
last to dulwich, so what one shows another never reads. :func:`form_problem` says
why a tree's content is not of that form, in one pass of the regular expression
engine and a comparison of its names.
"""

from __future__ import annotations

import re
from itertools import chain, islice, pairwise
from operator import lt

__all__ = ["form_problem", "key_at"]

# every entry of a tree of git's form: a mode as git spells it, a name, a 20-byte id
_ENTRY = re.compile(rb"(100644|100755|40000|120000|160000) ([^\0]++)\0.{20}", re.DOTALL)
# an entry of a plain file, its name grouped; its length less the name's
_FILE = re.compile(rb"100644 ([^\0]++)\0.{20}", re.DOTALL)
_FILE_SIZE = 28
_MODES = frozenset((b"100644", b"100755", b"40000", b"120000", b"160000"))
_DIR = b"40000"


def form_problem(content: bytes) -> str | None:
    """Why a tree of ``content`` is not of git's form (``None``: it is), as the end of
    a sentence that starts with the tree's name."""
    if content.startswith(b"100644 "):
        # a folder of plain files (a fan-out directory's): when they lie end to end,
        # the general pass finds these same entries, and their names are their keys
        # (strictly in order: each given once)
        names: list[bytes] = _FILE.findall(content)
        if sum(map(len, names)) + _FILE_SIZE * len(names) == len(content) and all(
            map(lt, names, islice(names, 1, None))
        ):
            return None
    return _problem(content)


def _problem(content: bytes) -> str | None:
    """:func:`form_problem`, for a tree of any entries."""
    found: list[tuple[bytes, bytes]] = _ENTRY.findall(content)
    # matches that add up to the whole content lie end to end from its first byte
    if sum(map(len, chain.from_iterable(found))) + 22 * len(found) != len(content):
        return _unread(content)
    keys = [name + b"/" if mode == _DIR else name for mode, name in found]
    if all(map(lt, keys, islice(keys, 1, None))):
        names = [name for _, name in found]
        if len(set(names)) == len(names):
            return None
        # a file and a folder of one name (their keys differ)
        twice = next(name for name in names if names.count(name) > 1)
        return f"names {_text(twice)!r} twice; git's fsck refuses such a tree"
    before, after = next((a, b) for a, b in pairwise(keys) if a >= b)
    if before == after:
        return f"names {_text(after.rstrip(b'/'))!r} twice; git's fsck refuses such a tree"
    return (
        f"lists {_text(after.rstrip(b'/'))!r} after {_text(before.rstrip(b'/'))!r}, out "
        "of git's order; git's fsck refuses such a tree"
    )


def key_at(content: bytes, start: int) -> bytes:
    """What the entry of a tree of git's form starting at ``start`` sorts by: its name,
    with a ``/`` after a folder's."""
    space = content.index(b" ", start)
    name = content[space + 1 : content.index(b"\0", space)]
    return name + b"/" if content[start:space] == _DIR else name


def _unread(content: bytes) -> str:
    """Why ``content`` is not entries of git's form, entry by entry (a refusal's path)."""
    at, end = 0, len(content)
    while at < end:
        space = content.find(b" ", at)
        nul = content.find(b"\0", space + 1) if space >= 0 else -1
        if nul < 0 or nul + 21 > end:
            break
        mode, name = content[at:space], _text(content[space + 1 : nul])
        if mode not in _MODES:
            spelled = mode.decode("ascii", "replace")[:12]
            if mode.lstrip(b"0") in _MODES:
                return (
                    f"spells the mode of {name!r} with a leading zero ({spelled}); "
                    "git's fsck refuses such a tree"
                )
            return (
                f"gives {name!r} the mode {spelled}, which git does not write (a store's "
                "files are 100644, its folders 40000)"
            )
        if not name:
            return "holds an entry with no name; git's fsck refuses such a tree"
        at = nul + 21
    return "does not parse as git's entries (a mode, a name, an id)"


def _text(name: bytes) -> str:
    return name.decode("utf-8", "replace")[:80]
