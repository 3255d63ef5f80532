"""A remote over the network held to bounds of time and size, whatever it sends.

dulwich talks to an ssh remote through the pipes of an ``ssh`` process it starts, and
reads and writes them blocking: a remote that goes silent (or stops reading what is
sent) would hold a sync for as long as the connection lasts, whatever ssh's own
settings, and one that never stops sending would fill this side's memory before any
pack came. :class:`WatchedSSH` starts the same ``ssh`` and has every read wait at most
``silence`` seconds for a byte, every write at most as long for room in the pipe, the
whole conversation end within ``whole`` seconds and bring ``most`` bytes at most; past
any of them, the ``ssh`` process is killed and the read or write raises
:class:`PastBound`, which says which in one line.

An ``https://`` remote's silence is its connection's timeout; :func:`bounded_http`
holds what each of its answers brings, and how long it goes on bringing it, to the
same ``most`` bytes and ``whole`` seconds.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import time
from collections.abc import Callable
from typing import Any, cast

from dulwich.client import GitClient, SubprocessSSHVendor, SubprocessWrapper

__all__ = ["PastBound", "WatchedSSH", "bounded_http"]

_Request = Callable[..., tuple[Any, Callable[[int], bytes]]]
"""dulwich's HTTP request: the response and a reader of its body."""

_CHUNK = 1 << 16
"""Bytes read from the pipe at once (what a read asked for beyond it is read again)."""


class PastBound(OSError):
    """A remote that went silent, talked too long or sent too much; its text says which."""


class _Watched:
    """The pipes of one ``ssh`` process, read and written within the bounds."""

    def __init__(self, wrapper: SubprocessWrapper, silence: float, whole: float, most: int) -> None:
        self._proc = wrapper.proc
        # dulwich's buffered reader of stdout, unused but held: once collected, it
        # would close the pipe under these reads
        self._unused = wrapper.read
        assert self._proc.stdout is not None and self._proc.stdin is not None
        self._out = self._proc.stdout.fileno()
        self._in = self._proc.stdin.fileno()
        os.set_blocking(self._in, False)
        self._silence = silence
        self._whole = whole
        self._end = time.monotonic() + whole
        self._left = most  # bytes the remote may still send
        self._most = most
        self._held = bytearray()  # read from the pipe, not yet asked for

    def _stop(self, why: str) -> PastBound:
        self._proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=5)  # reaped here: the caller may never close it
        return PastBound(why)

    def _wait(self, fd: int, writing: bool) -> None:
        """Wait until ``fd`` can be read (or written), within the bounds."""
        left = self._end - time.monotonic()
        wait = min(self._silence, left)
        if wait > 0:
            poll = select.poll()  # not select(): a busy process's pipes may be past 1,024
            poll.register(fd, select.POLLOUT if writing else select.POLLIN)
            if poll.poll(wait * 1000):
                return  # ready, or hung up: the read or write says which
        if left <= self._silence:
            raise self._stop(f"it was still talking after {self._whole:g} s")
        raise self._stop(f"it did not answer within {self._silence:g} s")

    def can_read(self) -> bool:
        """Whether a read would find a byte without waiting."""
        if self._held:
            return True
        poll = select.poll()
        poll.register(self._out, select.POLLIN)
        return bool(poll.poll(0))

    def read(self, size: int = -1) -> bytes:
        """``size`` bytes, fewer only once the remote has hung up."""
        held = self._held
        while size < 0 or len(held) < size:
            self._wait(self._out, writing=False)
            chunk = os.read(self._out, max(_CHUNK, size - len(held)))
            if not chunk:
                break
            self._left -= len(chunk)
            if self._left < 0:
                raise self._stop(f"it sent more than {self._most >> 20} MiB")
            held += chunk
        cut = len(held) if size < 0 else min(size, len(held))
        taken = bytes(held[:cut])
        del held[:cut]
        return taken

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        while view:
            self._wait(self._in, writing=True)
            try:
                view = view[os.write(self._in, view) :]
            except BlockingIOError:
                continue
        return len(data)


class WatchedSSH(SubprocessSSHVendor):
    """dulwich's ``ssh`` vendor, with each connection held to ``silence`` seconds
    without a byte either way, ``whole`` seconds in all and ``most`` bytes received."""

    def __init__(self, silence: float, whole: float, most: int) -> None:
        self.silence = silence
        self.whole = whole
        self.most = most

    def run_command(self, *args: Any, **kwargs: Any) -> SubprocessWrapper:
        wrapper = super().run_command(*args, **kwargs)
        watched = _Watched(wrapper, self.silence, self.whole, self.most)
        wrapper.read = watched.read  # type: ignore[method-assign]
        wrapper.write = watched.write  # type: ignore[method-assign]
        wrapper.can_read = watched.can_read  # type: ignore[method-assign]
        return wrapper


def bounded_http(client: GitClient, whole: float, most: int) -> GitClient:
    """``client`` (dulwich's HTTP client) with each answer it reads held to ``most``
    bytes and ``whole`` seconds from the request, as :class:`WatchedSSH` holds a
    conversation; past either, the read raises :class:`PastBound`."""
    # the one place dulwich's HTTP client reads an answer through (private to it)
    request = cast("_Request", getattr(client, "_http_request"))  # noqa: B009

    def bounded(*args: Any, **kwargs: Any) -> tuple[Any, Callable[[int | None], bytes]]:
        response, read = request(*args, **kwargs)
        end = time.monotonic() + whole
        left = most

        def counted(size: int | None = None) -> bytes:
            nonlocal left
            if size is None or size < 0:  # all of it: read in parts, each counted
                parts: list[bytes] = []
                while part := counted(_CHUNK):
                    parts.append(part)
                return b"".join(parts)
            data = read(min(size, left + 1))
            left -= len(data)
            if left < 0:
                raise PastBound(f"it sent more than {most >> 20} MiB")
            if time.monotonic() > end:
                raise PastBound(f"it was still talking after {whole:g} s")
            return data

        return response, counted

    setattr(client, "_http_request", bounded)  # noqa: B010
    return client
