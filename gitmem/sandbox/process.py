"""The Deno process: its socket, the log drains, the watchdog, and kill-all at exit.

The protocol runs over a private Unix socket, never over stdin or stdout, which user code
can reach; they are drained into small logs that nothing parses. A watchdog kills the
whole process when a run outlives its deadline or its resident memory passes the cap
(V8's limits miss off-heap memory).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import select
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
import weakref
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import IO, ClassVar, cast

from gitmem.errors import InternalError
from gitmem.sandbox.launch import deno_command, import_map, runtime_file

__all__ = ["Killed", "Process", "Retired"]

_FRAME = struct.Struct(">I")
_MAX_FRAME = 64 * 1024 * 1024
_LOG_CAP = 64 * 1024
_POLL = 0.02
_START_TIMEOUT = 10.0
_LOADER_RECYCLE = 200
# The runtime exits with this status when a leftover thread keeps a core busy while
# idle; it exits only between requests, so the request it never read can be retried.
_IDLE_EXIT = 3


class _Log:
    """Drains a pipe into a small ring buffer; its content is never parsed."""

    def __init__(self, stream: IO[bytes] | None) -> None:
        assert stream is not None
        self.stream = stream
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.thread = threading.Thread(target=self._drain, args=(stream.fileno(),), daemon=True)
        self.thread.start()

    def _drain(self, fd: int) -> None:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.chunks.append(chunk)
            self.size += len(chunk)
            while self.size > _LOG_CAP and len(self.chunks) > 1:
                self.size -= len(self.chunks.popleft())

    def text(self) -> str:
        return b"".join(self.chunks)[-_LOG_CAP:].decode("utf-8", "replace")


class Killed(Exception):
    """The watchdog stopped the process; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Retired(Exception):
    """The runtime retired itself while idle, before it read the request; try again."""


class Process:
    """One Deno process and the socket to it."""

    live: ClassVar[weakref.WeakSet[Process]] = weakref.WeakSet()

    def __init__(self, *, memory_mb: int, output_cap: int, rss_cap_mb: int) -> None:
        Process.live.add(self)
        self.rss_cap_kb = rss_cap_mb * 1024
        self.root = Path(tempfile.mkdtemp(prefix="gitmem-sbx-"))
        self.proc: subprocess.Popen[bytes] | None = None
        self.conn: socket.socket | None = None
        self.stdout: _Log | None = None
        self.stderr: _Log | None = None
        try:
            self._start(memory_mb, output_cap)
        except BaseException:
            self.kill()
            raise

    def _start(self, memory_mb: int, output_cap: int) -> None:
        runtime = runtime_file()
        deno_dir = self.root / "deno"
        workdir = self.root / "work"
        deno_dir.mkdir()
        workdir.mkdir()
        map_file = self.root / "import-map.json"
        map_file.write_text(json.dumps(import_map(runtime)))
        path = str(self.root / "s")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(path)
            listener.listen(1)
            listener.settimeout(_POLL)
            settings = {
                "memoryMb": memory_mb,
                "outputCap": output_cap,
                "loaderRecycle": _LOADER_RECYCLE,
            }
            self.proc = subprocess.Popen(
                deno_command(runtime, path, map_file, settings),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=workdir,
                env={"DENO_DIR": str(deno_dir), "NO_COLOR": "1"},
                start_new_session=True,
            )
            self.stdout = _Log(self.proc.stdout)
            self.stderr = _Log(self.proc.stderr)
            give_up = time.monotonic() + _START_TIMEOUT
            while self.conn is None:
                try:
                    self.conn, _ = listener.accept()
                except TimeoutError:
                    if self.proc.poll() is not None or time.monotonic() > give_up:
                        time.sleep(_POLL)
                        raise InternalError(
                            f"the sandbox did not start: {self.stderr.text()}"
                        ) from None
        finally:
            listener.close()
            # The runtime holds its connection; with the path gone, code that reaches
            # Deno.connect has nothing to reconnect to.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self.conn.setblocking(True)
        self.buffer = bytearray()
        ready = self.receive(time.monotonic() + _START_TIMEOUT)
        if ready.get("op") != "ready":
            raise InternalError("the sandbox runtime sent no greeting")

    @property
    def pid(self) -> int:
        """The process id; the process leads its own group."""
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        """Whether the process is still running."""
        return self.proc is not None and self.proc.poll() is None

    def rss_kb(self) -> int:
        """The process's resident memory in KiB, or 0 once it is gone."""
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return 0
        found = re.search(r"^VmRSS:\s+(\d+)", status, re.MULTILINE)
        return int(found.group(1)) if found else 0

    def send(self, message: Mapping[str, object]) -> None:
        """Send one frame."""
        assert self.conn is not None
        body = json.dumps(message).encode()
        try:
            self.conn.sendall(_FRAME.pack(len(body)) + body)
        except OSError as exc:
            raise self._crashed(f"the sandbox connection failed: {exc}") from exc

    def receive(self, deadline: float) -> dict[str, object]:
        """The next frame; a watchdog checks time and memory while it waits."""
        assert self.conn is not None
        while True:
            if len(self.buffer) >= 4:
                (length,) = _FRAME.unpack_from(self.buffer)
                if length > _MAX_FRAME:
                    raise self._crashed("the sandbox sent an oversized frame")
                if len(self.buffer) >= 4 + length:
                    body = bytes(self.buffer[4 : 4 + length])
                    del self.buffer[: 4 + length]
                    return cast(dict[str, object], json.loads(body))
            readable, _, _ = select.select([self.conn], [], [], _POLL)
            if readable:
                try:
                    chunk = self.conn.recv(1 << 16)
                except OSError as exc:
                    raise self._crashed(f"the sandbox connection failed: {exc}") from exc
                if not chunk:
                    raise self._crashed("the sandbox process ended")
                self.buffer += chunk
                continue
            if time.monotonic() > deadline:
                self.kill()
                raise Killed("time")
            if self.rss_kb() > self.rss_cap_kb:
                self.kill()
                raise Killed("memory")
            if not self.alive():
                raise self._crashed("the sandbox process ended")

    def _crashed(self, what: str) -> InternalError:
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=0.5)
            if self.proc.returncode == _IDLE_EXIT:
                self.kill()
                raise Retired
        self.kill()
        detail = self.stderr.text().strip()[-2000:] if self.stderr is not None else ""
        return InternalError(
            f"{what}; it restarts for the next call" + (f": {detail}" if detail else "")
        )

    def kill(self) -> None:
        """Kill the process group and remove the private directory; idempotent."""
        if self.conn is not None:
            with contextlib.suppress(OSError):
                self.conn.close()
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, 9)
            self.proc.wait()
        for log in (self.stdout, self.stderr):
            if log is not None:
                # The process is gone, so the drain meets end of file at once.
                log.thread.join(timeout=1.0)
                with contextlib.suppress(OSError):
                    log.stream.close()
        shutil.rmtree(self.root, ignore_errors=True)


@atexit.register
def _kill_all() -> None:
    # Runtimes exit on their own when the socket closes; this also removes their
    # private directories, which __del__ cannot do at interpreter shutdown.
    for process in list(Process.live):
        process.kill()
