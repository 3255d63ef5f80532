"""A push's new commits checked in order, each against the store as the commits before
it left it: what the store is (its kind and recorded limits, see
:mod:`gitmem.pushrecord`), what each commit writes (parsed, named and totalled by
:class:`~gitmem.store.pushcheck.PushReader`), the screens every write passes (secrets,
the store's guard code) and the limits the store records. The push hooks, sync and
approvals all check what arrives here.
"""

from __future__ import annotations

from gitmem.errors import GitmemError, LimitExceeded
from gitmem.lean.tuples import made
from gitmem.pushrecord import Admitted, hold_record, record_at
from gitmem.store.message import kind_of, overlong
from gitmem.store.pushcheck import PushCommit, PushedEdit, PushedMemory, PushReader, Refused
from gitmem.store.screen import Screen, Write

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from gitmem.limits import Limits
    from gitmem.types import Memory

__all__ = ["Broken", "check_commits"]


class Broken(Exception):
    """Every rule one commit breaks."""

    def __init__(self, problems: list[Refused]) -> None:
        super().__init__(problems[0].message)
        self.problems = problems


def check_commits(
    reader: PushReader,
    store: str,
    old: str | None,
    shas: list[str],
    screens: list[Screen],
    widened: list[str] | None = None,
    *,
    limits: bool = True,
) -> None:
    """Check ``shas`` (parents first) against the store as recorded at ``old``; a new
    store takes its kind and capability from the first commit that records them. Each
    commit is read as the kind of store it lands in, whatever its trailers claim; the
    first that breaks a rule is refused with every rule it breaks (``limits=False``:
    not the kind, widen and limit rules)."""
    record = record_at(reader, old)
    index = _IndexSet(reader)
    admitted = Admitted(reader, old)
    # a store stands on the commits gitmem made on its first-parent line (its kind, its
    # recorded limits): a line begun afresh beside it would leave them behind
    stands = old is not None and reader.standing(old) is not None
    for sha in shas:
        facts = reader.facts(sha)
        commit = reader.commit(sha, record.kind or kind_of(facts))
        problems: list[Refused] = []  # what the store is, first: it explains the rest
        if stands and facts is None and reader.standing(commit.parent) is None:
            problems.append(Refused("history", sha, _AFRESH))
        recorded = None
        if limits:
            record, recorded = hold_record(reader, record, commit, widened, problems)
        # every read of the store reads its head's message: a longer one stays out
        too_long = overlong(reader.head(sha).message, facts)
        if too_long is not None:
            problems.append(Refused("message", sha, too_long))
        problems += commit.problems
        _check_commit(reader, store, commit, screens, index, recorded, problems, admitted)
        if problems:
            raise Broken(problems)


_AFRESH = (
    "its first parent descends from no commit gitmem made, so the store would stand on a "
    "line begun afresh and leave its recorded kind and limits behind; merge with the "
    "store's head as the first parent"
)


class _IndexSet:
    """The memories as of the last commit checked, kept for maxLenIndex (whose index
    has a line for every memory, changed or not): read whole once, at the push's first
    commit that needs it, then carried from each commit to the next."""

    def __init__(self, reader: PushReader) -> None:
        self.reader = reader
        self.at: str | None = None
        self.memories: dict[str, Memory] = {}

    def before(self, commit: PushCommit) -> dict[str, Memory]:
        """The set as of ``commit``'s first parent; the caller applies the commit to it."""
        if self.at != commit.parent:
            parent = commit.parent
            held = self.reader.memories(parent) if parent is not None else {}
            self.memories = {slug: _memory(m) for slug, m in held.items()}
        self.at = commit.sha
        return self.memories


def _memory(pushed: PushedMemory) -> Memory:
    """The value a pushed memory is, for the checks that take one (the limits, the
    index's lines): only a store that records a capability needs them."""
    from gitmem.types import Memory

    return Memory(*pushed)


