"""A push's commits read one after another, each from what reading its parent left.

:meth:`PushReader.commit` reads a usual commit whose parent is the commit it read just
before without a problem from that reading's root and fan-out directory (the next
step), else the short way, else the full way. Over generated pushes that look usual but
are not (trailers that lie, a kind or limits changed in trailers, trees with stray,
linked, repeated or misplaced entries, two memories or a second file changed, secrets in
bodies and descriptions, a commit on an earlier parent, merges), every reading gives the
same commits, and the hook the same refusals, as the full reading alone.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Callable
from typing import TypeVar

import pytest
from helpers_githooks import md
from test_pushcheck_usual import (  # pyright: ignore[reportPrivateUsage]
    _SLUGS,
    DIR_MODE,
    FILE_MODE,
    _History,
    _read,
)

from gitmem.githooks import Update, check_updates
from gitmem.store import memoryfiles as files
from gitmem.store.pushcheck import PushCommit, PushReader

_ZERO = "0" * 40
_REF = "refs/heads/gitmem/notes"
_KEY = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"  # a GitHub token's shape
_HOSTILE = (
    "lie",
    "op-lie",
    "revision-lie",
    "peak-lie",
    "two",
    "second-file",
    "mode",
    "link",
    "folder",
    "stray",
    "repeated",
    "misplaced",
    "secret-body",
    "secret-description",
    "secret-subject",
    "kind",
    "capability",
    "loosen",
    "over-limit",
    "side",
    "merge",
    "delete",
    "same-tree",
)
_READINGS: dict[str, tuple[str, ...]] = {
    "every way": (),
    "no next step": ("_next",),
    "no short way": ("_usual",),
    "full": ("_next", "_usual"),
}


def _push(path: str, seed: int, commits: int, rate: float, only: str = "") -> list[str]:
    """A push's commits, parents first: usual ones with true trailers, and now and
    then (``rate``) one that looks usual and is not (``only``: one such commit, of that
    kind, somewhere past the third)."""
    rng = random.Random(seed)
    at = rng.randrange(3, commits) if only else -1
    store = _History(path, rng)
    for i in range(40):
        store.write(f"base-{i}", "a base memory\n")
    shas: list[str] = [store.commit("a hand-made start\n")]
    for step in range(commits):
        kind = rng.choice(_HOSTILE) if rng.random() < rate else "usual"
        if kind == "usual" and rate and rng.random() < 0.1:
            kind = "lie"  # most often right after a usual commit
        if only:
            kind = only if step == at else "usual"
            if step == 1 and only in ("loosen", "over-limit"):
                kind = "capability"  # the limits the later commit breaks or loosens
        # a new memory, most often in a folder of its own, for a misplaced one
        slug = rng.choice(_SLUGS) if kind != "misplaced" else f"late-{step}"
        body = f"revision {step}\n" + "words here\n" * rng.randrange(0, 4)
        home = files.bucket(slug).encode()
        op, extra, hostile = "write", "", None
        parents: list[bytes] | None = None
        store.write(slug, body)
        if kind == "two":
            store.write(_SLUGS[0], body)
            store.write(_SLUGS[1], body + "more\n")
        elif kind == "delete":
            op = "delete"
            store.write(slug, None)
        elif kind == "op-lie":
            op = "delete"  # the tree keeps it
        elif kind in ("second-file", "mode", "link", "folder", "stray"):
            name, mode = {
                "second-file": ((slug + files.CODE).encode(), FILE_MODE),
                "mode": ((slug + files.ON_USE).encode(), 0o100755),
                "link": ((slug + files.CODE).encode(), 0o120000),
                "folder": ((slug + files.ON_USE).encode(), DIR_MODE),
                "stray": (b"stray.txt", FILE_MODE),
            }[kind]
            target = store.tree({}) if mode == DIR_MODE else store.blob(b"export {}\n")
            store.buckets[home][name] = (mode, target)
        elif kind == "repeated":
            hostile = home if rng.random() < 0.7 else b""
        elif kind == "misplaced":
            hostile = b"misplaced"
        elif kind == "secret-body":
            store.write(slug, body + f"key {_KEY}\n")
        elif kind == "secret-description":
            name = (slug + files.MD).encode()
            store.buckets[home][name] = (FILE_MODE, store.blob(md(f"uses {_KEY}", body)))
        elif kind == "capability":
            extra = "Gitmem-Capability: scratchpad maxCount=1000 maxLenPerMemory=400\n"
        elif kind == "loosen":
            extra = "Gitmem-Capability: scratchpad maxCount=5000 maxLenPerMemory=4000\n"
        elif kind == "over-limit":
            store.write(slug, body + "long line\n" * 60)
        elif kind == "side" and len(shas) > 2:
            parents = [shas[-2].encode()]  # not the commit before it in the push
        elif kind == "merge" and len(shas) > 2:
            parents = [shas[-1].encode(), shas[rng.randrange(len(shas) - 1)].encode()]
        elif kind == "same-tree":
            store.write(slug, store.bodies.get(slug))
        message = store.message(slug, op, lies=1.0 if kind == "lie" else 0, extra=extra)
        if kind == "kind":  # the trailers of a file store's commit
            message = message.replace(f"Gitmem-Slug: {slug}\n", f"Gitmem-Path: notes/{slug}.md\n")
        if kind in ("revision-lie", "peak-lie"):
            key = "Revision" if kind == "revision-lie" else "Peak-Lines"
            said = re.search(rf"Gitmem-{key}: (\d+)", message)
            assert said is not None
            message = message.replace(said[0], f"Gitmem-{key}: {int(said[1]) + 2}")
        if kind == "secret-subject":
            message = message.replace(f"{op} {slug}\n", f"{op} {slug} {_KEY}\n", 1)
        shas.append(store.commit(message, hostile, parents))
        if kind in ("second-file", "mode", "link", "folder", "stray"):
            store.buckets[home] = {
                n: e for n, e in store.buckets[home].items() if n.endswith(files.MD.encode())
            }
    store.repo.close()
    return shas


def _taken(monkeypatch: pytest.MonkeyPatch, name: str) -> list[str]:
    """The commits the reading ``name`` of :class:`PushReader` reads from now on."""
    taken: list[str] = []
    reading: Callable[..., PushCommit | None] = getattr(PushReader, name)

    def counted(reader: PushReader, *args: object) -> PushCommit | None:
        found = reading(reader, *args)
        if found is not None:
            taken.append(found.sha)
        return found

    monkeypatch.setattr(PushReader, name, counted)
    return taken


def _without(monkeypatch: pytest.MonkeyPatch, names: tuple[str, ...]) -> None:
    for name in names:
        monkeypatch.setattr(PushReader, name, lambda *_: None)


T = TypeVar("T")


def _each_reading(
    monkeypatch: pytest.MonkeyPatch, read: Callable[[], T]
) -> tuple[dict[str, T], list[str]]:
    """What ``read`` finds with each set of readings on, by label, and the commits the
    next step read (with every reading on)."""
    found: dict[str, T] = {}
    taken: list[str] = []
    for label, off in _READINGS.items():
        with monkeypatch.context() as patched:
            if not off:
                taken = _taken(patched, "_next")
            _without(patched, off)
            found[label] = read()
    return found, taken


@pytest.mark.parametrize("seed", range(8))
def test_every_reading_reads_a_push_alike(
    seed: int, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every commit of a push that now and then looks usual and is not reads the same
    (memories, totals, problems) whichever readings are on."""
    path = os.path.join(str(tmp_path), "store.git")
    shas = _push(path, seed, 100, rate=0.3)
    found, taken = _each_reading(monkeypatch, lambda: list(_read(path, shas)))
    for label, reading in found.items():
        assert reading == found["full"], label
    assert len(taken) >= 10  # the next step was taken, and not only for clean commits
    assert any(c[-1] for c in found["full"] if c[0] in taken)


