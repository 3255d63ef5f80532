// The gitmem sandbox runtime: the main module Deno runs for one holder.
//
// It connects back to the Python host over the one Unix socket it may touch
// (path in Deno.args[0]) and serves framed JSON requests: compile, load, run.
// User code never runs on this thread: every module and program is evaluated
// inside a `node:worker_threads` worker, which can be terminated and whose
// heap is capped. Frames are a 4-byte big-endian length and UTF-8 JSON.
//
// Security rests on Deno's permissions and the import map the host writes
// (which turns `file:` and `node:` imports into denied remote imports); the
// hardening below removes what is left (exit, kill, internals, storage) as
// defence in depth.

import { isMainThread, Worker } from "node:worker_threads";
import process from "node:process";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Message = { [key: string]: Json };

interface Settings {
  memoryMb: number;
  outputCap: number;
  loaderRecycle: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// Runs inside every worker, serialised with Function.prototype.toString, so it
// may use nothing from this module's scope. `require` exists only in an eval
// worker's global scope: the bootstrap takes what it needs and deletes it
// before any user code runs.
function workerMain(): void {
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  const wt = g.require("node:worker_threads");
  const inspect: (value: unknown) => string = (value) =>
    g.Deno.inspect(value, { depth: 4, colors: false });
  const parentPort = wt.parentPort;
  const post: (message: unknown) => void = parentPort.postMessage.bind(parentPort);
  const Atom = Atomics;
  const decoder = new TextDecoder();

  for (
    const name of [
      "require",
      "module",
      "exports",
      "__filename",
      "__dirname",
      "Worker",
      "caches",
      "CacheStorage",
      "Cache",
      "BroadcastChannel",
      "localStorage",
      "sessionStorage",
      "nodeBootstrap",
      "alert",
      "confirm",
      "prompt",
      "close",
    ]
  ) {
    try {
      delete g[name];
    } catch {
      // A non-configurable global stays; the permissions still hold.
    }
  }
  const deno = g.Deno;
  for (
    const name of [
      "exit",
      "kill",
      "dlopen",
      "Command",
      "run",
      "spawn",
      "spawnAndWait",
      "spawnAndWaitSync",
    ]
  ) {
    try {
      delete deno[name];
    } catch {
      // As above.
    }
  }
  try {
    delete deno[deno.internal];
    delete deno.internal;
  } catch {
    // As above.
  }
  const proc = g.process;
  for (
    const name of [
      "exit",
      "reallyExit",
      "abort",
      "kill",
      "_kill",
      "binding",
      "_linkedBinding",
      "dlopen",
      "getBuiltinModule",
      "_debugProcess",
      "_debugEnd",
      "_rawDebug",
      "openStdin",
      "loadEnvFile",
      "chdir",
      "setuid",
      "setgid",
      "seteuid",
      "setegid",
      "mainModule",
    ]
  ) {
    try {
      delete proc[name];
      if (name in proc) proc[name] = undefined;
    } catch {
      // As above.
    }
  }

  parentPort.once(
    "message",
    (init: { token: string; sab: SharedArrayBuffer; outputCap: number }) => {
      const token = init.token;
      const flag = new Int32Array(init.sab, 0, 2);
      const data = new Uint8Array(init.sab, 8);
      let written = 0;
      let outputFull = false;
      const send = (message: Record<string, unknown>) => post({ ...message, t: token });

      const write = (args: unknown[]) => {
        if (outputFull) return;
        const text = args.map((a) => (typeof a === "string" ? a : inspect(a))).join(" ") + "\n";
        written += text.length;
        if (written > init.outputCap) outputFull = true;
        send({ op: "out", text });
      };
      const capture = {
        log: (...a: unknown[]) => write(a),
        info: (...a: unknown[]) => write(a),
        debug: (...a: unknown[]) => write(a),
        warn: (...a: unknown[]) => write(a),
        error: (...a: unknown[]) => write(a),
        trace: (...a: unknown[]) => write(a),
        dir: (a: unknown) => write([a]),
        table: (a: unknown) => write([a]),
        assert: (ok: unknown, ...a: unknown[]) => {
          if (!ok) write(["Assertion failed", ...a]);
        },
      };
      Object.defineProperty(g, "console", { value: capture, writable: true, configurable: true });

      let loading = true;
      const call = (name: string, args: unknown): string => {
        if (loading) throw new Error(`memories.${name} cannot be called while a module loads`);
        if (args === undefined) args = {};
        if (args === null || typeof args !== "object" || Array.isArray(args)) {
          throw new TypeError(`memories.${name} takes one object argument`);
        }
        let json: string;
        try {
          json = JSON.stringify(args);
        } catch (e) {
          throw new TypeError(`memories.${name}: the argument is not JSON: ${e}`);
        }
        Atom.store(flag, 0, 0);
        send({ op: "call", name, args: json });
        const chunks: Uint8Array[] = [];
        for (;;) {
          Atom.wait(flag, 0, 0);
          const length = Atom.load(flag, 1);
          const state = Atom.load(flag, 0);
          chunks.push(data.slice(0, length));
          Atom.store(flag, 0, 0);
          if (state !== 2) break;
          send({ op: "more" });
        }
        const total = chunks.reduce((n, c) => n + c.length, 0);
        const bytes = new Uint8Array(total);
        let at = 0;
        for (const c of chunks) {
          bytes.set(c, at);
          at += c.length;
        }
        const reply = JSON.parse(decoder.decode(bytes)) as { ok: boolean; text: string };
        if (!reply.ok) throw new Error(reply.text);
        return reply.text;
      };
      const memories = new Proxy(Object.create(null), {
        get: (_target, name) => {
          if (typeof name !== "string" || name === "then") return undefined;
          return (args?: unknown) => call(name, args);
        },
        set: () => false,
        defineProperty: () => false,
      });
      const views = Object.freeze({
        openText(title: unknown, text: unknown): void {
          if (typeof title !== "string" || typeof text !== "string") {
            throw new TypeError("views.openText(title, text) takes two strings");
          }
          send({ op: "view", title, text });
        },
      });
      Object.defineProperty(g, Symbol.for("gitmem.runtime"), { value: { memories, views } });

      let unhandled: string | null = null;
      g.addEventListener(
        "unhandledrejection",
        (event: { preventDefault(): void; reason: unknown }) => {
          event.preventDefault();
          if (unhandled === null) unhandled = describe(event.reason);
        },
      );
      g.addEventListener("error", (event: { preventDefault(): void; error: unknown }) => {
        event.preventDefault();
        if (unhandled === null) unhandled = describe(event.error);
      });

      const labels: [string, string][] = [];
      const relabel = (text: string): string => {
        for (const [url, label] of labels) text = text.split(url).join(label);
        return text;
      };
      const describe = (error: unknown): string => {
        if (error instanceof Error) {
          const stack = typeof error.stack === "string" ? error.stack : "";
          const frames = relabel(stack)
            .split("\n")
            .filter((line) =>
              /^\s+at /.test(line) && labels.some(([, l]) => line.includes(l + ":"))
            );
          return relabel(`${error.name}: ${error.message}`) +
            (frames.length ? "\n" + frames.join("\n") : "");
        }
        try {
          return "Uncaught " + relabel(inspect(error));
        } catch {
          return "Uncaught error";
        }
      };
      // A module that does not parse fails its import with a message that names
      // the data URL it came from; turn that into "line:column: message".
      const diagnose = (
        error: unknown,
        shift = 0,
      ): { diagnostic: string; where: string } | null => {
        const text = error instanceof Error
          ? `${error.name}: ${error.message}\n${error.stack ?? ""}`
          : String(error);
        const match = /SyntaxError: ([^\n]*)/.exec(text);
        if (!match) return null;
        let message = match[1];
        for (const [url, label] of labels) {
          const at = text.lastIndexOf(url + ":");
          if (at < 0) continue;
          const loc = /^:(\d+):(\d+)/.exec(text.slice(at + url.length));
          if (loc) {
            message = relabel(message);
            const line = Number(loc[1]);
            const column = line === 1 ? Math.max(1, Number(loc[2]) - shift) : Number(loc[2]);
            return { diagnostic: `${line}:${column}: ${message}`, where: label };
          }
        }
        return {
          diagnostic: `1:1: ${relabel(message)}`,
          where: labels.length ? labels[labels.length - 1][1] : "",
        };
      };
      // Blob URLs skip the base64 round trip a data URL costs; each is revoked
      // once its import settles, so nothing outlives the request.
      const toUrl = (source: string, media = "application/typescript") =>
        URL.createObjectURL(new Blob([source], { type: media }));
      const rewrite = (source: string, target: string) =>
        source.replace(
          /(\bfrom\s*|\bimport\s*(?:\(\s*)?)(["'])gitmem\2/g,
          (_m, head) => `${head}${JSON.stringify(target)}`,
        );
      const baseUrl = toUrl(
        'const g = globalThis[Symbol.for("gitmem.runtime")];\nexport const memories = g.memories;\nexport const views = g.views;\n',
        "application/javascript",
      );

      parentPort.on(
        "message",
        async (request: { t: string; op: string; [key: string]: unknown }) => {
          if (request.t !== token) return;
          if (request.op === "compile" || request.op === "load") {
            loading = true;
            // Compiling must not run the code: a throw ahead of it on line 1
            // stops evaluation once parsing and linking have succeeded.
            const stop = request.op === "compile" ? `throw ${JSON.stringify(token)};` : "";
            const source = stop + String(request.source);
            const url = toUrl(rewrite(source, baseUrl));
            const label = request.op === "load" ? String(request.key) : "module";
            labels.push([url, label]);
            try {
              const namespace = await import(url);
              const exports: string[] = [];
              for (const name of Object.keys(namespace)) {
                if (typeof namespace[name] === "function") {
                  exports.push(name);
                }
              }
              send({ op: "result", id: request.id, diagnostic: null, exports });
            } catch (error) {
              if (stop && error === token) {
                send({ op: "result", id: request.id, diagnostic: null, exports: [] });
                return;
              }
              const found = diagnose(error, stop.length);
              const diagnostic = found
                ? found.diagnostic
                : `1:1: ${describe(error).split("\n")[0]}`;
              send({ op: "result", id: request.id, diagnostic, exports: [] });
            } finally {
              labels.pop();
              URL.revokeObjectURL(url);
            }
            return;
          }
          if (request.op === "run") {
            loading = false;
            const modules = request.modules as Record<string, string>;
            let head = `export * from ${JSON.stringify(baseUrl)};\n`;
            for (const [key, source] of Object.entries(modules)) {
              const url = toUrl(rewrite(source, baseUrl));
              labels.push([url, key]);
              head += `export * as ${key} from ${JSON.stringify(url)};\n`;
            }
            const gitmemUrl = toUrl(head, "application/javascript");
            labels.push([gitmemUrl, "gitmem"]);
            const programUrl = toUrl(rewrite(String(request.source), gitmemUrl));
            const kind = String(request.kind);
            labels.push([programUrl, kind]);
            if (kind === "onuse") {
              Object.defineProperty(g, "memories", {
                value: memories,
                writable: true,
                configurable: true,
              });
              Object.defineProperty(g, "views", {
                value: views,
                writable: true,
                configurable: true,
              });
            }
            let error: string | null = null;
            try {
              await import(programUrl);
            } catch (e) {
              const found = diagnose(e);
              if (found) {
                const where = found.where === kind ? "" : ` in module ${found.where}`;
                error = `SyntaxError${where}: ${found.diagnostic}`;
              } else {
                error = describe(e);
              }
            }
            for (const [url] of labels) URL.revokeObjectURL(url);
            if (error === null && unhandled !== null) error = unhandled;
            send({ op: "done", error });
          }
        },
      );
      send({ op: "ready" });
    },
  );
}

class Host {
  private conn: Deno.UnixConn;
  private buffer = new Uint8Array(0);

  constructor(conn: Deno.UnixConn) {
    this.conn = conn;
  }

  async send(message: Message): Promise<void> {
    const body = encoder.encode(JSON.stringify(message));
    const frame = new Uint8Array(4 + body.length);
    new DataView(frame.buffer).setUint32(0, body.length);
    frame.set(body, 4);
    let at = 0;
    while (at < frame.length) at += await this.conn.write(frame.subarray(at));
  }

  async receive(): Promise<Message | null> {
    for (;;) {
      if (this.buffer.length >= 4) {
        const length = new DataView(this.buffer.buffer, this.buffer.byteOffset).getUint32(0);
        if (this.buffer.length >= 4 + length) {
          const body = this.buffer.subarray(4, 4 + length);
          const message = JSON.parse(decoder.decode(body)) as Message;
          this.buffer = this.buffer.slice(4 + length);
          return message;
        }
      }
      const chunk = new Uint8Array(1 << 16);
      const n = await this.conn.read(chunk);
      if (n === null) return null;
      const grown = new Uint8Array(this.buffer.length + n);
      grown.set(this.buffer);
      grown.set(chunk.subarray(0, n), this.buffer.length);
      this.buffer = grown;
    }
  }
}

const CHUNK = 1 << 16;
// The exit status that tells the host this process retired itself while idle.
const IDLE_EXIT = 3;

// One worker, booted and waiting for work. Every message it sends must carry
// its token: user code in the worker can reach postMessage but not the token.
class Slot {
  readonly worker: Worker;
  readonly token = crypto.randomUUID();
  readonly sab = new SharedArrayBuffer(8 + CHUNK);
  readonly flag = new Int32Array(this.sab, 0, 2);
  readonly ready: Promise<void>;
  listener: ((message: Message) => void) | null = null;
  exited = false;
  private exitWaiters: (() => void)[] = [];

  constructor(settings: Settings) {
    this.worker = new Worker(`(${workerMain.toString()})()`, {
      eval: true,
      resourceLimits: {
        maxOldGenerationSizeMb: settings.memoryMb,
        maxYoungGenerationSizeMb: Math.max(4, Math.min(32, Math.floor(settings.memoryMb / 8))),
        stackSizeMb: 4,
      },
    });
    let markReady: () => void = () => {};
    this.ready = new Promise((resolve) => (markReady = resolve));
    this.worker.on("message", (message: Message) => {
      if (message === null || typeof message !== "object" || message.t !== this.token) return;
      if (message.op === "ready") {
        markReady();
        return;
      }
      this.listener?.(message);
    });
    const gone = (why: string) => {
      this.exited = true;
      markReady();
      for (const waiter of this.exitWaiters) waiter();
      this.exitWaiters = [];
      this.listener?.({ op: "gone", why });
    };
    this.worker.on("error", (error: unknown) => gone(String(error)));
    this.worker.on("exit", () => gone("exit"));
    this.worker.postMessage({ token: this.token, sab: this.sab, outputCap: settings.outputCap });
  }

  request(message: Message): void {
    this.worker.postMessage({ ...message, t: this.token });
  }

  // Resolves true once the thread is gone, false if it outlives the grace.
  async stop(graceMs = 1000): Promise<boolean> {
    if (this.exited) return true;
    const gone = new Promise<boolean>((resolve) => this.exitWaiters.push(() => resolve(true)));
    this.worker.terminate();
    const timeout = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), graceMs));
    return await Promise.race([gone, timeout]);
  }
}

class Runtime {
  private spare: Slot | null = null;
  private loader: Slot | null = null;
  private loads = 0;
  private nextId = 0;
  private busy = true;

