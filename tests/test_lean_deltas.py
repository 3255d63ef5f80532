"""The lean reader's deltas: applied as dulwich applies them, and a chain of a file's
revisions (as ``git repack`` packs them) resolved once, not once for each of its
objects; a blame over such a chain answers as the command line does."""

from __future__ import annotations

import os
import subprocess
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner
from dulwich.objects import ObjectID
from dulwich.pack import apply_delta as dulwich_apply_delta  # pyright: ignore[reportUnknownVariableType]
from dulwich.pack import create_delta  # pyright: ignore[reportUnknownVariableType]
from dulwich.repo import Repo
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem import Author, Memory, Repository
from gitmem.cli import cli
from gitmem.lean import objects
from gitmem.lean.objects import Objects, Unreadable, apply_delta
from gitmem.quick import answer
from gitmem.types import Change

STORE = "profile/notes"
AGENT = Author.agent("agent-1")
_LINES = st.lists(st.sampled_from(["a", "bb", "a much longer line " * 3, "", "é"]), max_size=30)


pytestmark = pytest.mark.usefixtures("operator_home")


@settings(max_examples=200, derandomize=True, deadline=None)
@given(_LINES, _LINES)
def test_a_delta_applies_as_dulwich_applies_it(old: list[str], new: list[str]) -> None:
    """Copies (of every offset and length width) and inserts make dulwich's result."""
    base, target = "\n".join(old).encode() * 40, "\n".join(new).encode() * 40
    delta = b"".join(create_delta(base, target))  # pyright: ignore[reportUnknownArgumentType]
    wanted = b"".join(dulwich_apply_delta(base, delta))  # pyright: ignore[reportUnknownArgumentType]
    assert apply_delta(base, delta) == wanted == target


def test_a_delta_cut_inside_an_instruction_is_refused() -> None:
    base = b"hello world"
    with pytest.raises(Unreadable):
        apply_delta(base, bytes([11, 5, 0x93, 1]))  # its offset's second byte is missing


def _repacked(tmp_path: Path, revisions: int) -> str:
    """A store whose memory ``journal`` has ``revisions`` revisions, repacked by git
    into delta chains."""
    path = str(tmp_path / "repo.git")
    lines = [f"line {n} as first written" for n in range(12)]
    with Repository.init(path) as repo:
        for i in range(revisions):
            lines[i % len(lines)] = f"line {i % len(lines)} as revised at step {i}"
            if i % 5 == 0:
                lines.append(f"entry {i}")
            op = "create" if not i else "write"
            memory = Memory("journal", "what the runs found", "\n".join(lines) + "\n")
            repo.mutate(STORE, AGENT, lambda _, m=memory, o=op: Change(o, "journal", m))
    subprocess.run(["git", f"--git-dir={path}", "repack", "-adfq", "--depth=50"], check=True)
    return path


def test_a_chain_is_resolved_once_for_all_its_objects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading every object of a repacked store, each as dulwich reads it, inflates
    each delta once: a delta's base, resolved, is kept for the next link."""
    path = _repacked(tmp_path, 60)
    listed = subprocess.run(
        ["git", f"--git-dir={path}", "cat-file", "--batch-all-objects", "--batch-check"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\n")
    shas = [line.split()[0] for line in listed if line]
    inflated: list[int] = []
    real = objects.inflate

    def counted(data: object, at: int, size: int) -> tuple[bytes, int]:
        inflated.append(at)
        return real(data, at, size)  # pyright: ignore[reportArgumentType]

    monkeypatch.setattr(objects, "inflate", counted)
    reader = Objects(os.path.join(path, "objects"))
    raw = Repo(path)
    try:
        for sha in shas:
            kind, content = reader.read(sha)
            found = raw.object_store[ObjectID(sha.encode())]
            assert (kind, content) == (found.type_num, found.as_raw_string())
    finally:
        raw.close()
    assert inflated, "the repack made no delta"
    assert len(inflated) == len(set(inflated))


def test_blame_over_a_repacked_history_is_the_command_lines(tmp_path: Path) -> None:
    path = _repacked(tmp_path, 40)
    argv = ["--repo", path, "blame", "journal", "-s", STORE]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 0
    assert answer(argv, {}) == result.stdout


@pytest.mark.parametrize("declared", [0, 10, 999, 100_000])
def test_a_stream_that_inflates_past_its_declared_size_is_refused_unread(declared: int) -> None:
    """A packed object's size is what its entry declares: a stream that would inflate to
    more (a few bytes that make many megabytes) is refused once it passes that size,
    never inflated whole; a stream that ends short is refused too."""
    import mmap
    import tracemalloc

    bomb = zlib.compress(b"\0" * 64_000_000, 9)  # about 62 KB: within a 100,000-byte read
    short = zlib.compress(b"x" * (declared - 1)) if declared else zlib.compress(b"x")[:-4]
    for stream in (bomb, short):
        data = stream + b"\0" * 64
        with mmap.mmap(-1, len(data)) as mapped:
            mapped[:] = data
            tracemalloc.start()
            try:
                with pytest.raises(Unreadable, match="does not inflate"):
                    objects.inflate_whole(mapped, 0, declared)
                with memoryview(mapped) as view, pytest.raises(Unreadable, match="inflate"):
                    objects.inflate_whole(view, 0, declared)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            assert peak < 4 * declared + 1_000_000


@pytest.mark.parametrize("continued", [8, 9, 40])
def test_a_packed_size_past_any_objects_is_refused(continued: int) -> None:
    """An entry's size runs on in bytes whose top bit says another follows: one that
    runs past 60 bits names no object and is refused, never taken as a size to
    inflate to; eight such bytes (the most a real size uses) still read."""
    import mmap

    data = bytes([0x80 | (3 << 4) | 0x0F]) + b"\xff" * (continued - 1) + b"\x01" + b"\0" * 64
    with mmap.mmap(-1, len(data)) as mapped:
        mapped[:] = data
        if continued <= 8:
            kind, size, at = objects.entry_header(mapped, 0)
            assert (kind, at) == (3, continued + 1)
            last = 4 + 7 * (continued - 1)  # where the final byte's bit goes
            assert size == (1 << last) - 1 + (1 << last)
        else:
            with pytest.raises(Unreadable, match="past any object"):
                objects.entry_header(mapped, 0)


@pytest.mark.parametrize("size", [0, 100, 4095, 4096, 20_000, 70_000])
def test_a_stream_inflates_to_its_content_and_says_where_it_ends(size: int) -> None:
    """A packed stream inflates to its content and says where it ends, whether it is
    copied out of the mapping or inflated where it lies (a large one); the mapping
    closes after either (nothing holds on to it), and a stream that is not one is
    refused."""
    import mmap

    content = bytes(range(256)) * (size // 256) + os.urandom(size % 256)
    stream = zlib.compress(content)
    data = b"ahead" + stream + b"what follows" * 8
    mapped = mmap.mmap(-1, len(data))
    mapped[:] = data
    assert objects.inflate(mapped, 5, size) == (content, 5 + len(stream))
    with pytest.raises(Unreadable, match="inflate"):
        objects.inflate(mapped, 6, size)
    mapped.close()
