"""Options in a command line as click reads them, in their plain forms only: what a
path that answers before the command line loads can read of its arguments, leaving
every other form (an unknown option, one given twice, a value that looks like an
option) to the command line, which says what is wrong with it."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["options"]


def options(
    args: list[str], table: Mapping[str, tuple[str, bool]], stop_at_word: bool
) -> tuple[dict[str, str | bool], list[str], int] | None:
    """The options in ``args`` (each given once, as ``--name VALUE``, ``--name=VALUE``,
    ``-x VALUE`` or a flag) and the words among them; with ``stop_at_word``, up to the
    first word, whose place is returned. ``None`` for anything else."""
    found: dict[str, str | bool] = {}
    words: list[str] = []
    at = 0
    while at < len(args):
        arg = args[at]
        if not arg.startswith("-") or arg == "-":
            if stop_at_word:
                return found, words, at
            words.append(arg)
            at += 1
            continue
        name, equals, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        known = table.get(name)
        if known is None or known[0] in found:
            return None
        dest, flag = known
        if flag:
            if equals:
                return None
            found[dest] = True
            at += 1
            continue
        if not equals:
            if at + 1 >= len(args):
                return None
            value = args[at + 1]
            at += 1
        if not value or value.startswith("-"):
            return None
        found[dest] = value
        at += 1
    return found, words, at
