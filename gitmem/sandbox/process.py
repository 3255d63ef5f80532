"""The Deno process: its connection, the log drains, the watchdog, and kill-all at exit.

The protocol runs over loopback TCP to a port this process listens on for the runtime's
whole life (so nothing else can take it), never over stdin or stdout; they are drained
into small logs that nothing parses. The runtime proves itself with a per-launch token
before anything else is read; the process holds no file permission at all. A watchdog
kills the whole process when a run outlives its deadline or its resident memory passes
the cap (V8's limits miss off-heap memory). The private folder is removed iteratively,
whatever shape it has.

A host that is killed outright (SIGKILL) cannot remove its folders. Each holds a lock
file its host keeps locked while it lives; the first process a host starts removes
every folder whose lock nobody holds any more (:func:`sweep_orphans`).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import hmac
import json
import os
import resource
import secrets
import select
import signal
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
from gitmem.sandbox.launch import deno_command, import_map_text, runtime_file

__all__ = ["Died", "Killed", "Process", "Retired", "remove_tree", "sweep_orphans"]

_FRAME = struct.Struct(">I")
_MAX_FRAME = 64 * 1024 * 1024
_LOG_CAP = 64 * 1024
_POLL = 0.02
_START_TIMEOUT = 10.0
# Caches Deno would grow with one entry per blob module. A plain file where a folder
# should be, or a folder where a database should be, makes each unusable, and Deno
# carries on without (in memory, for the databases). The transpile cache of blob modules
# (gen/blob) is kept for the runtime's module cache and pruned after every call, as the
# process comes back to its pool (Process.prune); fenced, Deno's first write to it retried
# for ~150 ms in every process.
_CACHE_FILES = ("gen/data",)
_TRANSPILED = "gen/blob"
_CACHE_FOLDERS = ("dep_analysis_cache_v2", "node_analysis_cache_v2", "v8_code_cache_v2")
# The runtime retires (a "retire" frame, then this exit status) when a leftover thread
# keeps a core busy while idle; only between requests, so the request it never read
# can be retried.
_IDLE_EXIT = 3
_EXIT_WAIT = 5.0
# How a process that aborted itself ends (abort, a V8 check's trap, a fault).
_ABORTED = frozenset(
    -n for n in (signal.SIGABRT, signal.SIGTRAP, signal.SIGSEGV, signal.SIGBUS, signal.SIGILL)
)
# CPU a worker may use beyond its request's time limit (its boot, its teardown).
_SPIN_GRACE = 1.0
_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
# The environment, whole.
_ENV = {"NO_COLOR": "1", "DENO_NO_UPDATE_CHECK": "1"}


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
        try:
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
        finally:
            # Only the thread that reads the descriptor closes it. Closed by another
            # thread while this one is between reads, the number is free for the next
            # process's connection, and this loop would go on to read its frames.
            with contextlib.suppress(OSError):
                self.stream.close()

    def text(self) -> str:
        return b"".join(self.chunks)[-_LOG_CAP:].decode("utf-8", "replace")


class Killed(Exception):
    """The watchdog stopped the process; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Died(Exception):
    """The process ended while it served a request: the request's own doing (Deno
    aborts the whole process when its parser runs out of stack, V8 when a worker fills
    its heap), so the request fails and the next call starts a fresh process."""

    def __init__(self, message: str, *, out_of_stack: bool, out_of_memory: bool = False) -> None:
        super().__init__(message)
        self.out_of_stack = out_of_stack
        self.out_of_memory = out_of_memory


class Retired(Exception):
    """The runtime retired itself while idle, before it read the request; try again."""


