"""Finding one entry of a tree in its raw bytes, without parsing every entry.

A walk of every revision of a store looks up one entry in each of tens of thousands of
trees: a root tree's fan-out folder, then a memory's file in that folder. Parsing each
tree whole (256 entries for a root) was most of such a walk; this reads only as far as
the entry, exactly as git reads a tree (``<octal mode> <name>\\0<20-byte id>`` entries
one after the other from the first), so a name found inside another entry's id is
never taken for an entry.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from dulwich.errors import ObjectFormatException
from dulwich.objects import parse_tree

from gitmem.store import memoryfiles as files

__all__ = ["files_in", "find_entry"]

_DIR_MODE = 0o040000
_STRIDE_MIN = 4096
"""Bytes of a tree worth checking column by column first (see ``_by_stride``)."""
# a name, a newline, then a tree's raw entries: the entries are taken one by one from
# the first, up to the one whose name is the name in front (linear: each entry matches
# one way only)
_ENTRY_NAMED = re.compile(rb"([^\n]+)\n(?:[0-7]+ [^\0]+\0.{20})*?([0-7]+) \1\0(.{20})", re.DOTALL)


def find_entry(content: bytes, name: bytes) -> tuple[int, str] | None:
    """The ``(mode, hex id)`` of the entry ``name`` of the tree whose raw content is
    ``content``, or ``None`` if it has none."""
    if b"\n" in name:
        try:
            entries = parse_tree(content, 20)
        except ObjectFormatException:
            return None
        return next(((mode, sha.decode()) for n, mode, sha in entries if n == name), None)
    found = _by_stride(content, name) if len(content) >= _STRIDE_MIN else None
    if found is not None:
        return found
    match = _ENTRY_NAMED.match(name + b"\n" + content)
    return None if match is None else (int(match[2], 8), match[3].hex())


def _by_stride(content: bytes, name: bytes) -> tuple[int, str] | None:
    """The entry ``name`` of a tree's raw ``content`` when every entry before it has
    its width and mode (a store's root: fan-out folders of two-character names), found
    by checking those entries' fixed bytes column by column; ``None``: not so (the
    entry may still be there: read it entry by entry)."""
    for mode in (b"40000", b"100644"):
        head = mode + b" " + name + b"\0"
        width = len(head) + 20
        at = content.find(head)
        while at > 0 and at % width:
            at = content.find(head, at + 1)
        if at < 0:
            continue
        # each entry before: the same mode and a space, a name without a NUL, a NUL
        fixed, count = len(mode) + 1, at // width
        if (
            all(content[i:at:width] == head[i : i + 1] * count for i in range(fixed))
            and content[len(head) - 1 : at : width] == b"\0" * count
            and not any(b"\0" in content[i:at:width] for i in range(fixed, len(head) - 1))
        ):
            return int(mode, 8), content[at + len(head) : at + width].hex()
    return None


def files_in(
    root: bytes, read: Callable[[str], bytes], slug: str
) -> tuple[bytes, bytes | None, bytes | None] | None:
    """The hex ids of memory ``slug``'s ``.md``, code and onUse files (``None`` where
    absent) in the root tree whose raw content is ``root`` (``read``: a folder's raw
    content by id); ``None`` if it has no ``.md`` file there. What a parse of both
    trees into names finds, for trees as git writes them (no name twice)."""
    folder = find_entry(root, files.bucket(slug).encode())
    if folder is None or folder[0] != _DIR_MODE:
        return None
    content = read(folder[1])
    md = find_entry(content, (slug + files.MD).encode())
    if md is None:
        return None
    code, on_use = (
        # a name not in the bytes at all is in no entry: the common case, no search
        find_entry(content, name) if b" " + name + b"\0" in content else None
        for name in ((slug + files.CODE).encode(), (slug + files.ON_USE).encode())
    )
    return (
        md[1].encode(),
        code[1].encode() if code is not None else None,
        on_use[1].encode() if on_use is not None else None,
    )
