"""Frames for what reaches the model beside its own words: views and notices.

A view's title and text come from programs and code memories (any holder's, in a
shared store) and a notice quotes what other agents wrote, so neither may pass for the
other or for a second view. Each is wrapped in a pair of tags whose ``id`` is a digest
of the kind, title and text it holds: to close its own frame early, or to open one
that looks like it came from gitmem, a text would have to contain the digest of
itself. A title is quoted as a JSON string, so it stays on one line whatever it holds.

    <gitmem-view id="3f0c9a1e2b7d4c65" title="deploy-notes">
    staging needs the VPN
    </gitmem-view id="3f0c9a1e2b7d4c65">

A notice's frame names the commits it covers, so an agent (or its code) can ask what
exactly changed: ``from`` is the commit after which they start (empty: the store's
first), ``to`` the last of them.

    <gitmem-notice id="9b1d0e7a6c2f3e48" from="3f0c9a1e2b7d..." to="8d2b44c0e1a9...">
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

__all__ = ["frame_key", "frame_notice", "frame_view", "framed"]


def frame_key(kind: str, title: str, text: str) -> str:
    """The id of a frame of ``kind`` holding ``title`` and ``text``: a digest of all it
    holds, so no text inside can name it."""
    digest = hashlib.sha256("\0".join((kind, title, text)).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]


def frame_view(title: str, text: str) -> str:
    """One view, framed so that nothing in ``title`` or ``text`` can end the frame."""
    tag = frame_key("view", title, text)
    return f'<gitmem-view id="{tag}" title={json.dumps(title)}>\n{text}\n</gitmem-view id="{tag}">'


def frame_notice(text: str, span: tuple[str | None, str] | None = None) -> str:
    """One notice, framed like a view; with ``span``, the commits it covers."""
    tag = frame_key("notice", "", text)
    covers = f' from="{span[0] or ""}" to="{span[1]}"' if span is not None else ""
    return f'<gitmem-notice id="{tag}"{covers}>\n{text}\n</gitmem-notice id="{tag}">'


def framed(
    views: Iterable[tuple[str, str]] = (),
    notices: Iterable[str | tuple[str, tuple[str | None, str] | None]] = (),
) -> str:
    """Views, then notices (each a text, or a text and the commits it covers), each
    framed, joined by blank lines ("" for none)."""
    parts = [frame_view(title, text) for title, text in views]
    for notice in notices:
        parts.append(frame_notice(notice) if isinstance(notice, str) else frame_notice(*notice))
    return "\n\n".join(parts)
