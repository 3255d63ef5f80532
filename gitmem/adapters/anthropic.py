"""Claude's memory tool (``memory_20250818``) backed by a gitmem file store.

``GitMemoryTool`` and ``AsyncGitMemoryTool`` subclass the Anthropic SDK's
``BetaAbstractMemoryTool`` / ``BetaAsyncAbstractMemoryTool``. A path ``/memories/x.md``
is the file ``memories/x.md`` of the store's tree; each mutating command is one commit
(``create memories/x.md``, ``str-replace ...``, ``insert``, ``delete``, ``rename``,
``clear``) and ``view`` writes nothing. Every answer and every refusal reads as the
SDK's ``BetaLocalFilesystemMemoryTool`` words it for the same files; what gitmem
refuses beyond it (a limit, a name git will not keep in a tree) is refused in the same voice.

Each command is a function of the store's head, re-run if another writer publishes
first, so many processes can share one store without a lost update.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar, cast

from gitmem.adapters.extras import missing_extra

try:
    import anyio.to_thread
    from anthropic.lib.tools import (
        BetaAbstractMemoryTool,
        BetaAsyncAbstractMemoryTool,
        ToolError,
    )
    from anthropic.types.beta import (
        BetaCacheControlEphemeralParam,
        BetaMemoryTool20250818CreateCommand,
        BetaMemoryTool20250818DeleteCommand,
        BetaMemoryTool20250818InsertCommand,
        BetaMemoryTool20250818RenameCommand,
        BetaMemoryTool20250818StrReplaceCommand,
        BetaMemoryTool20250818ViewCommand,
    )
except ImportError as exc:  # the optional packages
    raise missing_extra("anthropic", exc) from exc

from gitmem import FileLimits, FileSnapshot, Repository
from gitmem.errors import GitmemError, InvalidArgument, InvalidPath, LimitExceeded, SecretFound
from gitmem.types import PATH_DEPTH, PATH_MAX, Author, FileChange, FileEdit, check_path

__all__ = ["AsyncGitMemoryTool", "GitMemoryTool", "MemoryToolError"]

ROOT = "/memories"
FOLDER = "memories"
"""Where the tool's files live in the store's tree: ``/memories/x.md`` is ``memories/x.md``."""
NAMES_MAX = PATH_DEPTH - 1
"""The names a path holds below ``/memories`` at most (the tree's own folder is one)."""
CHARS_MAX = PATH_MAX - len(FOLDER) - 1
"""The characters a path holds after ``/memories/`` at most."""
MAX_LINES = 999_999
_WIDTH = len(str(MAX_LINES))
_COMMANDS = frozenset({"view", "create", "str_replace", "insert", "delete", "rename"})
T = TypeVar("T")


class MemoryToolError(ToolError, GitmemError):
    """A refused memory-tool command: the SDK's ``ToolError`` (the tool runner sends
    its text back with ``is_error``) and a ``GitmemError``. Nothing was written."""

    kind: ClassVar[str] = "invalid-argument"


def _size(n: int) -> str:
    """A byte count as the reference's listing shows it (``0B``, ``512B``, ``1.5K``)."""
    if n == 0:
        return "0B"
    unit = min((n.bit_length() - 1) // 10, 3)
    value = n / (1024**unit)
    suffix = "BKMG"[unit]
    return f"{int(value)}{suffix}" if value == int(value) else f"{value:.1f}{suffix}"


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{str(first + i).rjust(_WIDTH)}\t{line}" for i, line in enumerate(lines))


def _lines_keeping_cr(text: str) -> list[str]:
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def _occurrence_lines(text: str, needle: str) -> list[int]:
    """The line of every occurrence of ``needle``, overlapping ones too, as the
    reference lists them. One Knuth-Morris-Pratt pass: a search restarted one character
    after each match would be quadratic on a needle that overlaps itself."""
    found: list[int] = []
    line = 1
    if not needle:
        # the empty string occurs at every position, the end included
        for char in text:
            found.append(line)
            line += char == "\n"
        found.append(line)
        return found
    border = [0] * len(needle)
    k = 0
    for i in range(1, len(needle)):
        while k and needle[i] != needle[k]:
            k = border[k - 1]
        if needle[i] == needle[k]:
            k += 1
        border[i] = k
    # the line of the match's first character: newlines seen up to it, tracked behind
    starts: list[int] = []
    k = 0
    for i, char in enumerate(text):
        while k and char != needle[k]:
            k = border[k - 1]
        if char == needle[k]:
            k += 1
        if k == len(needle):
            starts.append(i - k + 1)
            k = border[k - 1]
    counted = 0
    for start in starts:
        line += text.count("\n", counted, start)
        counted = start
        found.append(line)
    return found


@functools.lru_cache(maxsize=1024)
def _tree_path(rest: str) -> str:
    """The tree path under ``memories/`` for ``rest``, or why it is refused (a model
    names the same few paths again and again, so the answer is kept)."""
    names = rest.count("/") + 1
    if names > NAMES_MAX:
        return f"it is {names} names deep below {ROOT}; use at most {NAMES_MAX}"
    if len(rest) > CHARS_MAX:
        return f"it is {len(rest):,} characters after {ROOT}/; use at most {CHARS_MAX:,}"
    tree = f"{FOLDER}/{rest}"
    try:
        return check_path(tree)
    except InvalidPath as exc:
        return str(exc).replace(f"file path {tree!r}", "it", 1)


class _Backend:
    """The commands over one file store, shared by the sync and async tools."""

    def __init__(
        self,
        repo: Repository,
        store: str,
        author: Author | str,
        max_file_chars: int,
        max_total_chars: int,
        max_files: int,
    ) -> None:
        self.repo = repo
        layout = repo.layout(store)  # refuses an unusable store id
        self.store = store
        self.author = author if isinstance(author, Author) else Author.agent(author)
        self.limits = FileLimits(max_file_chars, max_total_chars, max_files)
        if layout == "memories":
            raise InvalidArgument(
                f"store {store!r} holds memories, not files; give the memory tool a "
                "file store or a store id that does not exist yet"
            )

    # -- paths -----------------------------------------------------------------------

    def resolve(self, path: object, what: str = "path") -> str:
        """The tree path a command's path names (``memories`` for the root)."""
        if not isinstance(path, str):
            raise MemoryToolError(f"Invalid `{what}` parameter: {path!r}. It should be a string.")
        if not path.startswith(ROOT):
            raise MemoryToolError(f"Path must start with /memories, got: {path}")
        rest = path[len(ROOT) :].lstrip("/")
        # one trailing slash names the same file or directory, as on a filesystem
        rest = rest.removesuffix("/")
        if not rest:
            return FOLDER
        if ".." in rest.split("/"):
            raise MemoryToolError(f"Path {path} would escape /memories directory")
        # only paths that can be valid are kept: a huge one would pin its memory
        found = _tree_path(rest) if len(rest) <= PATH_MAX else _tree_path.__wrapped__(rest)
        if found.startswith(FOLDER):
            return found
        shown = path if path.isprintable() else repr(path)  # a refusal is one line
        raise MemoryToolError(
            f"The path {shown} is not a valid memory path: {found}. Any other name, in any "
            "script, with single '/' between names, is welcome"
        )

    # -- commands --------------------------------------------------------------------

    def view(self, path: object, view_range: object = None) -> str:
        tree = self.resolve(path)
        shown = cast(str, path)
        snapshot = self._files()
        if tree == FOLDER or snapshot.is_dir(tree):
            return self._listing(snapshot, tree, shown)
        text = snapshot.read(tree)
        if text is None:
            raise MemoryToolError(f"The path {shown} does not exist. Please provide a valid path.")
        lines = text.split("\n")
        if len(lines) > MAX_LINES:
            raise MemoryToolError(f"File {shown} exceeds maximum line limit of 999,999 lines.")
        first = 1
        if view_range is not None:
            if not isinstance(view_range, list) or not all(
                isinstance(n, int) and not isinstance(n, bool)
                for n in cast(list[object], view_range)
            ):
                raise MemoryToolError(
                    f"Invalid `view_range` parameter: {view_range!r}. "
                    "It should be a list of two line numbers, such as [1, 10]."
                )
            bounds = cast(list[int], view_range)
            if len(bounds) == 2:
                start = max(1, bounds[0]) - 1
                end = len(lines) if bounds[1] == -1 else bounds[1]
                lines = lines[start:end]
                first = start + 1
        return f"Here's the content of {shown} with line numbers:\n" + _numbered(lines, first)

    def _listing(self, snapshot: FileSnapshot, tree: str, shown: str) -> str:
        rows = [f"{_size(snapshot.tree_size(tree))}\t{shown}"]
        for child in snapshot.children(tree):
            if child.name.startswith("."):
                continue
            if not child.is_dir:
                rows.append(f"{_size(child.size)}\t{shown}/{child.name}")
                continue
            rows.append(f"{_size(child.size)}\t{shown}/{child.name}/")
            for grandchild in snapshot.children(f"{tree}/{child.name}"):
                if grandchild.name.startswith("."):
                    continue
                slash = "/" if grandchild.is_dir else ""
                rows.append(
                    f"{_size(grandchild.size)}\t{shown}/{child.name}/{grandchild.name}{slash}"
                )
        header = (
            f"Here're the files and directories up to 2 levels deep in {shown}, "
            "excluding hidden items:"
        )
        return header + "\n" + "\n".join(rows)

    def create(self, path: object, file_text: object) -> str:
        tree = self.resolve(path)
        text = self._text(file_text, "file_text")
        shown = cast(str, path)

        def build(snapshot: FileSnapshot) -> FileChange:
            if tree == FOLDER or tree in snapshot or snapshot.is_dir(tree):
                raise MemoryToolError(f"File {shown} already exists")
            self._no_file_above(snapshot, tree, shown)
            self._check_limits(snapshot, shown, {tree: text})
            return FileChange((FileEdit("create", tree, text),))

        self._publish(build)
        return f"File created successfully at: {shown}"

    def str_replace(self, path: object, old_str: object, new_str: object) -> str:
        tree = self.resolve(path)
        old = self._text(old_str, "old_str")
        new = self._text(new_str, "new_str")
        shown = cast(str, path)
        answer: list[str] = []

        def build(snapshot: FileSnapshot) -> FileChange:
            content = self._existing_file(snapshot, tree, shown)
            count = content.count(old)
            if count == 0:
                raise MemoryToolError(
                    f"No replacement was performed, old_str `{old}` did not appear "
                    f"verbatim in {shown}."
                )
            if count > 1:
                lines = ", ".join(map(str, _occurrence_lines(content, old)))
                raise MemoryToolError(
                    f"No replacement was performed. Multiple occurrences of old_str `{old}` "
                    f"in lines: {lines}. Please ensure it is unique"
                )
            changed = content.count("\n", 0, content.find(old))
            updated = content.replace(old, new)
            self._check_limits(snapshot, shown, {tree: updated})
            lines = updated.split("\n")
            start, end = max(0, changed - 2), min(len(lines), changed + 3)
            answer[:] = [_numbered(lines[start:end], start + 1)]
            return FileChange((FileEdit("str-replace", tree, updated),))

        self._publish(build)
        return (
            "The memory file has been edited. Here is the snippet showing the change "
            "(with line numbers):\n" + answer[0]
        )

    def insert(self, path: object, insert_line: object, insert_text: object) -> str:
        tree = self.resolve(path)
        text = self._text(insert_text, "insert_text")
        if not isinstance(insert_line, int) or isinstance(insert_line, bool):
            raise MemoryToolError(
                f"Invalid `insert_line` parameter: {insert_line!r}. It should be a line number."
            )
        shown = cast(str, path)

        def build(snapshot: FileSnapshot) -> FileChange:
            lines = _lines_keeping_cr(self._existing_file(snapshot, tree, shown))
            if insert_line < 0 or insert_line > len(lines):
                raise MemoryToolError(
                    f"Invalid `insert_line` parameter: {insert_line}. "
                    f"It should be within the range [0, {len(lines)}]."
                )
            lines.insert(insert_line, text.rstrip("\n"))
            updated = "\n".join(lines)
            if not updated.endswith("\n"):
                updated += "\n"
            self._check_limits(snapshot, shown, {tree: updated})
            return FileChange((FileEdit("insert", tree, updated),))

        self._publish(build)
        return f"The file {shown} has been edited."

    def delete(self, path: object) -> str:
        tree = self.resolve(path)
        shown = cast(str, path)
        if tree == FOLDER:
            raise MemoryToolError("Cannot delete the /memories directory itself")

        def build(snapshot: FileSnapshot) -> FileChange:
            doomed = [tree] if tree in snapshot else snapshot.files(tree)
            if not doomed:
                raise MemoryToolError(f"The path {shown} does not exist")
            return FileChange(tuple(FileEdit("delete", p, None) for p in doomed))

        self._publish(build)
        return f"Successfully deleted {shown}"

    def rename(self, old_path: object, new_path: object) -> str:
        source = self.resolve(old_path, "old_path")
        target = self.resolve(new_path, "new_path")
        old_shown, new_shown = cast(str, old_path), cast(str, new_path)
        if source == FOLDER:
            raise MemoryToolError("Cannot rename the /memories directory itself")

        def build(snapshot: FileSnapshot) -> FileChange:
            if target == FOLDER or target in snapshot or snapshot.is_dir(target):
                raise MemoryToolError(f"The destination {new_shown} already exists")
            if source in snapshot:
                moves = {source: target}
            else:
                moves = {p: target + p[len(source) :] for p in snapshot.files(source)}
                if not moves:
                    raise MemoryToolError(f"The path {old_shown} does not exist")
            self._no_file_above(snapshot, target, new_shown)
            if source not in snapshot and target.startswith(source + "/"):
                raise MemoryToolError(
                    f"Cannot move {old_shown} into itself ({new_shown}); "
                    "choose a destination outside it"
                )
            for new in moves.values():
                found = _tree_path(new[len(FOLDER) + 1 :])
                if not found.startswith(FOLDER):
                    raise MemoryToolError(
                        f"Cannot rename {old_shown} to {new_shown}: a file it holds would "
                        f"not have a valid memory path there: {found}"
                    )
            edits: list[FileEdit] = []
            for old, new in moves.items():
                text = snapshot.read(old)
                assert text is not None
                edits.append(FileEdit("rename", new, text))
                edits.append(FileEdit("rename", old, None))
            return FileChange(tuple(edits))

        self._publish(build)
        return f"Successfully renamed {old_shown} to {new_shown}"

    def clear_all_memory(self) -> str:
        def build(snapshot: FileSnapshot) -> FileChange:
            return FileChange(tuple(FileEdit("clear", p, None) for p in snapshot.files(FOLDER)))

        self._publish(build)
        return "All memory cleared"

    # -- the rules -----------------------------------------------------------------

    def _files(self) -> FileSnapshot:
        try:
            return self.repo.files(self.store)
        except GitmemError as exc:
            raise MemoryToolError(str(exc)) from exc

    def _publish(self, build: Callable[[FileSnapshot], FileChange]) -> None:
        try:
            self.repo.publish_files(self.store, self.author, build)
        except MemoryToolError:
            raise
        except SecretFound as exc:  # named as the agent names its files
            raise MemoryToolError(str(exc).replace(f"file {FOLDER}/", f"file {ROOT}/", 1)) from exc
        except GitmemError as exc:
            raise MemoryToolError(str(exc)) from exc

    @staticmethod
    def _text(value: object, what: str) -> str:
        if not isinstance(value, str):
            raise MemoryToolError(f"Invalid `{what}` parameter: {value!r}. It should be text.")
        if "\x00" in value:
            raise MemoryToolError(
                f"Invalid `{what}` parameter: it holds a NUL character. Send plain text."
            )
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise MemoryToolError(
                f"Invalid `{what}` parameter: a lone surrogate at character {exc.start}. "
                "Send valid Unicode text."
            ) from None
        return value

    @staticmethod
    def _existing_file(snapshot: FileSnapshot, tree: str, shown: str) -> str:
        if tree != FOLDER and not snapshot.is_dir(tree):
            text = snapshot.read(tree)
            if text is not None:
                return text
            raise MemoryToolError(f"The path {shown} does not exist. Please provide a valid path.")
        raise MemoryToolError(f"The path {shown} is not a file.")

    @staticmethod
    def _no_file_above(snapshot: FileSnapshot, tree: str, shown: str) -> None:
        parts = tree.split("/")
        for depth in range(2, len(parts)):
            above = "/".join(parts[:depth])
            if above in snapshot:
                raise MemoryToolError(
                    f"Cannot create {shown}: /{above} is a file, not a directory. "
                    "Choose a path that does not pass through a file"
                )

    def _check_limits(self, snapshot: FileSnapshot, shown: str, writes: dict[str, str]) -> None:
        """Refuse writes that breach a limit and do not reduce what they replace."""
        try:
            self.limits.check(
                snapshot.totals, [(snapshot.read(tree), text) for tree, text in writes.items()]
            )
        except LimitExceeded as exc:
            raise MemoryToolError(_limit_text(exc, shown)) from None


def _limit_text(exc: LimitExceeded, shown: str) -> str:
    """A breached file-store limit in the memory tool's words."""
    figure, maximum = f"{exc.attempted:,}", f"{exc.maximum:,}"
    if exc.limit == "max_file_chars":
        return (
            f"No change was made: {shown} would hold {figure} characters, over the "
            f"limit of {maximum} characters per file (max_file_chars). "
            "Shorten the text or split it across several files."
        )
    if exc.limit == "max_files":
        return (
            f"No change was made: /memories would hold {figure} files, over the limit of "
            f"{maximum} files (max_files). Delete or merge files you no longer "
            "need, then try again."
        )
    return (
        f"No change was made: /memories would hold {figure} characters, over the "
        f"limit of {maximum} characters in all (max_total_chars). "
        "Shorten or delete files you no longer need, then try again."
    )


def _field(command: object, name: str) -> Any:
    """A command's field, or ``None`` when the model left it out."""
    return getattr(command, name, None)


class GitMemoryTool(BetaAbstractMemoryTool):
    """Claude's memory tool over a gitmem file store: every mutating command one
    commit, answers as ``BetaLocalFilesystemMemoryTool`` gives them.

    ``max_file_chars``, ``max_total_chars`` and ``max_files`` (0: off) refuse a write
    that would breach them, with a ``ToolError`` naming the limit.
    """

    def __init__(
        self,
        repo: Repository,
        store: str,
        *,
        author: Author | str,
        max_file_chars: int = 0,
        max_total_chars: int = 0,
        max_files: int = 0,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self.backend = _Backend(repo, store, author, max_file_chars, max_total_chars, max_files)

    def call(self, input: object) -> Any:
        """Run one command (a tool-use input); an unknown command is a ``ToolError``."""
        _check_command(input)
        return super().call(input)

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        """A directory listing two levels deep, or a file's numbered lines."""
        return self.backend.view(_field(command, "path"), _field(command, "view_range"))

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        """Create a file; refused if anything exists at its path."""
        return self.backend.create(_field(command, "path"), _field(command, "file_text"))

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        """Replace text that occurs exactly once in a file."""
        b = self.backend
        return b.str_replace(
            _field(command, "path"), _field(command, "old_str"), _field(command, "new_str")
        )

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        """Insert text before a line (0: at the top)."""
        b = self.backend
        return b.insert(
            _field(command, "path"), _field(command, "insert_line"), _field(command, "insert_text")
        )

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        """Delete a file, or a directory with every file in it, in one commit."""
        return self.backend.delete(_field(command, "path"))

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        """Move a file or directory in one commit; each file's history shows the move."""
        return self.backend.rename(_field(command, "old_path"), _field(command, "new_path"))

    def clear_all_memory(self) -> str:
        """Delete every file under /memories in one commit (the history stays)."""
        return self.backend.clear_all_memory()


class AsyncGitMemoryTool(BetaAsyncAbstractMemoryTool):
    """The async twin of ``GitMemoryTool``: each command runs in a worker thread."""

    def __init__(
        self,
        repo: Repository,
        store: str,
        *,
        author: Author | str,
        max_file_chars: int = 0,
        max_total_chars: int = 0,
        max_files: int = 0,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self.backend = _Backend(repo, store, author, max_file_chars, max_total_chars, max_files)

    async def call(self, input: object) -> Any:
        """Run one command (a tool-use input); an unknown command is a ``ToolError``."""
        _check_command(input)
        return await super().call(input)

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        """A directory listing two levels deep, or a file's numbered lines."""
        return await _in_thread(
            self.backend.view, _field(command, "path"), _field(command, "view_range")
        )

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        """Create a file; refused if anything exists at its path."""
        return await _in_thread(
            self.backend.create, _field(command, "path"), _field(command, "file_text")
        )

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        """Replace text that occurs exactly once in a file."""
        return await _in_thread(
            self.backend.str_replace,
            _field(command, "path"),
            _field(command, "old_str"),
            _field(command, "new_str"),
        )

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        """Insert text before a line (0: at the top)."""
        return await _in_thread(
            self.backend.insert,
            _field(command, "path"),
            _field(command, "insert_line"),
            _field(command, "insert_text"),
        )

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        """Delete a file, or a directory with every file in it, in one commit."""
        return await _in_thread(self.backend.delete, _field(command, "path"))

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        """Move a file or directory in one commit; each file's history shows the move."""
        return await _in_thread(
            self.backend.rename, _field(command, "old_path"), _field(command, "new_path")
        )

    async def clear_all_memory(self) -> str:
        """Delete every file under /memories in one commit (the history stays)."""
        return await _in_thread(self.backend.clear_all_memory)


async def _in_thread(fn: Callable[..., T], *args: object) -> T:
    return await anyio.to_thread.run_sync(functools.partial(fn, *args))


def _check_command(input: object) -> None:
    name = cast(dict[str, object], input).get("command") if isinstance(input, dict) else None
    if name not in _COMMANDS:
        raise MemoryToolError(
            f"Unknown command: {name!r}. Use one of: view, create, str_replace, insert, "
            "delete, rename"
        )
