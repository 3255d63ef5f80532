"""Finding what an operator names: the repository, the store, and who is writing."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from gitmem.errors import InvalidArgument, InvalidAuthor, NotFound
from gitmem.lean.repository import REPOSITORY_DIR
from gitmem.store.layout import in_use, project_dir
from gitmem.types import Author

if TYPE_CHECKING:
    from gitmem.repository import Repository

__all__ = [
    "REPOSITORY_DIR",
    "find_repository",
    "init_target",
    "operator_author",
    "parse_author",
    "pick_store",
]


def find_repository(start: str) -> str:
    """The repository for ``start``, found as git finds ``.git``: walking up from
    ``start``, the nearest folder holding a ``.gitmem`` repository or a git project whose
    repository holds gitmem stores (in one folder, ``.gitmem`` first). A project that
    holds no stores is passed over for an enclosing ``.gitmem``; if there is none, the
    nearest project is the answer (so the error says to run ``gitmem init`` in it), else
    ``start/.gitmem``."""
    here = os.path.abspath(start)
    project: str | None = None
    while True:
        candidate = os.path.join(here, REPOSITORY_DIR)
        if os.path.isdir(candidate):
            return candidate
        if os.path.exists(os.path.join(here, ".git")):
            if in_use(here):
                return here
            project = project or here
        parent = os.path.dirname(here)
        if parent == here:
            return project or os.path.join(os.path.abspath(start), REPOSITORY_DIR)
        here = parent


def init_target(start: str) -> str:
    """Where ``gitmem init`` without a path makes the repository: an existing ``.gitmem``
    here, else the git project ``start`` is in (its stores go in the project's own
    repository), else ``start/.gitmem``."""
    here = os.path.abspath(start)
    if os.path.isdir(os.path.join(here, REPOSITORY_DIR)):
        return os.path.join(here, REPOSITORY_DIR)
    while True:
        if os.path.exists(os.path.join(here, ".git")) and project_dir(here) is not None:
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return os.path.join(os.path.abspath(start), REPOSITORY_DIR)
        here = parent


def pick_store(repo: Repository, store: str | None, *, may_create: bool = False) -> str:
    """The store a command works on: ``store`` if given, else the repository's only one.

    ``may_create`` lets a named store that does not exist yet through (a create starts it).
    """
    stores = repo.stores()
    if store is not None:
        if store in stores or may_create:
            return store
        fetched = repo.remote_stores()
        if store in fetched:
            raise NotFound(
                f"store {store!r} is on {fetched[store][0]} but not here yet; "
                "run `gitmem sync` to fetch it"
            )
        if not stores:
            raise NotFound(f"there is no store named {store!r}; the repository has no stores yet")
        raise NotFound(f"there is no store named {store!r}; the stores are: {', '.join(stores)}")
    if len(stores) == 1:
        return stores[0]
    if not stores:
        fetched = repo.remote_stores()
        if fetched:
            where = sorted({r for remotes in fetched.values() for r in remotes})
            raise NotFound(
                f"no stores here yet, but {', '.join(where)} has {', '.join(sorted(fetched))}; "
                "run `gitmem sync` to fetch them"
            )
        raise NotFound(
            "the repository has no stores yet; create one with "
            "`gitmem create --store NAME SLUG --description TEXT`"
        )
    raise InvalidArgument(
        f"the repository has {len(stores)} stores; choose one with --store: {', '.join(stores)}"
    )


def operator_author() -> Author:
    """The user's git identity (``user.name``/``user.email``), else the login name."""
    import getpass
    import socket  # here: a command that writes nothing needs neither

    from gitmem.store import git_identity

    try:
        login = getpass.getuser()
    except (OSError, KeyError):
        login = "operator"
    known_name, known_email = git_identity()
    name = known_name or login
    email = known_email or f"{login}@{socket.gethostname() or 'localhost'}"
    try:
        return Author(name, email)
    except InvalidAuthor:
        return Author(login, f"{login}@localhost")


def parse_author(value: str | None) -> Author:
    """``"Name <email>"`` or a bare name (with the operator's email); ``None``: the operator."""
    if value is None:
        return operator_author()
    match = re.fullmatch(r"\s*(.*?)\s*<([^<>]*)>\s*", value)
    if match:
        return Author(match.group(1), match.group(2))
    return Author(value.strip(), operator_author().email)
