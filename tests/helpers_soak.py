"""Child processes for the soak tests (tests/test_soak.py).

Run as a script:

* ``python helpers_soak.py load <repo> <name> <writes> <max_count>``: an agent
  ``<name>`` bound to the shared ``keyword-search`` store makes ``<writes>`` acknowledged
  writes through its tools, fighting the other writers for room under maxCount: it
  creates memories of its own and deletes them again (every third call); when a create
  is refused for want of room it edits ``home-<name>`` (seeded by the test, with body
  ``body_of(name, -1)``) instead. Each write is printed as a JSON line once the call has
  returned ``ok`` (a refusal as ``{"refused": ...}``), flushed before the next call.
* ``python helpers_soak.py sync <clone> <name>``: creates ``<name>-<i>`` in store
  ``notes`` of a clone and syncs with ``origin``, for i = 0, 1, ... until killed,
  printing each slug once ``create`` has returned; ``ready`` first.
* ``python helpers_soak.py pack <repo>``: packs the repository again and again until
  killed (``ready`` first), while a writer of ``helpers_store`` adds loose objects.
"""

from __future__ import annotations

import json
import os
import sys
from collections import deque

from helpers_store import body_of
from helpers_sync import ME, STORE

from gitmem import Agent, Capability, Repository, ops
from gitmem.limits import LIMITS

PROFILE = "worker"
FULL = os.environ.get("GITMEM_SOAK") == "full"
"""``make soak`` sets ``GITMEM_SOAK=full``: the figures docs/reliability.md reports."""


def size(quick: int, full: int) -> int:
    """``full`` under ``make soak``, else the scaled-down ``quick`` that ``make test`` runs."""
    return full if FULL else quick


def report(line: str) -> None:
    """A figure for docs/reliability.md: printed, and kept in ``$GITMEM_SOAK_REPORT`` if set."""
    print(line)
    target = os.environ.get("GITMEM_SOAK_REPORT")
    if target:
        with open(target, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def load_capability(max_count: int) -> Capability:
    """keyword-search, shared by every ``worker``: maxCount bounds the set."""
    params: dict[str, object] = {"scope": "shared", **dict.fromkeys(LIMITS, 0)}
    params["maxCount"] = max_count
    return Capability.from_dict(
        {"id": "memories", "enabled": True, "implementation": "keyword-search", "params": params}
    )


def _say(record: dict[str, object]) -> None:
    print(json.dumps(record), flush=True)


def load(path: str, name: str, writes: int, max_count: int) -> None:
    repo = Repository.open(path)
    holder = repo.bind(load_capability(max_count), Agent(PROFILE, name, started_as="root"))
    assert holder is not None
    home = f"home-{name}"
    body = body_of(name, -1)
    done = 0

    def call(tool: str, op: str, slug: str, new_body: str | None, **args: str) -> bool:
        nonlocal done
        result = holder.call(tool, {"name": slug, **args})
        if not result.ok:
            _say({"refused": result.kind, "tool": tool, "slug": slug, "text": result.text})
            return False
        done += 1
        _say({"op": op, "slug": slug, "body": new_body})
        return True

    mine: deque[str] = deque()
    i = 0
    while done < writes:
        if i % 3 == 2 and mine:
            call("delete_memory", "delete", mine.popleft(), None)
        else:
            slug, new = f"{name}-{i}", body_of(name, i)
            if call("create_memory", "create", slug, new, description="extra", body=new):
                mine.append(slug)
            elif call("edit_memory", "edit", home, new, old_text=body, new_text=new):
                body = new
        i += 1
    holder.close()


def sync_forever(clone: str, name: str) -> None:
    with Repository.open(clone) as repo:
        print("ready", flush=True)
        i = 0
        while True:
            slug = f"{name}-{i}"
            ops.create(repo, STORE, ME, slug, f"by {name}", body_of(name, i))
            print(slug, flush=True)
            repo.sync("origin")
            i += 1


def pack_forever(path: str) -> None:
    repo = Repository.open(path)
    print("ready", flush=True)
    while True:
        repo.pack()


def main(argv: list[str]) -> None:
    mode = argv[0]
    if mode == "load":
        load(argv[1], argv[2], int(argv[3]), int(argv[4]))
    elif mode == "sync":
        sync_forever(argv[1], argv[2])
    elif mode == "pack":
        pack_forever(argv[1])
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
