"""Consolidation: every session's extraction folded into ``MEMORY.md``,
``memory_summary.md`` and ``skills/<name>/``, as one commit by ``consolidator``.

The model answers the ``consolidate`` prompt with one section per file, each opened by
a header line ``=== <path> ===``; only ``MEMORY.md``, ``memory_summary.md`` and
``skills/<name>/<file>.md`` are taken, and the first two must be there. The answer
names every skill that remains: a skill directory it leaves out is stale and removed
in the same commit. The commit's trailers name the model, the prompt and the sessions
it read (its source ids).

A consolidation may not silently forget. Its *entries* are ``MEMORY.md``'s list items
(``- `` or ``* `` lines, compared by their words) and the skills; one that would drop
more than ``max-drop-share`` of the existing entries is refused: it is kept instead on
a proposal branch, the file store ``proposals/<store>/<UTC time>`` forked from the
store's head (``refs/heads/gitmem/proposals/...`` in a project), for an operator to
read, and land or drop (:mod:`gitmem.observe.proposals`, ``gitmem recall proposals``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gitmem.errors import InvalidArgument
from gitmem.observe.extract import Extraction
from gitmem.observe.logbook import Trail, author
from gitmem.observe.model import Model
from gitmem.observe.prompts import Prompt, prompt
from gitmem.observe.recall import MEMORY, SKILLS, SUMMARY
from gitmem.repository import Repository
from gitmem.secrets import check_texts
from gitmem.store import FileSnapshot
from gitmem.types import FileChange, FileEdit

__all__ = [
    "CONSOLIDATOR",
    "PAYLOAD_MAX",
    "PREFIX",
    "Consolidated",
    "consolidate",
    "entries",
    "kept_path",
    "memory_change",
    "parse_answer",
]

PREFIX = "proposals"
"""A refused consolidation of store S is kept on the file store ``proposals/S/<time>``."""
CONSOLIDATOR = author("consolidator")
"""The author of consolidation commits."""
PAYLOAD_MAX = 64_000
"""The most characters of memory and extractions one consolidation reads."""
FILE_MAX = 32_000
"""The most characters kept of any one file the model writes."""
_HEADER = re.compile(r"=== (\S{1,200}) ===")
_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class Consolidated:
    """What a consolidation did: ``commit`` on the store, or (refused for dropping
    ``dropped`` of ``existing`` entries) ``proposal``, the store it was kept on."""

    commit: str | None
    proposal: str | None = None
    dropped: int = 0
    existing: int = 0


def entries(files: Mapping[str, str]) -> set[str]:
    """The entries of a memory's files (path → text): ``MEMORY.md``'s list items, by
    their words, and ``skill:<name>`` for each skill."""
    found: set[str] = set()
    for line in files.get(MEMORY, "").splitlines():
        stripped = line.strip()
        if stripped[:2] in ("- ", "* "):
            words = " ".join(stripped[2:].split()).lower()
            if words:
                found.add(words)
    for path in files:
        if path.startswith(SKILLS + "/"):
            found.add("skill:" + path.split("/")[1])
    return found


def parse_answer(answer: str) -> dict[str, str]:
    """The files the model's answer writes (path → text); refused unless it has both
    ``MEMORY.md`` and ``memory_summary.md``."""
    written: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in answer.splitlines():
        header = _HEADER.fullmatch(line.strip())
        if header is not None:
            path = header.group(1)
            current = written.setdefault(path, []) if _allowed(path) else None
            continue
        if current is not None:
            current.append(line)
    files = {path: "\n".join(lines).strip()[:FILE_MAX] + "\n" for path, lines in written.items()}
    files = {path: text for path, text in files.items() if text.strip()}
    missing = [name for name in (MEMORY, SUMMARY) if name not in files]
    if missing:
        raise InvalidArgument(
            f"the model's consolidation has no {' or '.join(missing)} section; nothing written"
        )
    return files


def _allowed(path: str) -> bool:
    if path in (MEMORY, SUMMARY):
        return True
    parts = path.split("/")
    return (
        len(parts) == 3
        and parts[0] == SKILLS
        and all(_SEGMENT.fullmatch(p) for p in parts[1:])
        and parts[2].endswith(".md")
    )


def _payload(current: FileSnapshot | None, extractions: Sequence[Extraction]) -> str:
    """The current memory, the skills' names and the extractions, newest first, within
    :data:`PAYLOAD_MAX` characters (the oldest extractions left out first)."""
    memory = (current.read(MEMORY) or "") if current is not None else ""
    skills = sorted({p.split("/")[1] for p in current.files(SKILLS)}) if current else []
    parts = [
        "# Current MEMORY.md\n" + (memory.strip() or "(empty)"),
        "# Current skills\n" + (", ".join(skills) or "(none)"),
        "# Extractions, newest first",
    ]
    used = sum(map(len, parts))
    for extraction in extractions:
        block = f"## Session {extraction.session}: {extraction.synopsis}\n" + (
            extraction.memory or "(nothing durable)"
        )
        if used + len(block) > PAYLOAD_MAX:
            break
        parts.append(block)
        used += len(block)
    return "\n\n".join(parts)


def consolidate(
    repo: Repository,
    store: str,
    model: Model,
    extractions: Sequence[Extraction],
    max_drop_share: float,
) -> Consolidated:
    """Consolidate ``extractions`` (newest first) into the store's memory files as one
    commit by ``consolidator``, or keep it on a proposal branch if it would drop more
    than ``max_drop_share`` of the existing entries."""
    step = prompt("consolidate")
    current = repo.files(store) if repo.head(store) is not None else None
    files = parse_answer(model.complete(step.text, _payload(current, extractions)))
    # the screens would refuse it at the commit; refused here, no proposal is forked
    check_texts(((f"file {path}", text) for path, text in files.items()), None)
    trailers = _trailers(model, step, extractions)

    def change(head: FileSnapshot) -> FileChange:
        # judged against the head it applies to, again after a lost race
        old = {p: head.read(p) or "" for p in head.files() if kept_path(p)}
        before = entries(old)
        dropped = len(before - entries(files))
        if before and dropped > max_drop_share * len(before):
            raise _Dropping(dropped, len(before))
        return memory_change(head, files, trailers)

    try:
        revisions = repo.publish_files(store, CONSOLIDATOR, change)
    except _Dropping as too_much:
        proposal = _propose(repo, store, files, trailers)
        return Consolidated(None, proposal, too_much.dropped, too_much.existing)
    return Consolidated(revisions[0].commit if revisions else None)


class _Dropping(Exception):
    """A consolidation would drop ``dropped`` of the ``existing`` entries: too many."""

    def __init__(self, dropped: int, existing: int) -> None:
        super().__init__(dropped, existing)
        self.dropped = dropped
        self.existing = existing


def kept_path(path: str) -> bool:
    """Whether ``path`` is one of the memory files a consolidation writes."""
    return path in (MEMORY, SUMMARY) or path.startswith(SKILLS + "/")


def _trailers(model: Model, step: Prompt, extractions: Sequence[Extraction]) -> dict[str, str]:
    sources = tuple(sorted(e.session for e in extractions))
    return Trail("", model.name, step.label, sources).trailers()


def memory_change(
    head: FileSnapshot, files: Mapping[str, str], trailers: Mapping[str, str]
) -> FileChange:
    """The memory files written as ``files`` says; skill files it does not name removed."""
    edits: list[FileEdit] = []
    for path in (SUMMARY, MEMORY, *sorted(p for p in files if p.startswith(SKILLS + "/"))):
        if path not in files:
            continue
        old = head.read(path)
        if old != files[path]:
            edits.append(FileEdit("edit" if old is not None else "create", path, files[path]))
    edits.extend(FileEdit("delete", p, None) for p in head.files(SKILLS) if p not in files)
    return FileChange(tuple(edits), trailers)


def _propose(
    repo: Repository, store: str, files: Mapping[str, str], trailers: dict[str, str]
) -> str:
    """Keep the refused consolidation on a new proposal store forked from the head."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    proposal = f"{PREFIX}/{store}/{stamp}"
    suffix = 1
    while repo.head(proposal) is not None:
        suffix += 1
        proposal = f"{PREFIX}/{store}/{stamp}-{suffix}"
    repo.fork(store, proposal)
    repo.publish_files(proposal, CONSOLIDATOR, lambda head: memory_change(head, files, trailers))
    return proposal
