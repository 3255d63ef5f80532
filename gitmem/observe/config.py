"""The observer's configuration, kept in the repository's git config.

Every setting is ``gitmem.observer.<key>``, so ``git config --get-regexp
'^gitmem\\.observer\\.'`` lists them and ``gitmem observe config KEY VALUE`` (or plain
``git config``) sets them. Read afresh each time: a running worker sees a change.

============== ========== =========================================================
key            default    meaning
============== ========== =========================================================
enabled        true       capture and the pipeline run at all
model          none       ``command``, ``anthropic`` or ``none`` (see ``model_from_config``)
command                   the command line of a command model
timeout        120        seconds a command model may take per call
anthropic-model claude-haiku-4-5 the model an anthropic model asks for
gate           auto       search gating: ``auto`` or ``model`` (the gate model if one
                          is configured, else scores), ``score`` or ``off``
gate-model     none       the model that rates search results: ``none`` (the score
                          filter), ``observer`` (the steps' own model), ``command``
                          or ``anthropic`` (see ``ObserverConfig.gate_model``)
gate-command              the command line of a command gate model
threshold      0.6        the relevance a gate model must give a result
budget         8000       the panel's size in characters
max-results    5          results a search returns when no limit is given
consolidate    true       the librarian merges new entries into the curated files
skip-tools                tools never observed, comma-separated, beside the built-in ones
queue          64         finished runs the worker holds before it drops with a log line
============== ========== =========================================================
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gitmem.errors import InvalidArgument, Unavailable
from gitmem.observe.finding import common_of, enclosing_work_tree
from gitmem.observe.model import CommandModel, Model, model_from_config
from gitmem.observe.trust import trust, trusted

if TYPE_CHECKING:
    from gitmem.store import Storage

__all__ = [
    "DEFAULTS",
    "SECTION",
    "ObserverConfig",
    "check_setting",
    "configure",
    "read_config",
    "setting_flag",
    "setting_number",
    "tracked_by",
]

SECTION = "observer"

DEFAULTS: dict[str, str] = {
    "enabled": "true",
    "model": "none",
    "command": "",
    "timeout": "120",
    "anthropic-model": "claude-haiku-4-5",
    "gate": "auto",
    "gate-model": "none",
    "gate-command": "",
    "threshold": "0.6",
    "budget": "8000",
    "max-results": "5",
    "consolidate": "true",
    "skip-tools": "",
    "queue": "64",
}
GATES = ("auto", "model", "score", "off")
GATE_MODELS = ("none", "observer", "command", "anthropic")


def setting_flag(key: str, text: str) -> bool:
    """Setting ``key``'s value ``text`` as true or false (git config's spellings)."""
    value = text.strip().lower()
    if value in ("true", "yes", "on", "1"):
        return True
    if value in ("false", "no", "off", "0"):
        return False
    raise InvalidArgument(f"{key} must be true or false, not {text!r}")


def _int(key: str, text: str, low: int, high: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise InvalidArgument(f"{key} must be a whole number, not {text!r}") from None
    if not low <= value <= high:
        raise InvalidArgument(f"{key} must be between {low} and {high}")
    return value


def setting_number(key: str, text: str, low: float, high: float) -> float:
    """Setting ``key``'s value ``text`` as a number from ``low`` to ``high``."""
    try:
        value = float(text.strip())
    except ValueError:
        raise InvalidArgument(f"{key} must be a number, not {text!r}") from None
    if not low <= value <= high:
        raise InvalidArgument(f"{key} must be between {low:g} and {high:g}")
    return value


