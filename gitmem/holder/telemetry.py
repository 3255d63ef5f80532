"""Telemetry: the ``memory_state`` and ``memory_revision`` events, and the hub through
which a write tells the other holders of its store.

A revision goes only to the stream of the holder that made it; every other holder of
the store in the same hub gets a fresh ``memory_state``. A hub belongs to a
``Repository`` (or is passed in): there is no module-global state.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable

from gitmem.state import Event, state_event
from gitmem.types import Revision

__all__ = ["Event", "Hub", "Telemetry", "state_event"]


class Telemetry:
    """One holder's event stream."""

    def __init__(self, store: str, state: Callable[[], Event]) -> None:
        self.store = store
        self._state = state
        self._subscribers: list[Callable[[Event], None]] = []

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Stream events to ``callback``; returns a function that stops the stream."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    def revised(self, revisions: list[Revision]) -> None:
        """Stream the revisions this holder made."""
        for revision in revisions:
            event = revision.to_dict()
            for callback in list(self._subscribers):
                callback(event)

    def changed(self) -> None:
        """Another holder changed the store: stream a fresh state, if anyone listens."""
        if self._subscribers:
            state = self._state()
            for callback in list(self._subscribers):
                callback(state)


class Hub:
    """The telemetry streams of the holders bound through one repository."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: dict[str, weakref.WeakSet[Telemetry]] = {}

    def join(self, stream: Telemetry) -> None:
        with self._lock:
            self._streams.setdefault(stream.store, weakref.WeakSet()).add(stream)

    def published(self, writer: Telemetry, revisions: list[Revision]) -> None:
        """``writer`` published ``revisions``: tell it, then every other stream of its store."""
        writer.revised(revisions)
        with self._lock:
            others = [s for s in self._streams.get(writer.store, ()) if s is not writer]
        for other in others:
            other.changed()
