"""The sandbox: TypeScript code memories and agent programs, run by Deno with no permissions.

One Deno process per :class:`Sandbox` (one per holder), started lazily on the first use.
The process runs ``sandbox/runtime.ts`` (shipped as ``gitmem._runtime``), which connects
back over a private Unix socket and evaluates every module and program in a fresh
``node:worker_threads`` worker with a capped heap. The process may touch nothing but
that socket: no files, network, environment, subprocesses or FFI, and an import map
turns every ``file:`` and ``node:`` import into a denied remote one. The protocol never
runs over stdin or stdout, which user code can reach; they are drained into small logs
that nothing parses.

A watchdog kills the whole process when a run outlives twice its time budget or its
resident memory passes the cap (V8's limits miss off-heap memory); the next call starts a
fresh process. A crash gitmem did not cause that way is gitmem's defect and raises
:class:`~gitmem.errors.InternalError`.

One module per concept, imports pointing down:

- ``keys``: the name a memory's code is imported under (:func:`module_key`);
- ``launch``: the runtime file, the Deno binary, its permissions and the import map;
- ``signatures``: typed signatures read from the TypeScript source;
- ``process``: the Deno process, its socket, log drains and watchdog;
- ``runner``: :class:`Sandbox` and the values it returns.
"""

from __future__ import annotations

from gitmem.sandbox.keys import module_key
from gitmem.sandbox.runner import Bridge, ExportDoc, ProgramResult, Sandbox, View

__all__ = [
    "Bridge",
    "ExportDoc",
    "ProgramResult",
    "Sandbox",
    "View",
    "module_key",
]
