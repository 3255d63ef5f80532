"""Talking to a remote through dulwich's client: fetch the store branches, push one.

A remote is named as git names it (``remote.<name>.url`` in the repository's config) or
given as a URL or path: local paths, ``file://``, ``ssh://`` and ``https://`` all go
through ``dulwich.client`` (``git://`` is refused); the ``git`` binary is never run. A
push is a compare-and-swap at the remote: it names the head it expects to replace, and
a remote that moved since is reported as moved (``False``), never overwritten.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from functools import partial
from typing import TYPE_CHECKING, NamedTuple, cast

from dulwich.errors import FileFormatException, NotGitRepository
from dulwich.file import FileLocked
from dulwich.objects import ObjectID
from dulwich.pack import UnpackedObject
from dulwich.refs import Ref
from dulwich.repo import Repo

from gitmem.errors import GitmemError, RemoteError
from gitmem.store.locking import flocked, fsync_dir, remove_stale, storage_error
from gitmem.store.pushobjects import TooLarge
from gitmem.store.refs import BranchBeside, Refs
from gitmem.store.transfer import copy_history
from gitmem.store.trees import Trees

if TYPE_CHECKING:
    from dulwich.client import DetermineWantsFunc, GitClient
    from urllib3 import PoolManager

__all__ = ["Pushed", "Remote", "resolve"]

_HOOK_TIMEOUT = 600
"""Seconds a local remote's pre-receive hook may take before the push is refused."""

FETCH_MAX = 1 << 30
"""Bytes of pack a fetch over the pack protocol (an ``ssh://`` or ``https://`` remote)
takes at most: past them the fetch is refused and nothing of it is stored."""
FETCH_SECONDS = 600
"""Seconds a remote may go on sending one fetch's pack, an ``https://`` remote one
answer, and an ``ssh://`` remote's whole conversation may last."""
SILENCE = 60.0
"""Seconds an ``http://`` or ``https://`` remote may leave a request unanswered (the
``http.timeout`` setting of the repository's git config, where set, instead), and an
``ssh://`` remote may send nothing, or take nothing of what is sent."""
ANSWER_EXTRA = 64 << 20
"""Bytes a remote over the network may send beyond :data:`FETCH_MAX` in one answer
(an ``https://`` one) or conversation (an ``ssh://`` one): its list of refs, its
replies. Past them the fetch is refused (an ``ssh`` process killed)."""
_SPOOLED = 16 << 20
"""Bytes of a fetched pack held in memory; a larger one goes to a temporary file in
the object store's folder."""
STALE_AFTER = 1.0
"""Seconds after which a ref's ``.lock`` at a local remote is a dead pusher's: a live
git or dulwich holds one for milliseconds, between creating and renaming it. (A sync
retries a busy push for at least 1.4 s in all, so one sync gets past a dead pusher.)"""


