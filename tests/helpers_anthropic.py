"""A memory-tool process for the concurrency test.

Run as a script: ``python helpers_anthropic.py <repo> <store> <name> <count>``: ``count``
commands, alternately inserting ``<name> <i>`` at the top of the shared
``/memories/shared.md`` (a read-modify-write: a lost update would drop a line) and
creating ``/memories/<name>/<i>.md``. Prints ``done`` at the end.
"""

from __future__ import annotations

import sys

from gitmem import Author, Repository
from gitmem.anthropic import GitMemoryTool


def main(argv: list[str]) -> None:
    path, store, name, count = argv[0], argv[1], argv[2], int(argv[3])
    memory = GitMemoryTool(Repository.open(path), store, author=Author.agent(name))
    for i in range(count):
        if i % 2:
            memory.call(
                {"command": "create", "path": f"/memories/{name}/{i}.md", "file_text": f"{i}\n"}
            )
        else:
            memory.call(
                {
                    "command": "insert",
                    "path": "/memories/shared.md",
                    "insert_line": 0,
                    "insert_text": f"{name} {i}",
                }
            )
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
