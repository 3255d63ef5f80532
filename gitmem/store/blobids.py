"""The blob ids of the history index's rows: written as ``?`` when the index is built
(which reads commits, never trees), looked up in a commit's tree when a row is first
read, and kept in a side file ``<index>.blobs`` (``<commit> <slug> <md> <code> <onUse>``
lines, appended) so that a slug's history costs its own rows' lookups once, in any
process. A line of the side file that does not read is passed over and looked up again.
"""

from __future__ import annotations

import os

from gitmem.store.rows import LATER, Entry, Row, entry_of, field_of, lines_with, name_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    from gitmem.store.objects import Step

    class Steps(Protocol):
        """What the lookup reads of the commits: a commit as a walk sees it."""

        def step(self, sha: str) -> Step: ...


__all__ = ["BlobIds"]


class BlobIds:
    """The blob ids of index rows written as ``?``: looked up in a commit's tree when a
    row is first read, and kept in the side file ``<index>.blobs`` (``commit slug md
    code onUse`` lines) for the next process."""

    def __init__(self, path: str, source: Steps) -> None:
        self._path = path
        self._source = source
        self.persisted = True
        """Whether the side file is written (after a disk error the index it belongs to
        goes on in memory for this process)."""
        self._blobs: dict[tuple[str, str], tuple[str, str, str]] = {}
        self._blobs_read: set[str | None] = set()  # the slugs read from it; None: all

    def entries(self, rows: list[Row], slug: str | None = None) -> list[Entry]:
        """Entries for ``rows`` (all of ``slug``'s if given), their blob ids found."""
        blobs = self._blobs
        missing = [r for r in rows if r[4] == LATER and (r[0], r[3]) not in blobs]
        if missing and slug not in self._blobs_read and None not in self._blobs_read:
            self._read_blobs(slug)
            missing = [r for r in missing if (r[0], r[3]) not in blobs]
        if missing:
            self._resolve(list(dict.fromkeys(r[0] for r in missing)))
        return [entry_of(r if r[4] != LATER else (*r[:4], *blobs[r[0], r[3]])) for r in rows]

    def _read_blobs(self, slug: str | None) -> None:
        """Take what the side file knows (``slug``'s lines only, if given). A line that
        does not read is passed over: its row is looked up again."""
        try:
            with open(self._path + ".blobs", "rb") as f:
                data = f.read()
        except OSError:
            data = b""
        data = data[: data.rfind(b"\n") + 1]
        lines = lines_with(data, slug, 1) if slug is not None else data.split(b"\n")
        try:  # every line at once: one that does not decode is the rare case
            texts = b"\n".join(lines).decode("ascii").split("\n")
        except UnicodeDecodeError:
            texts = [line.decode("ascii", "replace") for line in lines]
        blobs = self._blobs
        for text in texts:
            fields = text.split(" ")
            if len(fields) == 5 and len(fields[0]) == 40 and all(fields) and "\ufffd" not in text:
                commit, name, md, code, on_use = fields
                try:
                    blobs[commit, name_of(name) if "%" in name else name] = (md, code, on_use)
                except UnicodeDecodeError:
                    continue
        self._blobs_read.add(slug)

    def _resolve(self, commits: list[str]) -> None:
        """Look up the blob ids of every slug ``commits`` changed, in their trees, and
        keep them in the side file for the next process."""
        found: dict[tuple[str, str], tuple[str, str, str]] = {}
        for commit in commits:
            step = self._source.step(commit)
            if step.facts is None:
                continue
            for edit, blobs in zip(step.facts.edits, step.blobs, strict=True):
                found[commit, edit.slug] = blobs
        self.keep(found)

    def keep(self, found: dict[tuple[str, str], tuple[str, str, str]]) -> None:
        """Keep blob ids in memory and in the side file, for the next process."""
        self._blobs.update(found)
        if not found or not self.persisted:
            return
        lines = [
            f"{commit} {field_of(slug)} {' '.join(blobs)}\n"
            for (commit, slug), blobs in found.items()
        ]
        try:
            # one write, after a newline: a line a killed writer left half-written
            # stays a line of its own, which the reader passes over
            fd = os.open(self._path + ".blobs", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, ("\n" + "".join(lines)).encode())
            finally:
                os.close(fd)
        except OSError:
            pass  # derived data: found again by the next reader that needs it