  constructor(private host: Host, private settings: Settings) {}

  // Booting a worker blocks this thread for some 30 ms, so the spare is
  // booted after a reply has gone out rather than while a request waits.
  private warm(): void {
    if (this.spare === null) this.spare = new Slot(this.settings);
  }

  // A terminated worker caught in a microtask loop keeps its thread spinning
  // (a Deno defect). While idle, nothing of ours should use a core, so a
  // process that does is spent: it exits, and the host starts a fresh one at
  // the next call (a process found dead between calls is not a crash).
  private watchIdle(): void {
    let last = process.cpuUsage();
    let lastAt = performance.now();
    let strikes = 0;
    const timer = setInterval(() => {
      const now = process.cpuUsage();
      const at = performance.now();
      const used = (now.user + now.system - last.user - last.system) / 1000;
      const share = used / Math.max(1, at - lastAt);
      last = now;
      lastAt = at;
      if (this.busy) {
        strikes = 0;
        return;
      }
      strikes = share > 0.5 ? strikes + 1 : 0;
      if (strikes >= 3) exitNow(IDLE_EXIT);
    }, 250);
    Deno.unrefTimer(timer);
  }

  async serve(): Promise<void> {
    this.watchIdle();
    await this.host.send({ op: "ready" });
    this.warm();
    for (;;) {
      this.busy = false;
      const request = await this.host.receive();
      this.busy = true;
      if (request === null) return;
      const op = request.op;
      if (op === "ping") await this.host.send({ op: "pong" });
      else if (op === "compile" || op === "load") await this.host.send(await this.load(request));
      else if (op === "run") await this.host.send(await this.run(request));
      else await this.host.send({ op: "error", message: `unknown op ${String(op)}` });
      this.warm();
    }
  }

