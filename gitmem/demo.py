"""``gitmem demo``: a scripted session that shows what gitmem does, in a few screens.

Two agents of one profile share a markdown store; a scratchpad subagent keeps its own
notebook with a code memory; a routine agent keeps a whole-file notebook; an
orchestrator curates rows with a lifecycle; an observer watches a run and the next run
starts with its panel. Every step is a real call on a real repository.
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime

from gitmem import ops
from gitmem.binding import Agent
from gitmem.capability import Capability
from gitmem.holder import Holder, ToolResult
from gitmem.limits import Limits
from gitmem.observe import ObservationLog, Recorder, ScriptedModel, Worker, panel
from gitmem.repository import Repository
from gitmem.types import Author

__all__ = ["run_demo"]

CSV_CODE = """export function parseCsv(text: string): string[][] {
  return text
    .trim()
    .split("\\n")
    .map((line) => line.split(",").map((cell) => cell.trim().replace(/^"|"$/g, "")));
}
"""

CSV_PROGRAM = """import { memories } from "gitmem";

memories.writeMemory({
  name: "csv-tools",
  description: "Parsing the vendor CSV exports, which quote inconsistently.",
  body: "The third column is sometimes quoted and sometimes not; parseCsv handles both.",
  code: %s,
  onUse: 'views.openText("csv-notes", "Row 1 is a header on exports after March.");',
});
console.log("stored csv-tools");
"""

USE_PROGRAM = """import { csvTools } from "gitmem";

