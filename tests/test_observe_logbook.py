"""The observation log's writes and reads against a tree a teammate crafted with plain
git: an entry that is not a UTF-8 text file (bad bytes, a submodule, a directory where a
file goes) is passed over, never the end of every write."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gitmem.errors import NotFound
from gitmem.observe import ObservationLog, ObserverConfig, logbook
from gitmem.observe.entries import Entry
from gitmem.observe.logbook import LOG_STORE, Trail
from gitmem.observe.search import mem_read, search_hits
from gitmem.repository import Repository
from gitmem.store import FileSnapshot

OFF = ObserverConfig.from_settings({"gate": "off"})
TRAIL = Trail("s1", "scripted", "observer@1")
BAD = b"## obs-bbbbbb [change] \xff\xfe bad \xc3 \xe2\x80\x94 2026-12-02T00:00:00Z\n\nbad\n"


def entry(title: str, day: str = "2026-12-04") -> Entry:
    return Entry("change", title, "s1", narrative=f"{title} narrative", time=f"{day}T10:00:00Z")


def craft(repo: Repository, tmp_path: Path, entries: dict[str, tuple[str, bytes]]) -> None:
    """Commit ``entries`` (path → mode, content; a gitlink's content is a commit id)
    onto the log's branch with plain git, as a teammate can."""
    env = {
        **os.environ,
        "GIT_DIR": repo.directory,
        "GIT_INDEX_FILE": str(tmp_path / "crafted.index"),
        "GIT_AUTHOR_NAME": "mallory",
        "GIT_AUTHOR_EMAIL": "m@example.com",
        "GIT_COMMITTER_NAME": "mallory",
        "GIT_COMMITTER_EMAIL": "m@example.com",
    }

    def git(*args: str, data: bytes | None = None) -> str:
        done = subprocess.run(["git", *args], env=env, input=data, capture_output=True, check=True)
        return done.stdout.decode().strip()

    ref = next(
        r for r in git("for-each-ref", "--format=%(refname)").split() if r.endswith(LOG_STORE)
    )
    head = git("rev-parse", ref)
    git("read-tree", head)
    blobs: dict[bytes, str] = {}
    lines: list[str] = []
    for path, (mode, content) in entries.items():
        if mode == "160000":
            sha = content.decode()
        else:
            sha = blobs.get(content) or git("hash-object", "-w", "--stdin", data=content)
            blobs[content] = sha
        lines.append(f"{mode} {sha}\t{path}\n")
    git("update-index", "--add", "--index-info", data="".join(lines).encode())
    commit = git("commit-tree", git("write-tree"), "-p", head, data=b"crafted")
    git("update-ref", ref, commit)


def logged(repo: Repository) -> str:
    return (Path(repo.directory) / "gitmem" / "observe" / "observer.log").read_text()


@pytest.mark.parametrize("how", ["utf8", "gitlink", "dir"])
def test_an_entry_that_is_not_a_text_file_stops_no_write(
    repo: Repository, tmp_path: Path, how: str
) -> None:
    """Bad bytes or a submodule in the index, a curated file or a session file, or a
    directory where today's session file goes: the index starts afresh, the curated file
    reads as empty and is written anew, the day goes on in the next file, and search
    and read find what was written."""
    log = ObservationLog(repo)
    first = log.add([entry("seeded first")], "observer", TRAIL)[0]
    head = (repo.head(LOG_STORE) or "").encode()
    shapes = {"utf8": ("100644", BAD), "gitlink": ("160000", head)}
    if how == "dir":
        craft(repo, tmp_path, {"sessions/2026-12-05.md/inner.md": ("100644", b"x\n")})
        day = "2026-12-05"
    else:
        shape = shapes[how]
        paths = ("index.md", "lessons.md", "notes.md", "sessions/2026-12-05.md")
        craft(repo, tmp_path, dict.fromkeys(paths, shape))
        day = "2026-12-05"
        assert log.rows() == []
        assert log.curated()["lessons.md"] == log.curated()["notes.md"] == ""
        assert log.set_curated({"lessons.md": "- a\n", "decisions.md": "- b\n"}, TRAIL) == [
            "decisions.md"
        ]
        assert "lessons.md of the observation log is not a UTF-8 text file" in logged(repo)
    stored = log.add([entry("written after", day)], "observer", TRAIL)
    assert [e.title for e in stored] == ["written after"]
    assert stored[0].id in [row.id for row in log.rows()]
    again = log.add([entry("written after", day), entry("and again", day)], "observer", TRAIL)
    assert [e.title for e in again] == ["and again"]
    assert {row.file for row in log.rows()[-2:]} == {"2026-12-05-2.md"}
    assert mem_read(log, stored[0].id).startswith(f"## {stored[0].id} ")
    hits = search_hits(log, "written seeded", 10, config=OFF)
    assert {h.id for h in hits} == {first.id, stored[0].id}
    assert "sessions/2026-12-05.md of the observation log is not a UTF-8 text file" in logged(repo)
    if how != "dir":
        assert "index.md of the observation log is not a UTF-8 text file" in logged(repo)
        snapshot = log.snapshot()
        assert snapshot is not None and snapshot.is_file("index-2.md")


def test_a_full_index_goes_on_in_the_next_file(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No write reads more than INDEX_MAX bytes of index (a teammate can push a huge one):
    past it the rows go on in index-2.md, and the rows read are the newest files' within
    the bound."""
    log = ObservationLog(repo)
    first = log.add([entry("seeded first")], "observer", TRAIL)[0]
    size = len((log.read_file("index.md")).encode())
    monkeypatch.setattr(logbook, "INDEX_MAX", size * 2)
    second = log.add([entry("second")], "observer", TRAIL)[0]
    third = log.add([entry("third")], "observer", TRAIL)[0]
    snapshot = log.snapshot()
    assert snapshot is not None and snapshot.is_file("index-2.md")
    assert [row.id for row in log.rows()] == [first.id, second.id, third.id][-len(log.rows()) :]
    assert third.id in [row.id for row in log.rows()]
    for n in range(4):
        log.add([entry(f"more {n}")], "observer", TRAIL)
    assert len(log.rows()) <= 2 and mem_read(log, log.rows()[-1].id)


@pytest.mark.parametrize("count", [*range(0, 40), 1000, 65_537])
def test_the_last_numbered_file_is_found_in_a_logarithmic_number_of_lookups(count: int) -> None:
    asked: list[int] = []

    def there(n: int) -> bool:
        asked.append(n)
        return 1 <= n <= count

    assert logbook._last_in_run(there) == count  # pyright: ignore[reportPrivateUsage]
    assert len(asked) <= 2 * max(1, count).bit_length() + 1


def test_a_long_run_of_numbered_files_a_teammate_committed_costs_a_write_few_lookups(
    repo: Repository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``index-N.md`` and ``DATE-N.md`` by the ten thousand: a write looks at a few of
    the names, goes on in the last of each run, and the log reads its rows back from the
    newest index files (a teammate who can commit can hide older rows either way)."""
    log = ObservationLog(repo)
    first = log.add([entry("seeded first", "2026-12-05")], "observer", TRAIL)[0]
    many = 10_000
    crafted = {f"index-{n}.md": ("100644", b"") for n in range(2, many + 1)}
    crafted |= {f"sessions/2026-12-05-{n}.md": ("100644", b"") for n in range(2, many + 1)}
    craft(repo, tmp_path, crafted)
    looked: list[str] = []
    entry_at = FileSnapshot._entry  # pyright: ignore[reportPrivateUsage]

    def counted(self: FileSnapshot, path: str) -> tuple[int, bytes] | None:
        looked.append(path)
        return entry_at(self, path)

    earlier = log.add([entry("written after", "2026-12-05")], "observer", TRAIL)[0]
    monkeypatch.setattr(FileSnapshot, "_entry", counted)
    stored = log.add([entry("and again", "2026-12-05")], "observer", TRAIL)[0]
    rows = log.rows()
    assert len(looked) < many // 20  # each walk of the names once took ten thousand
    # the newest files only: the seeded row is far behind them
    assert [row.id for row in rows] == [earlier.id, stored.id]
    assert {row.file for row in rows} == {f"2026-12-05-{many}.md"}
    snapshot = log.snapshot()
    assert snapshot is not None
    assert f"{stored.id} | " in (snapshot.read(f"index-{many}.md") or "")
    assert f"## {stored.id} " in (snapshot.read(f"sessions/2026-12-05-{many}.md") or "")
    with pytest.raises(NotFound):  # its row is in index.md, past the newest files
        mem_read(log, first.id)
