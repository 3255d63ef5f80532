"""Module keys: the name a memory's code is imported under from ``"gitmem"``."""

from __future__ import annotations

import re
from collections.abc import Collection

__all__ = ["module_key"]

# Names a program could not import as `import { key } from "gitmem"`, and the two
# the generated module already exports.
_RESERVED = frozenset(
    [
        "memories",
        "views",
        "arguments",
        "await",
        "break",
        "case",
        "catch",
        "class",
        "const",
        "continue",
        "debugger",
        "default",
        "delete",
        "do",
        "else",
        "enum",
        "eval",
        "export",
        "extends",
        "false",
        "finally",
        "for",
        "function",
        "if",
        "implements",
        "import",
        "in",
        "instanceof",
        "interface",
        "let",
        "new",
        "null",
        "package",
        "private",
        "protected",
        "public",
        "return",
        "static",
        "super",
        "switch",
        "this",
        "throw",
        "true",
        "try",
        "typeof",
        "var",
        "void",
        "while",
        "with",
        "yield",
    ]
)


def module_key(slug: str, taken: Collection[str]) -> str:
    """The import key for a memory's code: the slug in camel case, unique among ``taken``.

    ``.``, ``_`` and ``-`` separate words (``csv-tools`` → ``csvTools``); a key already
    taken, reserved in JavaScript or exported by ``"gitmem"`` itself (``memories``,
    ``views``) gets the first free numeric suffix (``csvTools2``).
    """
    words = [w for w in re.split(r"[._\-]+", slug) if w]
    if not words:
        words = ["module"]
    key = words[0][:1].lower() + words[0][1:]
    key += "".join(w[:1].upper() + w[1:] for w in words[1:])
    key = re.sub(r"[^A-Za-z0-9_$]", "_", key)
    if key[:1].isdigit():
        key = "_" + key
    if key not in taken and key not in _RESERVED:
        return key
    n = 2
    while f"{key}{n}" in taken:
        n += 1
    return f"{key}{n}"
