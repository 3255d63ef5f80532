"""Where a gitmem repository keeps its stores: a standalone bare repository, or a
project's own git repository.

A **standalone** repository is a bare repository gitmem made (its config says
``gitmem.version``); a store is ``refs/heads/<store-id>``. Inside a **project**, the
stores share the project's object database under ``refs/heads/gitmem/<store-id>``, so a
plain ``git clone`` or ``git push`` carries them; gitmem's own files (the history index,
the write lock) sit in ``<git dir>/gitmem/``, and its markers (notice watermarks) are
refs under ``refs/gitmem/``. The project's ``HEAD``, index, work tree, config and own
branches are never read or written.
"""

from __future__ import annotations

import os

from gitmem.errors import InvalidArgument, NotARepository, PathOccupied
from gitmem.lean.refs import STORE_MAX
from gitmem.lean.refs import usable_store as store_rule
from gitmem.lean.text import shown

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dulwich.config import Config
    from dulwich.repo import Repo

__all__ = [
    "MARKER_PREFIX",
    "PROJECT_PREFIX",
    "PROPOSAL_PREFIX",
    "STANDALONE_PREFIX",
    "STORE_MAX",
    "check_store",
    "create",
    "holds_stores",
    "in_use",
    "is_standalone",
    "open_git",
    "project_dir",
    "record_layout",
    "serves_standalone",
    "serves_standalone_at",
    "start_project",
    "usable_store",
]

STANDALONE_PREFIX = "refs/heads/"
PROJECT_PREFIX = "refs/heads/gitmem/"
MARKER_PREFIX = "refs/gitmem/"
PROPOSAL_PREFIX = MARKER_PREFIX + "proposals/"
"""Where proposals live: ``refs/gitmem/proposals/<store-id>/<holder>``."""
_META = "gitmem"
_LAYOUT = b"layout"


_ACCEPTED: set[str] = set()
"""Store ids found usable already (a holder checks its own at every read of a ref)."""
_ACCEPTED_MAX = 1024


def check_store(store: object) -> str:
    """Return ``store`` if it is a usable store id, else raise ``InvalidArgument``."""
    if type(store) is str and store in _ACCEPTED:
        return store
    if not isinstance(store, str) or not store_rule(store):
        raise InvalidArgument(
            f"store id {shown(store, quoted=True)} is not usable; use 1-{STORE_MAX} "
            "characters of letters, "
            "digits, '-', '_' and '.', in parts separated by '/', not HEAD and not starting "
            "with '-' (e.g. profile/researcher)"
        )
    if type(store) is str and len(_ACCEPTED) < _ACCEPTED_MAX:
        _ACCEPTED.add(store)
    return store


def wrong_kind(store: str, *, files: bool, doing: str) -> InvalidArgument:
    """The refusal of a memory store where a file store is needed (``files``), or the
    reverse; ``doing`` says what was refused."""
    if files:
        what = f"store {store!r} holds memories, not files"
    else:
        what = f"store {store!r} is a file store"
    return InvalidArgument(f"{what}; {doing}" if doing else what)


def usable_store(store: str) -> bool:
    """Whether ``store`` is a usable store id (a remote may hold branches that are not)."""
    try:
        check_store(store)
    except InvalidArgument:
        return False
    return True


def serves_standalone(repo: Repo) -> bool:
    """Whether ``repo`` keeps stores as ``refs/heads/<store-id>``: a standalone
    repository, or a shared bare repository whose hooks were installed for standalone
    stores (its config says ``gitmem.layout = standalone``)."""
    return _serves_standalone(repo.get_config())


def serves_standalone_at(git_dir: str) -> bool:
    """:func:`serves_standalone` of the repository at ``git_dir``, from its config file
    alone (the push hook opens no repository)."""
    from gitmem.lean.repository import plain_config

    plain = plain_config(git_dir)
    if plain is not None:  # the usual config, read without loading dulwich's reader
        return ("gitmem", "version") in plain or plain.get(("gitmem", "layout")) == "standalone"
    from dulwich.config import ConfigFile  # the hook's start-up loads no repository layer

    try:
        config = ConfigFile.from_path(os.path.join(git_dir, "config"))
    except FileNotFoundError:
        return False
    return _serves_standalone(config)


def _serves_standalone(config: Config) -> bool:
    try:
        config.get((b"gitmem",), b"version")
        return True
    except KeyError:
        pass
    try:
        return config.get((b"gitmem",), _LAYOUT) == b"standalone"
    except KeyError:
        return False


def record_layout(repo: Repo, standalone: bool) -> None:
    """Record in ``repo``'s config which layout of stores it serves (``gitmem.layout``:
    ``standalone`` or ``project``), for its hooks to guard."""
    config = repo.get_config()
    config.set((b"gitmem",), _LAYOUT, b"standalone" if standalone else b"project")
    config.write_to_path()


def is_standalone(repo: Repo) -> bool:
    """Whether ``repo`` is a standalone gitmem repository (``gitmem init`` wrote its config)."""
    try:
        repo.get_config().get((b"gitmem",), b"version")
    except KeyError:
        return False
    return True


