"""A store's first fold of a long history, in a process of its own.

A fold of every revision of a large store makes and frees millions of small objects.
Python's allocator keeps each of its arenas (1 MiB) for as long as one object in it
lives, so the few objects a long-lived reader (the console) makes meanwhile, spread
over many arenas, would keep it tens of megabytes larger than its work then needs. So :func:`fold_apart` runs the fold in a child process, which
keeps the ledger as every fold does (``<git dir>/gitmem/ledger/``); the reader then
takes the kept ledger in and goes on from its head, as a later process would.

The child is ``python -m gitmem.ops.folding GIT_DIR STORE``. It reads the head's
listing first, which the reader's requests answer with while the fold runs (built
here, it would leave the reader as large as the fold would), then folds. On its
standard output it says, a line each: ``listing HEAD LENGTH`` followed by the listing's
JSON (``LENGTH`` bytes); how far the fold has gone (``progress COMMITS REVISIONS OF``,
``OF`` being ``-`` while the commits are walked); and, if it fails, why (``failed
MESSAGE``). It leaves when its standard input closes: the reader that started it has
gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from typing import IO, TYPE_CHECKING

from gitmem.errors import GitmemError, StorageError

if TYPE_CHECKING:
    from gitmem.store.outline import Progress

__all__ = ["CHILD", "LINE_MAX", "fold_apart", "main"]

LINE_MAX = 4096
"""The longest line the reader takes from the child (a longer one is cut)."""
CHILD = ("-m", "gitmem.ops.folding")
"""What the interpreter runs as the child, before its two arguments."""


def fold_apart(
    directory: str,
    store: str,
    progress: Progress,
    listing: Callable[[str | None, bytes], object],
) -> None:
    """Fold ``store``'s history in a child process, which keeps the ledger in the
    repository at ``directory`` (its git directory). ``listing`` is given first the
    interim form's rows (JSON, see :func:`~gitmem.ops.ledger.listed`) with the head they
    are of; ``progress`` is told how far the fold has gone as it goes (it may raise to
    stop the child). A child that fails (or cannot start) raises a
    :class:`~gitmem.errors.StorageError` saying why in one line."""
    import gitmem

    # the child runs the same gitmem as this process, and never a module named like
    # one of its own in the operator's working folder
    root = os.path.dirname(os.path.dirname(os.path.abspath(gitmem.__file__)))
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
    out: IO[bytes], progress: Progress, listing: Callable[[str | None, bytes], object]
) -> str | None:
    """Read the child's lines until it closes its output, telling ``progress`` and
    ``listing``; the failure it said (``None``: none)."""
    failed: str | None = None
    while line := out.readline(LINE_MAX):
        word, _, rest = line.decode("utf-8", "replace").rstrip("\n").partition(" ")
        fields = rest.split(" ")
        if word == "progress" and len(fields) == 3 and all(_count(f) for f in fields[:2]):
            progress(int(fields[0]), int(fields[1]), int(fields[2]) if _count(fields[2]) else None)
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


# -- the child ------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    """Fold the history of store ``argv[1]`` of the repository at ``argv[0]`` and keep
    its ledger, saying how far it has gone (see the module's docstring)."""
    if len(argv) != 2:
        sys.stderr.write("usage: python -m gitmem.ops.folding GIT_DIR STORE\n")
        return 2
    threading.Thread(target=_orphaned, name="gitmem-orphaned", daemon=True).start()
    from gitmem.ops.ledger import Ledger, listed_json
    from gitmem.repository import Repository

    directory, store = argv
    try:
        with Repository.open(directory) as repo:
            head = repo.head(store)
            rows = listed_json(repo, store, head)
            _say(f"listing {head or '-'} {len(rows)}", rows)
            del rows
            ledger = Ledger(store)
            ledger.follow(repo, _tell)
            ledger.keep(repo)
    except Exception as exc:  # said in the reader's one line
        if isinstance(exc, GitmemError):
            why = str(exc)
        else:
            why = f"unexpected {type(exc).__name__}: {exc}; please report this as a bug"
        _say("failed " + " ".join(why.split()))
        return 1
    return 0


def _tell(commits: int, revisions: int, of: int | None) -> None:
    _say(f"progress {commits} {revisions} {'-' if of is None else of}")


def _say(line: str, data: bytes = b"") -> None:
    try:
        sys.stdout.buffer.write(line.encode() + b"\n")
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except (BrokenPipeError, ValueError):
        os._exit(1)  # the reader has gone: no one to fold for


def _orphaned() -> None:
    """Leave once the reader that started this process has gone (its end of the
    standard input closes): what was folded so far is of no use to anyone."""
    # the file descriptor, not ``sys.stdin``: a thread blocked in a buffered read
    # holds its lock, which the interpreter's exit would wait for
    while os.read(0, 4096):
        pass
    os._exit(1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
