"""The block index behind mem_search: the scores and order a scan of the session files
gives, kept on disk for one sessions tree, brought up to date when it changes."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from gitmem.observe import ObservationLog, ObserverConfig, Run, ScriptedModel, ToolCall, logbook
from gitmem.observe import blocks as blocks_module
from gitmem.observe.blocks import FILE_MAX, BlockIndex, index_path
from gitmem.observe.logbook import LOG_STORE, author
from gitmem.observe.pipeline import observe_run
from gitmem.observe.search import Hit, _hit, _terms, mem_read, search_hits  # pyright: ignore[reportPrivateUsage]
from gitmem.repository import Repository
from gitmem.store import FileSnapshot
from gitmem.types import FileChange, FileEdit

OFF = ObserverConfig.from_settings({"gate": "off"})
WORDS = ["auth", "Token", "refresh", "oauth2", "cache", "tokens", "Ünïcode", "KELVIN", "re"]


def scanned(files: dict[str, str], query: str, count: int) -> list[Hit]:
    """What a scan of every session file gives: the scoring mem_search defines."""
    terms = _terms(query)
    found: list[tuple[float, int, int, str, str]] = []
    names = sorted((n for n in files if len(files[n].encode()) <= FILE_MAX), reverse=True)
    for order, name in enumerate(names):
        text = files[name]
        lowered = text.lower()
        starts = blocks_module.starts(lowered)
        for n, start in enumerate(starts):
            end = starts[n + 1] if n + 1 < len(starts) else len(lowered)
            eol = lowered.find("\n", start, end)
            eol = end if eol < 0 else eol
            keys = lowered.find("\n- keywords:", start, end)
            keys_end = lowered.find("\n", keys + 1, end) if keys >= 0 else -1
            score, every = 0.0, True
            for term in terms:
                body = lowered.count(term, start, end)
                if not body:
                    every = False
                    continue
                score += min(body, 5) + 3 * (lowered.find(term, start, eol) >= 0)
                if keys >= 0:
                    score += 2 * (lowered.find(term, keys, keys_end if keys_end >= 0 else end) >= 0)
            score = score * 1.5 if every and score else score
            if score:
                found.append((score, -order, start, name, text[start:end].rstrip("\n")))
    found.sort(key=lambda f: (f[0], f[1], f[2]), reverse=True)
    return [_hit(name, block, score) for score, _, _, name, block in found[:count]]


def a_block(rng: random.Random, n: int) -> str:
    pick = lambda k: " ".join(rng.choice(WORDS) for _ in range(k))  # noqa: E731
    return (
        f"## obs-{n:06x} [bugfix] {pick(3)} — 2026-10-03T14:28:37Z\n"
        f"- keywords: {pick(2)}\n- session: s{n}\n\n{pick(rng.randint(0, 12))}\n"
    )


def write(repo: Repository, files: dict[str, str | None]) -> None:
    def change(snapshot: FileSnapshot) -> FileChange:
        edits: list[FileEdit] = []
        for name, text in files.items():
            held = snapshot.read(f"sessions/{name}")
            op = "delete" if text is None else "update" if held is not None else "create"
            edits.append(FileEdit(op, f"sessions/{name}", text))
        return FileChange(tuple(edits))

    repo.publish_files(LOG_STORE, author("observer"), change)


QUERIES = ["auth token", "oauth", "re", "TOKEN refresh cache", "ünïcode kelvin", "keywords", "x"]


def test_the_index_scores_and_orders_as_a_scan_does(repo: Repository) -> None:
    """Titles, keywords lines, words inside longer words, case and text before the first
    block: every query ranks the same hits with the same scores as the scan."""
    rng = random.Random(7)
    files = {
        f"2026-10-{day:02d}.md": ("preamble auth\n" if day == 3 else "")
        + "\n".join(a_block(rng, day * 100 + n) for n in range(rng.randint(1, 6)))
        for day in range(1, 9)
    }
    write(repo, dict(files))
    log = ObservationLog(repo)
    for query in QUERIES:
        assert search_hits(log, query, 10, config=OFF) == scanned(files, query, 10), query
    assert len(scanned(files, "auth token", 10)) == 10


def test_the_index_is_kept_per_sessions_tree_and_brought_up_to_date(repo: Repository) -> None:
    """The file is written once for a tree and read again; a change to one session file
    (or a new one, or one removed) brings it up to date with the same results as a scan."""
    rng = random.Random(11)
    files: dict[str, str] = {f"2026-11-{d:02d}.md": a_block(rng, d) for d in range(1, 6)}
    write(repo, dict(files))
    log = ObservationLog(repo)
    assert search_hits(log, "auth", 10, config=OFF) == scanned(files, "auth", 10)
    path = index_path(repo.directory, LOG_STORE)
    stamp = os.stat(path).st_mtime_ns
    blocks_module._held.clear()  # pyright: ignore[reportPrivateUsage]
    assert search_hits(log, "token", 10, config=OFF) == scanned(files, "token", 10)
    assert os.stat(path).st_mtime_ns == stamp  # read, not made again
    # a day's file grows by a block, as the observer appends: only the new block is added
    files["2026-11-05.md"] += "\n" + a_block(rng, 99)
    files["2026-11-06.md"] = a_block(rng, 100)
    write(repo, {n: files[n] for n in ("2026-11-05.md", "2026-11-06.md")})
    for query in QUERIES:
        assert search_hits(log, query, 10, config=OFF) == scanned(files, query, 10), query
    grown = BlockIndex.load(path)
    assert grown is not None and not grown.dead and len(grown.block_file) == 7
    # a file rewritten, and one removed: their blocks are retired, the new ones added
    files["2026-11-02.md"] = a_block(rng, 101) + "\n" + a_block(rng, 102)
    del files["2026-11-01.md"]
    write(repo, {"2026-11-02.md": files["2026-11-02.md"], "2026-11-01.md": None})
    for query in QUERIES:
        assert search_hits(log, query, 10, config=OFF) == scanned(files, query, 10), query
    loaded = BlockIndex.load(path)
    assert loaded is not None and len(loaded.dead) == 2
    assert sorted(name for name, oid, _, _ in loaded.files if oid) == sorted(files)


def test_a_damaged_index_is_made_again(repo: Repository, tmp_path: Path) -> None:
    """An index file that does not read is passed over and written anew."""
    rng = random.Random(3)
    files = {"2026-12-01.md": a_block(rng, 1), "2026-12-02.md": a_block(rng, 2)}
    write(repo, dict(files))
    path = index_path(repo.directory, LOG_STORE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    search_hits(ObservationLog(repo), "auth", 10, config=OFF)
    made = Path(path).read_bytes()
    unbounded = made.replace(b"gitmem-blocks 3", b"gitmem-blocks 2", 1)  # made before the bounds
    for junk in (b"", b"gitmem-blocks 1 abc 999999\n", os.urandom(300), unbounded):
        Path(path).write_bytes(junk)
        blocks_module._held.clear()  # pyright: ignore[reportPrivateUsage]
        assert search_hits(ObservationLog(repo), "auth", 10, config=OFF) == scanned(
            files, "auth", 10
        )
        assert BlockIndex.load(path) is not None and Path(path).read_bytes() == made


def test_a_file_over_1_mb_is_not_searched(repo: Repository) -> None:
    """A session file over 1 MB is left out of the index and so of every result."""
    big = "## obs-aaaaaa [bugfix] auth — 2026-10-03T14:28:37Z\n\n" + "auth " * (FILE_MAX // 5)
    small = "## obs-bbbbbb [bugfix] auth — 2026-10-04T14:28:37Z\n\nauth\n"
    write(repo, {"2026-10-03.md": big, "2026-10-04.md": small})
    hits = search_hits(ObservationLog(repo), "auth", 10, config=OFF)
    assert [h.id for h in hits] == ["obs-bbbbbb"]


def test_a_query_with_no_word_reads_no_index(repo: Repository) -> None:
    """A query without a word of two characters finds nothing and makes no index."""
    write(repo, {"2026-10-03.md": "## obs-aaaaaa [bugfix] a — 2026-10-03T14:28:37Z\n"})
    assert search_hits(ObservationLog(repo), "a", 10, config=OFF) == []
    assert not os.path.exists(index_path(repo.directory, LOG_STORE))


def test_a_days_entries_past_its_bound_go_on_in_another_file(
    repo: Repository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No session file grows past the size search reads (a busy day, or a model's long
    answers, would otherwise hide the whole day): the day goes on in DATE-2.md, ...,
    and every entry stays searchable and readable."""
    assert logbook.DAY_MAX <= FILE_MAX
    monkeypatch.setattr(logbook, "DAY_MAX", 6000)
    log = ObservationLog(repo)

    def run(n: int, title: str, narrative: str) -> None:
        answer = f"<observation>\ntitle: {title}\nnarrative: {narrative}\n</observation>"
        model = ScriptedModel(lambda p, _: answer if p.startswith("You are the observer") else "")
        calls = [ToolCall("Bash", "ls", "out", "t1")]
        done = Run(f"s{n}", prompt="p", tools=calls, ended=1796300000.0)
        observe_run(log, model, done, OFF, user_repo=str(tmp_path / "user.git"))

    run(0, "the needle lives in config.yaml", "honest")
    for n in range(1, 12):
        run(n, f"padding {n}", "x" * 1900)
    snapshot = log.snapshot()
    assert snapshot is not None
    files = snapshot.files("sessions")
    assert len(files) > 2 and all(len((snapshot.read(f) or "").encode()) <= 6000 for f in files)
    hits = search_hits(log, "needle", 10, config=OFF)
    assert [h.title for h in hits] == ["the needle lives in config.yaml"]
    last = log.rows()[-1]
    assert last.file != "2026-12-03.md" and mem_read(log, last.id).startswith(f"## {last.id} ")