def holds_stores(repo: Repo, common: str) -> bool:
    """Whether a project's repository is in gitmem's use: started with ``gitmem init``, or
    holding store branches (its own, or a clone's remote-tracking ones)."""
    from dulwich.refs import Ref

    if os.path.isdir(os.path.join(common, _META)):
        return True
    if repo.refs.keys(base=Ref(PROJECT_PREFIX.encode()[:-1])):
        return True
    for name in repo.refs.keys(base=Ref(b"refs/remotes")):
        remote, _, rest = name.partition(b"/")
        if remote and rest.startswith(b"gitmem/"):
            return True
    return False


def in_use(path: str) -> bool:
    """Whether the project whose work tree (or ``.git`` directory) is ``path`` holds
    gitmem stores (see ``holds_stores``)."""
    from dulwich.errors import NotGitRepository
    from dulwich.repo import Repo

    common = project_dir(path)
    if common is None:
        return False
    try:
        repo = Repo(path)
    except (NotGitRepository, OSError, ValueError):
        return False
    try:
        return holds_stores(repo, common)
    finally:
        repo.close()


def project_dir(path: str) -> str | None:
    """The common git directory of the project at ``path`` (a work tree's top folder or
    a non-bare repository's ``.git`` directory); ``None`` for anything else, a bare
    repository included."""
    from dulwich.errors import NotGitRepository
    from dulwich.repo import Repo

    if not os.path.isdir(path):
        return None
    is_tree = os.path.exists(os.path.join(path, ".git"))
    if not is_tree and not os.path.isfile(os.path.join(path, "HEAD")):
        return None
    try:
        repo = Repo(path)
    except (NotGitRepository, OSError, ValueError):
        return None
    try:
        if not is_tree:
            try:
                if repo.get_config().get_boolean((b"core",), b"bare", True):
                    return None
            except (KeyError, ValueError):
                return None
        if is_standalone(repo):
            return None
        return os.path.abspath(repo.commondir())
    finally:
        repo.close()


def start_project(common: str) -> None:
    """Make gitmem's folder inside a project's git directory (and nothing else)."""
    # a write's alone: a push hook reads the layout and loads no locking
    from gitmem.store.locking import fsync_dir

    meta = os.path.join(common, _META)
    os.makedirs(os.path.join(meta, "history"), exist_ok=True)
    fsync_dir(meta)
    fsync_dir(common)


def create(path: str, *, bare: bool = False) -> None:
    """Make ``path`` (absolute) keep stores; one that already does is left as is.

    A git work tree (or its ``.git`` directory) gets its stores in the project's own
    repository, unless ``bare``; an empty or new folder becomes a standalone bare
    repository.
    """
    from dulwich.repo import Repo

    from gitmem.store.locking import fsync_dir, storage_error

    if os.path.isdir(os.path.join(path, _META)) and os.path.isfile(os.path.join(path, "HEAD")):
        return
    project = None if bare else project_dir(path)
    if project is not None:
        try:
            start_project(project)
        except OSError as exc:
            raise storage_error(exc, f"starting gitmem in the project at {path}") from exc
        return
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise PathOccupied(
            f"{path} already holds something that is not a gitmem repository; "
            "choose an empty or new folder"
        )
    try:
        os.makedirs(path, exist_ok=True)
        repo = Repo.init_bare(path)
        config = repo.get_config()
        config.set((b"gc",), b"auto", b"0")  # gitmem packs by itself, under its own lock
        config.set((b"gitmem",), b"version", b"1")
        config.write_to_path()
        repo.close()
        os.makedirs(os.path.join(path, _META, "history"), exist_ok=True)
        os.makedirs(os.path.join(path, "refs", "gitmem"), exist_ok=True)
        for d in (_META, "refs", ""):
            fsync_dir(os.path.join(path, d))
        fsync_dir(os.path.dirname(path))
    except OSError as exc:
        raise storage_error(exc, f"creating a repository at {path}") from exc


def open_git(path: str) -> tuple[str, Repo, bool]:
    """The git directory holding the stores at ``path`` (absolute: a standalone bare
    repository, or a project's work tree, ``.git`` directory or bare repository), the
    repository opened, and whether it is a project's."""
    from dulwich.errors import NotGitRepository
    from dulwich.repo import Repo

    from gitmem.store.locking import storage_error

    try:
        repo = Repo(path)
    except (NotGitRepository, OSError):
        raise NotARepository(
            f"no gitmem repository at {path}; create one with `gitmem init`"
        ) from None
    common = os.path.abspath(repo.commondir())
    standalone = is_standalone(repo)
    if standalone and (not repo.bare or not os.path.isdir(os.path.join(common, _META))):
        standalone = False
    if not standalone and not holds_stores(repo, common):
        repo.close()
        if project_dir(path) is not None:
            raise NotARepository(
                f"the git project at {path} keeps no gitmem stores yet; "
                "run `gitmem init` in it (or `gitmem sync` in a clone of a project that has some)"
            )
        raise NotARepository(
            f"{path} is a git repository but not a gitmem one; "
            "create one with `gitmem init` in an empty folder"
        )
    try:
        os.makedirs(os.path.join(common, _META, "history"), exist_ok=True)
    except OSError as exc:
        repo.close()
        raise storage_error(exc, f"opening the repository at {path}") from exc
    # objects reach the disk before a ref names them (set here rather than as
    # core.fsyncObjectFiles, which git itself warns about on every command)
    repo.object_store.fsync_object_files = True
    return common, repo, not standalone