const rows = csvTools.parseCsv('region,"units",price\\nnorth,12,"3.50"\\nsouth,"7",4.10');
console.log(`parsed ${rows.length} rows; header: ${rows[0].join(" | ")}`);
"""


def run_demo(path: str | None = None, echo: Callable[[str], None] = print) -> None:
    """Run the scripted session on the repository at ``path`` (default: a new temporary
    folder, left in place for the console to show)."""
    # the repository stays, so the console can show what the session did
    _session(path or f"{tempfile.mkdtemp(prefix='gitmem-demo-')}/memory.git", echo)


def _session(path: str, echo: Callable[[str], None]) -> None:
    def say(title: str) -> None:
        echo("")
        echo(f"== {title} ==")

    def show(who: str, name: str, args: dict[str, object], holder: Holder) -> ToolResult:
        result = holder.call(name, args)
        shown = ", ".join(f"{k}={_short(v)}" for k, v in args.items())
        echo(f"{who} → {name}({shown})")
        echo(f"   [{result.kind}] {result.text}")
        return result

    repo = Repository.init(path)
    echo(f"gitmem demo: a real repository at {repo.directory}")

    markdown = Capability(
        "markdown",
        "shared",
        Limits(max_len_per_memory=2000, max_len_index=400, max_len_description=60),
    )
    scratchpad = Capability(
        "scratchpad",
        "isolated",
        Limits(max_count=8, max_total_len=4000, max_len_description=80),
    )

    say("Two agents of the profile 'ops' share one markdown store")
    alice = repo.bind(markdown, Agent("ops", "alice", "root"))
    bob = repo.bind(markdown, Agent("ops", "bob", "implementer"))
    assert alice is not None and bob is not None
    echo(f"alice binds {alice.store_id} (scope {alice.scope}, writable {alice.writable})")
    echo(f"bob binds {bob.store_id}; his first turn pins the index: {bob.pinned_block()!r}")

    say("alice curates her notes")
    show(
        "alice",
        "create_memory",
        {
            "name": "deploy-runbook",
            "description": "how the staging cluster is rolled",
            "body": "1. drain the canary\n2. roll the rest in batches of 5\n",
        },
        alice,
    )
    show(
        "alice",
        "create_memory",
        {
            "name": "api-conventions",
            "description": "error envelope rules",
            "body": "Errors are {error: {code, message}}.\n",
        },
        alice,
    )
    show(
        "alice",
        "create_memory",
        {
            "name": "everything",
            "description": "a description far too long to be paid for on every turn, "
            "because it rambles on",
            "body": "...",
        },
        alice,
    )
    show(
        "alice",
        "edit_memory",
        {
            "name": "api-conventions",
            "old_text": "Errors are {error: {code, message}}.\n",
            "new_text": "Errors are {error: {code, message}}.\nPages use ?cursor=, never offsets.\n",
            "description": "error envelope + pagination rules",
        },
        alice,
    )

    say("bob's next turn: a notice, while his pinned index stays byte-identical")
    echo(bob.notices() or "(no notice)")
    echo(f"bob's pinned index is still {bob.pinned_block()!r}")
    show("bob", "read_memory", {"name": "deploy-runbook"}, bob)

    say("A compaction boundary rebuilds bob's index")
    bob.compact()
    echo(bob.pinned_block())

    say("A scratchpad subagent keeps a code memory (responses-as-code)")
    helper = repo.bind(scratchpad, Agent("analyst", "carol", "subagent", spawner=alice))
    assert helper is not None
    echo(f"carol binds {helper.store_id} (scratchpad, her own notebook)")
    try:
        result = helper.run_program(CSV_PROGRAM % json.dumps(CSV_CODE))
        echo(f"program 1 → {result.output.strip() or result.error}")
        for view in helper.take_views():
            echo(f"   view opened by the load: {view.title}: {view.text.splitlines()[0]}")
        result = helper.run_program(USE_PROGRAM)
        echo(f"program 2 → {result.output.strip() or result.error}")
        helper.end_turn()
        for view in helper.take_views():
            echo(f"   next turn, the onUse view: {view.title}: {view.text}")
        echo("carol's pinned block:")
        echo(helper.pinned_block())
    finally:
        helper.close()

    say("The state, with peaks")
    show("alice", "delete_memory", {"name": "deploy-runbook"}, alice)
    state = alice.state()
    echo(
        f"{state['store']}: {_memories(state['totals']['count'])}, "
        f"{state['totals']['chars']} characters now; peaks: "
        f"{_memories(state['peaks']['count'])}, {state['peaks']['chars']} characters"
    )

    _notebook_scene(repo, say, show, echo)
    _curated_scene(repo, say, show, echo)
    _observer_scene(repo, say, echo)

    say(f"git log {alice.store_id}")
    for rev in reversed(repo.revisions(alice.store_id)):
        when = datetime.fromtimestamp(rev.time, UTC).strftime("%H:%M:%S")
        echo(f"{rev.commit[:10]} {when} {rev.author:<6} {rev.op} {rev.slug} (r{rev.revision})")
    echo("")
    echo(f"Inspect it yourself: git --git-dir={repo.directory} log --all")
    echo("Or see and correct it in the console:")
    echo(f"    gitmem --repo {shlex.quote(repo.directory)} console --open")
    repo.close()


Show = Callable[[str, str, dict[str, object], Holder], ToolResult]


def _notebook_scene(
    repo: Repository, say: Callable[[str], None], show: Show, echo: Callable[[str], None]
) -> None:
    say("A routine agent keeps one notebook file, rewritten whole")
    notebook = Capability("notebook", "isolated", Limits(max_len_per_memory=200))
    monday = repo.bind(notebook, Agent("digest", "digest-mon", "root"))
    assert monday is not None
    text = "- resume: the March invoices, from batch 41\n- the vendor API rate-limits at 10/s\n"
    show("digest-mon", "memory_write", {"content": text}, monday)
    show("digest-mon", "memory_write", {"content": text}, monday)
    show("digest-mon", "memory_write", {"content": "x" * 201}, monday)
    operator = Author("Ada Operator", "ada@example.org")
    ops.notebook_save(repo, monday.store_id, operator, text + "- never email the CFO directly\n", 1)
    echo("the operator saves a line of her own; the agent's version stays in the history")
    monday.compact()
    echo("the <memory> section, renewed at the boundary, ends with the live text:")
    echo("   " + "\n   ".join(monday.system_prompt().splitlines()[-4:]))
    for row in ops.notebook_timeline(repo, monday.store_id):
        echo(f"   v{row['version']} by {row['author']}: +{row['added']} -{row['removed']} lines")


def _curated_scene(
    repo: Repository, say: Callable[[str], None], show: Show, echo: Callable[[str], None]
) -> None:
    say("An orchestrator curates rows with a lifecycle")
    rows = Capability("curated", "shared", Limits(max_len_description=120))
    orch = repo.bind(rows, Agent("orchestrator", "orch-1", "root"))
    assert orch is not None
    for args in (
        {"name": "tz", "description": "Fact: the user works in UTC+2", "owner": "user"},
        {
            "name": "tz-nov",
            "description": "Fact: the user works in UTC+1 since November",
            "owner": "user",
        },
        {
            "name": "deploy-hang",
            "description": "Pending: staging deploys hang at step 3",
            "owner": "project",
            "project": "alpha",
            "role": "thread",
        },
        {"name": "tz-nov", "description": "Note: a duplicate", "owner": "user"},
    ):
        show("orch-1", "add_row", {**args, "body": "Said in the 11-02 session."}, orch)
    show("orch-1", "link_rows", {"source": "tz-nov", "kind": "supersedes", "target": "tz"}, orch)
    show("orch-1", "append_row", {"name": "deploy-hang", "text": "Third time on 11-03."}, orch)
    later = repo.bind(rows, Agent("orchestrator", "orch-2", "root"))
    assert later is not None
    echo("the next session is born with (`tz` was superseded and left it):")
    echo("   " + "\n   ".join(later.pinned_block().splitlines()))
    show("orch-2", "reclassify_row", {"name": "deploy-hang", "status": "closed"}, later)


_OBSERVED = {
    "You are the observer": """<observation>
