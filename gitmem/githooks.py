"""The git hooks that hold a plain ``git push`` to the rules the tools enforce.

``pre-receive`` (on a shared remote, ``gitmem hooks install --server PATH``) and
``pre-push`` (in a project, ``gitmem hooks install``) run :func:`check_updates` on every
ref a push would move. A store branch must move forward (a fast-forward, or a merge
that keeps the old head), and each new commit must parse, name valid slugs in their
fan-out directories, carry trailers that agree with its tree (ops, revisions, totals,
peaks) when gitmem made it, keep the limits the store's binding recorded in its
``Gitmem-Capability`` trailer (or not make an existing over-run worse), hold no secret
the store's allowlist does not admit, and pass the store's guard code. A plain ``git
commit`` (no trailers) that keeps those rules lands. Other refs (the project's own
branches) pass untouched: they are not even read.

The hooks read objects with dulwich (no ``git`` binary at run time). A refused push
prints, for each refused ref, one line per rule its first refused commit breaks,
``refused REF: commit SHA breaks rule RULE: why`` (at most three reasons a line), and
exits 1; git then changes nothing on the server.
"""

from __future__ import annotations

import gc
import os
import stat
import sys
from functools import partial

from gitmem.errors import InvalidArgument
from gitmem.pushchain import Broken, check_commits
from gitmem.pushrecord import carry_lineage, lineage_of
from gitmem.screens import chain
from gitmem.store.pushcheck import PushReader, Refused, is_zero
from gitmem.store.pushobjects import common_dir
from gitmem.store.screen import Screen

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import NamedTuple

    from gitmem.guard import Guards
    from gitmem.store.lineage import Lineage
else:
    from gitmem.lean.tuples import NamedTuple  # a hook's process never loads typing

__all__ = [
    "HOOKS",
    "Update",
    "check_adopted",
    "check_updates",
    "common_dir",
    "install",
    "install_server",
    "main",
    "stale_hooks",
]

HOOKS = ("pre-receive", "pre-push")
"""The hooks gitmem ships (top-level ``hooks/``, and inside the package)."""


class Update(NamedTuple):
    """One ref a push would move from ``old`` to ``new`` (all-zero: absent)."""

    ref: str
    old: str
    new: str


def check_updates(
    reader: PushReader,
    updates: Iterable[Update],
    known: Callable[[str], bool],
    guards: Guards | None = None,
) -> list[str]:
    """The refusals of a push (empty: it may land): for each refused update, one line
    per rule its first refused commit breaks. ``known(sha)`` says whether a commit was
    already accepted (its history is not checked again)."""
    return _check_all(reader, updates, known, chain((lambda: guards) if guards else None))


def _check_all(
    reader: PushReader,
    updates: Iterable[Update],
    known: Callable[[str], bool],
    screens: list[Screen],
) -> list[str]:
    lines: list[str] = []
    lineages: list[tuple[str, str, Lineage]] = []
    for update in updates:
        store = reader.store_of(update.ref)
        if store is None:
            if update.ref == _FOLDER and not reader.standalone and not is_zero(update.new):
                lines.append(
                    f"refused {update.ref}: a branch named gitmem stands where every store's "
                    "branch goes (refs/heads/gitmem/<store>), so no store could be shared "
                    "here; name the branch otherwise"
                )
            elif _in_other_case(update.ref) and not reader.standalone:
                lines.append(
                    f"refused {update.ref}: its name differs from a store branch's "
                    "(refs/heads/gitmem/<store>) only in case, and a filesystem that ignores "
                    "case would take it for the store's, unchecked; name it otherwise"
                )
            continue
        check = partial(_check_update, reader, store, update, known, screens, lineages)
        lines += [f"refused {update.ref}: {line}" for line in _refusals(check)]
    if not lines:
        # a push lands whole or not at all: what it leaves is kept only when it lands
        from gitmem.store.lineage import keep

        keep(reader.git_dir, lineages)
    return lines


_FOLDER = "refs/heads/gitmem"
"""The folder of a project's store branches: never a branch itself."""


def _in_other_case(ref: str) -> bool:
    """Whether ``ref`` is the store folder or a branch in it, spelled in another case."""
    folded = ref.casefold()
    return folded == _FOLDER or folded.startswith(_FOLDER + "/")


_SHOWN = 3  # reasons a line gives for one rule; the rest are counted
_REASON_MAX = 600  # characters of one reason (a guard's own words may run long)


def _refusals(check: Callable[[], None]) -> list[str]:
    """Run ``check``; what it refuses as one line per commit and rule broken,
    ``commit SHA breaks rule RULE: why`` (several reasons joined by ``; ``)."""
    try:
        check()
    except Refused as refused:
        problems = [refused]
    except Broken as broken:
        problems = broken.problems
    else:
        return []
    reasons: dict[tuple[str, str], list[str]] = {}
    for problem in problems:
        why = problem.message
        why = why if len(why) <= _REASON_MAX else why[: _REASON_MAX - 1] + "…"
        found = reasons.setdefault((problem.commit, problem.rule), [])
        if why not in found:
            found.append(why)
    lines: list[str] = []
    for (commit, rule), whys in reasons.items():
        text = "; ".join(whys[:_SHOWN])
        if len(whys) > _SHOWN:
            text += f" (and {len(whys) - _SHOWN} more)"
        lines.append(f"commit {commit[:12]} breaks rule {rule}: {text}")
    return lines


