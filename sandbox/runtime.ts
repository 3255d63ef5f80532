// The gitmem sandbox runtime: the main module Deno runs for one holder.
//
// It connects back to the Python host over loopback TCP, to the one port the
// process may reach (Deno.args[0]), proves itself with the per-launch token
// (Deno.args[1]) and serves framed JSON requests: compile, load, run (and
// ping, whose pong tells how many booted spares wait and how many requests
// found none). The process has no file permission at all. User code never runs
// on this thread: every request is evaluated inside a fresh
// `node:worker_threads` worker, which is terminated afterwards and whose heap
// is capped, so nothing a module or program does outlives its request. Frames
// are a 4-byte big-endian length and UTF-8 JSON.
//
// Security rests on Deno's permissions and the import map the host writes
// (which turns every `file:`, `node:` and bare import into a denied remote
// one); inside a worker only an allowlist of globals survives, so the web APIs
// that reach native allocators or devices (OffscreenCanvas, WebGPU, Deno.*,
// process) are gone before user code runs.

import { isMainThread, Worker } from "node:worker_threads";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Message = { [key: string]: Json };

interface Settings {
  memoryMb: number;
  outputCap: number;
  maxViews: number;
  maxViewChars: number;
  maxTitleChars: number;
  maxArgsChars: number;
  maxArgsDepth: number;
  cachedModules: number;
  cachedChars: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// Sends each `"gitmem"` import of a module or program to `target`. The one
// definition: the main thread uses it for cached modules, and every worker gets
// it as its argument (serialised like workerMain). A worker calls it before any
// code of its own request has run.
function rewriteImports(source: string, target: string): string {
  return source.replace(
    /(\bfrom\s*|\bimport\s*(?:\(\s*)?)(["'])gitmem\2/g,
    (_m, head) => `${head}${JSON.stringify(target)}`,
  );
}

// Runs inside every worker, serialised with Function.prototype.toString, so it
// may use nothing from this module's scope. `require` exists only in an eval
// worker's global scope: the bootstrap takes what it needs, then removes every
// global that is not on the allowlist before any user code runs.
function workerMain(rewrite: (source: string, target: string) => string): void {
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  const wt = g.require("node:worker_threads");
  const denoInspect = g.Deno.inspect;
  const inspect: (value: unknown) => string = (value) =>
    denoInspect(value, { depth: 4, colors: false });
  const parentPort = wt.parentPort;
  const post: (message: unknown) => void = parentPort.postMessage.bind(parentPort);
  const Atom = Atomics;
  const decoder = new TextDecoder();
  const BlobOf = Blob;
  const createUrl = URL.createObjectURL.bind(URL);
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const addListener = g.addEventListener.bind(g);
  const defineProperty = Object.defineProperty;
  const SyntaxErrorOf = SyntaxError;
  const number = (n: number) => n.toLocaleString("en-US");

  // What user code may see: the language itself and the web APIs that compute
  // without reaching the host. Anything else a Deno release adds stays out.
  const allowed = new Set([
    "Object", "Function", "Array", "Number", "parseFloat", "parseInt", "Infinity", "NaN",
    "undefined", "Boolean", "String", "Symbol", "Date", "Promise", "RegExp", "Error",
    "AggregateError", "EvalError", "RangeError", "ReferenceError", "SyntaxError", "TypeError",
    "URIError", "SuppressedError", "globalThis", "JSON", "Math", "Intl", "ArrayBuffer",
    "SharedArrayBuffer", "Atomics", "Uint8Array", "Int8Array", "Uint16Array", "Int16Array",
    "Uint32Array", "Int32Array", "BigUint64Array", "BigInt64Array", "Uint8ClampedArray",
    "Float16Array", "Float32Array", "Float64Array", "DataView", "Map", "BigInt", "Set",
    "Iterator", "WeakMap", "WeakSet", "Proxy", "Reflect", "FinalizationRegistry", "WeakRef",
    "decodeURI", "decodeURIComponent", "encodeURI", "encodeURIComponent", "escape", "unescape",
    "eval", "isFinite", "isNaN", "WebAssembly", "Temporal", "DisposableStack",
    "AsyncDisposableStack", "console", "queueMicrotask", "setTimeout", "clearTimeout",
    "setInterval", "clearInterval", "structuredClone", "atob", "btoa", "TextEncoder",
    "TextDecoder", "URL", "URLSearchParams", "URLPattern", "AbortController", "AbortSignal",
    "DOMException", "Event", "EventTarget", "CustomEvent", "ErrorEvent",
    "PromiseRejectionEvent", "crypto", "Crypto", "SubtleCrypto", "CryptoKey", "performance",
    "Performance", "PerformanceEntry", "PerformanceMark", "PerformanceMeasure",
  ]);
  for (const name of Object.getOwnPropertyNames(g)) {
    if (allowed.has(name)) continue;
    try {
      delete g[name];
    } catch {
      // Non-configurable: overwritten below if it can be.
    }
    if (name in g) {
      try {
        defineProperty(g, name, { value: undefined, writable: false, configurable: false });
      } catch {
        try {
          g[name] = undefined;
        } catch {
          // Left as it is: the permissions still hold.
        }
      }
    }
  }

  parentPort.once(
    "message",
    (init: {
      token: string;
      sab: SharedArrayBuffer;
      settings: Settings;
      baseUrl: string;
      linkedUrl: string;
      warmUrl: string;
    }) => {
      const token = init.token;
      const settings = init.settings;
      const flag = new Int32Array(init.sab, 0, 2);
      const data = new Uint8Array(init.sab, 8);
      let written = 0;
      let outputFull = false;
      let viewsOpened = 0;
      const send = (message: Record<string, unknown>) => post({ ...message, t: token });

      const write = (args: unknown[]) => {
        if (outputFull) return;
        let text = args.map((a) => (typeof a === "string" ? a : inspect(a))).join(" ") + "\n";
        if (text.length > settings.outputCap) text = text.slice(0, settings.outputCap + 1);
        written += text.length;
        if (written > settings.outputCap) outputFull = true;
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
      defineProperty(g, "console", { value: capture, writable: true, configurable: true });

      // Refusals in the limit-exceeded voice the rest of gitmem uses.
      const refuse = (what: string, attempted: number, limit: string, max: number, fix: string) =>
        new RangeError(
          `refused: ${what} would be ${number(attempted)}, over ${limit} (${number(max)}). ${fix}`,
        );

      let loading = true;
      let callId = 0;
      const call = (name: string, args: unknown): string => {
        if (loading) throw new Error(`memories.${name} cannot be called while a module loads`);
        if (args === undefined) args = {};
        if (args === null || typeof args !== "object" || Array.isArray(args)) {
          throw new TypeError(`memories.${name} takes one object argument`);
        }
        let json: string;
        try {
          json = stringify(args);
        } catch (e) {
          throw new TypeError(`memories.${name}: the argument is not JSON: ${e}`);
        }
        if (json.length > settings.maxArgsChars) {
          throw refuse(
            `the argument to memories.${name}`,
            json.length,
            "the argument limit",
            settings.maxArgsChars,
            "Send less in one call.",
          );
        }
        // Bounded here as well as in the host, which must not parse it otherwise.
        let depth = 0;
        let deepest = 0;
        let quoted = false;
        for (let i = 0; i < json.length; i++) {
          const c = json.charCodeAt(i);
          if (quoted) {
            if (c === 92) i++;
            else if (c === 34) quoted = false;
          } else if (c === 34) quoted = true;
          else if (c === 91 || c === 123) deepest = Math.max(deepest, ++depth);
          else if (c === 93 || c === 125) depth--;
        }
        if (deepest > settings.maxArgsDepth) {
          throw refuse(
            `the nesting of the argument to memories.${name}`,
            deepest,
            "the nesting limit",
            settings.maxArgsDepth,
            "Pass a flat object.",
          );
        }
        const id = ++callId;
        Atom.store(flag, 0, 0);
        send({ op: "call", id, name, args: json });
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
        let total = 0;
        for (const c of chunks) total += c.length;
        const bytes = new Uint8Array(total);
        let at = 0;
        for (const c of chunks) {
          bytes.set(c, at);
          at += c.length;
        }
        const reply = parse(decoder.decode(bytes)) as { ok: boolean; text: string };
        if (!reply.ok) throw new Error(reply.text);
        return reply.text;
      };
      const memories = new Proxy(Object.create(null), {
        get: (_target, name) => {
          if (typeof name !== "string" || name === "then") return undefined;
          if (!/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(name)) {
            return () => {
              throw new TypeError(`memories has no call named ${stringify(name.slice(0, 64))}`);
            };
          }
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
          if (viewsOpened >= settings.maxViews) {
            throw refuse(
              "the views opened in one run",
              viewsOpened + 1,
              "the view limit",
              settings.maxViews,
              "Put more in each view.",
            );
          }
          if (title.length > settings.maxTitleChars) {
            throw refuse(
              "the view's title",
              title.length,
              "the title limit",
              settings.maxTitleChars,
              "Use a shorter title.",
            );
          }
          if (text.length > settings.maxViewChars) {
            throw refuse(
              "the view's text",
              text.length,
              "the view text limit",
              settings.maxViewChars,
              "Open a shorter text, or split it across views.",
            );
          }
          viewsOpened += 1;
          send({ op: "view", title, text });
        },
      });
      let linked = false;
      const runtime = Object.freeze({ memories, views, started: () => (linked = true) });
      defineProperty(g, Symbol.for("gitmem.runtime"), { value: runtime });

      let unhandled: string | null = null;
      addListener("unhandledrejection", (event: { preventDefault(): void; reason: unknown }) => {
        event.preventDefault();
        if (unhandled === null) unhandled = describe(event.reason);
      });
      addListener("error", (event: { preventDefault(): void; error: unknown }) => {
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
      // the URL it came from; turn that into "line:column: message".
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
      // Blob URLs skip the base64 round trip a data URL costs; the worker ends
      // with its request, and every URL with it.
      const toUrl = (source: string, media = "application/typescript") =>
        createUrl(new BlobOf([source], { type: media }));
      // Made once by the main thread, so that a cached module's text (which
      // imports baseUrl) is the same in every worker; each worker evaluates
      // its own instance of both.
      const baseUrl = init.baseUrl;
      // Imported first by the generated "gitmem" module: once it runs, linking
      // is over and any later error is the program's own.
      const linkedUrl = init.linkedUrl;

      const load = async (request: { op: string; source: string; key: string; url: string }) => {
        loading = true;
        // Compiling must not run the code: a throw ahead of it on line 1 stops
        // evaluation once parsing and linking have succeeded. A load imports the
        // module's cached URL, made by the main thread.
        const stop = request.op === "compile" ? `throw ${stringify(token)};` : "";
        const url = stop ? toUrl(rewrite(stop + String(request.source), baseUrl)) : String(request.url);
        labels.push([url, request.op === "load" ? String(request.key) : "module"]);
        try {
          const namespace = await import(url);
          const exports: string[] = [];
          for (const name of Object.keys(namespace)) {
            if (typeof namespace[name] === "function") exports.push(name);
          }
          send({ op: "result", diagnostic: null, exports });
        } catch (error) {
          if (stop && error === token) {
            send({ op: "result", diagnostic: null, exports: [] });
            return;
          }
          const found = diagnose(error, stop.length);
          const diagnostic = found ? found.diagnostic : `1:1: ${describe(error).split("\n")[0]}`;
          send({ op: "result", diagnostic, exports: [] });
        }
      };

      // The name a link error says the generated module lacks, if it is one.
      const missingExport = (error: unknown, gitmemUrl: string): string | null => {
        if (linked || !(error instanceof SyntaxErrorOf)) return null;
        const head = `The requested module '${gitmemUrl}' does not provide an export named '`;
        const message = String(error.message);
        if (!message.startsWith(head)) return null;
        const end = message.indexOf("'", head.length);
        return end < 0 ? null : message.slice(head.length, end);
      };

      const run = async (
        request: { source: string; modules: Record<string, string>; kind: string },
      ) => {
        loading = false;
        const modules = request.modules;
        const kind = String(request.kind);
        if (kind === "onuse") {
          defineProperty(g, "memories", { value: memories, writable: true, configurable: true });
          defineProperty(g, "views", { value: views, writable: true, configurable: true });
        }
        // A module's code runs only in a program that imports it by name: the
        // generated module starts with none, and each link error naming a loaded
        // module adds that one before anything has run.
        const urls = new Map<string, string>();
        let error: string | null = null;
        for (;;) {
          let head = `import ${stringify(linkedUrl)};\nexport * from ${stringify(baseUrl)};\n`;
          for (const [key, url] of urls) head += `export * as ${key} from ${stringify(url)};\n`;
          const gitmemUrl = toUrl(head, "application/javascript");
          labels.push([gitmemUrl, "gitmem"]);
          const programUrl = toUrl(rewrite(String(request.source), gitmemUrl));
          labels.push([programUrl, kind]);
          try {
            await import(programUrl);
            break;
          } catch (e) {
            const missing = missingExport(e, gitmemUrl);
            if (
              missing !== null && !urls.has(missing) &&
              Object.prototype.hasOwnProperty.call(modules, missing)
            ) {
              // The module's cached URL, made by the main thread.
              const url = String(modules[missing]);
              labels.push([url, missing]);
              urls.set(missing, url);
              continue;
            }
            const found = diagnose(e);
            if (found) {
              const where = found.where === kind ? "" : ` in module ${found.where}`;
              error = `SyntaxError${where}: ${found.diagnostic}`;
            } else {
              error = describe(e);
            }
            break;
          }
        }
        if (error === null && unhandled !== null) error = unhandled;
        send({ op: "done", error, imported: [...urls.keys()] });
      };

      parentPort.on(
        "message",
        (request: { t: string; op: string; [key: string]: unknown }) => {
          if (request.t !== token) return;
          if (request.op === "compile" || request.op === "load") {
            void load(
              request as unknown as { op: string; source: string; key: string; url: string },
            );
          } else if (request.op === "run") {
            void run(
              request as unknown as {
                source: string;
                modules: Record<string, string>;
                kind: string;
              },
            );
          }
        },
      );
      // The first TypeScript module a process imports pays for setting up its
      // transpiler and loader, some ten times a trivial program's cost. Paid here,
      // while the worker boots, no program waits for it: not even the first one in
      // a fresh process, as after an attack that got the last one killed. One URL
      // for every worker of the process (made by the main thread, kept by the host),
      // so it is transpiled once and no worker leaves a file behind.
      import(init.warmUrl).catch(() => {}).finally(() => send({ op: "ready" }));
    },
  );
}

// The one reader and writer of the host connection. Requests are served one
// at a time, and a bridge reply is read by the run that asked for it, so no two
// reads ever race on the socket.
class Host {
  private buffer = new Uint8Array(0);

  constructor(private conn: Deno.TcpConn) {}

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
// The exit status of a process that retired itself while idle.
const IDLE_EXIT = 3;
// Workers kept booted, each for one request: a program and the onUse script its
// turn ends with, or a read that loads two code memories, finds each its own
// without waiting for one to be made. An idle one costs some 2-4 MB.
const SPARES = 2;
// Booting a worker blocks this thread for some 30-45 ms (Deno makes a
// node:worker_threads worker synchronously), so spares are booted only once no
// request has come for this long: the next request of a burst, sent as soon as
// a reply arrives, finds a spare rather than a boot in its way.
const BOOT_AFTER_MS = 20;

// Made once by the main thread and given to every worker.
type Urls = { baseUrl: string; linkedUrl: string; warmUrl: string };

// One worker, booted and waiting for exactly one request. Every message it
// sends must carry its token: user code can reach postMessage but not the token.
class Slot {
  readonly worker: Worker;
  readonly token = crypto.randomUUID();
  readonly sab = new SharedArrayBuffer(8 + CHUNK);
  readonly flag = new Int32Array(this.sab, 0, 2);
  readonly ready: Promise<void>;
  listener: ((message: Message) => void) | null = null;
  // Ready for its request: its thread is up and its warm-up module imported.
  booted = false;
  exited = false;
  private exitWaiters: (() => void)[] = [];

  constructor(settings: Settings, urls: Urls) {
    this.worker = new Worker(`(${workerMain.toString()})(${rewriteImports.toString()})`, {
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
        this.booted = true;
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
    this.worker.postMessage({ token: this.token, sab: this.sab, settings, ...urls });
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

// Events of one request, in the order they happened, read by one loop.
class Queue {
  private items: Message[] = [];
  private waiter: ((message: Message) => void) | null = null;

  push(message: Message): void {
    if (this.waiter !== null) {
      const waiter = this.waiter;
      this.waiter = null;
      waiter(message);
    } else this.items.push(message);
  }

  next(): Promise<Message> {
    const item = this.items.shift();
    if (item !== undefined) return Promise.resolve(item);
    return new Promise((resolve) => (this.waiter = resolve));
  }
}

// Code memories' modules, one blob URL per distinct text, made on this thread
// and imported by workers. A module's transpiled JavaScript is a pure function
// of its text, and Deno keeps it on disk per URL in the process's private
// DENO_DIR: a module imported again, in any later worker, is not transpiled
// again. Each worker still evaluates its own instance, so nothing a module does
// reaches another run. The host deletes every transpiled file but those of the
// URLs listed in each reply ("keep"), and an evicted URL is revoked, so the
// cache is bounded in memory and on disk.
class Modules {
  private urls = new Map<string, string>();
  private chars = 0;
  // The URLs the current request uses: never revoked under it, so a request may
  // hold more modules than the bounds (until the next request's first new one).
  private pinned = new Set<string>();

  begin(): void {
    this.pinned.clear();
  }

  constructor(private base: string, private settings: Settings) {}

  url(source: string): string {
    const text = rewriteImports(source, this.base);
    let url = this.urls.get(text);
    if (url !== undefined) {
      // Most recently used last.
      this.urls.delete(text);
      this.urls.set(text, url);
      this.pinned.add(url);
      return url;
    }
    url = URL.createObjectURL(new Blob([text], { type: "application/typescript" }));
    this.urls.set(text, url);
    this.pinned.add(url);
    this.chars += text.length;
    const { cachedModules, cachedChars } = this.settings;
    while (this.urls.size > cachedModules || this.chars > cachedChars) {
      const [oldest, oldUrl] = this.urls.entries().next().value as [string, string];
      if (this.pinned.has(oldUrl)) break;
      this.urls.delete(oldest);
      this.chars -= oldest.length;
      URL.revokeObjectURL(oldUrl);
    }
    return url;
  }

  kept(): string[] {
    return [...this.urls.values()];
  }
}

class Runtime {
  private spares: Slot[] = [];
  private bootTimer: ReturnType<typeof setTimeout> | null = null;
  private busy = true;
  // Bumped as each request ends and as each spare boots: a watch window that saw
  // either is not idle time.
  private work = 0;
  // Spares booted and not yet ready.
  private booting = 0;
  // Requests that found no booted spare and waited for a worker to be made.
  private cold = 0;
  private retiring = false;

  private urls: Urls;
  private modules: Modules;

  constructor(private host: Host, private settings: Settings) {
    const script = (text: string, type = "application/javascript") =>
      URL.createObjectURL(new Blob([text], { type }));
    this.urls = {
      baseUrl: script(
        'const g = globalThis[Symbol.for("gitmem.runtime")];\nexport const memories = g.memories;\nexport const views = g.views;\n',
      ),
      linkedUrl: script('globalThis[Symbol.for("gitmem.runtime")].started();\n'),
      warmUrl: script("export const warm: number = 1;\n", "application/typescript"),
    };
    this.modules = new Modules(this.urls.baseUrl, settings);
  }

  // The transpiled files the host keeps: the modules' and the warm-up's.
  private kept(): string[] {
    return [...this.modules.kept(), this.urls.warmUrl];
  }

  // Boots the missing spares one at a time, each after BOOT_AFTER_MS without a
  // request. A request cancels the plan; its end makes a new one.
  private warm(after = BOOT_AFTER_MS): void {
    if (this.bootTimer !== null) clearTimeout(this.bootTimer);
    this.bootTimer = null;
    if (this.spares.length >= SPARES || this.retiring) return;
    this.bootTimer = setTimeout(() => {
      this.bootTimer = null;
      if (this.busy || this.retiring) return;
      const spare = new Slot(this.settings, this.urls);
      this.spares.push(spare);
      // The spare boots on its own thread; that is work, not idling.
      this.booting++;
      this.work++;
      void spare.ready.then(() => this.booting--);
      this.warm();
    }, after);
  }

  private take(): Slot {
    const spare = this.spares.shift();
    if (spare === undefined || !spare.booted) this.cold++;
    return spare ?? new Slot(this.settings, this.urls);
  }

  // A terminated worker caught in a microtask loop keeps its thread spinning
  // (a Deno defect). While idle, nothing of ours should use a core, so a
  // process that does is spent: it says so in a "retire" frame, serves nothing
  // more, and exits. The frame goes out before any reply could, so the host
  // reads it first whenever it next asks, and never mistakes the exit for a
  // crash, however slow the exit is (a spinning thread can hold it up).
  private retire(): void {
    if (this.retiring) return;
    this.retiring = true;
    void this.host.send({ op: "retire" }).finally(() => exitNow(IDLE_EXIT));
  }

  private async watchIdle(): Promise<void> {
    const cpuUsage: CpuUsage = denoCpuUsage ??
      (await import("node:process")).default.cpuUsage;
    let last = cpuUsage();
    let lastAt = performance.now();
    let strikes = 0;
    let work = this.work;
    const timer = setInterval(() => {
      const now = cpuUsage();
      const at = performance.now();
      const used = (now.user + now.system - last.user - last.system) / 1000;
      const share = used / Math.max(1, at - lastAt);
      last = now;
      lastAt = at;
      // Only a whole window without a request is idle: the CPU a request and its
      // aftermath use (a worker torn down, the next spares booted) is work, however
      // briefly the runtime was busy when the tick came. A holder called every few
      // hundred ms would otherwise see its process retired every second or two.
      if (this.busy || this.booting > 0 || work !== this.work) {
        work = this.work;
        strikes = 0;
        return;
      }
      // An idle runtime uses next to nothing; a share this small still means a thread
      // left spinning, even on a machine too busy to give it a whole core.
      strikes = share > 0.05 ? strikes + 1 : 0;
      if (strikes >= 3) this.retire();
    }, 250);
    Deno.unrefTimer(timer);
  }

  async serve(token: string): Promise<void> {
    void this.watchIdle();
    await this.host.send({ op: "ready", token });
    this.warm(0);
    for (;;) {
      this.busy = false;
      const request = await this.host.receive();
      if (this.retiring) await new Promise(() => {});
      this.busy = true;
      if (request === null) return;
      const op = request.op;
      if (op === "ping") {
        const spares = this.spares.filter((spare) => spare.booted).length;
        await this.host.send({ op: "pong", spares, cold: this.cold });
      } else if (op === "compile" || op === "load") {
        this.modules.begin();
        const result = await this.load(request);
        await this.host.send({ ...result, keep: this.kept() });
      } else if (op === "run") {
        this.modules.begin();
        const result = await this.run(request);
        if (result === null) return;
        await this.host.send({ ...result, keep: this.kept() });
      } else await this.host.send({ op: "error", message: `unknown op ${String(op)}` });
      this.work++;
      this.warm();
    }
  }

  // Each load gets a fresh worker: nothing one module's top-level code does can
  // reach the next load's result.
  private async load(request: Message): Promise<Message> {
    const limitMs = Number(request.timeLimit) * 1000;
    const slot = this.take();
    await slot.ready;
    const started = performance.now();
    const outcome = await new Promise<Message>((resolve) => {
      const timer = setTimeout(
        () => resolve({ op: "timeout" }),
        Math.max(0, limitMs - (performance.now() - started)),
      );
      slot.listener = (message) => {
        if (message.op === "result" || message.op === "gone") {
          clearTimeout(timer);
          resolve(message);
        }
      };
      slot.request({
        op: request.op as string,
        source: request.op === "compile" ? String(request.source) : "",
        url: request.op === "load" ? this.modules.url(String(request.source)) : "",
        key: (request.key as string) ?? "module",
      });
    });
    slot.listener = null;
    if (outcome.op === "result") {
      // The worker answered, so the reply need not wait for it to end; one that
      // will not (it left a thread spinning) is caught by the idle watch.
      void slot.stop();
      const exports = Array.isArray(outcome.exports) ? outcome.exports : [];
      return { op: "result", diagnostic: outcome.diagnostic, exports };
    }
    // A worker that did not answer and cannot be stopped spends the process: the
    // host replaces it after this reply.
    const stopped = await slot.stop();
    const why = outcome.op === "timeout"
      ? `the module's top-level code did not finish within ${request.timeLimit} s`
      : `the module's top-level code exceeded the sandbox memory limit`;
    return { op: "result", diagnostic: `1:1: ${why}`, exports: [], restart: !stopped };
  }

  // Returns null when the host hung up mid-run.
  private async run(request: Message): Promise<Message | null> {
    const limitMs = Number(request.timeLimit) * 1000;
    const settings = this.settings;
    const slot = this.take();
    await slot.ready;
    let output = "";
    let truncated = false;
    const views: Json[] = [];
    const events = new Queue();
    slot.listener = (message) => events.push(message);

    // Only time the program itself spends counts: the clock stops while the
    // host answers a memories call.
    let spent = 0;
    let since = performance.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      timer = setTimeout(() => events.push({ op: "tick" }), Math.max(0, limitMs - spent));
    };
    const pause = () => {
      clearTimeout(timer);
      spent += performance.now() - since;
    };
    const resume = () => {
      since = performance.now();
      arm();
    };
    arm();
    const modules: { [key: string]: Json } = {};
    const given = request.modules;
    if (given !== null && typeof given === "object" && !Array.isArray(given)) {
      for (const [key, source] of Object.entries(given)) modules[key] = this.modules.url(String(source));
    }
    slot.request({
      op: "run",
      source: request.source as string,
      modules,
      kind: request.kind as string,
    });
    let outcome: Message;
    for (;;) {
      const message = await events.next();
      if (message.op === "tick") {
        if (spent + (performance.now() - since) >= limitMs) {
          outcome = { op: "timeout" };
          break;
        }
        pause();
        resume();
        continue;
      }
      if (message.op === "out") {
        if (truncated) continue;
        output += String(message.text);
        if (output.length > settings.outputCap) {
          output = output.slice(0, settings.outputCap);
          truncated = true;
        }
        continue;
      }
      if (message.op === "view") {
        const title = String(message.title);
        const text = String(message.text);
        // The worker refuses these first; this keeps the frame bounded whatever it sent.
        if (
          views.length < settings.maxViews && title.length <= settings.maxTitleChars &&
          text.length <= settings.maxViewChars
        ) {
          views.push([title, text]);
        }
        continue;
      }
      if (message.op === "call") {
        pause();
        const args = String(message.args);
        await this.host.send({
          op: "call",
          id: Number(message.id),
          name: String(message.name).slice(0, 64),
          args: args.length > settings.maxArgsChars ? "" : args,
        });
        const reply = await this.host.receive();
        if (reply === null || reply.op !== "reply" || reply.id !== Number(message.id)) {
          clearTimeout(timer);
          await slot.stop();
          return null;
        }
        const bytes = encoder.encode(
          JSON.stringify({ ok: reply.ok === true, text: String(reply.text) }),
        );
        const pending: Uint8Array[] = [];
        for (let at = 0; at < bytes.length || at === 0; at += CHUNK) {
          pending.push(bytes.subarray(at, at + CHUNK));
          if (bytes.length === 0) break;
        }
        // The worker is parked on Atomics.wait; it takes one chunk at a time
        // and asks for the next with "more".
        for (let i = 0; i < pending.length; i++) {
          if (i > 0) {
            const more = await events.next();
            if (more.op !== "more") {
              events.push(more);
              break;
            }
          }
          const chunk = pending[i];
          new Uint8Array(slot.sab, 8).set(chunk);
          Atomics.store(slot.flag, 1, chunk.length);
          Atomics.store(slot.flag, 0, i < pending.length - 1 ? 2 : 1);
          Atomics.notify(slot.flag, 0);
        }
        resume();
        continue;
      }
      if (message.op === "done" || message.op === "gone") {
        outcome = message;
        break;
      }
    }
    clearTimeout(timer);
    slot.listener = null;
    // Whatever the program left pending (timers, promises, loops) dies here. A worker
    // that reported done is not waited for: one that will not end (it left a thread
    // spinning) is caught by the idle watch.
    const stopped = outcome.op === "done" ? (void slot.stop(), true) : await slot.stop();
    if (truncated) output += "\n[output truncated]";
    let error: Json;
    if (outcome.op === "done") error = outcome.error ?? null;
    else if (outcome.op === "timeout") {
      error = `the program did not finish within its time limit of ${request.timeLimit} s`;
    } else if (String(outcome.why).includes("memory")) {
      error = "the program exceeded its memory limit";
    } else error = `the program's worker ended:`;
    const imported = outcome.op === "done" && Array.isArray(outcome.imported)
      ? outcome.imported
      : [];
    return {
      op: "result",
      ok: error === null,
      output,
      error,
      views,
      imported,
      restart: !stopped,
    };
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
  // Nothing here needs the global `process`: removed unread, since reading it sets up
  // Node's process polyfill (some 20 ms of every start). Only if it cannot be removed
  // are its dangerous methods taken away instead.
  let kept = true;
  try {
    kept = !delete g.process;
  } catch {
    // As above.
  }
  if (kept) {
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
  }
  try {
    delete g.Deno.kill;
    delete g.Deno.exit;
  } catch {
    // As above.
  }
}

async function main(): Promise<void> {
  const [port, token, config] = Deno.args;
  const settings = JSON.parse(config) as Settings;
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
  conn.setNoDelay(true);
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
  await new Runtime(new Host(conn), settings).serve(token);
  conn.close();
  // Deno.exit was kept for exactly this: the host hung up, so stop everything.
  exitNow(0);
}

const exitNow: (code: number) => never = Deno.exit;
type CpuUsage = () => { user: number; system: number };
// The whole process's CPU time (every thread), in microseconds: Deno's own call,
// which the idle watch uses instead of node:process, whose polyfill costs a start
// some 20 ms. Deno does not document it, so a release without it falls back to
// node:process, imported after the greeting.
const denoCpuUsage: CpuUsage | null = (() => {
  const own = (Deno as unknown as { cpuUsage?: CpuUsage }).cpuUsage;
  return typeof own === "function" ? own.bind(Deno) : null;
})();

if (isMainThread && import.meta.main) {
  await main();
}