type: bugfix
title: Nightly export failed on a byte-order mark
files: export/csv.py
keywords: export, csv, utf-8
facts:
- vendor files start with a UTF-8 byte-order mark
- export/csv.py now opens them with encoding utf-8-sig
narrative: The nightly export crashed with a UnicodeDecodeError on vendor files that
start with a byte-order mark. Opening them as utf-8-sig fixed it.
source: toolu_2
</observation>""",
    "You summarize": """<summary>
request: find why the nightly export fails
investigated: the failing test and export/csv.py
learned: vendor files carry a byte-order mark
completed: export/csv.py reads utf-8-sig; the test passes
next_steps: run the export against last week's files
</summary>""",
    "You are the librarian": """<file name="active_context.md">- nightly export fixed; next: rerun last week's files (sum-0)</file>
<file name="decisions.md">- vendor files are read as utf-8-sig, never plain utf-8 (obs-0)</file>
<file name="lessons.md">- [global] a UnicodeDecodeError at byte 0 is often a byte-order mark (obs-0)</file>
<file name="notes.md">- export/csv.py reads the vendor files (obs-0)</file>""",
}


def _observer_scene(
    repo: Repository, say: Callable[[str], None], echo: Callable[[str], None]
) -> None:
    say("An observer watches a run; the next run starts with its panel")
    recorder = Recorder(repo.directory, "demo-run", worker=False)
    recorder.prompt(
        "Why does the nightly export fail? <private>staging password: hunter2</private>"
    )
    recorder.tool(
        "Bash",
        {"command": "pytest tests/test_export.py"},
        "1 failed: UnicodeDecodeError",
        call_id="toolu_1",
    )
    recorder.tool("Edit", {"file_path": "export/csv.py"}, "encoding='utf-8-sig'", call_id="toolu_2")
    recorder.final("Fixed: export/csv.py opens vendor files as utf-8-sig.")
    recorder.close()
    echo("the run's hooks spooled its prompt, two tool calls and the final message")
    echo("(what was inside <private> never reached the spool)")

    def answer(prompt: str, payload: str) -> str:
        text = next((a for start, a in _OBSERVED.items() if prompt.startswith(start)), "")
        for kind in ("obs", "sum"):  # the librarian cites the ids it was given
            at = payload.find(f"## {kind}-")
            if at >= 0:
                text = text.replace(f"({kind}-0)", f"({payload[at + 3 : at + 13]})")
        return text

    user_repo = os.path.join(os.path.dirname(repo.directory), "user-lessons.git")
    Worker(repo, model=ScriptedModel(answer, name="scripted"), user_repo=user_repo).drain()
    for rev in reversed(repo.file_revisions("observations")):
        if rev.path != "index.md":
            echo(f"   {rev.commit[:10]} {rev.author:<10} {rev.op} {rev.path}")
    echo("the next run's SessionStart context:")
    echo("   " + "\n   ".join(panel(ObservationLog(repo), user_repo=user_repo).splitlines()))


def _memories(count: int) -> str:
    return f"{count} memory" if count == 1 else f"{count} memories"


def _short(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + '…"'
