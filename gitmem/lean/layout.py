"""How a memory is laid out as files in a store's tree (the rule
:mod:`gitmem.store.memoryfiles` writes by): its fan-out folder, its files' names, and
the front matter that frames its ``.md`` file."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hashlib import sha1
else:
    from gitmem.lean.light import sha1

__all__ = [
    "CLOSE",
    "CODE",
    "FILE_NAMES",
    "MD",
    "ON_USE",
    "OPEN",
    "SUFFIXES",
    "bucket",
    "description",
    "split_md",
]

MD = ".md"
CODE = ".code.ts"
ON_USE = ".onuse.ts"
SUFFIXES = (MD, CODE, ON_USE)
"""A memory's files: its markdown, and the code and onUse halves beside it."""
FILE_NAMES = {MD: "memory", CODE: "code", ON_USE: "onUse"}
"""How a blamed line names the memory's file it is in."""
OPEN = b"---\ndescription: "
CLOSE = b"\n---\n"


def bucket(slug: str) -> str:
    """The fan-out directory a slug's files live in: the first two hex digits of the
    SHA-1 of the slug."""
    return sha1(slug.encode("ascii")).hexdigest()[:2]


def split_md(data: bytes) -> tuple[bytes, bytes] | None:
    """A ``.md`` file's description (as its JSON string) and body; ``None`` if it has
    no front matter."""
    end = data.find(CLOSE, len(OPEN))
    if not data.startswith(OPEN) or end < 0:
        return None
    return data[len(OPEN) : end], data[end + len(CLOSE) :]


_SPACE = " \t\n\r"

try:  # json's own scanner, without loading the json package
    from _json import scanstring as _scanstring
except ImportError:
    _scanstring = None


def description(framed: bytes) -> str | None:
    """The description a ``.md`` file's front matter holds (its JSON string, as
    :func:`split_md` gives it), read as ``json.loads`` reads it, without loading the
    ``json`` package; ``None`` if it is not one JSON string (the full reader says why)."""
    if _scanstring is None:  # another Python: the full reader decodes it
        return None
    try:
        text = framed.decode("utf-8")
        # a description as gitmem writes it starts at once and ends the front matter
        start = 0 if text[:1] == '"' else len(text) - len(text.lstrip(_SPACE))
        if text[start : start + 1] != '"':
            return None
        value, end = _scanstring(text, start + 1, True)
    except (UnicodeDecodeError, ValueError):
        return None
    return value if end == len(text) or not text[end:].strip(_SPACE) else None
