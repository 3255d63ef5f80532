"""The sandbox: TypeScript code memories and agent programs, run by Deno with no permissions.

Deno processes are lent to a :class:`Sandbox` by a :class:`Pool` for one call at a time,
shared by every sandbox with the same settings, and killed once idle for a while (a
minute by default), so an idle holder holds none. A process runs ``sandbox/runtime.js``
(built from ``runtime.ts`` by ``make runtime``, shipped as ``gitmem._runtime``), which connects
back over loopback TCP to one port, proves itself with a per-launch token, and evaluates
every load and run in a fresh web worker of Deno's own (every isolate's heap capped by a
V8 flag given at the process's start), where only an allowlist of globals survives (the runtime also reads each loaded module's
typed signatures from its source, in one linear pass, while the worker loads it); a
store guard's checks share one worker per guard text and store (:meth:`Sandbox.check`). The process holds no file permission at all, no
other network, environment, subprocesses or FFI, and an import map turns every
``file:``, bare and ``node:`` import into a denied remote one. A program's modules run
only if it imports them by name. The protocol never runs over stdin or stdout; they are
drained into small logs that nothing parses. Whatever crosses the bridge is capped
before it is parsed (see :mod:`gitmem.sandbox.runner`).

A watchdog kills the whole process when a run outlives twice its time budget or its
resident memory passes the cap (V8's limits miss off-heap memory); the next call starts a
fresh process. A process that aborts itself while it serves a request (as Deno does on
code nested past its parser's stack, and V8 when a worker fills its heap) fails that
request alone, as the program's own error; a process ended by anything else, or a
runtime that answers nonsense, is gitmem's defect (:class:`~gitmem.errors.InternalError`).
A process whose worker did not finish its request is killed with it; one is never lent
again once a worker it ran outlives its request; and the first process a host starts
removes the private folders of hosts that were killed outright.

One module per concept, imports pointing down:

- ``keys``: the name a memory's code is imported under (:func:`module_key`);
- ``launch``: the runtime file, the Deno binary, its permissions and the import map;
- ``process``: the Deno process, its connection, log drains, watchdog and cleanup;
- ``pool``: :class:`Pool`, which lends processes one call at a time and reaps idle ones;
- ``runner``: :class:`Sandbox`, its caps and the values it returns.
"""

from __future__ import annotations

from gitmem.sandbox.keys import module_key
from gitmem.sandbox.pool import Pool
from gitmem.sandbox.runner import Bridge, ExportDoc, ProgramResult, Sandbox, Verdict, View

__all__ = [
    "Bridge",
    "ExportDoc",
    "Pool",
    "ProgramResult",
    "Sandbox",
    "Verdict",
    "View",
    "module_key",
]
