"""The instructions of each model step, kept as versioned text files beside this module.

Each file in ``prompts/`` starts with a line ``version: N``; the rest is the prompt. A
commit a step makes names the prompt and its version (``observer@1``), so a change of
wording is visible in ``git log`` next to what it changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

from gitmem.errors import InvalidArgument, NotFound

__all__ = ["Prompt", "prompt"]


@dataclass(frozen=True)
class Prompt:
    """A step's instructions: its ``name``, ``version`` and ``text``."""

    name: str
    version: int
    text: str

    @property
    def label(self) -> str:
        """``name@version``, as commit trailers name it."""
        return f"{self.name}@{self.version}"


@cache
def prompt(name: str) -> Prompt:
    """The prompt file ``prompts/<name>.txt``."""
    if not name.replace("_", "").isalnum():
        raise InvalidArgument(f"prompt name {name!r} is not a word")
    try:
        text = (resources.files("gitmem.observe") / "prompts" / f"{name}.txt").read_text("utf-8")
    except (FileNotFoundError, NotADirectoryError):
        raise NotFound(f"there is no prompt {name!r}") from None
    first, _, rest = text.partition("\n")
    key, _, number = first.partition(":")
    if key.strip() != "version" or not number.strip().isdigit():
        raise InvalidArgument(f"prompt {name!r} does not start with a 'version: N' line")
    return Prompt(name, int(number), rest)
