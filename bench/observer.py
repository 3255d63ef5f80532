"""The observer: capture, the panel and search, each beside its peer in the same run.

1. The capture hook as a process (``gitmem observe capture post-tool-use`` with a Claude
   Code PostToolUse event on stdin), beside ``python -c pass`` (goal: <= 2x): both of a
   plain venv with the wheel installed, as a user has it (see ``installed.py``). And the
   plugin's prompt and Stop hooks (``gitmem hook claude-code user-prompt-submit`` and
   ``stop``) for a prompt with nothing to give and a turn that read no memory, as most
   are, beside the same (goal: <= 2x).
2. Capture inside a Python harness: ``Recorder.tool`` per tool call (goal: <= 50 us
   median), beside the bare ``json.dumps`` + ``os.write`` of the same record.
3. The panel over a year of daily session files (goal: <= 20 ms), beside ``git show`` of
   the five files it reads.
4. ``mem_search`` over that year (goal: <= 10 ms; first in a process: the block index
   read from its file, and again: the same head searched again), beside ``git grep -i
   -c`` on the same files; and, for the record, the block index made from nothing and
   brought up to date after a day's new entries.

Medians; processes alternate so load on the machine falls on both alike. Wall-clock
time, with CPU time (user + system) beside it: on a shared machine the wall time can be
many times the CPU time. The figures are indicative on a loaded machine.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import tempfile
import time

from figures import Figure, median, pair, run, timed
from installed import Installed, install

from gitmem import Agent, Capability, Repository
from gitmem.limits import LIMITS
from gitmem.observe import ObservationLog, Recorder, mem_search, panel
from gitmem.observe import blocks as blocks_module
from gitmem.observe.entries import Entry
from gitmem.observe.logbook import LOG_STORE, Trail, author
from gitmem.store import FileSnapshot
from gitmem.types import FileChange, FileEdit

RUNS = 11
DAYS = 365
PER_DAY = 12

WORDS = [
    "auth",
    "token",
    "refresh",
    "cache",
    "build",
    "deploy",
    "index",
    "schema",
    "migration",
    "parser",
    "retry",
    "queue",
    "worker",
    "spool",
    "panel",
    "budget",
    "config",
    "release",
    "sandbox",
    "guard",
    "secret",
    "merge",
    "sync",
    "hook",
] + [f"{part}{n}" for part in ("module", "service", "table", "flag", "endpoint") for n in range(60)]
"""A year's vocabulary: common words, and the names of a project's many parts."""


def line(label: str, ours: Figure, peer: Figure, peer_name: str, goal: str, limit: float) -> None:
    """The figures, their ratio, and the goal (``limit`` ms, or a ratio when ``goal``
    is one) judged on wall time and, for a machine under load, on CPU time too."""
    ratio = goal.endswith("x")
    wall = ours[0] / peer[0] if ratio else ours[0]
    cpu = ours[1] / peer[1] if ratio else ours[1]
    print(
        f"   {label:<30} {ours[0]:9.3f} ms (cpu {ours[1]:8.3f})   {peer_name:<26} "
        f"{peer[0]:9.3f} ms (cpu {peer[1]:8.3f})   ratio {ours[0] / peer[0]:6.2f}x   "
        f"goal {goal}: {'met' if wall <= limit else 'MISSED'}"
        f" (on cpu: {'met' if cpu <= limit else 'MISSED'})"
    )


def bench_hook(work: str, user: Installed) -> None:
    print("1. the capture hook as a process")
    print(f"   {user.describe()}")
    repo_dir = os.path.join(work, "hook.git")
    Repository.init(repo_dir).close()
    event = os.path.join(work, "event.json")
    with open(event, "w", encoding="utf-8") as handle:
        json.dump(
            {
                "session_id": "bench",
                "hook_event_name": "PostToolUse",
                "cwd": work,
                "tool_name": "Bash",
                "tool_input": {"command": "make test"},
                "tool_response": {"stdout": "ok " * 200, "stderr": ""},
                "tool_use_id": "toolu_bench",
            },
            handle,
        )
    env = {**os.environ, "GITMEM_REPO": repo_dir}
    floor = [user.python, "-c", "pass"]
    capture = [user.gitmem, "observe", "capture", "post-tool-use"]
    a, b = pair(capture, floor, RUNS, event, env)
    line("gitmem observe capture", a, b, "python -c pass", "<= 2x", 2)
    bench_prompt(work, user)


def bench_prompt(work: str, user: Installed) -> None:
    """The plugin's prompt hook, as Claude Code runs it at every prompt, for a session
    whose prompt has nothing to give (started, nothing new in its store)."""
    repo_dir = os.path.join(work, "prompt.git")
    cap = Capability.from_dict(
        {
            "id": "memories",
            "enabled": True,
            "implementation": "markdown",
            "params": {"scope": "shared", **dict.fromkeys(LIMITS, 0)},
        }
    )
    cap_file = os.path.join(work, "capability.json")
    with open(cap_file, "w", encoding="utf-8") as handle:
        json.dump(cap.to_dict(), handle)
    with Repository.init(repo_dir) as repo:
        other = repo.bind(cap, Agent("claude-code", "teammate"))
        assert other is not None
        for i in range(200):
            other.call(
                "create_memory",
                {"name": f"note-{i:03d}", "description": f"note {i}", "body": "body\n" * 10},
            )
    transcript = os.path.join(work, "transcript.jsonl")
    with open(transcript, "w", encoding="utf-8") as handle:
        handle.write('{"type": "user"}\n')
    events: dict[str, str] = {}
    for name, extra in (
        ("SessionStart", {"source": "startup"}),
        ("UserPromptSubmit", {}),
        ("Stop", {}),
    ):
        events[name] = os.path.join(work, f"{name}.json")
        with open(events[name], "w", encoding="utf-8") as handle:
            json.dump(
                {
                    "session_id": "bench-session",
                    "transcript_path": transcript,
                    "cwd": work,
                    "hook_event_name": name,
                    **extra,
                },
                handle,
            )
    env = {**os.environ, "GITMEM_REPO": repo_dir}
    hook = [user.gitmem, "hook", "claude-code"]
    plugin = ["--capability", cap_file, "--profile", "claude-code", "--per-session"]
    # the bench is the client: each hook is its child, so all name one instance
    run([*hook, "session-start", *plugin], events["SessionStart"], env)
    floor = [user.python, "-c", "pass"]
    for event, name in (("user-prompt-submit", "UserPromptSubmit"), ("stop", "Stop")):
        a, b = pair([*hook, event, *plugin], floor, RUNS, events[name], env)
        label = "a quiet prompt" if event != "stop" else "a quiet Stop"
        line(f"gitmem hook ({label})", a, b, "python -c pass", "<= 2x", 2)


def bench_in_process(work: str) -> None:
    print("2. capture inside a Python harness, per tool call")
    recorder = Recorder(work, "harness", worker=False, spool_max=1 << 30)
    tool_input = {"command": "pytest -q tests/test_auth.py", "timeout": 120}
    output = {"stdout": "." * 400 + "\n12 passed", "stderr": ""}
    fd = os.open(os.path.join(work, "bare.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    ours: list[float] = []
    peer: list[float] = []
    for i in range(5000):
        start = time.perf_counter()
        recorder.tool("Bash", tool_input, output, call_id=f"toolu_{i}")
        ours.append(time.perf_counter() - start)
        start = time.perf_counter()
        record = {
            "e": "tool",
            "s": "harness",
            "tool": "Bash",
            "input": tool_input,
            "output": output,
        }
        os.write(fd, (json.dumps(record) + "\n").encode())
        peer.append(time.perf_counter() - start)
    recorder.close()
    os.close(fd)
    a = statistics.median(ours) * 1e6
    b = statistics.median(peer) * 1e6
    print(
        f"   {'Recorder.tool':<30} {a:9.1f} us   {'json.dumps + os.write':<26} {b:9.1f} us   "
        f"ratio {a / b:6.2f}x   goal <= 50 us: {'met' if a <= 50 else 'MISSED'}"
    )


def build_year(path: str) -> Repository:
    """A log with a year of daily session files, an index and the curated files."""
    repo = Repository.init(path)
    rng = random.Random(2026)
    files: dict[str, str] = {}
    rows: list[str] = []
    start = time.mktime((2026, 1, 1, 12, 0, 0, 0, 0, 0))
    for day in range(DAYS):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start + day * 86400))
        blocks: list[str] = []
        for n in range(PER_DAY):
            pick = rng.sample(WORDS, 4)
            entry = Entry(
                "discovery",
                f"{pick[0]} {pick[1]} work on day {day}",
                f"session-{day}-{n // 4}",
                narrative=" ".join(pick * 8) + f" (entry {n} of day {day}).",
                keywords=tuple(pick[:3]),
                facts=(f"{pick[2]} needs {pick[3]}",),
                source=f"toolu_{day}_{n}",
                time=stamp,
            )
            blocks.append(entry.block())
            rows.append(entry.row(f"{stamp[:10]}.md"))
        files[f"sessions/{stamp[:10]}.md"] = "\n".join(blocks)
    files["index.md"] = "\n".join(rows) + "\n"
    for name in ("active_context.md", "decisions.md", "lessons.md", "notes.md"):
        files[name] = "".join(
            f"- {name} bullet {i} about {WORDS[i]} (obs-00000{i % 10})\n" for i in range(20)
        )

    def change(_: FileSnapshot) -> FileChange:
        return FileChange(tuple(FileEdit("create", p, t) for p, t in files.items()))

    repo.publish_files(LOG_STORE, author("observer"), change)
    return repo


def add_day(repo: Repository, log: ObservationLog, query: str) -> None:
    """A new entry in today's session file, then a search (the index catches up)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    entry = Entry("discovery", f"auth check {time.time()}", "today", narrative="auth.", time=stamp)
    log.add([entry], "observer", Trail("today", "", ""))
    mem_search(log, query, 5)


