"""What a name in a store's tree may be: the one rule every write path applies.

A git tree entry's name is refused, by ``git fsck --strict``, by a host that sets
``receive.fsckObjects``, or by a checkout, when git reads it as something other than a
plain file:

- ``.`` and ``..``, an empty name, and a name holding ``/`` or NUL;
- ``.git`` in any of the spellings a file system takes for it: any case, followed by
  spaces and dots or an NTFS stream (``.git.``, ``.Git ..``, ``.git::$DATA``), the NTFS
  short name ``git~1``, and on HFS+ with invisible code points anywhere (``.g\u200cit``);
- ``.gitmodules`` and ``.gitattributes`` in the same spellings (with their NTFS short
  names such as ``gitmod~1`` or ``gi7eba~1``): git parses those files in every tree and
  refuses the ones that do not read as it expects.

gitmem also refuses what a checkout cannot write on a common system: a backslash (git
on Windows reads it as a folder separator and refuses the tree) and a name over 255
bytes of UTF-8. :func:`tree_name_problem` says why a name is refused; the slug rules
(:func:`check_slug`) and the file-store path rules (:func:`check_path`) are this rule
plus their own, and an op's name has a rule of its own (:func:`check_op`). Each is
re-exported by :mod:`gitmem.types`.
"""

from __future__ import annotations

import unicodedata

from gitmem.errors import InvalidArgument, InvalidPath, InvalidSlug
from gitmem.lean.shapes import SLUG_CHARS, op_shape

__all__ = [
    "NAME_BYTES_MAX",
    "PATH_DEPTH",
    "PATH_MAX",
    "SLUG_MAX",
    "check_op",
    "check_path",
    "check_slug",
    "is_dotgit",
    "tree_name_problem",
]

NAME_BYTES_MAX = 255
"""Bytes of UTF-8 a tree name may take: what common file systems hold in one name."""

# Code points HFS+ leaves out when it compares names, so ``.g\u200cit`` is ``.git``
# there (git's own list).
_HFS_IGNORED = frozenset(
    (*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF)
)
# ASCII letters, digits, '_', '-' and '.' (not first), at most NAME_BYTES_MAX of them:
# no rule below refuses such a name (each refused spelling starts with '.', or holds
# '~', '/', '\\', NUL or a character outside ASCII); checked with ``str`` methods, as
# the push hook's process loads no ``re``
_PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
# (name after the dot, the first six letters of its NTFS hashed short name)
_SPECIAL = (("gitmodules", "gi7eba"), ("gitattributes", "gi7d29"))


def _lower(char: str) -> str:
    """ASCII lower case only: git compares these names byte by byte, and ``str.lower``
    folds more (the Kelvin sign is ``k`` to Python, not to git)."""
    return char.lower() if char.isascii() else char


def _is_hfs(name: str, needle: str) -> bool:
    """Whether HFS+ takes ``name`` for ``.<needle>``: invisible code points dropped,
    ASCII case folded."""
    kept = [_lower(c) for c in name if ord(c) not in _HFS_IGNORED]
    return "".join(kept) == "." + needle


def _only_dots_and_spaces(rest: str) -> bool:
    """Whether NTFS drops ``rest`` from the end of a name: spaces and dots, up to the
    end or to ``:`` (an alternate data stream of the same file)."""
    for char in rest:
        if char == ":":
            return True
        if char not in ". ":
            return False
    return True


def _is_ntfs_dotgit(name: str) -> bool:
    low = "".join(_lower(c) for c in name[:5])
    if low.startswith(".git"):
        return _only_dots_and_spaces(name[4:])
    if low == "git~1":
        return _only_dots_and_spaces(name[5:])
    return False


def _is_ntfs_special(name: str, word: str, short: str) -> bool:
    """Whether NTFS may take ``name`` for ``.<word>``: the name itself followed by
    spaces and dots, its ``~1``-``~4`` short name, or a hashed short name."""
    if name[:1] == "." and "".join(_lower(c) for c in name[1 : 1 + len(word)]) == word:
        return _only_dots_and_spaces(name[1 + len(word) :])
    head = "".join(_lower(c) for c in name[:6])
    if head == word[:6] and name[6:7] == "~" and name[7:8] in "1234" and name[7:8]:
        return _only_dots_and_spaces(name[8:])
    # the fallback short name: up to six letters of ``short``, ``~``, then digits to
    # eight characters in all (the first digit not 0)
    tilde = name.find("~", 0, 7)
    if tilde < 0 or len(name) < 8:
        return False
    digits = name[tilde + 1 : 8]
    if not digits or not all("0" <= d <= "9" for d in digits) or digits[0] == "0":
        return False
    if "".join(_lower(c) for c in name[:tilde]) != short[:tilde]:
        return False
    return _only_dots_and_spaces(name[8:])


def is_dotgit(name: str) -> bool:
    """Whether git reads ``name`` as ``.git`` on some file system (NTFS or HFS+)."""
    return _is_hfs(name, "git") or _is_ntfs_dotgit(name)


