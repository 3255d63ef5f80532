"""A bridge call's reply reaches its own call, whole, whatever the order in which the
main thread's writes and wake-ups reach the worker parked on the shared buffer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_beside_runtime
from helpers_soak import size

from gitmem.sandbox import Pool, Sandbox
from gitmem.sandbox import process as process_module
from gitmem.sandbox.launch import runtime_file

# One part of a reply in the shared buffer, as the runtime sizes it.
PART = 1 << 16
# Reply sizes on every edge of a part: empty, one byte, a part and a byte either side,
# several parts.
SIZES = [0, 1, 2, PART - 40, PART - 1, PART, PART + 1, 2 * PART + 7, 3 * PART + 1]

# The main thread made slow between writing a part and waking the worker, as a busy
# machine makes it when it deschedules that thread there: the worker, which found the
# part without waiting, has taken it and parked on its next call by the time the
# wake-up arrives.
LATE = """
const lateNotify = (array, index) => {
  const until = performance.now() + 1;
  while (performance.now() < until) {}
  return Atomics.notify(array, index);
};
"""

PROGRAM = """
import { memories } from "gitmem";
const sizes = %s;
let wrong = 0;
for (let i = 0; i < %d; i++) {
  const n = sizes[i %% sizes.length] + (i %% 3);
  const text = memories.echo({ i, n });
  const head = `reply ${i}:`;
  if (text.length !== Math.max(n, head.length) || !text.startsWith(head)) wrong++;
}
console.log(`wrong ${wrong}`);
"""


def echo(name: str, args: dict[str, object]) -> tuple[bool, str]:
    """Each reply names the call it answers and is as long as the call asks."""
    head = f"reply {args['i']}:"
    n = int(str(args["n"]))
    return True, head + "x" * max(0, n - len(head))


@pytest.fixture
def late_box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    """A sandbox whose runtime wakes the worker only well after writing each part."""
    text = runtime_file().read_text()
    assert text.count("Atomics.notify(") >= 1
    patched = tmp_path / "runtime.js"
    patched.write_text(LATE + text.replace("Atomics.notify(", "lateNotify("))
    monkeypatch.setattr(process_module, "runtime_file", lambda: patched)
    pool = Pool(reaper=False)
    box = Sandbox(pool=pool, time_limit=60.0)
    yield box
    box.close()
    pool.close()


def run_calls(box: Sandbox, calls: int) -> None:
    result = box.run(PROGRAM % (json.dumps(SIZES), calls), modules={}, bridge=echo)
    assert result.ok, result
    assert result.output == "wrong 0\n"


def test_a_late_wake_up_is_not_taken_for_the_next_calls_reply(late_box: Sandbox) -> None:
    """Calls whose replies span zero to four parts, each woken late: every call gets its
    own reply, whole, and none fails."""
    run_calls(late_box, 120)


@pytest.mark.soak
def test_a_thousand_calls_a_run_with_late_wake_ups(late_box: Sandbox) -> None:
    """As many calls as a run may make, run after run, each woken late."""
    for _ in range(size(1, 20)):
        run_calls(late_box, size(200, 1000))


WORKER = """
import { replyReader } from "./runtime.js";
self.onmessage = ({ data }) => {
  const read = replyReader(data.sab);
  const wrong = [];
  for (let i = 0; i < data.sizes.length; i++) {
    // Some asks are given up at once, as a program that catches a throw from inside a
    // call and calls again gives them up: the next read asks afresh.
    for (let round = 0; ; round++) {
      const giveUp = i % 3 === 0 && round === 0;
      const mid = i % 3 === 1 && round === 0;
      let bytes;
      try {
        bytes = read(
          (id) => {
            postMessage({ op: "call", id, i, decoy: giveUp });
            if (giveUp) throw "given up";
          },
          (id) => {
            postMessage({ op: "more", id });
            if (mid) throw "given up";
          },
        );
      } catch (e) {
        if (e !== "given up") wrong.push(`${i}: ${e}`);
        continue;
      }
      const n = data.sizes[i];
      if (bytes.length !== n) wrong.push(`${i}: ${bytes.length} bytes, not ${n}`);
      else for (let k = 0; k < n; k++) {
        if (bytes[k] !== ((i * 7 + k) & 255)) {
          wrong.push(`${i}: byte ${k}`);
          break;
        }
      }
      break;
    }
  }
  postMessage({ op: "done", wrong });
};
"""

DRIVER = """
import { ReplyWriter } from "./runtime.js";
const sizes = JSON.parse(await new Response(Deno.stdin.readable).text());
const sab = new SharedArrayBuffer(8 + (1 << 16));
const head = new Int32Array(sab, 0, 2);
const writer = new ReplyWriter(sab);
const payload = (i, n, salt) => {
  const bytes = new Uint8Array(n);
  for (let k = 0; k < n; k++) bytes[k] = (i * 7 + k + salt) & 255;
  return bytes;
};
const pause = () => new Promise((resolve) => setTimeout(resolve, 1));
// Wake-ups that answer nothing: the worker must go back to waiting.
const stray = () => {
  Atomics.notify(head, 0);
  setTimeout(() => Atomics.notify(head, 0), 0);
};
const worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
const queue = [];
let wake = null;
worker.onmessage = ({ data }) => {
  queue.push(data);
  if (wake) wake();
};
const next = async () => {
  while (queue.length === 0) await new Promise((resolve) => (wake = resolve));
  return queue.shift();
};
worker.postMessage({ sab, sizes });
for (;;) {
  const message = await next();
  if (message.op === "done") {
    console.log(JSON.stringify(message.wrong));
    break;
  }
  stray();
  await pause();
  if (message.op === "call") {
    // A reply for a given-up ask, written once the worker has asked afresh: the worker
    // must not take it for the new ask's.
    writer.start(message.id, payload(message.i, sizes[message.i], message.decoy ? 1 : 0));
  } else writer.more(message.id);
  stray();
}
worker.terminate();
"""


def test_a_reply_for_a_given_up_ask_is_never_read(tmp_path: Path) -> None:
    """The worker's and the main thread's halves of the handoff, alone: replies of every
    size reach their reads whole, through stray wake-ups, asks given up before the reply
    came or halfway through it, and replies written for those asks."""
    sizes = [SIZES[k % len(SIZES)] for k in range(60)]
    files = {"worker.js": WORKER, "driver.js": DRIVER}
    printed = run_beside_runtime(tmp_path, "replyReader, ReplyWriter", files, json.dumps(sizes))
    assert json.loads(printed) == []
