"""How a memory is laid out as files in a store's tree.

A memory ``deploy-runbook`` lives at ``<fanout>/deploy-runbook.md`` where ``<fanout>`` is
the first two hex digits of the SHA-1 of the slug: 256 buckets keep every tree a
mutation rewrites small, so a write costs the same at 10,000 memories as at 100. Code
halves sit beside it as ``deploy-runbook.code.ts`` and ``deploy-runbook.onuse.ts``.

The ``.md`` file is a front-matter block holding the description as a JSON string
(which is also a valid YAML double-quoted scalar), then the body verbatim::

    ---
    description: "how the staging cluster is rolled"
    ---
    body text...
"""

from __future__ import annotations

from gitmem.errors import StorageError
from gitmem.lean.layout import CLOSE as _CLOSE
from gitmem.lean.layout import CODE, MD, ON_USE, SUFFIXES, bucket, split_md
from gitmem.lean.layout import OPEN as _OPEN
from gitmem.lean.layout import description as plain_description

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitmem.types import Memory

__all__ = [
    "CODE",
    "MD",
    "ON_USE",
    "SUFFIXES",
    "bucket",
    "decode_lenient",
    "decode_md",
    "encode",
    "memory_path",
    "split_name",
]

ALLOWLIST = "@allowlist"
"""The root-tree file of a memory store that lists the secrets it admits (see
:mod:`gitmem.secrets`); ``@`` keeps it clear of every slug and fan-out directory."""
GUARD = "@guard.ts"
"""The root-tree file of a memory store holding its guard, a TypeScript module."""


def memory_path(slug: str) -> str:
    """The path of a memory's ``.md`` file inside its store's tree."""
    return f"{bucket(slug)}/{slug}{MD}"


def split_name(name: str) -> tuple[str, str] | None:
    """``("csv-tools", ".code.ts")`` for ``csv-tools.code.ts``; ``None`` for a stray name."""
    for suffix in (CODE, ON_USE, MD):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], suffix
    return None


def encode(memory: Memory) -> dict[str, bytes]:
    """The files (name → content) that hold ``memory``; empty code halves are absent."""
    import json  # a write's: a reader (the push hook) rarely needs json at all

    description = json.dumps(memory.description, ensure_ascii=False).encode()
    files = {memory.slug + MD: _OPEN + description + _CLOSE + memory.body.encode()}
    if memory.code:
        files[memory.slug + CODE] = memory.code.encode()
    if memory.on_use:
        files[memory.slug + ON_USE] = memory.on_use.encode()
    return files


def decode_lenient(data: bytes) -> tuple[str, str]:
    """``(description, body)`` from a ``.md`` file that does not parse, read as far as it
    goes: bytes that are not UTF-8 replaced, a description that is not a JSON string
    kept as it is written (what a write that replaces the file measures it by)."""
    framed = split_md(data)
    if framed is None:
        return "", data.decode("utf-8", "replace")
    head = framed[0].decode("utf-8", "replace")
    return plain_description(framed[0]) or head, framed[1].decode("utf-8", "replace")


def decode_md(slug: str, data: bytes) -> tuple[str, str]:
    """``(description, body)`` from a ``.md`` file; ``StorageError`` if it does not parse."""
    framed = split_md(data)
    if framed is None:
        raise StorageError(
            f"memory file {slug}{MD} has no front matter; "
            "restore it with `gitmem log` or rewrite it with `gitmem edit`"
        )
    try:
        # the JSON string read at C speed; anything unusual is json's to read, or refuse
        description = plain_description(framed[0])
        if description is None:
            import json

            description = json.loads(framed[0])
        body = framed[1].decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise StorageError(f"memory file {slug}{MD} does not parse: {exc}") from None
    except RecursionError:  # a description nested past json's depth
        raise StorageError(
            f"memory file {slug}{MD} does not parse: it is nested too deeply"
        ) from None
    if not isinstance(description, str):
        raise StorageError(f"memory file {slug}{MD} has a description that is not text")
    return description, body