def _check_commit(
    reader: PushReader,
    store: str,
    commit: PushCommit,
    screens: list[Screen],
    index: _IndexSet,
    recorded: tuple[str, Limits] | None,
    problems: list[Refused],
    admitted: Admitted,
) -> None:
    """Add to ``problems`` every screen the commit's writes fail and every limit of
    ``recorded`` they break."""
    sha = commit.sha

    held: dict[str, str | None] = {}

    def meta(name: str) -> str | None:  # read once per commit, whatever its slugs
        if name not in held:
            held[name] = admitted.meta(commit.parent, name)
        return held[name]

    screens = screens + admitted.narrowing(commit.parent, screens, meta)

    # the header's other lines (the committer, a signature...): screened with the message
    header = reader.head(sha).header.decode("utf-8", "replace")
    if commit.files is not None:
        files = list(commit.files.items())
        write = Write(store, commit.author, (), files, meta, commit.message, header)
        _screen(screens, sha, write, problems)
        return
    # loops, not comprehensions: a push's every commit (most change one memory) comes
    # here, and a comprehension is a function made and called
    ops: dict[str, str] = {}
    if commit.facts is not None:
        for e in commit.facts.edits:
            ops[e.slug] = e.op
    edits: list[PushedEdit] = []
    for slug, (_, after) in commit.changed.items():
        op = ops.get(slug) or ("delete" if after is None else "write")
        edits.append(made(PushedEdit, (op, slug, after)))
    # the whole commit as one write first: when every screen passes it, each part passes
    # (a screen judges a write's parts each on its own); else the parts are screened one
    # by one, each refusal named: the commit's own words once, then each memory it writes
    whole = made(Write, (store, commit.author, edits, None, meta, commit.message, header))
    parts = not _passes(screens, whole)
    if not parts and recorded is None:
        return  # every screen passed it, and no limit is recorded: nothing more to judge
    if parts:
        _screen(screens, sha, whole._replace(edits=()), problems)
    count, chars = commit.parent_totals.count, commit.parent_totals.chars
    line = _index_line(recorded)
    memories = index.before(commit) if line is not None else None
    for edit, (slug, (before, after)) in zip(edits, commit.changed.items(), strict=True):
        if parts:
            _screen(screens, sha, Write(store, commit.author, (edit,), None, meta), problems)
        if after is not None and recorded is not None:
            old, new = _memory(before) if before is not None else None, _memory(after)
            _hold_limits(sha, recorded, old, new, count, chars, problems)
            if line is not None and memories is not None:
                _hold_index(sha, recorded[1], line, memories, old, new, problems)
        if memories is not None:
            if after is None:
                memories.pop(slug, None)
            else:
                memories[slug] = _memory(after)
        count += (after is not None) - (before is not None)
        chars += (after.chars if after else 0) - (before.chars if before else 0)


def _passes(screens: list[Screen], write: Write) -> bool:
    """Whether every screen lets ``write`` through."""
    try:
        for screen in screens:
            screen.check(write)
    except GitmemError:
        return False
    return True


def _screen(screens: list[Screen], sha: str, write: Write, problems: list[Refused]) -> None:
    """The write path's screens, every one run, each refusal named by its screen's rule."""
    for screen in screens:
        try:
            screen.check(write)
        except GitmemError as exc:
            problems.append(Refused(screen.rule, sha, str(exc)))


def _hold_limits(
    sha: str,
    recorded: tuple[str, Limits],
    before: Memory | None,
    after: Memory,
    count: int,
    chars: int,
    problems: list[Refused],
) -> None:
    from gitmem import strategies  # a push that records no binding never needs them
    from gitmem.limits import check_write

    name, limits = recorded
    strategy = strategies.get(name)
    # the index limit needs every memory's line: held by _hold_index
    aggregate: frozenset[str] = strategy.aggregate_limits if strategy else frozenset()
    applies = aggregate - {"maxLenIndex"}
    try:
        check_write(
            limits,
            applies,
            before,
            after,
            list,
            count=count,
            total_chars=chars,
            index_line=lambda _: "",
        )
    except LimitExceeded as exc:
        grown = before is None or _size(after, exc.limit) > _size(before, exc.limit)
        if grown:
            problems.append(Refused("limit", sha, str(exc)))


def _index_line(recorded: tuple[str, Limits] | None) -> Callable[[Memory], str] | None:
    """How the recorded strategy draws a memory's index line, if maxLenIndex binds it."""
    if recorded is None or not recorded[1].max_len_index:
        return None
    from gitmem import strategies

    strategy = strategies.get(recorded[0])
    if strategy is None or "maxLenIndex" not in strategy.aggregate_limits:
        return None
    return strategy.index_line


def _hold_index(
    sha: str,
    limits: Limits,
    line: Callable[[Memory], str],
    memories: dict[str, Memory],
    before: Memory | None,
    after: Memory,
    problems: list[Refused],
) -> None:
    """maxLenIndex, measured as the tools measure it, over the set before this change
    (``memories``) with ``after`` in place of ``before``. As for the other limits, an
    index already over it (after a merge) may take a change that does not lengthen it."""
    from gitmem.limits import Baseline, Limits, check_write, index_size

    old = line(before) if before is not None else None
    if old is not None and len(line(after)) <= len(old):
        return
    try:
        check_write(
            Limits(max_len_index=limits.max_len_index),
            frozenset({"maxLenIndex"}),
            before,
            after,
            memories.values,
            count=len(memories),
            total_chars=0,
            index_line=line,
            baseline=Baseline(len(memories), 0, lambda: index_size(map(line, memories.values()))),
        )
    except LimitExceeded as exc:
        # the code halves' cap is checked too; _hold_limits has judged it already
        if exc.limit == "maxLenIndex":
            problems.append(Refused("limit", sha, str(exc)))


def _size(memory: Memory, limit: str) -> int:
    if limit == "maxLenDescription":
        return len(memory.description)
    if limit in ("code", "onUse") or "code" in limit.lower():
        return max(len(memory.code), len(memory.on_use))
    return memory.chars
