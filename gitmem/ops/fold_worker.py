"""The process that folds a store's history for a long-lived reader (the console):
``python -m gitmem.ops.fold_worker GIT_DIR STORE``, started by
:func:`gitmem.ops.folding.fold_apart`, which says what it says and why.

It reads the head's listing and says it (or that it is kept), folds the history saying
how far it has gone, and keeps the ledger; if it fails, it says why in one line. It
leaves when its standard input closes: the reader that started it has gone.
"""

from __future__ import annotations

import os
import sys
import threading

from gitmem.errors import GitmemError
from gitmem.ops.folding import said
from gitmem.ops.ledger import Ledger, listed_json
from gitmem.repository import Repository

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """Fold the history of store ``argv[1]`` of the repository at ``argv[0]`` and keep
    its ledger, saying its listing first and then how far it has gone."""
    if len(argv) != 2:
        sys.stderr.write("usage: python -m gitmem.ops.fold_worker GIT_DIR STORE\n")
        return 2
    threading.Thread(target=_orphaned, name="gitmem-orphaned", daemon=True).start()
    directory, store = argv
    try:
        with Repository.open(directory) as repo:
            head = repo.head(store)
            if repo.kept_summaries(store) is not None:  # the reader reads it (kept_listed_json)
                _say(said("listing", head, "kept"))
            else:
                rows = listed_json(repo, store, head)
                _say(said("listing", head, len(rows)), rows)
                del rows
            ledger = Ledger(store)
            ledger.follow(repo, _tell)
            ledger.keep(repo)
    except Exception as exc:  # said in the reader's one line
        if isinstance(exc, GitmemError):
            why = str(exc)
        else:
            why = f"unexpected {type(exc).__name__}: {exc}; please report this as a bug"
        _say(said("failed", " ".join(why.split())))
        return 1
    return 0


def _tell(commits: int, revisions: int, of: int | None) -> None:
    _say(said("progress", commits, revisions, of))


def _say(line: bytes, data: bytes = b"") -> None:
    try:
        sys.stdout.buffer.write(line)
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
