"""What a hook reads of a push: a tree compared with its parent's reads exactly as a
whole parse of it reads, whatever bytes the two share."""

from __future__ import annotations

import hashlib
import random
import zlib
from pathlib import Path

import pytest
from dulwich.objects import parse_tree
from dulwich.repo import Repo
from helpers_githooks import craft, md, trailers

from gitmem.store.incoming import Incoming, Refused
from gitmem.store.treeform import form_problem

FILE, DIR, LINK = b"100644", b"40000", b"120000"


def raw_tree(entries: list[tuple[bytes, bytes, bytes]]) -> bytes:
    """A tree's bytes as written, entry by entry (mode text as given, in the order given)."""
    return b"".join(mode + b" " + name + b"\0" + sha for mode, name, sha in entries)


def store(objects: Path, raw: bytes) -> bytes:
    """Write ``raw`` as a loose tree object (as it is, parsed or not); its hex id."""
    content = b"tree %d\0" % len(raw) + raw
    sha = hashlib.sha1(content).hexdigest()
    (objects / sha[:2]).mkdir(exist_ok=True)
    (objects / sha[:2] / sha[2:]).write_bytes(zlib.compress(content))
    return sha.encode()


def entries(rng: random.Random) -> list[tuple[bytes, bytes, bytes]]:
    names = sorted(
        {
            bytes(rng.choice(b"0123456789ab@.-") for _ in range(rng.randint(1, 3)))
            for _ in range(rng.randint(0, 40))
        }
    )
    chosen = [(rng.choice((FILE, DIR, LINK)), n, rng.randbytes(20)) for n in names]
    # in git's order: a folder's name sorts with a "/" after it
    return sorted(chosen, key=lambda entry: entry[1] + b"/" if entry[0] == DIR else entry[1])


def mutated(
    rng: random.Random, old: list[tuple[bytes, bytes, bytes]]
) -> list[tuple[bytes, bytes, bytes]]:
    """``old`` with a few entries changed, added, removed, or respelled (a mode with a
    leading zero, a name that runs into its neighbour's bytes)."""
    new = list(old)
    for _ in range(rng.randint(1, 3)):
        what = rng.randrange(5)
        at = rng.randrange(len(new) + 1)
        if what == 0 and new and at < len(new):
            mode, name, _ = new[at]
            new[at] = (mode, name, rng.randbytes(20))
        elif what == 1:
            new.insert(at, (FILE, bytes(rng.choice(b"xyz") for _ in range(2)), rng.randbytes(20)))
        elif what == 2 and new and at < len(new):
            del new[at]
        elif what == 3 and new and at < len(new):
            mode, name, sha = new[at]
            new[at] = (b"0" + mode, name, sha)
        elif new and at < len(new):
            mode, name, sha = new[at]
            new[at] = (mode, name + b"\0" + sha[:5], sha)  # bytes that shift the entries
    return new


def test_a_tree_against_its_parent_reads_as_a_whole_parse(tmp_path: Path) -> None:
    """For random trees and their mutations, the entries only in one of the two are
    what whole parses say, and the new tree's entries are kept as a whole parse reads
    them; a tree that does not parse whole is not read from its parent's either, nor
    is one git's fsck refuses (a mode spelled with a leading zero, entries out of order)."""
    Repo.init_bare(str(tmp_path / "r.git"), mkdir=True).close()
    objects = tmp_path / "r.git" / "objects"
    rng = random.Random(7)
    for _ in range(400):
        before = entries(rng)
        old, new = raw_tree(before), raw_tree(mutated(rng, before))
        old_id, new_id = store(objects, old), store(objects, new)
        incoming = Incoming(str(tmp_path / "r.git"))
        try:
            whole_old = parse_tree(old, 20)
            try:
                whole_new = parse_tree(new, 20)
            except Exception:
                whole_new = None
            incoming.tree(old_id, "c")
            try:
                removed, added = incoming.differing(old_id, new_id, "c")
            except Refused as refused:
                assert whole_new is None or (
                    refused.rule == "tree" and form_problem(new) is not None
                )
                continue
            assert whole_new is not None and form_problem(new) is None
            assert sorted(removed) == sorted(set(whole_old) - set(whole_new))
            assert sorted(added) == sorted(set(whole_new) - set(whole_old))
            assert incoming.tree(new_id, "c") == whole_new
        finally:
            incoming.close()