def _refused(path: str, head: str, old: str = _ZERO) -> list[str]:
    reader = PushReader(path)
    try:
        return check_updates(reader, [Update(_REF, old, head)], lambda _: False)
    finally:
        reader.close()


@pytest.mark.parametrize("only", ["", *_HOSTILE])
def test_the_hook_refuses_a_push_alike_with_every_reading(
    only: str, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A push of usual commits with one that is not (a lie, a secret, a kind or limit
    changed, an odd tree, a side commit, a merge) is refused with the same lines
    whichever readings are on; a push of usual commits alone lands."""
    path = os.path.join(str(tmp_path), "store.git")
    shas = _push(path, len(only), 40, rate=0, only=only)
    lines, taken = _each_reading(monkeypatch, lambda: _refused(path, shas[-1]))
    for label, refused in lines.items():
        assert refused == lines["full"], label
    if not only:
        assert lines["full"] == [] and len(taken) >= 30


@pytest.mark.parametrize("only", ["", *_HOSTILE])
def test_a_push_onto_a_published_store_is_refused_alike_with_every_reading(
    only: str, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Onto a store already published, whose folders the push's reading has not read,
    a commit writing a folder for the first time in the push is read from the commit
    before it too: refused with the same lines whichever readings are on, and a push
    of usual commits is read by the next step from its second commit on."""
    path = os.path.join(str(tmp_path), "store.git")
    seed = 7 + len(only)
    shas = _push(path, seed, 40, rate=0, only=only)
    # published up to the twelfth commit, or to the one before the commit that is not
    # usual (where _push places it), which the push then holds
    published = min(12, random.Random(seed).randrange(3, 40)) if only else 12
    lines, taken = _each_reading(monkeypatch, lambda: _refused(path, shas[-1], shas[published]))
    for label, refused in lines.items():
        assert refused == lines["full"], label
    if not only:
        assert lines["full"] == [] and taken == shas[published + 2 :]