def tree_name_problem(name: str) -> str | None:
    """Why ``name`` may not be an entry of a git tree, as the end of a sentence
    (``"is read as .git by git"``); ``None`` when git and a checkout take it as a plain
    name."""
    if 0 < len(name) <= NAME_BYTES_MAX and name[0] != "." and _PLAIN.issuperset(name):
        return None  # the common case, decided in one step
    if not name:
        return "is empty"
    if name in (".", "..") or name.lower() == ".git":
        return "is reserved by git"
    if "/" in name or "\x00" in name:
        return "holds '/' or a NUL character"
    if "\\" in name:
        return "holds a backslash, which git reads as a folder separator on Windows"
    if is_dotgit(name):
        return "is read as .git by git on Windows or macOS"
    for word, short in _SPECIAL:
        if _is_hfs(name, word) or _is_ntfs_special(name, word, short):
            return f"is read as .{word} by git"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError as exc:
        return f"holds a lone surrogate at character {exc.start}"
    if size > NAME_BYTES_MAX:
        return f"takes {size} bytes of UTF-8; a file system holds at most {NAME_BYTES_MAX}"
    return None


SLUG_MAX = 64


def check_slug(slug: object) -> str:
    """Return ``slug`` if it obeys the slug rules, else raise ``InvalidSlug`` saying why.

    A slug is 1-64 ASCII letters, digits, ``-``, ``_`` and ``.``, is a name a git tree
    may hold (see :func:`tree_name_problem`: not ``.``, ``..``, nor ``.git`` or
    ``.gitmodules`` in any spelling) and does not end in ``.lock``.
    """
    if not isinstance(slug, str) or not slug:
        raise InvalidSlug("a memory name must be a non-empty string of 1-64 characters")
    if len(slug) > SLUG_MAX:
        raise InvalidSlug(
            f"memory name {slug[:20]!r}... is {len(slug)} characters; use at most {SLUG_MAX}"
        )
    if not SLUG_CHARS.issuperset(slug):
        bad = sorted({c for c in slug if not (c.isascii() and (c.isalnum() or c in "._-"))})
        shown = " ".join(repr(c) for c in bad[:5])
        raise InvalidSlug(
            f"memory name {slug!r} has characters a name may not hold ({shown}); "
            "use ASCII letters, digits, '-', '_' and '.'"
        )
    problem = tree_name_problem(slug)
    if problem is not None:
        raise InvalidSlug(f"memory name {slug!r} {problem}; choose another name")
    if slug.endswith(".lock"):
        raise InvalidSlug(f"memory name {slug!r} may not end in '.lock'; choose another name")
    return slug


PATH_MAX = 1024
PATH_DEPTH = 16


def check_path(path: object) -> str:
    """Return ``path`` if it is a usable file-store path, else raise ``InvalidPath``.

    A path is relative, 1-16 ``/``-separated names, at most 1,024 characters. Each name
    is one a git tree may hold (see :func:`tree_name_problem`: no ``..``, no ``.git`` in any
    spelling, no backslash, at most 255 bytes of UTF-8) and holds no control character
    or line separator (a path is one line of its commit's message); any other character
    is welcome: spaces, accents, any script.
    """
    if not isinstance(path, str) or not path:
        raise InvalidPath("a file path must be a non-empty string such as notes/todo.md")
    if len(path) > PATH_MAX:
        raise InvalidPath(
            f"file path {path[:40]!r}... is {len(path)} characters; use at most {PATH_MAX}"
        )
    segments = path.split("/")
    if len(segments) > PATH_DEPTH:
        raise InvalidPath(
            f"file path {path!r} is {len(segments)} folders deep; use at most {PATH_DEPTH}"
        )
    for segment in segments:
        if not segment:
            raise InvalidPath(
                f"file path {path!r} has an empty segment; write it relative, "
                "with single '/' between names (e.g. notes/todo.md)"
            )
        problem = _file_name_problem(segment)
        if problem is not None:
            raise InvalidPath(f"file path {path!r} is not usable: name {segment!r} {problem}")
    return path


def _file_name_problem(name: str) -> str | None:
    """Why ``name`` may not be one name of a file-store path, or ``None``."""
    control = next((c for c in name if unicodedata.category(c) in _LINE_BREAKING), None)
    if control is not None:
        return f"holds the control character {control!r}; use printable characters"
    return tree_name_problem(name)


# control characters and line or paragraph separators: each could end a message line
_LINE_BREAKING = frozenset(("Cc", "Zl", "Zp"))


def check_op(op: object) -> str:
    """Return ``op`` if it is a usable op name (``[a-z][a-z-]{0,31}``), else raise
    ``InvalidArgument``."""
    if not isinstance(op, str) or not op_shape(op):
        shown = repr(op[:40]) if isinstance(op, str) else type(op).__name__
        raise InvalidArgument(
            f"op {shown} is not usable; an op is a lowercase word of 1-32 letters and '-' "
            "that starts with a letter (e.g. edit, rename)"
        )
    return op
