"""A listing's printed text, kept beside the kept listing: the very bytes ``gitmem ls``
prints of a store, and the rows ``gitmem state`` prints, so that reading an unchanged
store of 100,000 memories is one file written out, not 100,000 rows laid out again.

One file per store and command: ``<git dir>/gitmem/listing/<SHA-1 of the store
id>.<command>`` (``ls``, ``state``), keyed as the listing is, by the root tree it lists.
Its first line is ``gitmem-rendered-<format> <command> <tree> <length> <CRC>``, then the
text, UTF-8. The format is :data:`~gitmem.lean.lines.ROWS_FORMAT`, which changes
whenever the rows are laid out otherwise, so a gitmem that prints them otherwise never
prints what an older one kept. The CRC covers the tree id and the text. Derived data,
never believed over the objects: a file of another tree, another command or another
format, or whose length or CRC do not match, is passed over; the text is laid out again
from the listing and the file written anew.
"""

from __future__ import annotations

import os
import zlib

from gitmem.lean.files import replace_quietly
from gitmem.lean.lines import ROWS_FORMAT
from gitmem.lean.listing import store_file_name

__all__ = ["COMMANDS", "encode", "keep", "parse", "read", "rendered_path"]

COMMANDS = ("ls", "state")
"""The commands whose text of a listing is kept."""

_MAGIC = b"gitmem-rendered-%d" % ROWS_FORMAT


def rendered_path(meta: str, store: str, command: str) -> str:
    """Where ``command``'s text of ``store``'s listing is kept, in gitmem's folder
    ``meta`` of a git directory."""
    if command not in COMMANDS:
        raise ValueError(f"no text of a listing is kept for {command!r}")
    return os.path.join(meta, "listing", f"{store_file_name(store)}.{command}")


def encode(command: str, tree: str, text: bytes) -> bytes:
    """The file's bytes for ``command``'s ``text`` (UTF-8) of the listing of ``tree``."""
    crc = zlib.crc32(text, zlib.crc32(tree.encode()))
    return b"%s %s %s %d %d\n" % (_MAGIC, command.encode(), tree.encode(), len(text), crc) + text


def parse(data: bytes, command: str, tree: str) -> bytes | None:
    """The text ``data`` keeps of ``command``'s listing of ``tree``, if it is that and
    reads whole; else ``None``."""
    line, newline, text = data.partition(b"\n")
    fields = line.split(b" ")
    if not newline or len(fields) != 5 or fields[0] != _MAGIC:
        return None
    if fields[1] != command.encode() or fields[2] != tree.encode():
        return None
    if not (fields[3].isdigit() and fields[4].isdigit()):
        return None
    if len(text) != int(fields[3]) or zlib.crc32(text, zlib.crc32(fields[2])) != int(fields[4]):
        return None
    return text


def read(meta: str, store: str, command: str, tree: str) -> bytes | None:
    """``command``'s text of ``store``'s listing of ``tree``, if it is kept whole."""
    try:
        with open(rendered_path(meta, store, command), "rb") as f:
            data = f.read()
    except OSError:
        return None
    return parse(data, command, tree)


def keep(meta: str, store: str, command: str, tree: str, text: bytes) -> None:
    """Keep ``command``'s ``text`` of ``store``'s listing of ``tree`` (best effort:
    derived data, laid out again by the next read if it is lost)."""
    replace_quietly(rendered_path(meta, store, command), encode(command, tree, text))
