"""The push hook's shortcuts decide as the full rules do.

A pushed commit's writes are screened as one write first, and part by part only when a
screen refuses that; a memory's description is read without json's Python layer when it
is one plain JSON string. Each shortcut is held here to the rule it stands for, over
generated inputs.
"""

from __future__ import annotations

import json
import random

import pytest
from helpers_secrets import ORDINARY, SECRETS
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.errors import GitmemError, StorageError
from gitmem.githooks import _passes  # pyright: ignore[reportPrivateUsage]
from gitmem.screens import chain
from gitmem.secrets import fingerprint, scan
from gitmem.store.memoryfiles import decode_md
from gitmem.store.screen import Write
from gitmem.types import Edit, Memory

_SCREENS = chain(None)


def _text(rng: random.Random) -> str:
    pool = ORDINARY if rng.random() < 0.8 else [text for _, text in SECRETS]
    return rng.choice(pool)[: rng.randrange(1, 400)] if rng.random() < 0.9 else ""


def _allowlist(texts: list[str], rng: random.Random) -> str | None:
    """An allowlist admitting some of what ``texts`` hold, or none."""
    if rng.random() < 0.5:
        return None
    found = [f.fingerprint for text in texts for f in scan(text)]
    return "\n".join(p for p in found if rng.random() < 0.5) + "\n" + fingerprint("other")


@pytest.mark.parametrize("seed", range(6))
def test_a_commit_screened_whole_passes_exactly_when_each_part_does(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(60):
        memories = [
            Memory(f"m{i}", _text(rng)[:80].replace("\n", " "), _text(rng), _text(rng))
            for i in range(rng.randrange(0, 4))
        ]
        edits = [Edit("write", m.slug, m) for m in memories]
        if rng.random() < 0.3:
            edits.append(Edit("delete", "gone", None))
        message = _text(rng)
        texts = [message, *(t for m in memories for t in (m.description, m.body, m.code))]
        allow = _allowlist(texts, rng)

        def meta(name: str, allow: str | None = allow) -> str | None:
            return allow if name == "@allowlist" else None

        whole = Write("notes", "bench", edits, None, meta, message)
        parts = [whole._replace(edits=())] + [
            Write("notes", "bench", (edit,), None, meta) for edit in edits
        ]
        assert _passes(_SCREENS, whole) == all(_passes(_SCREENS, part) for part in parts)


_DESCRIPTIONS = st.one_of(
    st.text(),
    st.sampled_from(["", " ", "\t", "\\", '"', "\x00", "\x1f", "\u2028", "\ud7ff", "é", "İ"]),
)


def _full(slug: str, data: bytes) -> tuple[str, str]:
    """``decode_md`` as json alone reads the front matter."""
    head = b"---\ndescription: "
    end = data.find(b"\n---\n", len(head))
    if not data.startswith(head) or end < 0:
        raise StorageError("no front matter")
    try:
        description = json.loads(data[len(head) : end])
        body = data[end + 5 :].decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise StorageError(str(exc)) from None
    if not isinstance(description, str):
        raise StorageError("not text")
    return description, body


def _framed(draw: st.DrawFn) -> bytes:
    description = draw(_DESCRIPTIONS)
    shape = draw(st.sampled_from(["json", "ascii", "raw", "spaced", "number", "bytes"]))
    if shape == "json":
        framed = json.dumps(description, ensure_ascii=False).encode()
    elif shape == "ascii":
        framed = json.dumps(description).encode()
    elif shape == "raw":
        framed = ('"' + description + '"').encode("utf-8", "surrogatepass")
    elif shape == "spaced":
        framed = b" \t" + json.dumps(description).encode() + b"\r "
    elif shape == "number":
        framed = b"12"
    else:
        framed = draw(st.binary(max_size=12))
    return b"---\ndescription: " + framed + b"\n---\n" + draw(st.binary(max_size=8))


@settings(max_examples=400, deadline=None)
@given(st.composite(_framed)())
def test_a_description_read_without_json_reads_as_json_reads_it(data: bytes) -> None:
    try:
        expected: tuple[str, str] | None = _full("m", data)
    except GitmemError:
        expected = None
    try:
        found: tuple[str, str] | None = decode_md("m", data)
    except GitmemError:
        found = None
    assert found == expected