def bench_year(work: str) -> None:
    path = os.path.join(work, "year.git")
    t = time.perf_counter()
    repo = build_year(path)
    print(
        f"3. the panel over a year of daily session files ({DAYS} files, built in {time.perf_counter() - t:.1f} s)"
    )
    user = os.path.join(work, "no-user.git")
    log = ObservationLog(repo)
    git = ["git", f"--git-dir={path}"]
    branch = f"refs/heads/{LOG_STORE}"
    reads = [
        f"{branch}:{n}"
        for n in ("active_context.md", "decisions.md", "lessons.md", "notes.md", "index.md")
    ]
    panel(log, user_repo=user)
    ours = median([timed(lambda: panel(log, user_repo=user)) for _ in range(RUNS)])
    peer = median([run([*git, "show", *reads]) for _ in range(RUNS)])
    line("panel()", ours, peer, "git show (5 files)", "<= 20 ms", 20)

    print("4. mem_search over the same year")
    query = "auth token refresh"

    index = blocks_module.index_path(repo.directory, LOG_STORE)

    def made() -> None:
        blocks_module._held.clear()  # pyright: ignore[reportPrivateUsage]
        os.remove(index)
        mem_search(log, query, 5)

    def cold() -> None:
        blocks_module._held.clear()  # pyright: ignore[reportPrivateUsage]
        mem_search(log, query, 5)

    mem_search(log, query, 5)
    made_figure = median([timed(made) for _ in range(3)])
    cold_figure = median([timed(cold) for _ in range(RUNS)])
    mem_search(log, query, 5)
    warm = median([timed(lambda: mem_search(log, query, 5)) for _ in range(RUNS)])
    updated = median([timed(lambda: add_day(repo, log, query)) for _ in range(3)])
    peer = median(
        [
            run([*git, "grep", "-i", "-c", "-e", "auth", branch, "--", "sessions/"])
            for _ in range(RUNS)
        ]
    )
    line("mem_search (first in a process)", cold_figure, peer, "git grep -i -c", "<= 10 ms", 10)
    line("mem_search (again)", warm, peer, "git grep -i -c", "<= 10 ms", 10)
    print(
        f"   block index made from nothing {made_figure[0]:9.3f} ms (cpu {made_figure[1]:8.3f}); "
        f"brought up to date after a day's entries, with the search {updated[0]:9.3f} ms "
        f"(cpu {updated[1]:8.3f})"
    )
    repo.close()


def main() -> None:
    started = time.perf_counter()
    work = tempfile.mkdtemp(prefix="gitmem-bench-observer-")
    try:
        bench_hook(work, install(os.path.join(work, "install")))
        bench_in_process(work)
        bench_year(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\ntotal bench time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