class Process:
    """One Deno process and the socket to it."""

    live: ClassVar[weakref.WeakSet[Process]] = weakref.WeakSet()

    def __init__(
        self,
        *,
        settings: Mapping[str, object],
        rss_cap_mb: int,
        kind: str = "",
        cancel: threading.Event | None = None,
    ) -> None:
        """Start the runtime and wait for its greeting; ``cancel``, once set, calls the
        start off (the process is killed and its folder removed)."""
        Process.live.add(self)
        self.kind = kind
        """Which processes can stand in for this one: those with the same settings."""
        self.rss_cap_kb = rss_cap_mb * 1024
        self.longest = 0.0
        """The longest time limit of any request sent: no worker may use more CPU."""
        self.sent = 0
        """Frames sent: each request is followed by the runtime's work on the next worker."""
        self.ended: set[int] = set()
        """The workers the runtime ended whose threads have not yet been seen gone."""
        self._names: dict[int, str] = {}
        """The name of each thread seen, by thread id (see _threads)."""
        self._looked: tuple[int, int] | None = None
        """At the last look at every worker's CPU: the process's, and the most any
        worker still running had used, in clock ticks."""
        self.keep: object = []
        """The module URLs the runtime listed as kept in its last reply, for the next
        prune (see prune)."""
        self._transpiled: dict[str, str | None] = {}
        """The file of each module URL the runtime kept at the last prune (None until a
        prune had to know it): each reply lists every kept URL, nearly all of them kept
        by the reply before."""
        _sweep_once()
        self.root = Path(tempfile.mkdtemp(prefix=_PREFIX))
        self._transpiled_folder = str(self.root / "deno" / _TRANSPILED)
        self._owner = _own(self.root)
        self.proc: subprocess.Popen[bytes] | None = None
        self.conn: socket.socket | None = None
        self.listener: socket.socket | None = None
        self.stdout: _Log | None = None
        self.stderr: _Log | None = None
        self.buffer = bytearray()
        try:
            self._start(settings, cancel)
        except BaseException:
            self.kill()
            raise

    def _start(self, settings: Mapping[str, object], cancel: threading.Event | None) -> None:
        runtime = runtime_file()
        deno_dir = self.root / "deno"
        workdir = self.root / "work"
        deno_dir.mkdir()
        workdir.mkdir()
        for blocker in _CACHE_FILES:
            (deno_dir / blocker).parent.mkdir(parents=True, exist_ok=True)
            (deno_dir / blocker).write_bytes(b"")
        for blocker in _CACHE_FOLDERS:
            (deno_dir / blocker).mkdir()
        map_file = self.root / "import-map.json"
        map_file.write_text(import_map_text(runtime))
        token = secrets.token_hex(32)
        # The listener stays open for the process's life: the port stays ours, and a
        # program that reaches it finds nobody answering.
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.listener.settimeout(_POLL)
        port = int(self.listener.getsockname()[1])
        self.proc = subprocess.Popen(
            deno_command(runtime, port, token, map_file, settings),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workdir,
            env={**_ENV, "DENO_DIR": str(deno_dir)},
            start_new_session=True,
        )
        _no_core_file(self.proc.pid)
        self.stdout = _Log(self.proc.stdout)
        self.stderr = _Log(self.proc.stderr)
        give_up = time.monotonic() + _START_TIMEOUT
        while self.conn is None:
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                if cancel is not None and cancel.is_set():
                    raise InternalError("the sandbox start was called off") from None
                if self.proc.poll() is not None or time.monotonic() > give_up:
                    time.sleep(_POLL)
                    raise InternalError(
                        f"the sandbox did not start: {self.stderr.text()}"
                    ) from None
                continue
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.setblocking(True)
            self.conn = conn
            try:
                ready = self.receive(time.monotonic() + _START_TIMEOUT)
            except (InternalError, Killed, Died):
                raise InternalError("the sandbox runtime sent no greeting") from None
            if ready.get("op") != "ready" or not hmac.compare_digest(
                str(ready.get("token", "")), token
            ):
                # Not our runtime: whoever it is gets nothing.
                raise InternalError("the sandbox runtime did not prove itself")

    @property
    def pid(self) -> int:
        """The process id; the process leads its own group."""
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        """Whether the process is still running."""
        return self.proc is not None and self.proc.poll() is None

    def rss_kb(self) -> int:
        """The process's resident memory in KiB (the kernel's VmRSS, as ``statm`` gives
        it in pages), or 0 once it is gone."""
        try:
            fd = os.open(f"/proc/{self.pid}/statm", os.O_RDONLY)
        except OSError:
            return 0
        try:
            fields = os.read(fd, 256).split()
        except OSError:
            return 0
        finally:
            os.close(fd)
        return int(fields[1]) * _PAGE_KB if len(fields) > 1 else 0

    def _threads(self, every: bool) -> dict[int, tuple[str, int]] | None:
        """The process's threads: thread id to the name Deno gave it and the CPU it has
        used in clock ticks (-1 where not read), or None if they cannot be listed.

        ``every`` reads each thread's ``stat``. Otherwise only threads not seen before
        are read, and the others keep the name they had: a worker's thread is named
        once, as it starts, and an id is not given to another thread while the process
        lives (a thread's name is kept only once it is a worker's or its thread is a
        second old, past the moment a new thread names itself).
        """
        try:
            folder = os.open(f"/proc/{self.pid}/task", os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return None
        known, found = self._names, dict[int, tuple[str, int]]()
        now = time.clock_gettime(time.CLOCK_BOOTTIME)
        try:
            for entry in os.listdir(folder):
                tid = int(entry)
                name = None if every else known.get(tid)
                if name is not None:
                    found[tid] = (name, -1)
                    continue
                stat = _read_small(f"{entry}/stat", folder)
                if stat is not None:
                    # `tid (name) state ...`: the name is the kernel's, as in `comm`.
                    head, _, tail = stat.rpartition(b")")
                    name = head.partition(b"(")[2].decode("ascii", "replace")
                    fields = tail.split()
                    if len(fields) > 19:
                        found[tid] = (name, int(fields[11]) + int(fields[12]))
                        settled = now - int(fields[19]) / _TICKS
                        if name.startswith("worker-") or settled > 1.0:
                            known[tid] = name
        except OSError:
            return None
        finally:
            os.close(folder)
        self._names = {tid: name for tid, name in known.items() if tid in found}
        return found

    def _ticks(self) -> int | None:
        """The CPU every thread of the process has used, ended ones too, in clock ticks."""
        try:
            fd = os.open(f"/proc/{self.pid}/stat", os.O_RDONLY)
        except OSError:
            return None
        try:
            fields = os.read(fd, 4096).rpartition(b")")[2].split()
        except OSError:
            return None
        finally:
            os.close(fd)
        return int(fields[11]) + int(fields[12]) if len(fields) > 12 else None

    def at_rest(self, grace: float = _SPIN_GRACE) -> bool:
        """Whether every worker the runtime ended is gone, waiting up to ``grace`` s, and
        no other worker thread has used more CPU than any request it served may; both
        start from one look at the threads (at each one's CPU only when the process's own
        says it could matter), and the ended ones are then watched alone.

        A terminate does not stop a thread caught in a microtask loop (a Deno defect):
        left running, it would take CPU and memory from the next request, any holder's,
        and could fill its heap and abort the process under that request. A worker that
        used more CPU than its requests' longest time limit allows was left running past
        its request. Such a process is never lent again.
        """
        names = {f"worker-{n}" for n in self.ended}
        give_up = time.monotonic() + grace
        allowed = (self.longest + _SPIN_GRACE) * _TICKS
        # No thread can have used more since the last whole look than the process has
        # (give or take a tick of rounding each side): while the busiest worker then and
        # everything the process used since still fit in ``allowed``, no worker's own
        # count needs reading. Else every thread's is read again.
        total = self._ticks()
        looked = self._looked
        every = total is None or looked is None or total - looked[0] + looked[1] + 4 > allowed
        listed = self._threads(every)
        threads = listed or {}
        if every:
            used = [
                t
                for name, t in threads.values()
                if name.startswith("worker-") and name not in names
            ]
            if any(ticks > allowed for ticks in used):
                return False
            # Only a look that read both is one to go on from.
            self._looked = None
            if total is not None and listed is not None:
                self._looked = (total, max(used, default=0))
        workers = {tid: entry for tid, entry in threads.items() if entry[0].startswith("worker-")}
        # The ended ones are watched by thread id, one look at a folder each, rather
        # than by reading every thread again: the wait comes after almost every
        # request. An id the kernel gave to a new thread of this process in the
        # meantime reads as not gone, which only makes the wait fail safe.
        pending = [tid for tid, (name, _) in workers.items() if name in names]
        base = f"/proc/{self.pid}/task/"
        while pending:
            if time.monotonic() > give_up or not self.alive():
                return False
            time.sleep(0.001)
            pending = [tid for tid in pending if os.path.lexists(base + str(tid))]
        self.ended.clear()
        return True

    def prune(self, keep: object) -> None:
        """Delete every transpiled blob module in the private folder but those of the
        module URLs in ``keep`` (the runtime's cache, listed in each reply).

        Deno names the file for ``blob:<rest>`` by the SHA-256 of ``<rest>``. Were that
        to change, every file would go: the cache would stop saving time, never grow.
        """
        known = self._transpiled
        kept: dict[str, str | None] = {}
        if isinstance(keep, list):
            for url in cast(list[object], keep):
                if isinstance(url, str) and url.startswith("blob:"):
                    kept[url] = known.get(url)
        self._transpiled = kept
        try:
            names = os.listdir(self._transpiled_folder)
        except OSError:
            return
        wanted = {name for name in kept.values() if name is not None}
        stray = [name for name in names if name not in wanted]
        if not stray:
            return
        # Only now are the kept URLs' files named that no prune named before.
        for url, name in kept.items():
            if name is None:
                name = hashlib.sha256(url[len("blob:") :].encode()).hexdigest() + ".js"
                kept[url] = name
                wanted.add(name)
        for name in stray:
            if name not in wanted:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self._transpiled_folder, name))

    def send(self, message: Mapping[str, object]) -> None:
        """Send one frame. A request's ``source`` goes after its JSON, past a newline, as
        UTF-8 (JSON-escaping a module's text costs more than the rest of the frame);
        one that UTF-8 cannot carry (a lone surrogate) stays in the JSON."""
        assert self.conn is not None
        self.sent += 1
        source = message.get("source")
        tail = None
        if isinstance(source, str):
            with contextlib.suppress(UnicodeEncodeError):
                tail = source.encode()
        if tail is None:
            parts = (json.dumps(message).encode(),)
        else:
            head = json.dumps({k: v for k, v in message.items() if k != "source"}).encode()
            parts = (head, b"\n", tail)
        try:
            self.conn.sendall(b"".join((_FRAME.pack(sum(map(len, parts))), *parts)))
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
                    try:
                        message = json.loads(body)
                    except (ValueError, RecursionError):
                        raise self._crashed("the sandbox sent a malformed frame") from None
                    if not isinstance(message, dict):
                        raise self._crashed("the sandbox sent a malformed frame")
                    frame = cast(dict[str, object], message)
                    if frame.get("op") == "retire":
                        # Sent while idle, before any reply: the request went unread.
                        self.kill()
                        raise Retired
                    ended = frame.get("ended")
                    if isinstance(ended, list):
                        ended_list = cast(list[object], ended)
                        self.ended.update(n for n in ended_list if isinstance(n, int))
                    return frame
            readable, _, _ = select.select([self.conn], [], [], _POLL)
            if readable:
                try:
                    chunk = self.conn.recv(1 << 16)
                except OSError as exc:
                    raise self._died() from exc
                if not chunk:
                    raise self._died()
                self.buffer += chunk
                continue
            if time.monotonic() > deadline:
                self.kill()
                raise Killed("time")
            if self.rss_kb() > self.rss_cap_kb:
                self.kill()
                raise Killed("memory")
            if not self.alive():
                raise self._died()

    def quiet(self) -> bool:
        """Alive, with nothing unread: a process that spoke between calls is retiring."""
        if not self.alive() or self.conn is None or self.buffer:
            return False
        try:
            readable, _, _ = select.select([self.conn], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    def _crashed(self, what: str) -> InternalError:
        if self.proc is not None:
            # The connection ends as the process exits; on a busy machine the exit
            # status can follow well after.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=_EXIT_WAIT)
            if self.proc.returncode == _IDLE_EXIT:
                self.kill()
                raise Retired
        self.kill()
        detail = self.stderr.text().strip()[-2000:] if self.stderr is not None else ""
        return InternalError(
            f"{what}; it restarts for the next call" + (f": {detail}" if detail else "")
        )

    def _died(self) -> Died | InternalError:
        """The process ended mid-request: the request's doing when it aborted itself
        (out of stack, or a fatal V8 check), gitmem's defect when something else ended it."""
        crashed = self._crashed("the sandbox process ended")
        detail = self.stderr.text() if self.stderr is not None else ""
        code = self.proc.returncode if self.proc is not None else None
        out_of_stack = "stack overflow" in detail
        out_of_memory = "JavaScript out of memory" in detail
        if out_of_stack or out_of_memory or code in _ABORTED:
            return Died(str(crashed), out_of_stack=out_of_stack, out_of_memory=out_of_memory)
        return crashed

    def kill(self) -> None:
        """Kill the process group and remove the private directory; idempotent."""
        for sock in (self.conn, self.listener):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.close()
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, 9)
            self.proc.wait()
        for log in (self.stdout, self.stderr):
            if log is not None:
                # The process is gone, so the drain meets end of file at once, however
                # long a busy machine takes to run it; it closes its own pipe.
                log.thread.join(timeout=_EXIT_WAIT)
        remove_tree(self.root)
        if self._owner >= 0:
            with contextlib.suppress(OSError):
                os.close(self._owner)
            self._owner = -1


