"""A teammate's clone, made as the README makes one: ``git clone`` of a project whose
own repository keeps a store, then ``gitmem sync``, which makes the store local and
keeps its listing and search index. What a command costs the first time in such a
clone, beside the same command once warm."""

from __future__ import annotations

import os
import shutil
import subprocess

from figures import Figure, median, run
from installed import Installed
from seeding import GIT_ENV


def project_holding(source: str, store: str, path: str) -> str:
    """A project at ``path`` whose own repository keeps ``store`` of the standalone
    repository ``source`` (as ``refs/heads/gitmem/<store>``, with one commit of its
    own on ``main``): what a teammate clones."""
    git("init", "-q", "-b", "main", path)
    git("-C", path, "commit", "-q", "--allow-empty", "-m", "start")
    git("-C", path, "fetch", "-q", source, f"refs/heads/{store}:refs/heads/gitmem/{store}")
    return path


def firsts(
    user: Installed, project: str, work: str, commands: dict[str, list[str]], runs: int
) -> tuple[Figure, dict[str, tuple[Figure, Figure]], str]:
    """Each of ``commands`` (their arguments after ``gitmem --repo CLONE``) run first in
    a clone of its own, ``runs`` times: the sync's median, and for each command the
    median of its first runs and of ``runs`` warm runs after them; and the last clone,
    which ``work`` keeps."""
    syncs: list[Figure] = []
    cold: dict[str, list[Figure]] = {name: [] for name in commands}
    last = ""
    for i in range(runs):
        for name, argv in commands.items():
            if last:
                shutil.rmtree(last)
            last = os.path.join(work, f"clone-{i}-{len(cold[name])}-{name}")
            git("clone", "-q", project, last)
            syncs.append(run([user.gitmem, "--repo", last, "sync"]))
            cold[name].append(run([user.gitmem, "--repo", last, *argv]))
    found: dict[str, tuple[Figure, Figure]] = {}
    for name, argv in commands.items():
        warm = median([run([user.gitmem, "--repo", last, *argv]) for _ in range(runs)])
        found[name] = median(cold[name]), warm
    return median(syncs), found, last


def git(*args: str) -> None:
    subprocess.run(["git", *args], check=True, env=GIT_ENV, stdout=subprocess.DEVNULL)
