"""The one rule for names a git tree may hold (gitmem.names), checked against git
itself: every name ``git fsck --strict`` refuses is refused by the rule, and every name
the rule accepts survives a write through gitmem, ``git fsck --strict`` and a
``git clone -b`` of the store's branch."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import assert_fsck, git, tree_bytes
from dulwich.objects import Blob, Tree
from dulwich.repo import Repo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem import Author, Repository
from gitmem.errors import InvalidPath, InvalidSlug
from gitmem.names import tree_name_problem
from gitmem.types import FileChange, FileEdit, check_path, check_slug

ME = Author.agent("names")
# the pieces git's special names are made of, and some that are not
PIECES = [
    ".",
    "..",
    "git",
    "GIT",
    "Git",
    "gIt",
    "modules",
    "MODULES",
    "attributes",
    "~1",
    "~4",
    "~9",
    "~",
    "gitmod",
    "gi7eba",
    "gi7d29",
    "gi",
    " ",
    ":",
    "$DATA",
    "\u200c",
    "\u200f",
    "\u202e",
    "\u206a",
    "\ufeff",
    "\u200b",
    "a",
    "1",
    "é",
    "日本",
    "-",
    "_",
    "\\",
    "K",
]
NAMES = st.one_of(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=6).map("".join),
    st.text(st.characters(exclude_categories=["Cs"], exclude_characters="/\x00"), min_size=1),
)
GITMODULES = b'[submodule "../x"]\n\tpath = x\n\turl = ./x\n'


def fsck_refused(names: list[str], directory: Path) -> set[str]:
    """The names ``git fsck --strict`` reports, each the only entry of its own tree,
    naming its own blob shaped as a ``.gitmodules`` git refuses (so a name git reads
    as ``.gitmodules`` is reported through its blob)."""
    repo = Repo.init_bare(str(directory), mkdir=True)
    by_object: dict[str, str] = {}
    for i, name in enumerate(names):
        blob = Blob.from_string(GITMODULES + f"# {i}\n".encode())
        tree = Tree()
        tree.add(name.encode(), 0o100644, blob.id)
        repo.object_store.add_objects([(blob, None), (tree, None)])
        by_object[blob.id.decode()] = by_object[tree.id.decode()] = name
    repo.close()
    done = git(directory, "fsck", "--strict", "--no-dangling")
    flagged = set(re.findall(r"[0-9a-f]{40}", done.stdout + done.stderr))
    return {by_object[sha] for sha in flagged if sha in by_object}


@settings(derandomize=True, max_examples=40, deadline=None)
@given(names=st.lists(NAMES, min_size=20, max_size=40, unique=True))
def test_every_name_git_fsck_refuses_is_refused_by_the_rule(
    tmp_path_factory: pytest.TempPathFactory, names: list[str]
) -> None:
    """Names built from .git, .gitmodules, NTFS short names, HFS+ invisible code
    points, spaces, dots and streams: whatever ``git fsck --strict`` refuses, the rule
    refuses too."""
    refused = fsck_refused(names, tmp_path_factory.mktemp("fsck") / "raw.git")
    for name in refused:
        assert tree_name_problem(name) is not None, name


@pytest.mark.parametrize(
    "name",
    [
        ".git",
        ".GIT",
        ".git.",
        ".git..",
        ".Git.",
        ".git ",
        ".git . .",
        "git~1",
        "GIT~1",
        "git~1 .",
        ".git:stream",
        ".git::$INDEX_ALLOCATION",
        ".g\u200cit",
        "\u200c.git",
        ".git\ufeff",
        ".G\u202eIT\u206f",
        ".gitmodules",
        ".GitModules ..",
        "gitmod~1",
        "GITMOD~4",
        "gi7eba~1",
        "gi7eb~12",
        "~1234567",
        ".git\u200dmodules",
        ".gitattributes",
        "gi7d29~1",
        ".",
        "..",
        "a\\b",
        "x" * 256,
        "é" * 128,
    ],
)
def test_the_rule_refuses_what_git_reads_as_its_own(name: str) -> None:
    """Each spelling of .git, .gitmodules and .gitattributes that NTFS or HFS+ takes
    for it, and names a checkout cannot write, are refused with a reason."""
    assert tree_name_problem(name) is not None


@pytest.mark.parametrize(
    "name",
    [".gitx", ".git-notes", "git~2", "gitmod~5", ".gitignore", "x.git", "a:b", "日本語", "é" * 127],
)
def test_the_rule_keeps_names_that_only_look_alike(name: str) -> None:
    """Near misses are plain names to git, and to the rule."""
    assert tree_name_problem(name) is None


# -- through gitmem, then through git ---------------------------------------------------


@settings(
    derandomize=True,
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(names=st.lists(NAMES, min_size=10, max_size=30, unique=True))
def test_accepted_names_survive_fsck_and_clone_and_refused_ones_change_nothing(
    tmp_path_factory: pytest.TempPathFactory, names: list[str]
) -> None:
    """Every generated name the file-store rule accepts is written, then
    ``git fsck --strict`` and ``git clone -b`` take the repository; every refused one
    is refused in one line and writes nothing."""
    base = tmp_path_factory.mktemp("names")
    repo = Repository.init(str(base / "mem.git"))
    try:
        kept: list[str] = []
        for i, name in enumerate(names):
            path = f"n{i}/{name}"
            try:
                check_path(path)
            except InvalidPath as exc:
                assert "\n" not in str(exc)
                before = tree_bytes(repo.directory)
                change = FileChange((FileEdit("create", path, "x"),))
                with pytest.raises(InvalidPath):
                    repo.publish_files("files/n", ME, lambda _, c=change: c)
                assert tree_bytes(repo.directory) == before
                continue
            change = FileChange((FileEdit("create", path, "x"),))
            repo.publish_files("files/n", ME, lambda _, c=change: c)
            kept.append(path)
        if not kept:
            return
        assert_fsck(repo.directory)
        clone = base / "clone"
        done = subprocess.run(
            ["git", "clone", "-q", "-b", "files/n", repo.directory, str(clone)],
            capture_output=True,
            text=True,
            env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull},
        )
        assert done.returncode == 0, done.stderr
        for path in kept:
            assert (clone / path).read_bytes() == b"x"
        assert repo.files("files/n").files() == sorted(kept)
        assert [r.path for r in repo.file_revisions("files/n", kept[-1])] == [kept[-1]]
    finally:
        repo.close()


@pytest.mark.parametrize("slug", [".git.", ".git..", ".GIT.", ".gitmodules", ".gitmodules.."])
def test_slugs_obey_the_rule_too(slug: str) -> None:
    """A slug is the tree rule plus its own: git's special names are refused."""
    with pytest.raises(InvalidSlug, match="git"):
        check_slug(slug)


@settings(derandomize=True, max_examples=400, deadline=None)
@given(
    name=NAMES
    | st.text(st.sampled_from("aZ09._-~ gitGIT"), min_size=1, max_size=12)
    | st.text(st.sampled_from("ab"), min_size=250, max_size=260)
)
def test_the_plain_name_shortcut_decides_as_the_whole_rule(name: str) -> None:
    """A name the one-step check passes is one every spelling rule passes too."""
    from gitmem import names

    quick = tree_name_problem(name)
    plain = names._PLAIN  # pyright: ignore[reportPrivateUsage]
    names._PLAIN = frozenset()  # pyright: ignore[reportPrivateUsage]
    try:
        assert tree_name_problem(name) == quick
    finally:
        names._PLAIN = plain  # pyright: ignore[reportPrivateUsage]