def test_a_line_of_trees_each_with_one_id_changed_reads_as_whole_parses(tmp_path: Path) -> None:
    """A push's usual trees: each its parent with one entry's id changed (the first, the
    last, any), sometimes with a second change beside it. Each, read against the one
    before, is what whole parses say, and so is the next one read against it."""
    Repo.init_bare(str(tmp_path / "r.git"), mkdir=True).close()
    objects = tmp_path / "r.git" / "objects"
    rng = random.Random(11)
    for _ in range(12):
        current = entries(rng) + [(FILE, b"z%03d" % i, rng.randbytes(20)) for i in range(20)]
        incoming = Incoming(str(tmp_path / "r.git"))
        try:
            old_id = store(objects, raw_tree(current))
            incoming.tree(old_id, "c")
            for _ in range(30):
                at = rng.choice((0, len(current) - 1, rng.randrange(len(current))))
                mode, name, _ = current[at]
                after = list(current)
                after[at] = (mode, name, rng.randbytes(20))
                if rng.random() < 0.2:
                    after = mutated(rng, after)
                new = raw_tree(after)
                new_id = store(objects, new)
                try:
                    whole_new = parse_tree(new, 20)
                except Exception:
                    continue
                whole_old = parse_tree(raw_tree(current), 20)
                if form_problem(new) is not None:  # a second change git's fsck refuses
                    with pytest.raises(Refused):
                        incoming.differing(old_id, new_id, "c")
                    continue
                removed, added = incoming.differing(old_id, new_id, "c")
                assert sorted(removed) == sorted(set(whole_old) - set(whole_new))
                assert sorted(added) == sorted(set(whole_new) - set(whole_old))
                assert incoming.tree(new_id, "c") == whole_new
                current, old_id = after, new_id
        finally:
            incoming.close()


def test_each_commits_revisions_read_alike_in_any_order_of_asking(tmp_path: Path) -> None:
    """The map of each slug's latest revision along a line is carried from commit to
    commit in place: asked in a push's order, out of it, and for a side line that
    leaves the carried end (past the copies kept on the way), every commit's map and
    exactness are those a fresh reader finds."""
    git_dir = str(tmp_path / "store.git")
    Repo.init_bare(git_dir, mkdir=True).close()
    ref = "refs/heads/notes"
    line: list[str] = []
    for i in range(75):
        slug = f"m{i % 7}"
        revision = i // 7 + 1
        message = trailers(slug, "write" if revision > 1 else "create", revision, 7, 0, 0)
        line.append(craft(git_dir, ref, {f"{slug}.md": md("d", "")}, message))
    # a side line off an early commit, one of its commits made by hand (no trailers)
    side = [craft(git_dir, "refs/heads/side", {"x.md": b"x"}, "by hand", [line[5]])]
    side.append(
        craft(
            git_dir, "refs/heads/side", {"m0.md": md("d", "")}, trailers("m0", "write", 9, 7, 0, 0)
        )
    )
    merge = craft(git_dir, ref, {}, trailers("m1", "merge", 30, 7, 0, 0), [line[-1], side[-1]])

    def fresh(sha: str) -> tuple[dict[str, int], bool]:
        found = Incoming(git_dir).revisions(sha)
        return dict(found[0]), found[1]

    expected = {sha: fresh(sha) for sha in [*line, *side, merge]}
    assert expected[line[-1]] == ({f"m{k}": 11 if k < 5 else 10 for k in range(7)}, True)
    assert expected[side[-1]][1] is False
    reader = Incoming(git_dir)
    asked = [*line, merge, *side, line[66], line[3], *reversed(line[:70]), side[0], line[-1]]
    for sha in asked:
        found = reader.revisions(sha)
        assert (dict(found[0]), found[1]) == expected[sha], sha
