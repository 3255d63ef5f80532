"""A store's first fold of a long history, in a process of its own.

A fold of every revision of a large store makes and frees millions of small objects.
Python's allocator keeps each of its arenas (1 MiB) for as long as one object in it
lives, so the few objects a long-lived reader (the console) makes meanwhile, spread
over many arenas, would keep it tens of megabytes larger than its work then needs.
So :func:`fold_apart` runs the fold in a child process, which keeps the ledger as
every fold does (``<git dir>/gitmem/ledger/``); the reader then takes the kept ledger
in and goes on from its head, as a later process would.

The child is ``python -m gitmem.ops.fold_worker GIT_DIR STORE``
(:mod:`gitmem.ops.fold_worker`). It reads the head's listing first, which the
reader's requests answer with while the fold runs (built here, from the trees and
blobs, it would leave the reader as large as the fold would), then folds. On its
standard output it says, a line each (as :func:`said` writes them): ``listing HEAD
LENGTH`` followed by the listing's JSON (``LENGTH`` bytes), or ``listing HEAD kept``
when the repository keeps the listing of the head, which the reader reads itself at
little cost; how far the fold has gone (``progress COMMITS REVISIONS OF``, ``OF``
being ``-`` while the commits are walked); and, if it fails, why (``failed
MESSAGE``). It leaves when its standard input closes: the reader that started it has
gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import IO, TYPE_CHECKING

from gitmem.errors import StorageError

if TYPE_CHECKING:
    from gitmem.store.outline import Progress

__all__ = ["CHILD", "LINE_MAX", "fold_apart", "said"]

LINE_MAX = 4096
"""The longest line the reader takes from the child (a longer one is cut)."""
CHILD = ("-m", "gitmem.ops.fold_worker")
"""What the interpreter runs as the child, before its two arguments."""


def fold_apart(
    directory: str,
    store: str,
    progress: Progress,
    listing: Callable[[str | None, bytes | None], object],
) -> None:
    """Fold ``store``'s history in a child process, which keeps the ledger in the
    repository at ``directory`` (its git directory). ``listing`` is given first the
    interim form's rows (JSON, see :func:`~gitmem.ops.ledger.listed`; ``None``: the
    repository keeps them) with the head they are of; ``progress`` is told how far the
    fold has gone as it goes (it may raise to stop the child). A child that fails (or
    cannot start) raises a :class:`~gitmem.errors.StorageError` saying why in one line."""
    # the child runs the same gitmem as this process (the folder holding this
    # package), and never a module named like one of its own in the working folder
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryFile() as complaints:
        try:
            child = subprocess.Popen(
                [sys.executable, *CHILD, directory, store],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=complaints,
                cwd=root,
                start_new_session=True,  # the terminal's Ctrl-C is the reader's to handle
            )
        except OSError as exc:
            raise StorageError(f"the process to read it could not start ({exc})") from None
        try:
            assert child.stdout is not None
            failed = _relay(child.stdout, progress, listing)
            child.wait()
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            for pipe in (child.stdin, child.stdout):
                if pipe is not None:
                    pipe.close()
        if child.returncode == 0:
            return
        if failed is not None:
            raise StorageError(failed)
        raise StorageError(f"the process reading it {_ended(child.returncode, complaints)}")


def _relay(
    out: IO[bytes], progress: Progress, listing: Callable[[str | None, bytes | None], object]
) -> str | None:
    """Read the child's lines until it closes its output, telling ``progress`` and
    ``listing``; the failure it said (``None``: none)."""
    failed: str | None = None
    while line := out.readline(LINE_MAX):
        word, _, rest = line.decode("utf-8", "replace").rstrip("\n").partition(" ")
        fields = rest.split(" ")
        if word == "progress" and len(fields) == 3 and all(_count(f) for f in fields[:2]):
            progress(int(fields[0]), int(fields[1]), int(fields[2]) if _count(fields[2]) else None)
        elif word == "listing" and len(fields) == 2 and fields[1] == "kept":
            listing(fields[0] if fields[0] != "-" else None, None)
        elif word == "listing" and len(fields) == 2 and _count(fields[1]):
            rows = out.read(int(fields[1]))
            if len(rows) == int(fields[1]):
                listing(fields[0] if fields[0] != "-" else None, rows)
        elif word == "failed":
            failed = rest
    return failed


def _count(field: str) -> bool:
    return field.isascii() and field.isdigit()


def _ended(code: int, complaints: IO[bytes]) -> str:
    """How the child ended, as a sentence's end (with the last line it wrote to its
    standard error, ``complaints``)."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was stopped by {name}"
    complaints.seek(max(0, complaints.seek(0, os.SEEK_END) - LINE_MAX))
    said = [line.strip() for line in complaints.read().decode("utf-8", "replace").splitlines()]
    last = next((line for line in reversed(said) if line), "")
    return f"ended with status {code}" + (f": {last}" if last else "")


def said(word: str, *fields: object) -> bytes:
    """One line of the child's as :func:`fold_apart` reads it (``None`` said as ``-``;
    a listing's line is followed by its bytes)."""
    return " ".join([word, *("-" if f is None else str(f) for f in fields)]).encode() + b"\n"