def _check_update(
    reader: PushReader,
    store: str,
    update: Update,
    known: Callable[[str], bool],
    screens: list[Screen],
    lineages: list[tuple[str, str, Lineage]],
) -> None:
    """Check one update; what its new head's line records is added to ``lineages``
    once its commits have passed."""
    if is_zero(update.new):
        raise Refused("history", update.old, "deleting a store branch drops published memory")
    if not is_zero(update.old) and not reader.is_ancestor(update.old, update.new):
        raise Refused(
            "history",
            update.new,
            f"it does not descend from the published head {update.old[:12]}: published "
            "memory history is never rewritten (merge with `gitmem sync` instead)",
        )
    old = None if is_zero(update.old) else update.old
    # a commit is taken as checked only when this store's published history holds it:
    # an object the repository holds came by any ref (a branch of the project's, a
    # proposal, a tag), which the hook let through unread
    published = reader.reached(old)
    shas = reader.new_commits(update.new, lambda s: s == old or (known(s) and published(s)))
    # what the published lines the push goes on from record, as the pushes that left
    # their heads kept it: a walk back to the store's first commit grows with every
    # write the store has had (the head a push builds on, and each published commit a
    # pushed one has for a parent: a merge's, on a line that left from an older head)
    new = set(shas)
    bases = {old} | {p for sha in shas for p in reader.head(sha).parents if p not in new}
    for base in sorted(b for b in bases if b is not None):
        carry_lineage(reader, store, base)
    check_commits(reader, store, old, shas, screens)
    if shas:
        lineages.append((store, update.new, lineage_of(reader, update.new)))


def check_adopted(
    reader: PushReader,
    store: str,
    ours: str | None,
    theirs: str,
    screens: list[Screen],
    widened: list[str] | None = None,
    *,
    limits: bool = True,
) -> list[str]:
    """What sync would adopt from ``theirs`` (by fast-forward or merge) into a store
    whose head is ``ours``, checked as a push onto ``ours`` is: one line per rule the
    first refused commit breaks (empty: every commit ``ours`` lacks holds the rules).
    An operator's deliberate widening (``gitmem set-limits --widen``) is adopted, one
    line for it added to ``widened``; the push hook refuses it (the operator widens on
    the server). ``limits=False``: the commits' capabilities and limits are not judged
    (an approval judges the proposal's result against the store's, and each holder's
    proposal records its own binding), only what they are and what they hold."""

    def check() -> None:
        have = reader.ancestors(ours)
        shas = reader.new_commits(theirs, have.__contains__)
        check_commits(reader, store, ours, shas, screens, widened, limits=limits)

    return _refusals(check)


# -- the hooks themselves ------------------------------------------------------------


def _read_updates(lines: Iterable[str], pre_push: bool) -> list[Update]:
    updates: list[Update] = []
    for line in lines:
        parts = line.split()
        if pre_push and len(parts) == 4:
            # <local ref> <local sha> <remote ref> <remote sha>
            updates.append(Update(parts[2], parts[3], parts[1]))
        elif not pre_push and len(parts) == 3:
            updates.append(Update(parts[2], parts[0], parts[1]))
    return updates


def pre_receive(git_dir: str, lines: Iterable[str]) -> list[str]:
    """The server-side check: the pushed objects wait in git's quarantine directory."""
    quarantine = os.environ.get("GIT_QUARANTINE_PATH") or os.environ.get("GIT_OBJECT_DIRECTORY")
    updates = _read_updates(lines, pre_push=False)
    reader = PushReader(git_dir, quarantine)
    return _checked(reader, updates, lambda: reader.in_main)


def pre_push(git_dir: str, remote: str, lines: Iterable[str]) -> list[str]:
    """The client-side check, before anything leaves the machine: what the remote is
    known to hold (its remote-tracking store branches) is not checked again."""
    updates = _read_updates(lines, pre_push=True)
    reader = PushReader(git_dir)

    def known() -> Callable[[str], bool]:
        tracked = reader.refs(f"refs/remotes/{remote}/").values() if remote else ()
        return set(tracked).__contains__

    return _checked(reader, updates, known)


def _checked(
    reader: PushReader, updates: list[Update], known: Callable[[], Callable[[str], bool]]
) -> list[str]:
    """``check_updates`` with a guard sandbox, started at the first guarded write;
    ``known()`` says which commits need no check. The reader is closed after."""
    started: list[Guards] = []

    def guards() -> Guards:
        if not started:
            from gitmem.guard import Guards  # most stores have no guard code

            started.append(Guards())
        return started[0]

    try:
        if not any(reader.store_of(u.ref) or _in_other_case(u.ref) for u in updates):
            return []
        return _check_all(reader, updates, known(), chain(guards))
    finally:
        for sandbox in started:
            sandbox.close()
        reader.close()