  private async load(request: Message): Promise<Message> {
    const limitMs = Number(request.timeLimit) * 1000;
    if (this.loader === null || this.loader.exited || this.loads >= this.settings.loaderRecycle) {
      void this.loader?.stop();
      this.loader = new Slot(this.settings);
      this.loads = 0;
    }
    const slot = this.loader;
    await slot.ready;
    this.loads += 1;
    const id = this.nextId++;
    const started = performance.now();
    const outcome = await new Promise<Message>((resolve) => {
      const timer = setTimeout(
        () => resolve({ op: "timeout" }),
        Math.max(0, limitMs - (performance.now() - started)),
      );
      slot.listener = (message) => {
        if (message.op === "result" && message.id === id) {
          clearTimeout(timer);
          resolve(message);
        } else if (message.op === "gone") {
          clearTimeout(timer);
          resolve(message);
        }
      };
      slot.request({
        op: request.op as string,
        id,
        source: request.source as string,
        key: (request.key as string) ?? "module",
      });
    });
    slot.listener = null;
    if (outcome.op === "result") {
      return { op: "result", diagnostic: outcome.diagnostic, exports: outcome.exports };
    }
    // The module's top-level code did not finish, or blew the heap: this
    // loader is spent whatever state it is in.
    const stopped = await slot.stop();
    this.loader = null;
    const why = outcome.op === "timeout"
      ? `the module's top-level code did not finish within ${request.timeLimit} s`
      : "the module's top-level code exceeded the sandbox memory limit";
    return { op: "result", diagnostic: `1:1: ${why}`, exports: [], restart: !stopped };
  }