def _no_core_file(pid: int) -> None:
    """Let process ``pid`` leave no core file when it aborts (a program that fills its
    heap or a parser's stack ends it so): a core would hold the programs' text and every
    memory they read, in a file that outlives the process."""
    prlimit = getattr(resource, "prlimit", None)
    if prlimit is None:
        return
    with contextlib.suppress(OSError, ValueError):
        prlimit(pid, resource.RLIMIT_CORE, (0, 0))


def _read_small(path: str, folder: int) -> bytes | None:
    """The first 4 KiB of ``path`` in the open ``folder`` (a /proc entry is read whole
    at once), or None if it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY, dir_fd=folder)
    except OSError:
        return None
    try:
        return os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)


_PREFIX = "gitmem-sbx-"
_LOCK = "owner.lock"


def _own(root: Path) -> int:
    """Lock ``root`` for this host's life: the descriptor of its lock file, or -1.

    The file is locked before it takes its name, so a sweep never finds it unlocked
    while its host lives.
    """
    try:
        fd = os.open(root / (_LOCK + ".new"), os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW, 0o600)
    except OSError:
        return -1
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(root / (_LOCK + ".new"), root / _LOCK)
    except OSError:
        os.close(fd)
        return -1
    return fd


def sweep_orphans(base: str | None = None) -> int:
    """Remove the private folders in ``base`` (the temporary directory) that no living
    host holds: those a killed host left. How many went."""
    base = base if base is not None else tempfile.gettempdir()
    uid = os.getuid()
    removed = 0
    try:
        entries = [e for e in os.scandir(base) if e.name.startswith(_PREFIX)]
    except OSError:
        return 0
    for entry in entries:
        try:
            if (
                not entry.is_dir(follow_symlinks=False)
                or entry.stat(follow_symlinks=False).st_uid != uid
            ):
                continue
            fd = os.open(os.path.join(entry.path, _LOCK), os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue  # no lock file: being made, or not ours to judge
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # its host lives
        try:
            remove_tree(Path(entry.path))
            removed += 1
        finally:
            os.close(fd)
    return removed


@functools.cache
def _sweep_once() -> None:
    sweep_orphans()


def remove_tree(root: Path) -> None:
    """Remove ``root`` and everything under it; never follows a link out of it.

    Iterative and relative to one open folder at a time, so a tree nested thousands
    deep (deeper than a path may be long) goes like any other, holding one descriptor.
    Entries that cannot be removed are left, and the rest still go.
    """
    try:
        fd = os.open(root, _DIRECTORY)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(root)
        return
    # Per open level: its name in its parent, and its subfolders still to visit.
    levels: list[tuple[str, list[str]]] = [("", _empty(fd))]
    while levels:
        _, pending = levels[-1]
        if pending:
            name = pending.pop()
            try:
                child = os.open(name, _DIRECTORY, dir_fd=fd)
            except OSError:
                continue
            os.close(fd)
            fd = child
            levels.append((name, _empty(fd)))
            continue
        name, _ = levels.pop()
        if not levels:
            break
        try:
            parent = os.open("..", _DIRECTORY, dir_fd=fd)
        except OSError:
            break
        os.close(fd)
        fd = parent
        with contextlib.suppress(OSError):
            os.rmdir(name, dir_fd=fd)
    os.close(fd)
    with contextlib.suppress(OSError):
        os.rmdir(root)


_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def _empty(fd: int) -> list[str]:
    """Unlink every non-folder in the open folder ``fd``; the names of its subfolders."""
    with contextlib.suppress(OSError):
        # A folder its owner may not write or search would keep its entries.
        os.fchmod(fd, 0o700)
    folders: list[str] = []
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.name)
                else:
                    with contextlib.suppress(OSError):
                        os.unlink(entry.name, dir_fd=fd)
    except OSError:
        pass
    return folders
