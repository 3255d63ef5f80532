"""Retain: one run of the pipeline that turns past sessions into recalled memory.

A run takes the lease ``retain/<store>`` (a ref under ``refs/gitmem/leases/``, moved
by compare-and-swap; see :mod:`gitmem.observe.lease`), so two processes never run at
once: the second reports itself busy and does nothing. Under it, it extracts each
chosen session (:mod:`gitmem.observe.extract`), renewing the lease after each, then, if
anything new was extracted (or a rebuild asks), consolidates every extraction into the
memory files (:mod:`gitmem.observe.consolidate`).

The model is the one the observer is configured with (``gitmem.observer.model``); the
sessions are Claude Code's transcripts in a folder (:mod:`gitmem.observe.transcripts`).
:func:`start_background` starts a run as a detached process that appends to
``<git directory>/gitmem/recall.log``, for a hook that must not wait for it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Collection
from dataclasses import dataclass, field

from gitmem.errors import GitmemError, Unavailable
from gitmem.lean.repository import hook_start
from gitmem.observe.capture import open_own
from gitmem.observe.config import read_config
from gitmem.observe.consolidate import Consolidated, consolidate
from gitmem.observe.extract import Extraction, extract, processed, select
from gitmem.observe.lease import leased
from gitmem.observe.model import Model, observer_run
from gitmem.observe.recall import RecallSettings, recall_block
from gitmem.observe.transcripts import (
    modified_at,
    project_folder,
    session_files,
    transcript_folder,
)
from gitmem.repository import Repository
from gitmem.types import Author, FileChange, FileEdit

__all__ = [
    "RetainReport",
    "clear",
    "configured_model",
    "default_folder",
    "retain",
    "run",
    "session_end",
    "start_background",
    "view",
]

_LOG = "recall.log"
_LOG_MAX = 1 << 20


@dataclass
class RetainReport:
    """What one run did: ``busy`` if another process held the lease; the sessions
    extracted, skipped (and why) and refused (and why); the consolidation, if any."""

    busy: bool = False
    lost: bool = False
    """The lease expired mid-run and another run took it; this one stopped."""
    extracted: list[str] = field(default_factory=lambda: list[str]())
    skipped: dict[str, str] = field(default_factory=lambda: dict[str, str]())
    refused: dict[str, str] = field(default_factory=lambda: dict[str, str]())
    consolidated: Consolidated | None = None

    def lines(self) -> list[str]:
        """The report as lines of text."""
        if self.busy:
            return ["another retain run holds the lease; nothing done"]
        out = [f"extracted {len(self.extracted)} session(s), skipped {len(self.skipped)}"]
        out += [f"refused {session}: {why}" for session, why in self.refused.items()]
        if self.lost:
            out.append("the lease expired and another run took it over; stopped")
        done = self.consolidated
        if done is not None and done.proposal is not None:
            out.append(
                f"consolidation refused: it would drop {done.dropped} of {done.existing} "
                f"entries; kept on store {done.proposal} for review "
                "(`gitmem recall proposals`, then `gitmem recall land` or `drop`)"
            )
        elif done is not None:
            out.append(f"consolidated: {done.commit or 'no change'}")
        return out


def configured_model(repo: Repository) -> Model:
    """The model ``gitmem.observer.*`` configures; refused when there is none."""
    model = read_config(repo).model()
    if model is None:
        raise Unavailable(
            "no model is configured; set one with "
            "`gitmem observe config model command` and `gitmem observe config command ...`"
        )
    return model


def default_folder(repo: Repository) -> str:
    """Where Claude Code keeps the transcripts of sessions run in the repository's work
    tree (the folder holding its ``.git``; for a standalone repository, its own)."""
    directory = repo.directory.rstrip(os.sep)
    top = os.path.dirname(directory) if os.path.basename(directory) == ".git" else directory
    return project_folder(top)


def retain(
    repo: Repository,
    model: Model,
    folder: str,
    *,
    settings: RecallSettings | None = None,
    now: float | None = None,
    active: Collection[str] = (),
    force: bool = False,
) -> RetainReport:
    """Run the pipeline once over the transcripts in ``folder``: extract the sessions
    the rules choose, then consolidate if any was new (or ``force``)."""
    chosen = settings or RecallSettings.of(repo)
    store = chosen.store
    report = RetainReport()
    with leased(repo, f"retain/{store}", chosen.lease_seconds) as held:
        if held is None:
            report.busy = True
            return report
        done = processed(repo.files(store)) if repo.head(store) is not None else {}
        at = time.time() if now is None else now
        selection = select(session_files(folder), done, chosen, at, active)
        report.skipped = selection.skipped
        for session in selection.chosen:
            try:
                extract(repo, store, model, session)
                report.extracted.append(session.session)
            except GitmemError as exc:
                report.refused[session.session] = _one_line(exc)
            if not held.renew():
                report.lost = True  # it expired and another run holds it: that run goes on
                return report
        if report.extracted or force:
            every = sorted(processed(repo.files(store)).values(), key=_newest_first)
            try:
                report.consolidated = consolidate(repo, store, model, every, chosen.max_drop_share)
            except GitmemError as exc:
                report.refused["consolidation"] = _one_line(exc)
    return report


def run(repo: Repository, folder: str | None = None, *, force: bool = False) -> RetainReport:
    """``retain`` with the configured model over ``folder`` (default: this project's
    Claude Code transcripts); ``force`` consolidates even with nothing new (a rebuild)."""
    model = configured_model(repo)
    return retain(repo, model, folder or default_folder(repo), force=force)


def _newest_first(extraction: Extraction) -> tuple[float, str]:
    return (-modified_at(extraction.source), extraction.session)


def _one_line(exc: GitmemError) -> str:
    return " ".join(str(exc).split())[:300]


def view(repo: Repository) -> str:
    """What a session is handed at its start, as the settings stand (enabled or not)."""
    return recall_block(repo, RecallSettings.of(repo))


def clear(repo: Repository, author: Author) -> str | None:
    """Delete every memory file, extraction and skill of the recall store as one commit
    by ``author``; returns it (``None``: nothing to delete). Sessions are extracted
    afresh by the next run."""
    store = RecallSettings.of(repo).store
    if repo.head(store) is None:
        return None
    revisions = repo.publish_files(
        store,
        author,
        lambda head: FileChange(tuple(FileEdit("delete", p, None) for p in head.files())),
    )
    return revisions[0].commit if revisions else None


def start_background(repo: Repository, folder: str) -> bool:
    """Start a retain run over ``folder`` as a detached process and return at once;
    ``False`` (nothing started) when retain is off, this process is itself a model run
    the pipeline started, a run holds the lease, or its log is not a file of its own."""
    settings = RecallSettings.of(repo)
    if not settings.enabled or observer_run():
        return False
    lease = repo.leases.read(f"retain/{settings.store}")
    if lease is not None and lease.live(time.time()):
        return False
    log = os.path.join(repo.directory, "gitmem", _LOG)
    os.makedirs(os.path.dirname(log), exist_ok=True)
    if os.path.exists(log) and os.path.getsize(log) > _LOG_MAX:
        os.replace(log, log + ".old")  # bounded: this one and the last
    argv = [sys.executable, "-m", "gitmem", "--repo", repo.directory]
    argv += ["recall", "run", "--transcripts", folder]
    try:  # the log only if it is a file of its own: never a link's target, never a FIFO
        fd = open_own(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    except OSError:
        return False
    with os.fdopen(fd, "ab") as out:
        subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
        )
    return True


def session_end(repo: Repository, transcript_path: object, cwd: object) -> bool:
    """Start a background run when a Claude Code session ends, over the folder of its
    transcript when that is one of Claude Code's project folders, else over the
    transcripts of the folder the session started in; see ``start_background``."""
    folder = transcript_folder(transcript_path) or project_folder(hook_start(cwd))
    return start_background(repo, folder)