  private async run(request: Message): Promise<Message> {
    const limitMs = Number(request.timeLimit) * 1000;
    const cap = this.settings.outputCap;
    const slot = this.spare ?? new Slot(this.settings);
    this.spare = null;
    await slot.ready;
    let output = "";
    let truncated = false;
    const views: Json[] = [];
    let bridgeMs = 0;
    const started = performance.now();
    const pending: Uint8Array[] = [];

    const push = () => {
      const chunk = pending.shift();
      if (chunk === undefined) return;
      new Uint8Array(slot.sab, 8).set(chunk);
      Atomics.store(slot.flag, 1, chunk.length);
      Atomics.store(slot.flag, 0, pending.length > 0 ? 2 : 1);
      Atomics.notify(slot.flag, 0);
    };

    const outcome = await new Promise<Message>((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const arm = () => {
        const left = limitMs - (performance.now() - started - bridgeMs);
        timer = setTimeout(() => {
          if (performance.now() - started - bridgeMs >= limitMs) resolve({ op: "timeout" });
          else arm();
        }, Math.max(0, left));
      };
      arm();
      const finish = (message: Message) => {
        clearTimeout(timer);
        resolve(message);
      };
      slot.listener = (message) => {
        switch (message.op) {
          case "out": {
            if (truncated) return;
            output += String(message.text);
            if (output.length > cap) {
              output = output.slice(0, cap);
              truncated = true;
            }
            return;
          }
          case "view":
            views.push([String(message.title), String(message.text)]);
            return;
          case "call": {
            const asked = performance.now();
            void (async () => {
              await this.host.send({
                op: "call",
                name: String(message.name),
                args: String(message.args),
              });
              const reply = await this.host.receive();
              bridgeMs += performance.now() - asked;
              if (reply === null) {
                finish({ op: "gone", why: "host closed" });
                return;
              }
              const bytes = encoder.encode(
                JSON.stringify({ ok: reply.ok === true, text: String(reply.text) }),
              );
              for (let at = 0; at < bytes.length || at === 0; at += CHUNK) {
                pending.push(bytes.subarray(at, at + CHUNK));
                if (bytes.length === 0) break;
              }
              push();
            })();
            return;
          }
          case "more":
            push();
            return;
          case "done":
            finish(message);
            return;
          case "gone":
            finish(message);
            return;
        }
      };
      slot.request({
        op: "run",
        source: request.source as string,
        modules: request.modules as Json,
        kind: request.kind as string,
      });
    });
    slot.listener = null;
    // Whatever the program left pending (timers, promises, loops) dies here.
    const stopped = await slot.stop();
    if (truncated) output += "\n[output truncated]";
    let error: Json;
    if (outcome.op === "done") error = outcome.error ?? null;
    else if (outcome.op === "timeout") {
      error = `the program did not finish within its time limit of ${request.timeLimit} s`;
    } else if (String(outcome.why).includes("memory")) {
      error = "the program exceeded its memory limit";
    } else error = `the program's worker ended: ${String(outcome.why)}`;
    return { op: "result", ok: error === null, output, error, views, restart: !stopped };
  }
}

function harden(): void {
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  for (
    const name of ["caches", "BroadcastChannel", "localStorage", "sessionStorage", "nodeBootstrap"]
  ) {
    try {
      delete g[name];
    } catch {
      // Defence in depth only.
    }
  }
  for (
    const name of [
      "exit",
      "kill",
      "abort",
      "reallyExit",
      "_kill",
      "binding",
      "dlopen",
      "getBuiltinModule",
    ]
  ) {
    try {
      delete g.process[name];
    } catch {
      // As above.
    }
  }
  try {
    delete g.Deno.kill;
    delete g.Deno.exit;
  } catch {
    // As above.
  }
}

async function main(): Promise<void> {
  const [path, config] = Deno.args;
  const settings = JSON.parse(config) as Settings;
  const conn = await Deno.connect({ transport: "unix", path });
  // Nothing on this thread needs Deno's internals after connecting; drop them
  // before the first worker exists.
  // deno-lint-ignore no-explicit-any
  const d = Deno as any;
  try {
    delete d[d.internal];
  } catch {
    // As above.
  }
  harden();
  await new Runtime(new Host(conn), settings).serve();
  conn.close();
  // Deno.exit was kept for exactly this: the host hung up, so stop everything.
  exitNow(0);
}

const exitNow: (code: number) => never = Deno.exit;

if (isMainThread && import.meta.main) {
  await main();
}