class Remote:
    """One remote of a repository: where it is, and the store branches it holds."""

    def __init__(self, repo: Repo, url: str, name: str | None) -> None:
        self.url = url
        self.name = name
        """The remote's name in the repository's config (``None`` for a bare URL)."""
        self._repo = repo
        self.kept_out: dict[str, str] = {}
        """The heads a fetch left out, each with why in one line, as a push hook
        words a refusal: their history holds an object past the bound a hook holds
        objects to (nothing of it was copied)."""

    def _client(self, operation: str) -> tuple[GitClient, str]:
        # dulwich's network client, imported only for a remote that needs it
        from dulwich.client import get_transport_and_path

        config = self._repo.get_config_stack()
        try:
            if not self.url.startswith(("http://", "https://")):
                client, path = get_transport_and_path(
                    self.url, config=config, operation=operation, quiet=True
                )
                return _held(client), path
            # a server that stops answering is given up on after SILENCE seconds (or the
            # config's http.timeout), not waited for as long as the connection lasts
            from dulwich.client import default_urllib3_manager

            from gitmem.store.watched import bounded_http

            try:
                waited = float(config.get(b"http", b"timeout").decode())
            except (KeyError, ValueError):
                waited = SILENCE
            # with no authentication callback, a plain pool manager (or a proxy's)
            manager = cast(
                "PoolManager", default_urllib3_manager(config, base_url=self.url, timeout=waited)
            )
            client, path = get_transport_and_path(
                self.url, config=config, operation=operation, quiet=True, pool_manager=manager
            )
            return bounded_http(client, FETCH_SECONDS, FETCH_MAX + ANSWER_EXTRA), path
        except Exception as exc:  # dulwich raises many types for a URL it cannot use
            raise RemoteError(f"cannot use the remote {self.url}: {_reason(exc)}") from None

    def _local(self) -> Repo | None:
        """The remote's repository, when it is a path on this machine."""
        path = self.url[len("file://") :] if self.url.startswith("file://") else self.url
        if "://" in path or not os.path.isabs(path):
            return None
        try:
            return Repo(path)
        except NotGitRepository:
            raise RemoteError(f"cannot fetch from {self.url}: it is not a git repository") from None
        except OSError as exc:
            raise RemoteError(f"cannot fetch from {self.url}: {_reason(exc)}") from None

    def fetch(self, prefix: str, trees: Trees | None = None) -> dict[str, str]:
        """Fetch every branch under ``prefix`` into the object store; returns the remote's
        heads (store id → commit). The pack arrives fsynced; the caller must fsync the
        pack folder before a ref names what it holds. ``trees``: trees shared with the
        other readers of a sync."""
        local = self._local()
        if local is not None:
            with local:
                try:
                    listed = local.refs.as_dict(Ref(prefix.encode()[:-1]))
                except Exception as exc:  # dulwich raises many types for refs it cannot read
                    raise RemoteError(
                        f"cannot read the branches of {self.url}: {_reason(exc)}"
                    ) from None
                heads = {
                    name.decode("utf-8", "replace"): sha.decode("utf-8", "replace")
                    for name, sha in listed.items()
                }
                for name, sha in heads.items():  # a ref file may hold anything
                    if not _HEXSHA.fullmatch(sha):
                        raise RemoteError(
                            f"the branch {prefix[len('refs/heads/') :]}{name} of {self.url} "
                            f"names no commit ({sha[:48]!r}); mend or delete it there"
                        )
                try:
                    # the pack folder is fsynced by the caller, for either road; a
                    # branch at what is no commit is no store's history to copy (the
                    # check of what sync adopts refuses that store, not the others)
                    wanted = [h for h in sorted(set(heads.values())) if _is_commit(local, h)]
                    self._copy(local, wanted, trees)
                except (KeyError, OSError, ValueError) as exc:
                    raise RemoteError(f"cannot fetch from {self.url}: {_reason(exc)}") from None
            return heads
        client, path = self._client("pull")
        heads: dict[str, str] = {}
        have = self._repo.object_store
        start = prefix.encode()

        def determine_wants(
            refs: Mapping[Ref, ObjectID], depth: int | None = None
        ) -> list[ObjectID]:
            wants: list[ObjectID] = []
            for ref, sha in refs.items():
                if not sha or not ref.startswith(start) or ref.endswith(b"^{}"):
                    continue
                heads[ref[len(start) :].decode("utf-8", "replace")] = sha.decode()
                if sha not in have and sha not in wants:
                    wants.append(sha)
            return wants

        try:
            try:
                self._fetch_pack(client, path, determine_wants, start)
            except TooLarge as exc:  # fetched again head by head: only those that reach it
                wanted = [
                    h for h in dict.fromkeys(heads.values()) if ObjectID(h.encode()) not in have
                ]
                if len(wanted) == 1:
                    exc.commit = wanted[0]
                    self.kept_out[wanted[0]] = exc.refusal()
                else:
                    self._fetch_apart(client, path, wanted, start)
        except GitmemError:
            raise
        except Exception as exc:  # network, protocol and repository errors alike
            raise RemoteError(f"cannot fetch from {self.url}: {_reason(exc)}") from None
        return heads

    def _fetch_pack(
        self, client: GitClient, path: str, wants: DetermineWantsFunc, start: bytes
    ) -> None:
        """Fetch what ``wants`` asks of the remote's refs under ``start`` as one pack, held
        to :data:`FETCH_MAX` bytes and :data:`FETCH_SECONDS` as it arrives, and read
        through (:func:`~gitmem.store.packscan.check_pack`) before the git library
        stores it: a remote cannot have this side inflate, nor hold, more than it may."""
        from tempfile import SpooledTemporaryFile

        from gitmem.store.packscan import check_pack

        store = self._repo.object_store
        received = 0
        give_up = time.monotonic() + FETCH_SECONDS

        def pack_data(data: bytes) -> int:
            nonlocal received
            received += len(data)
            if received > FETCH_MAX:
                raise RemoteError(
                    f"cannot fetch from {self.url}: it sent more than {FETCH_MAX >> 20} MiB"
                )
            if time.monotonic() > give_up:
                raise RemoteError(
                    f"cannot fetch from {self.url}: it sent for more than {FETCH_SECONDS} s"
                )
            return spool.write(data)

        folder = getattr(store, "path", None)
        with SpooledTemporaryFile(max_size=_SPOOLED, prefix="incoming-", dir=folder) as spool:
            client.fetch_pack(
                path, wants, self._repo.get_graph_walker(), pack_data, ref_prefix=[start]
            )
            if not spool.tell():
                return  # nothing new
            spool.seek(0)
            check_pack(spool)
            spool.seek(0)
            store.add_thin_pack(spool.read, None)

    def _fetch_apart(self, client: GitClient, path: str, wanted: list[str], start: bytes) -> None:
        """Fetch each head of ``wanted`` alone, leaving out (``kept_out``) those whose
        history holds an object past the bound."""
        for head in wanted:
            if ObjectID(head.encode()) in self._repo.object_store:
                continue  # an earlier head's history holds it
            try:
                self._fetch_pack(client, path, _only(head), start)
            except TooLarge as exc:
                exc.commit = head
                self.kept_out[head] = exc.refusal()

    def _copy(self, local: Repo, wanted: list[str], trees: Trees | None) -> None:
        """Copy what ``wanted`` reaches from the remote on this machine, each object
        held to the bound a push hook holds it to: a head whose history holds a larger
        one is left out (``kept_out``), the others copied as usual."""
        copy = partial(copy_history, local, self._repo, sync_folder=False, trees=trees)
        try:
            copy(wanted, into_own=True, bounded=True)
            return
        except TooLarge as exc:
            if len(wanted) == 1:
                self.kept_out[wanted[0]] = exc.refusal()
                return
        except _UNREADABLE as exc:
            if len(wanted) == 1:
                self.kept_out[wanted[0]] = _unreadable(wanted[0], exc)
                return
        for head in wanted:  # head by head: only the heads that reach it are left out
            try:
                copy([head], into_own=True, bounded=True)
            except TooLarge as exc:
                self.kept_out[head] = exc.refusal()
            except _UNREADABLE as exc:
                self.kept_out[head] = _unreadable(head, exc)

    def push(self, ref: str, old: str | None, new: str, trees: Trees | None = None) -> Pushed:
        """Move ``ref`` at the remote from ``old`` (``None``: absent) to ``new``, sending
        what it lacks; never forced. ``trees``: trees shared with the other readers of
        a sync."""
        name = Ref(ref.encode())
        local = self._local()
        if local is not None:
            with local:
                return self._push_local(local, name, old, new, trees)
        client, path = self._client("push")
        moved: list[str] = []

        def update_refs(refs: dict[Ref, ObjectID]) -> dict[Ref, ObjectID]:
            current = refs.get(name)
            if (current.decode() if current else None) != old:
                moved.append("the remote moved since it was fetched")
                return {}
            return {name: ObjectID(new.encode())}

        def generate_pack_data(
            have: AbstractSet[ObjectID],
            want: AbstractSet[ObjectID],
            *,
            ofs_delta: bool = False,
            progress: Callable[[bytes], None] | None = None,
        ) -> tuple[int, Iterator[UnpackedObject]]:
            # the remote's other branches name commits we never fetched
            known = {sha for sha in have if sha in self._repo.object_store}
            return self._repo.generate_pack_data(known, set(want), ofs_delta=ofs_delta)

        try:
            result = client.send_pack(path.encode(), update_refs, generate_pack_data)
        except FileLocked:
            # another push holds the remote's ref: it is moving, so fetch and try again
            return Pushed(False, True, "another push was updating the remote")
        except GitmemError:
            raise
        except Exception as exc:
            raise RemoteError(f"cannot push to {self.url}: {_reason(exc)}") from None
        if moved:
            return Pushed(False, True, moved[0])
        status = (result.ref_status or {}).get(name)
        if status is None:
            return Pushed(True, False, "")
        text = str(status)
        # a ref the remote could not lock or set is one another push is moving
        busy = any(
            word in text.lower() for word in ("lock", "unable to set", "fetch first", "stale")
        )
        return Pushed(False, busy, text)

    def _push_local(
        self, target: Repo, name: Ref, old: str | None, new: str, trees: Trees | None
    ) -> Pushed:
        # Pushers through gitmem take turns on the remote's write lock, as its writers
        # do; a ref lock file met while holding it is either a plain git's, live for
        # milliseconds, or one a pusher killed mid-push left behind, which would refuse
        # every later push of that store forever: it is removed once it is old enough.
        meta = os.path.join(target.commondir(), "gitmem")
        try:
            os.makedirs(meta, exist_ok=True)
            with flocked(os.path.join(meta, "write.lock")):
                return self._push_locked(target, name, old, new, trees)
        except OSError as exc:
            raise RemoteError(f"cannot push to {self.url}: {_reason(exc)}") from None

    def _push_locked(
        self, target: Repo, name: Ref, old: str | None, new: str, trees: Trees | None
    ) -> Pushed:
        try:
            current: str | None = target.refs[name].decode()
        except KeyError:
            current = None
        if current != old:
            return Pushed(False, True, "the remote moved since it was fetched")
        refused = self._pre_receive(target, name, old, new)
        if refused is not None:
            return Pushed(False, False, refused)
        try:  # before any object is copied there: a refusal leaves the remote as it was
            if old is None:
                _refs(target).refuse_beside(name)
        except BranchBeside as exc:  # the remote holds a store beside this one's name
            return Pushed(False, False, str(exc), alone=True)
        try:
            # the remote's objects reach its disk (pack, index and folder fsynced)
            # before its ref names them
            copy_history(self._repo, target, [new], sync_folder=False, trees=trees)
            moved = _swap(target, name, old, new)
        except FileLocked as exc:
            _remove_if_stale(os.fsdecode(exc.lockfilename))
            return Pushed(False, True, "another push was updating the remote")
        except (KeyError, OSError, ValueError) as exc:
            raise RemoteError(f"cannot push to {self.url}: {_reason(exc)}") from None
        return Pushed(True, False, "") if moved else Pushed(False, True, "the remote moved")

    def _pre_receive(self, target: Repo, name: Ref, old: str | None, new: str) -> str | None:
        """Run the remote's ``pre-receive`` hook, as ``git receive-pack`` would, before
        anything is written there: what it printed if it refuses, else ``None``.

        Writing a local remote directly must not be a way around the hook a shared
        repository keeps (gitmem's own, or any other). The pushed objects are still only
        here, so this repository's object folder plays git's quarantine directory:
        the hook reads the remote's objects and ours, and nothing reaches the remote
        unless the hook accepts."""
        hook = os.path.join(target.controldir(), "hooks", "pre-receive")
        if not os.access(hook, os.X_OK) or os.path.isdir(hook):
            return None
        ours = self._repo.object_store.path  # type: ignore[attr-defined]
        env = {
            **os.environ,
            "GIT_DIR": target.controldir(),
            "GIT_QUARANTINE_PATH": ours,
            "GIT_OBJECT_DIRECTORY": ours,
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": os.path.join(target.commondir(), "objects"),
        }
        update = f"{old or '0' * 40} {new} {name.decode()}\n"
        try:
            done = subprocess.run(
                [hook],
                input=update,
                env=env,
                cwd=target.controldir() if target.bare else target.path,
                capture_output=True,
                text=True,
                timeout=_HOOK_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"its pre-receive hook took longer than {_HOOK_TIMEOUT} s"
        except OSError as exc:
            return f"its pre-receive hook could not run: {_reason(exc)}"
        if done.returncode == 0:
            return None
        said = " ".join((done.stdout + done.stderr).split())
        return said or f"its pre-receive hook exited with status {done.returncode}"


def _swap(target: Repo, name: Ref, old: str | None, new: str) -> bool:
    """Compare-and-swap the local remote's ref ``name`` from ``old`` to ``new``, its
    pack folder (where a pack just landed, unsynced) reaching the disk in the same
    flush as the ref's lock file. Raises ``FileLocked`` when another writer holds the
    ref's lock."""
    folder = os.path.join(target.object_store.path, "pack")  # type: ignore[attr-defined]
    return _refs(target).swap(name, old, new, shared=True, flush_with=[folder])


def _refs(target: Repo) -> Refs:
    """The refs of the remote on this machine at ``target``."""
    return Refs(target.commondir(), target, threading.RLock())


def _remove_if_stale(lockfile: str) -> None:
    try:
        age = time.time() - os.stat(lockfile).st_mtime
    except FileNotFoundError:
        return
    if age > STALE_AFTER:
        remove_stale(lockfile)


class Pushed(NamedTuple):
    """How a push went: ``ok``; else whether the remote was ``moving`` (another push got
    there first: fetch and reconcile again) or refused, and ``reason``; ``alone``: the
    refusal is this store's alone (the remote holds a store beside its name), and the
    other stores sync."""

    ok: bool
    moving: bool
    reason: str
    alone: bool = False


def settle_fetched(directory: str, remote: Remote) -> None:
    """Make the name of a pack just fetched into ``directory`` durable."""
    try:
        # the fetched pack is fsynced (by packing's writer from a local path, by
        # dulwich over a transport); its name in the folder must be too before a ref
        # (the tracking ref, a fast-forward) names what it holds
        fsync_dir(os.path.join(directory, "objects", "pack"))
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise storage_error(exc, f"fetching from {remote.url}") from exc


def tracking_refs(remote: Remote, prefix: str, heads: Mapping[str, str]) -> dict[Ref, str]:
    """The refs that record where a named remote's store branches are, as ``git fetch``
    records them (``refs/remotes/<name>/...``); none for a remote given as a URL."""
    if remote.name is None:
        return {}
    tracking = f"refs/remotes/{remote.name}/{prefix[len('refs/heads/') :]}"
    return {Ref((tracking + store).encode()): commit for store, commit in heads.items()}


def resolve(repo: Repo, remote: str, base: str) -> Remote:
    """The remote named ``remote`` in the repository's config, or ``remote`` as a URL or
    path (a relative path is taken from ``base``)."""
    try:
        url = repo.get_config().get((b"remote", remote.encode()), b"url").decode()
    except KeyError:
        if "://" in remote or remote.startswith("git@"):
            return Remote(repo, remote, None)
        if os.path.exists(remote):
            return Remote(repo, os.path.abspath(remote), None)
        raise RemoteError(
            f"there is no remote named {remote!r}; add one with `git remote add {remote} URL`, "
            "or give a URL or a path"
        ) from None
    if "://" not in url and ":" not in url.split("/")[0] and not os.path.isabs(url):
        url = os.path.normpath(os.path.join(base, url))
    return Remote(repo, url, remote)


_HEXSHA = re.compile(r"[0-9a-f]{40}")
_UNREADABLE = (FileFormatException, AssertionError, zlib.error)
"""What dulwich raises for a repository's data it cannot read (a loose object or a ref
that does not parse, a ``packed-refs`` line that names no ref): a remote on this
machine is anyone's repository, and its damage is refused in its own words."""


def _unreadable(head: str, exc: Exception) -> str:
    """The refusal of a branch whose history holds an object that does not read."""
    return f"commit {head[:12]} breaks rule parse: an object it brings does not read: {exc}"


def _is_commit(repo: Repo, sha: str) -> bool:
    """Whether ``sha`` names a commit that ``repo`` holds."""
    try:
        return repo.object_store.get_raw(ObjectID(sha.encode()))[0] == 1
    except KeyError:
        return True  # missing: copying says so
    except (*_UNREADABLE, OSError, ValueError):
        return True  # damaged: copying says so


def _only(head: str) -> DetermineWantsFunc:
    """What a fetch of ``head`` alone asks of the remote's refs."""
    wanted = [ObjectID(head.encode())]

    def wants(refs: Mapping[Ref, ObjectID], depth: int | None = None) -> list[ObjectID]:
        return wanted

    return wants


def _held(client: GitClient) -> GitClient:
    """``client``, its ``ssh`` connections held to bounds as an https one's are (an
    ``ssh://`` remote); ``git://`` refused: it neither authenticates the remote nor
    hides what is sent, and nothing bounds a server that goes silent."""
    from dulwich.client import SSHGitClient, TCPGitClient

    from gitmem.store.watched import WatchedSSH

    if isinstance(client, TCPGitClient):
        raise RemoteError(
            "git:// remotes are not used: the protocol neither checks who answers nor "
            "hides what is sent; use an ssh:// or https:// URL"
        )
    if isinstance(client, SSHGitClient):
        client.ssh_vendor = WatchedSSH(SILENCE, FETCH_SECONDS, FETCH_MAX + ANSWER_EXTRA)
    return client


def _reason(exc: BaseException) -> str:
    from gitmem.store.watched import PastBound

    causes = list(_causes(exc))
    for cause in causes:
        if isinstance(cause, PastBound):  # a bound of ours: its text says which
            return str(cause)
    if any(
        isinstance(cause, TimeoutError) or type(cause).__name__.endswith("TimeoutError")
        for cause in causes
    ):
        return (
            f"it did not answer within {SILENCE:g} s "
            "(or the http.timeout setting of the git config, where set)"
        )
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it comes of, a few links down: dulwich wraps the pipe's error in
    its own, and the HTTP library wraps a timeout in a retry error, with the cause as
    its reason."""
    found: BaseException | None = exc
    for _ in range(6):
        if found is None:
            return
        yield found
        reason = getattr(found, "reason", None)
        found = (
            reason if isinstance(reason, BaseException) else found.__cause__ or found.__context__
        )
