"""Writer processes for the store's concurrency and crash tests.

Run as a script: ``python helpers_store.py <mode> <repo> <store> <name> [count]``.

* ``shared``: ``count`` writes (op ``write``) cycling over four shared slugs, each body
  naming the writer and the write, so a test can find every write in the history.
* ``forever``: create ``<name>-<i>`` for i = 0, 1, ... until killed, printing each slug
  once ``mutate`` has returned (an acknowledged write); packs now and then, so kills
  also land in the middle of packing.
"""

from __future__ import annotations

import sys

from gitmem import Author, Memory, Repository
from gitmem.store import Snapshot
from gitmem.types import Change

SHARED = 4


def shared_slug(i: int) -> str:
    return f"shared-{i % SHARED}"


def body_of(name: str, i: int) -> str:
    return f"written by {name}, write {i}\n"


def write(repo: Repository, store: str, author: Author, op: str, slug: str, body: str) -> None:
    def fn(_: Snapshot) -> Change:
        return Change(op, slug, Memory(slug, f"{slug} description", body))  # type: ignore[arg-type]

    repo.mutate(store, author, fn)


def main(argv: list[str]) -> None:
    mode, path, store, name = argv[:4]
    repo = Repository.open(path)
    author = Author.agent(name)
    if mode == "shared":
        for i in range(int(argv[4])):
            write(repo, store, author, "write", shared_slug(i), body_of(name, i))
    elif mode in ("forever", "packing"):
        # packing: combine every pack after each write, so a kill often lands in it
        every = 1 if mode == "packing" else 7
        print("ready", flush=True)
        i = 0
        while True:
            slug = f"{name}-{i}"
            write(repo, store, author, "create", slug, body_of(name, i))
            print(slug, flush=True)
            if i % every == every - 1:
                repo.pack()
            i += 1
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