@dataclass(frozen=True)
class ObserverConfig:
    """The observer's settings, checked."""

    settings: Mapping[str, str]
    enabled: bool = True
    gate: str = "auto"
    threshold: float = 0.6
    budget: int = 8000
    max_results: int = 5
    consolidate: bool = True
    skip_tools: frozenset[str] = frozenset()
    queue: int = 64
    tracked_by: str = ""
    """The project whose work tree tracks the repository's config (``""``: none): its
    settings came with the project's files, so no model they name is run."""
    git_dir: str = ""
    """The repository the settings were read from (``""``: given by a program): a
    command its config names runs only if it was set on this machine (see
    :mod:`gitmem.observe.trust`)."""

    @classmethod
    def from_settings(cls, held: Mapping[str, str]) -> ObserverConfig:
        """The configuration from ``gitmem.observer.*`` values (unknown keys are kept
        in ``settings`` for the steps that read them)."""
        merged = {**DEFAULTS, **{k.lower(): v for k, v in held.items()}}
        gate = merged["gate"].strip().lower()
        if gate not in GATES:
            raise InvalidArgument(f"gate must be one of {', '.join(GATES)}, not {gate!r}")
        gate_model = merged["gate-model"].strip().lower() or "none"
        if gate_model not in GATE_MODELS:
            raise InvalidArgument(
                f"gate-model must be one of {', '.join(GATE_MODELS)}, not {gate_model!r}"
            )
        merged["gate-model"] = gate_model
        return cls(
            settings=merged,
            enabled=setting_flag("enabled", merged["enabled"]),
            gate=gate,
            threshold=setting_number("threshold", merged["threshold"], 0, 1),
            budget=_int("budget", merged["budget"], 0, 1_000_000),
            max_results=_int("max-results", merged["max-results"], 1, 10),
            consolidate=setting_flag("consolidate", merged["consolidate"]),
            skip_tools=frozenset(
                t.strip().lower() for t in merged["skip-tools"].split(",") if t.strip()
            ),
            queue=_int("queue", merged["queue"], 1, 100_000),
        )

    def model(self) -> Model | None:
        """The configured model (``None``: none is)."""
        return self._runnable(model_from_config(self.settings), "command")

    def _runnable(self, model: Model | None, key: str) -> Model | None:
        """``model``, unless it came with a project's files (any model: which one runs,
        and what it is sent, is this machine's user's choice), or is a command (setting
        ``key``) this machine's user did not set."""
        if model is None:
            return None
        if self.tracked_by:
            what = "model command" if isinstance(model, CommandModel) else "model"
            raise Unavailable(
                f"the {what} is set in a repository config the project at "
                f"{self.tracked_by} tracks (it came with the project's files), so it is not "
                "run; once you trust that config, untrack the repository (git rm -r --cached)"
            )
        if not isinstance(model, CommandModel):
            return model
        if self.git_dir and not trusted(self.git_dir, key, self.settings[key]):
            raise Unavailable(
                f"the {key} in this repository's config was not set on this machine (a "
                "config can come with a project's files), so it is not run; once you "
                f"trust it, set it with `gitmem observe config {key} COMMAND-LINE`"
            )
        return model

    def gate_model(self) -> Model | None:
        """The model that rates search results (``None``: none is, and the score filter
        judges): ``gate-model`` is ``observer`` for the steps' own model, or ``command``
        (``gate-command``, with the ``timeout``) or ``anthropic`` (``anthropic-model``)
        for one of its own."""
        kind = self.settings["gate-model"]
        if kind == "observer":
            return self.model()
        own = {**self.settings, "model": kind, "command": self.settings["gate-command"]}
        return self._runnable(model_from_config(own), "gate-command")


def check_setting(held: Mapping[str, str], key: str, value: str | None) -> None:
    """Refuse a key that is no setting, or a value its key cannot take, judged with the
    settings ``held`` now (a command line and its time-out whatever model is chosen)."""
    if value is None:
        return
    if key.lower() not in DEFAULTS:
        raise InvalidArgument(
            f"there is no observer setting {key[:60]!r}; the settings are {', '.join(DEFAULTS)}"
        )
    probe = ObserverConfig.from_settings({**held, key.lower(): value})
    for line in (probe.settings["command"], probe.settings["gate-command"]):
        model_from_config({**probe.settings, "model": "command", "command": line or "true"})
    if probe.settings["model"].strip().lower() != "command" or probe.settings["command"]:
        probe.model()
    if probe.settings["gate-model"] != "command" or probe.settings["gate-command"]:
        probe.gate_model()


def read_config(repo: Storage) -> ObserverConfig:
    """The repository's observer configuration (see :func:`tracked_by`, and
    :mod:`gitmem.observe.trust` for the commands it may run)."""
    config = ObserverConfig.from_settings(repo.settings(SECTION))
    return replace(config, tracked_by=tracked_by(repo.directory), git_dir=repo.directory)


def tracked_by(git_dir: str) -> str:
    """The project folder whose git work tree tracks the repository at ``git_dir`` as
    files of its own (``""``: none does): a ``.gitmem`` committed into a project comes
    with every clone of it, its config written by whoever committed it.

    Only the nearest enclosing work tree is asked, and only when there is one: a
    project's own ``.git`` (or a linked work tree's) is never such a repository."""
    here = os.path.realpath(git_dir)
    found = enclosing_work_tree(here)
    if found is None:
        return ""
    folder, own = found
    own = os.path.realpath(own)
    if here in (own, os.path.realpath(common_of(own))):
        return ""
    return folder if _tracks(own, os.path.relpath(os.path.join(here, "config"), folder)) else ""


_TRACKED: dict[tuple[str, str], tuple[tuple[int, int, int], bool]] = {}
"""What an index said of a path, while the index stays as it was (a long-lived process
such as an MCP server reads a large project's index once)."""


def _tracks(git_dir: str, path: str) -> bool:
    """Whether the index of ``git_dir`` tracks ``path``; an index that cannot be read
    trusts none of it, and none yet tracks nothing."""
    from gitmem.store import tracks

    try:
        status = os.stat(os.path.join(git_dir, "index"))
    except FileNotFoundError:
        return False  # a project with nothing staged yet tracks nothing
    except OSError:
        return True
    stamp = (status.st_ino, status.st_size, status.st_mtime_ns)
    held = _TRACKED.get((git_dir, path))
    if held is not None and held[0] == stamp:
        return held[1]
    try:
        found = tracks(git_dir, path)
    except FileNotFoundError:
        found = False
    except (OSError, ValueError):
        found = True
    _TRACKED[(git_dir, path)] = (stamp, found)
    return found


def configure(repo: Storage, key: str, value: str | None) -> dict[str, str]:
    """Set (``None``: remove) one observer setting; returns every setting after it,
    defaults included."""
    check_setting(repo.settings(SECTION), key, value)
    repo.set_setting(SECTION, key, value)
    settings = read_config(repo).settings
    if value is not None and key.lower() in _COMMANDS:
        trust(repo.directory, key.lower(), settings[key.lower()])
    return dict(settings)


_COMMANDS = ("command", "gate-command")