def test_a_file_many_names_hold_is_indexed_once(repo: Repository) -> None:
    """Session files that are one object under many names (a push of a few bytes) take
    the index's room once: the newest name holds its blocks, the rest are passed over."""
    rng = random.Random(5)
    text = "\n".join(a_block(rng, n) for n in range(4))
    write(repo, {f"2026-10-{day:02d}.md": text for day in range(1, 13)})
    hits = search_hits(ObservationLog(repo), "auth token", 10, config=OFF)
    assert hits == scanned({"2026-10-12.md": text}, "auth token", 10)
    made = BlockIndex.load(index_path(repo.directory, LOG_STORE))
    assert made is not None and len(made.block_file) == 4
    logged = (Path(repo.directory) / "gitmem" / "observe" / "observer.log").read_text()
    assert "search passes over 11 session files: 2026-10-11.md (the same as another)" in logged


def test_the_index_holds_the_newest_files_within_its_bounds(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past its bounds (bytes, blocks, postings, words) the index passes over the oldest
    files, and the log says which; a new day that would pass them makes the index anew,
    the newest files first, so the newest entries are always found."""
    monkeypatch.setattr(blocks_module, "BLOCKS_MAX", 8)
    rng = random.Random(9)
    files = {
        f"2026-10-{day:02d}.md": a_block(rng, 2 * day) + "\n" + a_block(rng, 2 * day + 1)
        for day in range(1, 8)
    }
    write(repo, dict(files))
    log = ObservationLog(repo)
    newest = {n: files[n] for n in sorted(files)[-4:]}
    for query in QUERIES:
        assert search_hits(log, query, 10, config=OFF) == scanned(newest, query, 10), query
    logged = (Path(repo.directory) / "gitmem" / "observe" / "observer.log").read_text()
    assert "2026-10-03.md (past the index's bounds)" in logged
    files["2026-10-08.md"] = a_block(rng, 99)
    write(repo, {"2026-10-08.md": files["2026-10-08.md"]})
    held = {n: files[n] for n in sorted(files)[-3:]}  # made anew within 3/4 of the bound
    for query in QUERIES:
        assert search_hits(log, query, 10, config=OFF) == scanned(held, query, 10), query
    monkeypatch.setattr(blocks_module, "TEXT_MAX", len(files["2026-10-08.md"].encode()))
    blocks_module._held.clear()  # pyright: ignore[reportPrivateUsage]
    write(repo, {"2026-10-01.md": None})
    only = {"2026-10-08.md": files["2026-10-08.md"]}
    assert search_hits(log, "auth", 10, config=OFF) == scanned(only, "auth", 10)


def test_an_index_mostly_of_files_gone_is_made_anew(
    repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The records of files the log no longer holds do not pile up: when they outnumber
    the rest, the index is made anew from the files there are."""
    monkeypatch.setattr(blocks_module, "BLOCKS_MAX", 1)
    rng = random.Random(13)
    gone = {
        f"2026-09-{n:03d}.md": a_block(rng, 2 * n) + a_block(rng, 2 * n + 1) for n in range(300)
    }
    write(repo, dict(gone))
    log = ObservationLog(repo)
    assert search_hits(log, "auth", 10, config=OFF) == []
    kept = {"2026-10-01.md": a_block(rng, 999)}
    write(repo, {**dict.fromkeys(gone), **kept})
    assert search_hits(log, "auth token", 10, config=OFF) == scanned(kept, "auth token", 10)
    made = BlockIndex.load(index_path(repo.directory, LOG_STORE))
    assert made is not None and [record[0] for record in made.files] == ["2026-10-01.md"]