def main(hook: str, argv: list[str] | None = None, stdin: str | None = None) -> int:
    """Run ``hook`` as git calls it (in the repository, updates on stdin, or ``stdin``
    when the script has read them); the exit status."""
    args = sys.argv[1:] if argv is None else argv
    git_dir = common_dir(os.environ.get("GIT_DIR") or ".")
    # a hook's objects live as long as its one check, kept in bounded caches: collecting
    # cycles among them would only walk those caches again and again
    collecting = gc.isenabled()
    gc.disable()
    try:
        lines = (sys.stdin.read() if stdin is None else stdin).splitlines()
        if hook == "pre-receive":
            refused = pre_receive(git_dir, lines)
        else:
            refused = pre_push(git_dir, args[0] if args else "", lines)
    except Exception as exc:  # a hook that breaks must refuse, saying so, not trace back
        print(
            f"gitmem {hook}: the check itself failed ({exc}); nothing was accepted", file=sys.stderr
        )
        return 1
    finally:
        if collecting:
            gc.enable()
    for line in refused:
        print(line, file=sys.stderr)
    return 1 if refused else 0


def source(hook: str) -> str:
    """The text of a hook script shipped with gitmem."""
    if hook not in HOOKS:
        raise InvalidArgument(f"there is no gitmem hook {hook!r}; there are {', '.join(HOOKS)}")
    try:
        from importlib import resources  # installing only: a hook that runs needs none

        shipped = resources.files("gitmem._hooks").joinpath(hook)
        if shipped.is_file():
            return shipped.read_text()
    except (ModuleNotFoundError, TypeError):
        pass
    # a source checkout run without installing: the top-level hooks/ folder
    from pathlib import Path

    return (Path(__file__).resolve().parents[1] / "hooks" / hook).read_text()


def install(git_dir: str, hooks: Iterable[str], python: str | None = None) -> list[str]:
    """Write ``hooks`` into ``git_dir``/hooks, run by ``python`` (default: this
    interpreter, so the hook finds this gitmem); returns the paths written. An existing
    hook gitmem did not write is refused, never overwritten."""
    folder = os.path.join(git_dir, "hooks")
    interpreter = python or sys.executable
    written: list[str] = []
    planned: list[tuple[str, str]] = []
    for hook in hooks:
        text = source(hook)
        lines = text.splitlines(keepends=True)
        text = f"#!{interpreter}\n" + "".join(lines[1:])
        path = os.path.join(folder, hook)
        if os.path.exists(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                held = f.read()
                if not any(mark in held for mark in _MARKS):
                    raise InvalidArgument(
                        f"{path} already holds a hook gitmem did not write; "
                        "move it aside (or call it from gitmem's), then install again"
                    )
        planned.append((path, text))
    os.makedirs(folder, exist_ok=True)
    for path, text in planned:
        tmp = f"{path}.gitmem-tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        mode = os.stat(tmp).st_mode
        os.chmod(tmp, mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        os.replace(tmp, path)
        written.append(path)
    return written


def install_server(path: str, standalone: bool = False) -> list[str]:
    """Install ``pre-receive`` into the bare repository at ``path``, recording in its
    config which stores it will hold: a project's (``refs/heads/gitmem/<store-id>``,
    the default) or, with ``standalone``, a standalone repository's
    (``refs/heads/<store-id>``: every branch is then a store)."""
    if not PushReader.is_bare(path):
        raise InvalidArgument(
            f"{path} is not a bare git repository; give the shared remote's path "
            "(e.g. /srv/project.git), or run `gitmem hooks install` in a project"
        )
    written = install(path, ["pre-receive"])
    PushReader.serve(path, standalone)
    return written


# what a hook gitmem wrote names: this module (and, in hooks written by earlier
# versions, its former name)
_MARKS = ("gitmem.githooks", "gitmem.hooks")


def stale_hooks(git_dir: str) -> list[str]:
    """One line for each gitmem hook script in ``git_dir``/hooks that imports a module
    this gitmem no longer has (a script an earlier version installed)."""
    problems: list[str] = []
    for hook in HOOKS:
        path = os.path.join(git_dir, "hooks", hook)
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                held = f.read(_SCRIPT_MAX)
        except OSError:
            continue
        again = "gitmem hooks install" + (f" --server {git_dir}" if hook == "pre-receive" else "")
        for line in held.splitlines():
            words = line.split()
            if len(words) < 4 or words[0] != "from" or words[2] != "import":
                continue
            if words[1].startswith("gitmem.") and not _importable(words[1]):
                problems.append(
                    f"{path} imports {words[1]}, which this gitmem no longer has; re-run `{again}`"
                )
    return problems


_SCRIPT_MAX = 1 << 16  # a hook script gitmem wrote is a page; read no more of any file


def _importable(module: str) -> bool:
    try:
        import importlib.util

        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
