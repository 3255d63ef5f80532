"""A long piece of work done in two halves at once: the second by a forked child on
the machine's other core, which hands back what it made (marshalled) through a pipe.

A fresh clone's first ``gitmem ls`` reads every memory of the store, and inflating
10,000 small zlib streams is more than Python's own start several times over; with two
cores, each process inflates half. Only a process with no other thread forks (a thread
holding a lock at the fork would leave the child stuck on it), and only for work large
enough to pay for the fork. Whatever goes wrong in the child (an exception, a signal,
a result that does not marshal or reads back short) is no error: this process does
that half itself, so every error is raised here, as the work would raise it alone.
"""

from __future__ import annotations

import marshal
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar, cast

    T = TypeVar("T")
    R = TypeVar("R")
else:
    from gitmem.lean.light import cast


__all__ = ["cores", "halves", "shared"]

_CHUNK = 1 << 20


def cores() -> int:
    """How many cores this process may run on."""
    affinity = getattr(os, "sched_getaffinity", None)
    try:
        return len(affinity(0)) if affinity is not None else os.cpu_count() or 1
    except OSError:
        return 1


def _alone() -> bool:
    """Whether this process runs no thread but this one (as far as Python knows: a
    thread started by Python loads ``threading``)."""
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


def shared(count: int, least: int) -> bool:
    """Whether :func:`halves` would hand half of ``count`` items to a forked child: at
    least ``least`` of them, two cores, ``os.fork`` and no other thread."""
    return count >= least and hasattr(os, "fork") and cores() >= 2 and _alone()


def halves(work: Callable[[list[T]], R], items: list[T], least: int) -> list[R]:
    """``work`` of each half of ``items``, in order: the second half's in a forked child
    while this process does the first, when there are at least ``least`` items, two
    cores, ``os.fork`` and no other thread; else ``[work(items)]``. ``work`` must
    return what ``marshal`` writes and reads back equal (lists, tuples, dicts, text,
    numbers, bytes, ``None``), and must change nothing this process keeps: the child's
    changes are lost."""
    fork = getattr(os, "fork", None)
    if fork is None or not shared(len(items), least):
        return [work(items)]
    middle = len(items) // 2
    first, second = items[:middle], items[middle:]
    try:
        read, write = os.pipe()
    except OSError:
        return [work(items)]
    try:
        pid = fork()
    except OSError:
        os.close(read)
        os.close(write)
        return [work(items)]
    if not pid:  # the child: its half, handed back, and gone without any teardown
        status = 1
        try:
            os.close(read)
            made: object = work(second)  # marshal refuses what it does not write
            _send(write, marshal.dumps((made,)))  # pyright: ignore[reportArgumentType]
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    done = False
    try:
        mine = work(first)
        theirs = _received(read, pid)
        done = True
    finally:
        os.close(read)
        if not done:  # an error here: the child's half is not wanted
            _ended_well(pid, stop=True)
    if theirs is None:
        return [mine, work(second)]
    return [mine, cast("R", theirs[0])]


def _send(fd: int, data: bytes) -> None:
    """Write ``data`` whole to the pipe ``fd``, its length first."""
    view = memoryview(len(data).to_bytes(8, "little") + data)
    while view:
        view = view[os.write(fd, view[:_CHUNK]) :]


def _received(fd: int, pid: int) -> tuple[object] | None:
    """What the child ``pid`` handed back through the pipe ``fd`` (marshalled, alone in
    a tuple), once it has ended well; ``None`` if it did not."""
    parts: list[bytes] = []
    while True:
        try:
            part = os.read(fd, _CHUNK)
        except OSError:
            _ended_well(pid, stop=True)
            return None
        if not part:
            break
        parts.append(part)
    if not _ended_well(pid):
        return None
    data = b"".join(parts)
    if len(data) < 8 or int.from_bytes(data[:8], "little") != len(data) - 8:
        return None
    try:
        found: object = marshal.loads(memoryview(data)[8:])
    except (EOFError, ValueError, TypeError):
        return None
    if not isinstance(found, tuple) or len(cast("tuple[object, ...]", found)) != 1:
        return None
    return cast("tuple[object]", found)


def _ended_well(pid: int, *, stop: bool = False) -> bool:
    """Whether the child ``pid`` exited with status 0 (waited for; first killed if
    ``stop``: a child not yet waited for is there to kill, ended or not)."""
    try:
        if stop:
            os.kill(pid, 9)
        _, status = os.waitpid(pid, 0)
    except OSError:
        return False
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
