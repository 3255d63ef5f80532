// The gitmem sandbox runtime: the main module Deno runs for one holder.
//
// It connects back to the Python host over loopback TCP, to the one port the
// process may reach (Deno.args[0]), proves itself with the per-launch token
// (Deno.args[1]) and serves framed JSON requests: compile, load, run (and
// ping, whose pong tells how many booted spares wait, how many requests found
// none booted and how many found none at all). The process has no file
// permission at all. User code never runs
// on this thread: every request is evaluated inside a fresh web worker of
// Deno's own, which is terminated afterwards, so nothing a module or program
// does outlives its request. Every isolate of the process, each worker's and
// this thread's, has its heap capped by the V8 flag the host starts the
// process with; a worker that fills its heap aborts the whole process, which
// the host reports as that request's failure (the process serves one request
// at a time) and replaces. Each reply names the workers the request ended, by
// the name Deno gives their threads, so the host can make sure they are gone
// before the process serves anyone again. Frames are a 4-byte big-endian
// length and UTF-8 JSON; a request's source may follow its JSON, after a
// newline, as UTF-8 text (JSON text has no newline of its own).
//
// Security rests on Deno's permissions and the import map the host writes
// (which turns every `file:`, `node:` and bare import into a denied remote
// one); inside a worker only an allowlist of globals survives, so the web APIs
// that reach native allocators or devices (OffscreenCanvas, WebGPU, Deno.*,
// process) are gone before user code runs.

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
  maxErrorChars: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
// A request's source after its JSON: a leading U+FEFF is part of the text.
const sourceDecoder = new TextDecoder("utf-8", { ignoreBOM: true });
// The bytes each request's source arrived as (the host sends strict UTF-8, so
// they are the text's own encoding): a module cached as it came is made from
// them, not encoded again.
const sourceBytes = new WeakMap<Message, Uint8Array>();

// Splits a module's text around the specifiers of its `"gitmem"` imports, in
// one linear pass over its tokens, so that a string, template or comment that
// merely contains `from "gitmem"` is left as it is: the loader joins the parts
// with the URL the import should reach. Every comment that opens with `#` or
// `@` (where V8 and Deno read a sourceMappingURL or sourceURL) loses that
// mark, so no module can make Deno look for a source map. The one definition:
// the main thread uses it for cached modules, and every worker gets it as its
// argument (serialised like workerMain), calling it before any code of its own
// request has run. A text that holds neither "gitmem" nor a comment opening
// with `#` or `@` has nothing to split or disarm, and is its own one part,
// found without the token pass (`whole` makes the pass read it anyway).
function splitImports(source: string, whole = false): string[] {
  if (!whole && source.indexOf("gitmem") < 0 && !/\/[/*][#@]/.test(source)) {
    return [source];
  }
  const parts: string[] = [];
  let part = "";
  let from = 0;
  const n = source.length;
  let i = 0;
  // The last two significant tokens: a word as itself, a value as "0", a
  // punctuator as its character, "" before the first.
  let prev = "";
  let before = "";
  let depth = 0;
  const templates: number[] = [];
  const keywords = new Set([
    "return",
    "typeof",
    "instanceof",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "case",
    "do",
    "else",
    "yield",
    "await",
  ]);
  const word = (c: number) =>
    (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) ||
    c === 36 ||
    c === 95 || c > 127;
  const token = (t: string) => {
    before = prev;
    prev = t;
  };
  const lineEnd = (at: number) => {
    while (
      at < n && source.charCodeAt(at) !== 10 && source.charCodeAt(at) !== 13
    ) at++;
    return at;
  };
  // From just after a backtick or a `}` that closes `${`: to just after the
  // closing backtick, or after the next `${`.
  const template = (at: number) => {
    while (at < n) {
      const c = source.charCodeAt(at);
      if (c === 92) at += 2;
      else if (c === 96) {
        token("0");
        return at + 1;
      } else if (c === 36 && source.charCodeAt(at + 1) === 123) {
        templates.push(depth);
        depth++;
        token("{");
        return at + 2;
      } else at++;
    }
    return n;
  };
  while (i < n) {
    const c = source.charCodeAt(i);
    if (c <= 32) {
      i++;
    } else if (c === 47) {
      const d = source.charCodeAt(i + 1);
      if (d === 47 || d === 42) {
        const mark = source.charCodeAt(i + 2);
        if (mark === 35 || mark === 64) {
          part += source.slice(from, i + 2) + " ";
          from = i + 3;
        }
        if (d === 47) i = lineEnd(i + 2);
        else {
          const end = source.indexOf("*/", i + 2);
          i = end < 0 ? n : end + 2;
        }
      } else if (
        prev === "" || keywords.has(prev) ||
        (!word(prev.charCodeAt(0)) && prev !== ")" && prev !== "]" &&
          prev !== "}")
      ) {
        // A regular expression: to its closing slash, outside a class, on this line.
        let at = i + 1;
        let inClass = false;
        while (at < n) {
          const r = source.charCodeAt(at);
          if (r === 10 || r === 13) break;
          if (r === 92) at++;
          else if (r === 91) inClass = true;
          else if (r === 93) inClass = false;
          else if (r === 47 && !inClass) break;
          at++;
        }
        i = at + 1;
        token("0");
      } else {
        i++;
        token("/");
      }
    } else if (c === 34 || c === 39) {
      let at = i + 1;
      while (at < n) {
        const s = source.charCodeAt(at);
        if (s === c || s === 10 || s === 13) break;
        if (s === 92) at++;
        at++;
      }
      const end = at + 1;
      if (
        (prev === "from" || prev === "import" ||
          (prev === "(" && before === "import")) &&
        end - i === 8 && source.slice(i + 1, i + 7) === "gitmem" &&
        source.charCodeAt(at) === c
      ) {
        parts.push(part + source.slice(from, i));
        part = "";
        from = end;
      }
      i = end;
      token("0");
    } else if (c === 96) {
      i = template(i + 1);
    } else if (word(c)) {
      const start = i;
      while (i < n && word(source.charCodeAt(i))) i++;
      token(source.slice(start, i));
    } else {
      if (c === 123) depth++;
      else if (c === 125) {
        depth--;
        if (templates.length > 0 && templates[templates.length - 1] === depth) {
          templates.pop();
          i = template(i + 1);
          continue;
        }
      }
      i++;
      token(String.fromCharCode(c));
    }
  }
  parts.push(part + source.slice(from));
  return parts;
}

// Whether a module's text cannot export a `then`, which would make its namespace
// a thenable that an import's promise calls rather than hands over: with no
// backslash, no escape can spell a name, so every export name is spelled out
// as written, and none is `then`; and with no `export *` (nor an `export`
// followed by a comment, which could hide one), no other module's names are
// handed on unspelled: `export * from "data:…;base64,…"` spells none of them.
// The transpiler adds no export names.
const EXPORT_STAR_OR_COMMENT = /export\s*[*/]/;
function cannotExportThen(source: string): boolean {
  return source.indexOf("then") < 0 && source.indexOf("\\") < 0 &&
    !EXPORT_STAR_OR_COMMENT.test(source);
}

// The parts of splitImports joined with `target` in each specifier's place.
function joinImports(parts: string[], target: string): string {
  const quoted = JSON.stringify(target);
  let text = parts[0];
  for (let k = 1; k < parts.length; k++) text += quoted + parts[k];
  return text;
}

// The typed signatures of a module's exports, `name(params): Return` as written
// in its source: the worker knows which exports are functions, the source still
// has the types the transpiler erased. Read here, on the main thread, while the
// worker transpiles and evaluates the module on its own. The source is an
// agent's text, so the scan is one forward pass that never goes back: a reader
// of tokens, which passes over comments and strings whole, reads a declaration
// wherever a word one starts with begins (function, const, let, var, export),
// and goes on from the first token the declaration did not consume; each
// signature is then read from a bounded window after its declaration.
//
// Characters are classed by Unicode: whitespace is every White_Space character
// but U+FEFF, and the separators U+001C-U+001F besides; a word is an ASCII
// letter, `_` or `$` followed by letters, digits (of any script), `_` and `$`.
// A digit or a letter outside ASCII that starts no word is passed over, as
// whitespace is; any other character is a token of its own.

// Characters one signature may span, counted in code points; a longer one is
// shown as `name(...)`.
const SIGNATURE_WINDOW = 2_000;
const SPACE =
  "\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const SPACES = new RegExp(`[${SPACE}]+`);
const LEADING_SPACES = new RegExp(`^[${SPACE}]+`);
const IS_SPACE = new RegExp(`[${SPACE}]`);
// A letter or digit outside ASCII at lastIndex, read as one code point.
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/uy;
const SURROGATE = /[\ud800-\udfff]/;

// Of an ASCII code: 1 for a character a word starts with, 2 for one only
// inside a word (a digit), 4 for whitespace.
const ASCII_CLASS = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  if ((c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 36) {
    ASCII_CLASS[c] = 1;
  } else if (c >= 48 && c <= 57) ASCII_CLASS[c] = 2;
  else if ((c >= 9 && c <= 13) || (c >= 28 && c <= 32)) ASCII_CLASS[c] = 4;
}

// The length in code units of the code point at `at`: 2 for a surrogate pair.
function width(source: string, at: number): number {
  const c = source.charCodeAt(at);
  return c >= 0xd800 && c <= 0xdbff &&
      (source.charCodeAt(at + 1) & 0xfc00) === 0xdc00
    ? 2
    : 1;
}

// The class of the character at `at` outside ASCII (2, a letter or digit; 4,
// whitespace; 0, any other), and its length in code units.
function classAt(source: string, at: number): [number, number] {
  const w = width(source, at);
  if (w === 1 && IS_SPACE.test(source[at])) return [4, 1];
  LETTER_OR_DIGIT.lastIndex = at;
  return [LETTER_OR_DIGIT.test(source) ? 2 : 0, w];
}

// The index just past the string whose opening `quote` ends at `at`: its
// closing quote is the first one no backslash escapes; unclosed, the end.
function stringEnd(text: string, at: number, quote: number): number {
  const n = text.length;
  while (at < n) {
    const c = text.charCodeAt(at);
    if (c === 92) at += 2;
    else if (c === quote) return at + 1;
    else at++;
  }
  return n;
}

// The next code token from `at`: its start and end in `scanned`, or false at
// the end of the source.
const scanned = { start: 0, end: 0 };
function nextToken(source: string, at: number): boolean {
  const n = source.length;
  while (at < n) {
    const c = source.charCodeAt(at);
    if (c < 128) {
      const kind = ASCII_CLASS[c];
      if (kind === 1) {
        let end = at + 1;
        while (end < n) {
          const d = source.charCodeAt(end);
          if (d < 128) {
            if (ASCII_CLASS[d] & 3) end++;
            else break;
          } else {
            const [other, width] = classAt(source, end);
            if (other !== 2) break;
            end += width;
          }
        }
        scanned.start = at;
        scanned.end = end;
        return true;
      }
      if (kind !== 0) {
        at++;
        continue;
      }
      if (c === 47) {
        const d = source.charCodeAt(at + 1);
        if (d === 47) {
          const line = source.indexOf("\n", at + 2);
          at = line < 0 ? n : line;
          continue;
        }
        if (d === 42) {
          const close = source.indexOf("*/", at + 2);
          at = close < 0 ? n : close + 2;
          continue;
        }
      } else if (c === 34 || c === 39 || c === 96) {
        at = stringEnd(source, at + 1, c);
        continue;
      }
      scanned.start = at;
      scanned.end = at + 1;
      return true;
    }
    const [kind, width] = classAt(source, at);
    if (kind === 0) {
      scanned.start = at;
      scanned.end = at + width;
      return true;
    }
    at += width;
  }
  return false;
}

// The code tokens of a source from one point on, read only as far as asked.
class Tokens {
  private words: string[] = [];
  private starts: number[] = [];
  private ends: number[] = [];

  constructor(private source: string, private at: number) {}

  // Token `k`, or "" past the end.
  word(k: number): string {
    while (k >= this.words.length) {
      if (!nextToken(this.source, this.at)) return "";
      this.at = scanned.end;
      this.words.push(this.source.slice(scanned.start, scanned.end));
      this.starts.push(scanned.start);
      this.ends.push(scanned.end);
    }
    return this.words[k];
  }

  // The index just past token `k` (which word has read).
  end(k: number): number {
    return this.ends[k];
  }

  // Where token `k` begins, or the end of the source past the last token.
  start(k: number): number {
    return this.word(k) ? this.starts[k] : this.source.length;
  }
}

const isName = (token: string) =>
  token !== "" && (ASCII_CLASS[token.charCodeAt(0)] & 1) === 1;

// Where the scan stops: a comment, a string, or a word a declaration starts
// with, found by one search from where the last stop was passed. A 32 KB
// module has some 8,000 tokens, and a few hundred stops.
const STOPS = /\/\/|\/\*|["'`]|function|const|let|var|export/g;

// Whether the character at `at` would go on a word that runs up to it.
function continuesWord(source: string, at: number): boolean {
  if (at >= source.length) return false;
  const c = source.charCodeAt(at);
  return c < 128 ? (ASCII_CLASS[c] & 3) !== 0 : classAt(source, at)[0] === 2;
}

// Whether a word starts at `at`, where a letter is: every character before it
// back to the last other one is one the reader passes over (a digit, or a
// letter or digit outside ASCII), so no word runs up to it.
function startsWord(source: string, at: number): boolean {
  let i = at - 1;
  while (i >= 0) {
    const c = source.charCodeAt(i);
    if (c < 128) {
      if (ASCII_CLASS[c] === 2) {
        i--;
        continue;
      }
      return ASCII_CLASS[c] !== 1;
    }
    // The code point that ends at i: a surrogate pair begins one unit earlier.
    const from = (c & 0xfc00) === 0xdc00 && i > 0 && width(source, i - 1) === 2
      ? i - 1
      : i;
    if (classAt(source, from)[0] !== 2) return true;
    i = from - 1;
  }
  return true;
}

// Each declared function's name → where its signature starts and whether it is
// an arrow: the first declaration of a name counts. Read as a reader of every
// token would read them: at each stop outside comments and strings that starts
// a word, the declaration is read token by token, and the scan goes on from the
// first token it did not consume.
function declarations(source: string): Map<string, [number, boolean]> {
  const found = new Map<string, [number, boolean]>();
  let at = 0;
  for (;;) {
    STOPS.lastIndex = at;
    const stop = STOPS.exec(source);
    if (stop === null) return found;
    const where = stop.index;
    const c = source.charCodeAt(where);
    if (c === 47 && source.charCodeAt(where + 1) === 47) {
      const line = source.indexOf("\n", where + 2);
      at = line < 0 ? source.length : line;
    } else if (c === 47) {
      const close = source.indexOf("*/", where + 2);
      at = close < 0 ? source.length : close + 2;
    } else if (c === 34 || c === 39 || c === 96) {
      at = stringEnd(source, where + 1, c);
    } else {
      const end = where + stop[0].length;
      if (continuesWord(source, end) || !startsWord(source, where)) {
        at = end;
        continue;
      }
      // The commonest shapes, read at once as the token reader reads them.
      const plain = c === 101 ? EXPORT_FUNCTION : c === 102 ? FUNCTION : null;
      let head: RegExpExecArray | null = null;
      if (plain !== null) {
        plain.lastIndex = where;
        head = plain.exec(source);
      }
      if (head !== null) {
        if (!found.has(head[1])) found.set(head[1], [plain!.lastIndex, false]);
        at = plain!.lastIndex;
      } else if (
        c === 101 &&
        !(nextToken(source, end) && isDefault(source, scanned.start))
      ) {
        // An `export` not before `default` declares nothing of its own.
        at = end;
      } else at = readDeclaration(new Tokens(source, where), found);
    }
  }
}

// Whether the token at `at` (which nextToken has read into `scanned`) is `default`.
const isDefault = (source: string, at: number) =>
  scanned.end - at === 7 && source.startsWith("default", at);

// `function name(` or `export function name(`, spaced by blanks, with an ASCII
// name and its parameters or type parameters right after it: the name ends the
// match, and the token reader would read the same name and go on from there.
const FUNCTION = /function[ \t]+([A-Za-z_$][A-Za-z0-9_$]*)(?=[(<])/y;
const EXPORT_FUNCTION =
  /export[ \t]+function[ \t]+([A-Za-z_$][A-Za-z0-9_$]*)(?=[(<])/y;

// Reads the declaration whose first word is token 0; where the scan goes on.
function readDeclaration(
  tokens: Tokens,
  found: Map<string, [number, boolean]>,
): number {
  const word = (k: number) => tokens.word(k);
  const declare = (name: string, at: number, arrow: boolean) => {
    if (!found.has(name)) found.set(name, [at, arrow]);
  };
  const token = word(0);
  if (token === "export") {
    if (word(1) !== "default") return tokens.end(0);
    const [k, arrow] = functionHead(tokens, 2);
    if (!arrow && (word(k) === "(" || word(k) === "<")) {
      declare("default", tokens.end(k - 1), false);
    }
    return tokens.start(k);
  }
  if (token === "function") {
    let k = 1;
    if (word(k) === "*") k++;
    const name = word(k);
    if (isName(name)) declare(name, tokens.end(k), false);
    return tokens.start(k + 1);
  }
  // const, let or var
  let k = 1;
  const name = word(k);
  if (!isName(name)) return tokens.start(k);
  k++;
  if (word(k) === ":") {
    // A type annotation: up to the `=` that is not part of an arrow type.
    let depth = 0;
    for (;;) {
      const t = word(k);
      if (!t) break;
      if (t === "(" || t === "[" || t === "{" || t === "<") depth++;
      else if ((t === ")" || t === "]" || t === "}" || t === ">") && depth) {
        depth--;
      } else if (
        depth === 0 && (t === ";" || (t === "=" && word(k + 1) !== ">"))
      ) break;
      k++;
    }
  }
  if (word(k) !== "=" || word(k + 1) === ">") return tokens.start(k);
  const [head, arrow] = functionHead(tokens, k + 1);
  if (word(head) === "(" || word(head) === "<") {
    declare(name, tokens.end(head - 1), arrow);
  }
  return tokens.start(head);
}

// Past an optional `async` and `function [*] [name]` from token `k`: the token
// where the parameters would start, and whether no `function` was read (an arrow).
function functionHead(tokens: Tokens, k: number): [number, boolean] {
  if (tokens.word(k) === "async") k++;
  if (tokens.word(k) !== "function") return [k, true];
  k++;
  if (tokens.word(k) === "*") k++;
  if (tokens.word(k) !== "(" && tokens.word(k) !== "<") k++;
  return [k, false];
}

// The `k` smallest of `names` by code unit, in that order, in one pass: a
// module may declare thousands of names, and only the first few count.
function smallest(names: Iterable<string>, k: number): string[] {
  const kept: string[] = [];
  for (const name of names) {
    if (kept.length === k && name >= kept[k - 1]) continue;
    let at = kept.length;
    while (at > 0 && kept[at - 1] > name) at--;
    kept.splice(at, 0, name);
    if (kept.length > k) kept.pop();
  }
  return kept;
}

// `name(params): Return` as written in `source` for each of `names`, or
// `name(...)` for one not declared there.
function signatures(
  source: string,
  names: string[],
  found: Map<string, [number, boolean]> = declarations(source),
): string[] {
  const result: string[] = [];
  for (const name of names) {
    const declared = found.get(name);
    if (declared === undefined) {
      result.push(`${name}(...)`);
      continue;
    }
    const [at, arrow] = declared;
    let window = source.slice(at, at + SIGNATURE_WINDOW);
    if (SURROGATE.test(window)) {
      // The window counts code points: a pair of surrogates is one.
      let end = at;
      for (let k = 0; k < SIGNATURE_WINDOW && end < source.length; k++) {
        end += width(source, end);
      }
      window = source.slice(at, end);
    }
    result.push(signatureAt(window.replace(LEADING_SPACES, ""), name, arrow));
  }
  return result;
}

const spaced = (text: string) =>
  text.split(SPACES).filter((part) => part !== "").join(" ");

// The index just past the bracket group opening at `start` (the length if unclosed).
function balanced(text: string, start: number): number {
  const stack: number[] = [];
  const n = text.length;
  let i = start;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 34 || c === 39 || c === 96) {
      i = stringEnd(text, i + 1, c);
      continue;
    }
    if (c === 61 && text.charCodeAt(i + 1) === 62) {
      i += 2;
      continue;
    }
    // ( [ { < open, and ) ] } > close, what they open.
    const closer = c === 40
      ? 41
      : c === 91
      ? 93
      : c === 123
      ? 125
      : c === 60
      ? 62
      : 0;
    if (closer) stack.push(closer);
    else if (stack.length && c === stack[stack.length - 1]) {
      stack.pop();
      if (!stack.length) return i + 1;
    }
    i++;
  }
  return n;
}

// A `: Type` annotation starting at `at`, or "".
function returnType(text: string, at: number, arrow: boolean): string {
  const n = text.length;
  let i = at;
  while (i < n && IS_SPACE.test(text[i])) i++;
  if (i >= n || text[i] !== ":") return "";
  i++;
  const begin = i;
  let depth = 0;
  for (;; i++) {
    if (i >= n) return ""; // ran past the window: shown without a return type
    const c = text[i];
    if (c === "(" || c === "[" || c === "<") depth++;
    else if (
      (c === ")" || c === "]" || c === ">") && depth &&
      !(c === ">" && text[i - 1] === "=")
    ) {
      depth--;
    } else if (c === "{") {
      // A brace after the type's first words, and not after `:`, `|`, `&`, `=>`, `,`
      // or `<`, opens the body. Read back over the blanks before it only: a
      // search from the end of the type so far would go over it at every brace.
      let last = i - 1;
      while (last >= begin && IS_SPACE.test(text[last])) last--;
      const before = last >= begin ? text[last] : "";
      if (
        depth === 0 && before !== "" && !":|&,<".includes(before) &&
        !(before === ">" && last > begin && text[last - 1] === "=")
      ) break;
      i = balanced(text, i) - 1;
    } else if (
      depth === 0 && arrow &&
      (c === ";" || c === "\n" || (c === "=" && text[i + 1] === ">"))
    ) {
      break;
    }
  }
  return spaced(text.slice(begin, i));
}

function signatureAt(text: string, name: string, arrow: boolean): string {
  let generics = "";
  let at = 0;
  if (text[0] === "<") {
    const end = balanced(text, 0);
    generics = text.slice(0, end);
    at = end;
    while (at < text.length && IS_SPACE.test(text[at])) at++;
  }
  if (at >= text.length || text[at] !== "(") return `${name}(...)`;
  const end = balanced(text, at);
  if (end >= text.length) return `${name}(...)`;
  const params = spaced(text.slice(at + 1, end - 1));
  const returns = returnType(text, end, arrow);
  return `${name}${generics}(${params})` + (returns ? `: ${returns}` : "");
}

// A bridge call's reply crosses from the main thread to the worker, which is
// parked on Atomics.wait, through the worker's own SharedArrayBuffer: a head of
// two Int32 words (the ticket of the part in the buffer, the reply's whole
// length in bytes) and then room for one part. Every ask the worker makes (the
// call itself, then "more" for each further part) carries a ticket it has not
// used before, and a part is the worker's only once the head names the ticket
// it is waiting on. So a wake-up is never taken for an answer: a notify can
// arrive late (the main thread stores a part's ticket, is descheduled, and
// notifies only once the worker has taken that part by itself and parked on
// its next call), and a part written for an ask the worker gave up (the
// program caught a throw from inside the call and called again) names a ticket
// no longer awaited; the worker waits past both.
const HEAD = 8;
const PART = 1 << 16;

// The worker's half, made while it boots, before any user code, and serialised
// like workerMain, so it may use nothing from this module's scope: the built-ins
// it calls are taken here, where no program can have patched them. Returns the
// reader of one reply: it asks with `call(ticket)`, then `more(ticket)` for
// each further part, and gives back the reply's bytes.
function replyReader(
  sab: SharedArrayBuffer,
): (
  call: (ticket: number) => void,
  more: (ticket: number) => void,
) => Uint8Array {
  const wait = Atomics.wait;
  const load = Atomics.load;
  const U8 = Uint8Array;
  const apply = Reflect.apply;
  const copy = Uint8Array.prototype.set;
  const head = new Int32Array(sab, 0, 2);
  const room = sab.byteLength - 8;
  // 0 is the head's ticket before any part is written: never asked for.
  let last = 0;
  const fresh = () => (last = ((last + 1) | 0) || 1);
  return (call, more) => {
    let ticket = fresh();
    call(ticket);
    let bytes: Uint8Array | null = null;
    // Lengths are kept here: a program can redefine the typed arrays' `length`.
    let total = 0;
    let at = 0;
    for (;;) {
      for (;;) {
        const seen = load(head, 0);
        if (seen === ticket) break;
        wait(head, 0, seen);
      }
      if (bytes === null) {
        total = load(head, 1);
        bytes = new U8(total);
      }
      const length = total - at < room ? total - at : room;
      apply(copy, bytes, [new U8(sab, 8, length), at]);
      at += length;
      if (at >= total) return bytes;
      ticket = fresh();
      more(ticket);
    }
  };
}

// The main thread's half, one per worker: it writes a part only when the
// worker asks for it, so it never writes while the worker reads.
class ReplyWriter {
  private head: Int32Array;
  private bytes: Uint8Array | null = null;
  private at = 0;
  private ticket = 0;

  constructor(private sab: SharedArrayBuffer) {
    this.head = new Int32Array(sab, 0, 2);
  }

  // A call's reply, its first part written at once for the call's ticket. A
  // reply still being taken is dropped: the worker gave it up to call again.
  start(ticket: number, bytes: Uint8Array): void {
    this.bytes = bytes;
    this.at = 0;
    this.put(ticket);
  }

  // The next part, if the worker asks for it with the ticket after the last one.
  more(ticket: number): void {
    if (this.bytes === null || ticket !== (((this.ticket + 1) | 0) || 1)) {
      return;
    }
    this.put(ticket);
  }

  private put(ticket: number): void {
    const bytes = this.bytes as Uint8Array;
    const part = bytes.subarray(this.at, this.at + this.sab.byteLength - HEAD);
    new Uint8Array(this.sab, HEAD).set(part);
    this.at += part.length;
    this.ticket = ticket;
    if (this.at >= bytes.length) this.bytes = null;
    Atomics.store(this.head, 1, bytes.length);
    Atomics.store(this.head, 0, ticket);
    Atomics.notify(this.head, 0);
  }
}

// Runs inside every worker, serialised with Function.prototype.toString, so it
// may use nothing from this module's scope. The bootstrap takes what it needs
// of the worker's global scope, then removes every global that is not on the
// allowlist before any user code runs.
function workerMain(
  split: (source: string) => string[],
  makeReader: typeof replyReader,
): void {
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  const denoInspect = g.Deno.inspect;
  const inspect: (value: unknown) => string = (value) =>
    denoInspect(value, { depth: 4, colors: false });
  const post: (message: unknown) => void = g.postMessage.bind(g);
  // Every built-in used once user code may have run is taken here, before any
  // has: a program can patch prototypes and globals (Atomics.wait,
  // Uint8Array.prototype.slice, TextDecoder.prototype.decode, Object.keys,
  // Array.prototype.push...) but not these copies. Nothing below calls a
  // method through a prototype, iterates with the iterator protocol or
  // assigns an array index once user code may have run. The reader of bridge
  // replies (makeReader) takes its own copies when the worker is told its buffer.
  const apply = Reflect.apply;
  const uncurry =
    <T extends unknown[], R>(f: (...args: T) => R) =>
    (self: unknown, ...args: T): R => apply(f, self, args) as R;
  const decoder = new TextDecoder();
  const decode = uncurry(
    TextDecoder.prototype.decode as (b: Uint8Array) => string,
  );
  const BlobOf = Blob;
  const createUrl = URL.createObjectURL.bind(URL);
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const keysOf = Object.keys;
  const ArrayIsArray = Array.isArray;
  const addListener = g.addEventListener.bind(g);
  const defineProperty = Object.defineProperty;
  const SyntaxErrorOf = SyntaxError;
  const ErrorOf = Error;
  const RangeErrorOf = RangeError;
  const TypeErrorOf = TypeError;
  const StringOf = String;
  const ProxyOf = Proxy;
  const PromiseOf = Promise;
  const freeze = Object.freeze;
  const preventExtensions = Object.preventExtensions;
  const ownNames = Object.getOwnPropertyNames;
  const ownDescriptor = Object.getOwnPropertyDescriptor;
  const createObject = Object.create;
  // The timer functions are taken by a check worker's first check, before its
  // module (the first user code it runs) is imported: reading them loads Deno's
  // timers module, some 10 ms of every worker's boot that a program never uses.
  let setTimer: unknown = null;
  let setRepeat: unknown = null;
  let clearTimer: (id: unknown) => void = () => {};
  const sliceText = uncurry(
    String.prototype.slice as (a?: number, b?: number) => string,
  );
  const codeAt = uncurry(String.prototype.charCodeAt as (at: number) => number);
  const findText = uncurry(
    String.prototype.indexOf as (s: string, at?: number) => number,
  );
  const lastText = uncurry(
    String.prototype.lastIndexOf as (s: string) => number,
  );
  const splitText = uncurry(String.prototype.split as (s: string) => string[]);
  const joinText = uncurry(Array.prototype.join as (s: string) => string);
  const startsWith = uncurry(
    String.prototype.startsWith as (s: string) => boolean,
  );
  const includes = uncurry(String.prototype.includes as (s: string) => boolean);
  const execRe = uncurry(
    RegExp.prototype.exec as (s: string) => RegExpExecArray | null,
  );
  const testRe = uncurry(RegExp.prototype.test as (s: string) => boolean);
  const toLocale = uncurry(
    Number.prototype.toLocaleString as (l: string) => string,
  );
  const number = (n: number) => toLocale(n, "en-US");
  // Settles `promise` through the built-in `then`, whatever user code did to
  // Promise.prototype meanwhile.
  const promiseThen = uncurry(
    Promise.prototype.then as (
      ok: (v: unknown) => void,
      no: (e: unknown) => void,
    ) => unknown,
  );
  // WebCrypto does its work on threads of the whole process, not on the
  // worker's: terminating the worker does not stop it, and what a request left
  // running (PBKDF2 of four billion rounds, an RSA key of 16,384 bits) would
  // take the cores of every later request, any holder's. So every call of
  // crypto.subtle is counted until it settles: a request answers only once all
  // its calls have (within its time limit, past which the process is
  // replaced), and none can be made once it has answered.
  // The calls also run one at a time, in the order they were made, so a request's
  // WebCrypto work takes one of those threads, never all of them at once.
  let cryptoRunning = 0;
  let cryptoClosed = false;
  let cryptoIdle: () => void = () => {};
  type Waiting = { start: () => void; next: Waiting | null };
  let cryptoBusy = false;
  let cryptoFirst: Waiting | null = null;
  let cryptoLast: Waiting | null = null;
  const cryptoDone = () => {
    cryptoRunning--;
    const waiting = cryptoFirst;
    if (waiting === null) cryptoBusy = false;
    else {
      cryptoFirst = waiting.next;
      if (cryptoFirst === null) cryptoLast = null;
      waiting.start();
    }
    if (cryptoRunning === 0) cryptoIdle();
  };
  const subtle = g.SubtleCrypto?.prototype;
  if (subtle) {
    for (const name of Object.getOwnPropertyNames(subtle)) {
      const found = Object.getOwnPropertyDescriptor(subtle, name);
      if (name === "constructor" || typeof found?.value !== "function") {
        continue;
      }
      const original = found.value;
      found.value = function (this: unknown, ...args: unknown[]) {
        if (cryptoClosed) {
          throw new ErrorOf(
            `crypto.subtle.${name} cannot be called once the run has ended`,
          );
        }
        const self = this;
        cryptoRunning++;
        // The caller gets a promise of its own, so that one it leaves rejected
        // is still reported as unhandled; a `then` patched to throw leaves the
        // call counted, and its request waits out its time limit.
        return new PromiseOf((resolve, reject) => {
          const start = () => {
            let started: Promise<unknown>;
            try {
              started = apply(original, self, args) as Promise<unknown>;
            } catch (error) {
              cryptoDone();
              reject(error);
              return;
            }
            promiseThen(started, (value: unknown) => {
              cryptoDone();
              resolve(value);
            }, (error: unknown) => {
              cryptoDone();
              reject(error);
            });
          };
          if (!cryptoBusy) {
            cryptoBusy = true;
            start();
            return;
          }
          const waiting: Waiting = { start, next: null };
          if (cryptoLast === null) cryptoFirst = waiting;
          else cryptoLast.next = waiting;
          cryptoLast = waiting;
        });
      };
      defineProperty(subtle, name, found);
    }
  }
  // Waits until no crypto.subtle call of this request is running, then closes
  // crypto.subtle until the next check of a kept worker opens it again.
  const cryptoSettled = async () => {
    while (cryptoRunning > 0) {
      await new PromiseOf<void>((resolve) => (cryptoIdle = resolve));
    }
    cryptoClosed = true;
  };
  // The runtime's messages reach this listener first, and no later one: a
  // listener user code adds (through EventTarget.prototype) sees none of them.
  const stopHere = uncurry(
    Event.prototype.stopImmediatePropagation as () => void,
  );
  let onMessage: (data: unknown) => void = () => {};
  g.addEventListener("message", (event: { data: unknown }) => {
    stopHere(event);
    onMessage(event.data);
  });
  // Appends without Array.prototype: an index setter there sees nothing.
  const append = <T>(list: T[], item: T) =>
    defineProperty(list, list.length, {
      value: item,
      writable: true,
      enumerable: true,
      configurable: true,
    });

  // What user code may see: the language itself and the web APIs that compute
  // without reaching the host. Anything else a Deno release adds stays out.
  const allowed = new Set([
    "Object",
    "Function",
    "Array",
    "Number",
    "parseFloat",
    "parseInt",
    "Infinity",
    "NaN",
    "undefined",
    "Boolean",
    "String",
    "Symbol",
    "Date",
    "Promise",
    "RegExp",
    "Error",
    "AggregateError",
    "EvalError",
    "RangeError",
    "ReferenceError",
    "SyntaxError",
    "TypeError",
    "URIError",
    "SuppressedError",
    "globalThis",
    "JSON",
    "Math",
    "Intl",
    "ArrayBuffer",
    "SharedArrayBuffer",
    "Atomics",
    "Uint8Array",
    "Int8Array",
    "Uint16Array",
    "Int16Array",
    "Uint32Array",
    "Int32Array",
    "BigUint64Array",
    "BigInt64Array",
    "Uint8ClampedArray",
    "Float16Array",
    "Float32Array",
    "Float64Array",
    "DataView",
    "Map",
    "BigInt",
    "Set",
    "Iterator",
    "WeakMap",
    "WeakSet",
    "Proxy",
    "Reflect",
    "FinalizationRegistry",
    "WeakRef",
    "decodeURI",
    "decodeURIComponent",
    "encodeURI",
    "encodeURIComponent",
    "escape",
    "unescape",
    "eval",
    "isFinite",
    "isNaN",
    "WebAssembly",
    "Temporal",
    "DisposableStack",
    "AsyncDisposableStack",
    "console",
    "queueMicrotask",
    "setTimeout",
    "clearTimeout",
    "setInterval",
    "clearInterval",
    "structuredClone",
    "atob",
    "btoa",
    "TextEncoder",
    "TextDecoder",
    "URL",
    "URLSearchParams",
    "URLPattern",
    "AbortController",
    "AbortSignal",
    "DOMException",
    "Event",
    "EventTarget",
    "CustomEvent",
    "ErrorEvent",
    "PromiseRejectionEvent",
    "crypto",
    "Crypto",
    "SubtleCrypto",
    "CryptoKey",
    "performance",
    "Performance",
    "PerformanceEntry",
    "PerformanceMark",
    "PerformanceMeasure",
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
        defineProperty(g, name, {
          value: undefined,
          writable: false,
          configurable: false,
        });
      } catch {
        try {
          g[name] = undefined;
        } catch {
          // Left as it is: the permissions still hold.
        }
      }
    }
  }

  // Deno keeps blob URLs in one store for the whole process, the runtime's own among
  // them (a worker's script, the gitmem module, a code memory's cached module), and
  // stack traces name them: revoked, each would break every later request, anyone's.
  // User code cannot make a Blob, so it has no URL of its own to make or revoke.
  for (const name of ["createObjectURL", "revokeObjectURL"]) {
    defineProperty(URL, name, {
      value: undefined,
      writable: false,
      enumerable: false,
      configurable: false,
    });
  }

  onMessage = (data: unknown) => {
    const init = data as {
      token: string;
      sab: SharedArrayBuffer;
      settings: Settings;
      baseUrl: string;
      linkedUrl: string;
      warmUrl: string;
    };
    {
      const token = init.token;
      const settings = init.settings;
      const readReply = makeReader(init.sab);
      let written = 0;
      let outputFull = false;
      let viewsOpened = 0;
      const send = (message: Record<string, unknown>) =>
        post({ ...message, t: token });

      const write = (args: unknown[]) => {
        if (outputFull) return;
        let text = "";
        for (
          let k = 0;
          k < args.length && text.length <= settings.outputCap;
          k++
        ) {
          const a = args[k];
          text += (k > 0 ? " " : "") + (typeof a === "string" ? a : inspect(a));
        }
        text += "\n";
        if (text.length > settings.outputCap) {
          text = sliceText(text, 0, settings.outputCap + 1);
        }
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
      defineProperty(g, "console", {
        value: capture,
        writable: true,
        configurable: true,
      });

      // Refusals in the limit-exceeded voice the rest of gitmem uses.
      const refuse = (
        what: string,
        attempted: number,
        limit: string,
        max: number,
        fix: string,
      ) =>
        new RangeErrorOf(
          `refused: ${what} would be ${number(attempted)}, over ${limit} (${
            number(max)
          }). ${fix}`,
        );

      let loading = true;
      // Set while a kept module's check runs: it may call nothing of the host.
      let checking = false;
      const call = (name: string, args: unknown): string => {
        if (checking) {
          throw new ErrorOf(
            "a check cannot read or write memories; return a verdict instead",
          );
        }
        if (loading) {
          throw new ErrorOf(
            `memories.${name} cannot be called while a module loads`,
          );
        }
        if (args === undefined) args = {};
        if (args === null || typeof args !== "object" || ArrayIsArray(args)) {
          throw new TypeErrorOf(`memories.${name} takes one object argument`);
        }
        let json: string;
        try {
          json = stringify(args);
        } catch (e) {
          throw new TypeErrorOf(
            `memories.${name}: the argument is not JSON: ${e}`,
          );
        }
        if (typeof json !== "string") {
          throw new TypeErrorOf(`memories.${name} takes one object argument`);
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
          const c = codeAt(json, i);
          if (quoted) {
            if (c === 92) i++;
            else if (c === 34) quoted = false;
          } else if (c === 34) quoted = true;
          else if (c === 91 || c === 123) {
            depth++;
            if (depth > deepest) deepest = depth;
          } else if (c === 93 || c === 125) depth--;
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
        const bytes = readReply(
          (id) => send({ op: "call", id, name, args: json }),
          (id) => send({ op: "more", id }),
        );
        const reply = parse(decode(decoder, bytes)) as {
          ok: boolean;
          text: string;
        };
        if (reply.ok !== true) throw new ErrorOf(StringOf(reply.text));
        return StringOf(reply.text);
      };
      const callName = (name: string) => {
        if (name.length < 1 || name.length > 64) return false;
        for (let i = 0; i < name.length; i++) {
          const c = codeAt(name, i);
          const letter = (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
          const digitOrUnderscore = (c >= 48 && c <= 57) || c === 95;
          if (!letter && (i === 0 || !digitOrUnderscore)) return false;
        }
        return true;
      };
      // The holder's call names, as a run's request lists them: what
      // Object.keys, for...in and `in` see. Any name may still be called.
      const listed: string[] = [];
      const isListed = (name: unknown): name is string => {
        for (let k = 0; k < listed.length; k++) {
          if (listed[k] === name) return true;
        }
        return false;
      };
      const callOf = (name: string) => (args?: unknown) => call(name, args);
      const memories = new ProxyOf(createObject(null), {
        get: (_target: unknown, name: unknown) => {
          if (typeof name !== "string" || name === "then") return undefined;
          if (!callName(name)) {
            return () => {
              throw new TypeErrorOf(
                `memories has no call named ${
                  stringify(sliceText(name, 0, 64))
                }`,
              );
            };
          }
          return callOf(name);
        },
        has: (_target: unknown, name: unknown) => isListed(name),
        ownKeys: () => {
          const keys: string[] = [];
          for (let k = 0; k < listed.length; k++) append(keys, listed[k]);
          return keys;
        },
        getOwnPropertyDescriptor: (_target: unknown, name: unknown) =>
          isListed(name)
            ? {
              value: callOf(name),
              writable: false,
              enumerable: true,
              configurable: true,
            }
            : undefined,
        set: () => false,
        defineProperty: () => false,
        deleteProperty: () => false,
      });
      const views = freeze({
        openText(title: unknown, text: unknown): void {
          if (typeof title !== "string" || typeof text !== "string") {
            throw new TypeErrorOf(
              "views.openText(title, text) takes two strings",
            );
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
      const runtimeSlot = { memories, views, started: () => (linked = true) };
      defineProperty(g, Symbol.for("gitmem.runtime"), { value: runtimeSlot });

      let unhandled: string | null = null;
      addListener(
        "unhandledrejection",
        (event: { preventDefault(): void; reason: unknown }) => {
          event.preventDefault();
          if (unhandled === null) unhandled = describe(event.reason);
        },
      );
      addListener(
        "error",
        (event: { preventDefault(): void; error: unknown }) => {
          event.preventDefault();
          if (unhandled === null) unhandled = describe(event.error);
        },
      );

      // Every URL this worker makes is told to the main thread before it is
      // imported, which revokes them all when the request ends: no later run
      // can import this one's program.
      const labels: [string, string][] = [];
      const label = (url: string, name: string) => append(labels, [url, name]);
      const replaceAll = (text: string, from: string, to: string): string => {
        let out = "";
        let at = 0;
        for (;;) {
          const found = findText(text, from, at);
          if (found < 0) break;
          out += sliceText(text, at, found) + to;
          at = found + from.length;
        }
        return out + sliceText(text, at);
      };
      const relabel = (text: string): string => {
        for (let k = 0; k < labels.length; k++) {
          text = replaceAll(text, labels[k][0], labels[k][1]);
        }
        return text;
      };
      // Error text is capped here, in the main thread and in the host alike.
      const capped = (text: string): string =>
        text.length > settings.maxErrorChars
          ? sliceText(text, 0, settings.maxErrorChars) +
            " [error text truncated]"
          : text;
      const frameLine = /^\s+at /;
      // What a thrown value says, whatever it is: a Proxy whose traps throw (at
      // `instanceof`, at `.stack`) is described as an uncaught error, never left
      // to throw out of the runtime's own code, where it would hold the request's
      // answer back until its time limit.
      const describe = (error: unknown): string => {
        try {
          return describeOnce(error);
        } catch {
          return "Uncaught error";
        }
      };
      const describeOnce = (error: unknown): string => {
        if (error instanceof ErrorOf) {
          const stack = typeof error.stack === "string"
            ? capped(error.stack)
            : "";
          let head = "";
          try {
            head = capped(
              `${StringOf(error.name)}: ${StringOf(error.message)}`,
            );
          } catch {
            head = "Error";
          }
          let frames = "";
          const text = relabel(stack);
          let at = 0;
          while (at < text.length) {
            let end = findText(text, "\n", at);
            if (end < 0) end = text.length;
            const line = sliceText(text, at, end);
            at = end + 1;
            if (!testRe(frameLine, line)) continue;
            for (let k = 0; k < labels.length; k++) {
              if (includes(line, labels[k][1] + ":")) {
                frames += "\n" + line;
                break;
              }
            }
          }
          return relabel(head) + frames;
        }
        try {
          return "Uncaught " + relabel(capped(inspect(error)));
        } catch {
          return "Uncaught error";
        }
      };
      // A module that does not parse fails its import with a message that names
      // the URL it came from; turn that into "line:column: message".
      const syntax = /SyntaxError: ([^\n]*)/;
      const position = /^:(\d+):(\d+)/;
      const diagnose = (
        error: unknown,
        shift = 0,
      ): { diagnostic: string; where: string } | null => {
        let text: string;
        try {
          text = capped(
            error instanceof ErrorOf
              ? `${StringOf(error.name)}: ${StringOf(error.message)}\n${
                StringOf(error.stack ?? "")
              }`
              : StringOf(error),
          );
        } catch {
          return null;
        }
        const match = execRe(syntax, text);
        if (!match) return null;
        let message = match[1];
        for (let k = 0; k < labels.length; k++) {
          const url = labels[k][0];
          const name = labels[k][1];
          const at = lastText(text, url + ":");
          if (at < 0) continue;
          const loc = execRe(position, sliceText(text, at + url.length));
          if (loc) {
            message = relabel(message);
            const line = +loc[1];
            const column = line === 1 ? +loc[2] - shift : +loc[2];
            return {
              diagnostic: `${line}:${column < 1 ? 1 : column}: ${message}`,
              where: name,
            };
          }
        }
        return {
          diagnostic: `1:1: ${relabel(message)}`,
          where: labels.length ? labels[labels.length - 1][1] : "",
        };
      };
      // Blob URLs skip the base64 round trip a data URL costs. Each is told to
      // the main thread before anything imports it, and revoked there when the
      // request ends.
      const toUrl = (source: string, media = "application/typescript") => {
        const url = createUrl(new BlobOf([source], { type: media }));
        send({ op: "url", url });
        return url;
      };
      const join = (parts: string[], target: string) => {
        const quoted = stringify(target);
        let text = parts[0];
        for (let k = 1; k < parts.length; k++) text += quoted + parts[k];
        return text;
      };
      // Made once by the main thread, so that a cached module's text (which
      // imports baseUrl) is the same in every worker; each worker evaluates
      // its own instance of both.
      const baseUrl = init.baseUrl;
      // Imported first by the generated "gitmem" module: once it runs, linking
      // is over and any later error is the program's own.
      const linkedUrl = init.linkedUrl;
      const settle = (promise: Promise<unknown>) =>
        new PromiseOf<{ ok: boolean; value: unknown }>((resolve) => {
          promiseThen(
            promise,
            (value: unknown) => resolve({ ok: true, value }),
            (value: unknown) => resolve({ ok: false, value }),
          );
        });
      // What a load's wrapper hands over: the module's namespace, never passed
      // through a promise (a module exporting `then` would be taken for one).
      let namespace: Record<string, unknown> | null = null;
      defineProperty(runtimeSlot, "loaded", {
        value: (secret: unknown, ns: Record<string, unknown>) => {
          if (secret === token) namespace = ns;
        },
      });
      freeze(runtimeSlot);
      // The module a load's wrapper hands the namespace to: made and evaluated while
      // the worker boots, before any user code, so it holds the real `loaded`.
      const reporter = toUrl(
        `const r = globalThis[Symbol.for("gitmem.runtime")];\n` +
          `const loaded = r.loaded;\nexport const got = (ns) => loaded(${
            stringify(token)
          }, ns);\n`,
        "application/javascript",
      );

      const load = async (
        request: {
          op: string;
          source: string;
          key: string;
          url: string;
          direct: boolean;
        },
      ) => {
        loading = true;
        // Compiling must not run the code: a throw ahead of it on line 1 stops
        // evaluation once parsing and linking have succeeded. A load imports the
        // module's cached URL, made by the main thread.
        const stop = request.op === "compile"
          ? `throw ${stringify(token)};`
          : "";
        const url = stop
          ? toUrl(join(split(stop + StringOf(request.source)), baseUrl))
          : StringOf(request.url);
        label(url, request.op === "load" ? StringOf(request.key) : "module");
        let outcome: { ok: boolean; value: unknown };
        if (!stop && request.direct === true) {
          // A module that cannot export `then` (the main thread read its text) is
          // imported as it is, its namespace the import's value: a module more,
          // some 1 ms of every load, for nothing.
          outcome = await settle(import(url));
          if (outcome.ok) namespace = outcome.value as Record<string, unknown>;
        } else {
          const wrapper = toUrl(
            `import { got } from ${stringify(reporter)};\n` +
              `import * as ns from ${stringify(url)};\ngot(ns);\n`,
            "application/javascript",
          );
          outcome = await settle(import(wrapper));
        }
        await cryptoSettled();
        if (outcome.ok && namespace !== null) {
          const ns = namespace as Record<string, unknown>;
          const names = keysOf(ns);
          const exports: string[] = [];
          for (
            let k = 0;
            k < names.length && exports.length < settings.maxViews;
            k++
          ) {
            const name = names[k];
            if (
              typeof ns[name] === "function" &&
              name.length <= settings.maxTitleChars
            ) {
              append(exports, name);
            }
          }
          send({ op: "result", diagnostic: null, exports });
          return;
        }
        const error = outcome.value;
        if (stop && error === token) {
          send({ op: "result", diagnostic: null, exports: [] });
          return;
        }
        const found = diagnose(error, stop.length);
        let diagnostic: string;
        if (found) diagnostic = found.diagnostic;
        else {
          const text = describe(error);
          const end = findText(text, "\n");
          diagnostic = `1:1: ${end < 0 ? text : sliceText(text, 0, end)}`;
        }
        send({ op: "result", diagnostic: capped(diagnostic), exports: [] });
      };

      // The name a link error says the generated module lacks, if it is one. A
      // program that never imports "gitmem" is never linked to it, and may throw
      // anything, even a Proxy whose traps throw.
      const missingExport = (
        error: unknown,
        gitmemUrl: string,
      ): string | null => {
        try {
          if (linked || !(error instanceof SyntaxErrorOf)) return null;
        } catch {
          return null;
        }
        const head =
          `The requested module '${gitmemUrl}' does not provide an export named '`;
        const message = StringOf(error.message);
        if (!startsWith(message, head)) return null;
        const end = findText(message, "'", head.length);
        return end < 0 ? null : sliceText(message, head.length, end);
      };

      const run = async (
        request: {
          source: string;
          modules: Record<string, string>;
          kind: string;
          calls: string[];
          direct: boolean;
        },
      ) => {
        loading = false;
        const calls = request.calls;
        if (ArrayIsArray(calls)) {
          for (let k = 0; k < calls.length; k++) {
            if (typeof calls[k] === "string" && callName(calls[k])) {
              append(listed, calls[k]);
            }
          }
        }
        const modules = request.modules;
        const kind = StringOf(request.kind);
        if (kind === "onuse") {
          defineProperty(g, "memories", {
            value: memories,
            writable: true,
            configurable: true,
          });
          defineProperty(g, "views", {
            value: views,
            writable: true,
            configurable: true,
          });
        }
        const parts = split(StringOf(request.source));
        // A module's code runs only in a program that imports it by name: the
        // generated module starts with none, and each link error naming a loaded
        // module adds that one before anything has run.
        const imported: string[] = [];
        const importedUrls: string[] = [];
        let error: string | null = null;
        for (;;) {
          let head = `import ${stringify(linkedUrl)};\nexport * from ${
            stringify(baseUrl)
          };\n`;
          for (let k = 0; k < imported.length; k++) {
            head += `export * as ${imported[k]} from ${
              stringify(importedUrls[k])
            };\n`;
          }
          const gitmemUrl = toUrl(head, "application/javascript");
          label(gitmemUrl, "gitmem");
          const programUrl = toUrl(join(parts, gitmemUrl));
          label(programUrl, kind);
          // Imported through a module of its own, so a program exporting `then`
          // is not taken for a promise; one that cannot export it (the main
          // thread read its text, as for a load) is imported as it is: a module
          // more (some 0.4 M instructions of a run) for nothing.
          const outcome = await settle(
            import(
              request.direct === true ? programUrl : toUrl(
                `import ${stringify(programUrl)};\n`,
                "application/javascript",
              )
            ),
          );
          if (outcome.ok) break;
          const e = outcome.value;
          const missing = missingExport(e, gitmemUrl);
          if (
            missing !== null && imported.indexOf(missing) < 0 &&
            Object.prototype.hasOwnProperty.call(modules, missing)
          ) {
            // The module's cached URL, made by the main thread.
            const url = StringOf(modules[missing]);
            label(url, missing);
            append(imported, missing);
            append(importedUrls, url);
            continue;
          }
          const found = diagnose(e);
          if (found) {
            const where = found.where === kind
              ? ""
              : ` in module ${found.where}`;
            error = `SyntaxError${where}: ${found.diagnostic}`;
          } else {
            error = describe(e);
          }
          break;
        }
        await cryptoSettled();
        if (error === null && unhandled !== null) error = unhandled;
        send({
          op: "done",
          error: error === null ? null : capped(error),
          imported,
        });
      };

      // A kept module: loaded by this worker's first check, then asked again for
      // each later check of the same module in the same scope (the host keeps the
      // worker for exactly that pair). Each check gets its own copy of the change,
      // and the timers it set are cleared when it answers. Once the module's
      // top-level code has run, the global bindings and the prototypes every
      // object inherits from are frozen, so no check can leave a patched built-in
      // or a global for the next one.
      let kept: Record<string, unknown> | null = null;
      const timers: unknown[] = [];
      const verdict = async (ok: boolean, value: unknown, reuse: boolean) => {
        await cryptoSettled();
        let kind = "error";
        let message: string | null = null;
        let error: string | null = null;
        if (!ok) error = capped(describe(value));
        else if (value === undefined || value === null) kind = "accept";
        else {
          kind = typeof value;
          if (typeof value === "string") {
            message = sliceText(value, 0, settings.maxArgsChars);
          }
        }
        if (error === null && unhandled !== null) {
          kind = "error";
          error = unhandled;
        }
        send({
          op: "verdict",
          kind,
          message,
          error,
          reuse: reuse && error === null,
        });
      };
      const lockDown = () => {
        const keep = (target: unknown) => {
          if (
            (typeof target === "object" && target !== null) ||
            typeof target === "function"
          ) {
            freeze(target);
          }
        };
        keep(Object.prototype);
        keep(Array.prototype);
        keep(Function.prototype);
        const names = ownNames(g);
        for (let k = 0; k < names.length; k++) {
          const found = ownDescriptor(g, names[k]);
          if (found !== undefined && "value" in found && found.configurable) {
            defineProperty(g, names[k], {
              writable: false,
              configurable: false,
            });
          }
        }
        preventExtensions(g);
      };
      const checkOnce = async (
        request: { url: string; key: string; change: string },
      ) => {
        cryptoClosed = false;
        if (kept === null) {
          loading = true;
          setTimer = g.setTimeout;
          setRepeat = g.setInterval;
          clearTimer = g.clearTimeout;
          // Every timer a check sets is known, so that it can be cleared.
          defineProperty(g, "setTimeout", {
            value: (...args: unknown[]) => {
              const id = apply(setTimer as () => unknown, g, args);
              append(timers, id);
              return id;
            },
            writable: true,
            configurable: true,
          });
          defineProperty(g, "setInterval", {
            value: (...args: unknown[]) => {
              const id = apply(setRepeat as () => unknown, g, args);
              append(timers, id);
              return id;
            },
            writable: true,
            configurable: true,
          });
          const url = StringOf(request.url);
          const key = StringOf(request.key);
          label(url, key);
          const wrapper = toUrl(
            `import { got } from ${stringify(reporter)};\n` +
              `import * as ns from ${stringify(url)};\ngot(ns);\n`,
            "application/javascript",
          );
          const outcome = await settle(import(wrapper));
          if (!outcome.ok || namespace === null) {
            const found = diagnose(outcome.value);
            await cryptoSettled();
            if (found) {
              send({
                op: "verdict",
                kind: "error",
                error: capped(
                  `SyntaxError in module ${key}: ${found.diagnostic}`,
                ),
                reuse: false,
              });
            } else void verdict(false, outcome.value, false);
            return;
          }
          kept = namespace;
          lockDown();
        }
        const module = kept as Record<string, unknown>;
        const check = module.check;
        if (typeof check !== "function") {
          void verdict(
            false,
            new ErrorOf("the module exports no check(change) function"),
            false,
          );
          return;
        }
        checking = true;
        let change: unknown;
        try {
          change = parse(StringOf(request.change));
        } catch (e) {
          void verdict(false, e, false);
          return;
        }
        const outcome = await settle(
          new PromiseOf((resolve) =>
            resolve(apply(check as () => unknown, module, [change]))
          ),
        );
        for (let k = 0; k < timers.length; k++) clearTimer(timers[k]);
        timers.length = 0;
        void verdict(outcome.ok, outcome.value, true);
      };

      onMessage = (data: unknown) => {
        const request = data as {
          t: string;
          op: string;
          [key: string]: unknown;
        };
        if (
          request === null || typeof request !== "object" || request.t !== token
        ) return;
        if (request.op === "check") {
          void checkOnce(
            request as unknown as { url: string; key: string; change: string },
          );
          return;
        }
        if (request.op === "compile" || request.op === "load") {
          void load(
            request as unknown as {
              op: string;
              source: string;
              key: string;
              url: string;
              direct: boolean;
            },
          );
        } else if (request.op === "run") {
          void run(
            request as unknown as {
              source: string;
              modules: Record<string, string>;
              kind: string;
              calls: string[];
              direct: boolean;
            },
          );
        }
      };
      // The first TypeScript module a process imports pays for setting up its
      // transpiler and loader, some ten times a trivial program's cost. Paid here,
      // while the worker boots, no program waits for it: not even the first one in
      // a fresh process, as after an attack that got the last one killed. One URL
      // for every worker of the process (made by the main thread, kept by the host),
      // so it is transpiled once and no worker leaves a file behind.
      PromiseOf.all([import(init.warmUrl), import(reporter)]).catch(() => {})
        .finally(() => send({ op: "ready" }));
    }
  };
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
        const length = new DataView(this.buffer.buffer, this.buffer.byteOffset)
          .getUint32(0);
        if (this.buffer.length >= 4 + length) {
          const body = this.buffer.subarray(4, 4 + length);
          const cut = body.indexOf(10);
          const message = JSON.parse(
            decoder.decode(cut < 0 ? body : body.subarray(0, cut)),
          ) as Message;
          if (cut >= 0) {
            const bytes = body.subarray(cut + 1);
            message.source = sourceDecoder.decode(bytes);
            sourceBytes.set(message, bytes);
          }
          this.buffer = this.buffer.slice(4 + length);
          return message;
        }
        // The rest of a frame is read straight into one buffer of its size:
        // growing the buffer by each chunk read would copy what it holds again
        // at every read, quadratic in the frame (seconds for tens of MB).
        const whole = new Uint8Array(4 + length);
        whole.set(this.buffer);
        let at = this.buffer.length;
        while (at < whole.length) {
          const n = await this.conn.read(whole.subarray(at));
          if (n === null) return null;
          at += n;
        }
        this.buffer = whole;
        continue;
      }
      const chunk = new Uint8Array(1 << 16);
      const n = await this.conn.read(chunk);
      if (n === null) return null;
      if (this.buffer.length === 0) {
        this.buffer = chunk.subarray(0, n);
        continue;
      }
      const grown = new Uint8Array(this.buffer.length + n);
      grown.set(this.buffer);
      grown.set(chunk.subarray(0, n), this.buffer.length);
      this.buffer = grown;
    }
  }
}

// Error text and diagnostics are capped in the worker, here and in the host.
function capError(text: string, settings: Settings): string {
  // The worker's own cap leaves its mark: room for it.
  return text.length > settings.maxErrorChars + 32
    ? text.slice(0, settings.maxErrorChars) + " [error text truncated]"
    : text;
}
// The exit status of a process that retired itself while idle.
const IDLE_EXIT = 3;
// Workers kept booted, each for one request: a program and the onUse script its
// turn ends with, or a read that loads two code memories, finds each its own
// without waiting for one to be made, and a longer burst finds one booted while
// the request before it ran. An idle one costs some 2-4 MB.
const SPARES = 3;
// Booting a worker blocks this thread while Deno makes its isolate (it does so
// synchronously, some 10 ms), so a spare is booted once no request has come for
// BOOT_AFTER_MS: the second request of a pair, sent as soon as the first's reply
// arrives, finds a spare rather than a boot in its way. Once fewer than
// BOOT_AT_ONCE are left, a burst is under way and the next is booted at once,
// as soon as the reply is out: the boot overlaps the host's turn between two
// requests and the previous worker's teardown, and its own setup (some 5 ms
// more on the worker's thread) overlaps the next request, so the request after
// next finds it booted. A worker made when a request arrives would instead hold
// that request for the whole boot and then for its setup. The host may spread a
// burst over two processes, each then seeing a request every two calls: the wait
// is longer than that gap, so no boot on this timer lands in a request's way.
const BOOT_AFTER_MS = 60;
const BOOT_AT_ONCE = 2;

// Made once by the main thread and given to every worker.
type Urls = {
  baseUrl: string;
  linkedUrl: string;
  warmUrl: string;
  workerUrl: string;
};

// One worker, booted and waiting for exactly one request. Every message it
// sends must carry its token: user code can reach postMessage but not the token.
class Slot {
  // Deno names each worker's thread `worker-<n>`, counting the workers of the
  // process from 1 in the order they are made; only this class makes any.
  private static made = 0;
  // The numbers of the workers terminated since the last reply: the host waits
  // for their threads to be gone (a terminate does not stop a thread caught in
  // a microtask loop, a Deno defect) before the process serves anyone again.
  static ended: number[] = [];
  readonly id = ++Slot.made;
  readonly worker: Worker;
  readonly token = crypto.randomUUID();
  readonly sab = new SharedArrayBuffer(HEAD + PART);
  readonly replies = new ReplyWriter(this.sab);
  readonly ready: Promise<void>;
  listener: ((message: Message) => void) | null = null;
  // Ready for its request: its thread is up and its warm-up module imported.
  booted = false;
  exited = false;
  // The blob URLs the worker made for its request, revoked when it ends.
  private urls: string[] = [];
  private revoked = false;

  constructor(settings: Settings, urls: Urls) {
    this.worker = new Worker(urls.workerUrl, { type: "module" });
    let markReady: () => void = () => {};
    this.ready = new Promise((resolve) => (markReady = resolve));
    this.worker.onmessage = (event: MessageEvent) => {
      const message = event.data as Message;
      if (
        message === null || typeof message !== "object" ||
        message.t !== this.token
      ) return;
      if (message.op === "ready") {
        this.booted = true;
        markReady();
        return;
      }
      if (message.op === "url") {
        const url = String(message.url);
        if (!url.startsWith("blob:")) return;
        if (this.revoked) URL.revokeObjectURL(url);
        else this.urls.push(url);
        return;
      }
      this.listener?.(message);
    };
    // An error that escaped the worker ended it; handled here, it goes no further.
    this.worker.onerror = (event: ErrorEvent) => {
      event.preventDefault();
      this.stop();
      markReady();
      this.listener?.({ op: "gone", why: String(event.message) });
    };
    this.worker.onmessageerror = () => {};
    this.worker.postMessage({
      token: this.token,
      sab: this.sab,
      settings,
      ...urls,
    });
  }

  request(message: Message): void {
    this.worker.postMessage({ ...message, t: this.token });
  }

  // No later request, any holder's, can import what this one made.
  revoke(): void {
    this.revoked = true;
    for (const url of this.urls) URL.revokeObjectURL(url);
    this.urls = [];
  }

  // `named`: whether the next reply still has to name it (one released by a
  // reply was named in that reply).
  stop(named = true): void {
    if (this.exited) return;
    this.exited = true;
    this.worker.terminate();
    if (named) Slot.ended.push(this.id);
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
  // URLs let go of, revoked by trim.
  private evicted: string[] = [];

  begin(): void {
    this.pinned.clear();
  }

  constructor(private base: string, private settings: Settings) {}

  // The URL of a module's text, made once and kept; `bytes`, when given, are
  // the text's UTF-8, used as they are when nothing in the text is rewritten.
  url(source: string, bytes?: Uint8Array): string {
    const parts = splitImports(source);
    const text = joinImports(parts, this.base);
    let url = this.urls.get(text);
    if (url !== undefined) {
      // Most recently used last.
      this.urls.delete(text);
      this.urls.set(text, url);
      this.pinned.add(url);
      return url;
    }
    url = URL.createObjectURL(
      new Blob([text === source && bytes !== undefined ? bytes : text], {
        type: "application/typescript",
      }),
    );
    this.urls.set(text, url);
    this.pinned.add(url);
    this.chars += text.length;
    const { cachedModules, cachedChars } = this.settings;
    while (this.urls.size > cachedModules || this.chars > cachedChars) {
      const [oldest, oldUrl] = this.urls.entries().next().value as [
        string,
        string,
      ];
      if (this.pinned.has(oldUrl)) break;
      this.urls.delete(oldest);
      this.chars -= oldest.length;
      this.evicted.push(oldUrl);
    }
    return url;
  }

  // Revokes the URLs let go: called once the request's reply is out (which no
  // longer lists them), before the next request is read, so no request waits
  // for it and none can import them.
  trim(): void {
    for (const url of this.evicted.splice(0)) URL.revokeObjectURL(url);
  }

  kept(): string[] {
    return [...this.urls.values()];
  }
}

// A worker kept for the checks of one module in one scope.
type Kept = { slot: Slot; uses: number; spentMs: number };
// Kept workers one process holds at most, and the checks one serves at most.
const KEPT = 4;
const KEPT_USES = 200;

class Runtime {
  private spares: Slot[] = [];
  // Workers whose request answered, ended as its reply is written.
  private released: Slot[] = [];
  private checkers = new Map<string, Kept>();
  private bootTimer: ReturnType<typeof setTimeout> | null = null;
  private busy = true;
  // Bumped as each request ends and as each spare boots: a watch window that saw
  // either is not idle time.
  private work = 0;
  // Spares booted and not yet ready.
  private booting = 0;
  // Requests that found no booted spare and waited for one to finish booting.
  private cold = 0;
  // Requests that found no spare at all, and had their worker made on their way.
  private made = 0;
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
      linkedUrl: script(
        'globalThis[Symbol.for("gitmem.runtime")].started();\n',
      ),
      warmUrl: script(
        "export const warm: number = 1;\n",
        "application/typescript",
      ),
      workerUrl: script(
        `(${workerMain.toString()})(${splitImports.toString()}, ${replyReader.toString()});\n`,
      ),
    };
    this.modules = new Modules(this.urls.baseUrl, settings);
  }

  // The transpiled files the host keeps: the modules' and the warm-up's.
  private kept(): string[] {
    return [...this.modules.kept(), this.urls.warmUrl];
  }

  private boot(): void {
    const spare = new Slot(this.settings, this.urls);
    this.spares.push(spare);
    // The spare boots on its own thread; that is work, not idling.
    this.booting++;
    this.work++;
    void spare.ready.then(() => this.booting--);
  }

  // Boots the missing spares one at a time, each after `after` ms without a
  // request. A request cancels the plan; its end makes a new one.
  private warm(after = BOOT_AFTER_MS): void {
    if (this.bootTimer !== null) clearTimeout(this.bootTimer);
    this.bootTimer = null;
    if (this.spares.length >= SPARES || this.retiring) return;
    this.bootTimer = setTimeout(() => {
      this.bootTimer = null;
      if (this.busy || this.retiring) return;
      this.boot();
      this.warm();
    }, after);
  }

  private take(): Slot {
    const spare = this.spares.shift();
    if (spare === undefined || !spare.booted) this.cold++;
    if (spare !== undefined) return spare;
    this.made++;
    return new Slot(this.settings, this.urls);
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
        await this.host.send({
          op: "pong",
          spares,
          cold: this.cold,
          made: this.made,
        });
      } else if (op === "compile" || op === "load") {
        this.modules.begin();
        await this.reply(await this.load(request));
      } else if (op === "check") {
        this.modules.begin();
        await this.reply(await this.check(request));
      } else if (op === "run") {
        this.modules.begin();
        const result = await this.run(request);
        if (result === null) return;
        await this.reply(result);
      } else {await this.host.send({
          op: "error",
          message: `unknown op ${String(op)}`,
        });}
      this.work++;
      // A burst is under way: its reply is out, and the next spare is made
      // before the next request is read.
      if (this.spares.length < BOOT_AT_ONCE && !this.retiring) this.boot();
      this.warm();
    }
  }

  // A request's result, with the cache the host keeps and the workers it ended.
  // The workers the request released are named in it as ended and terminated
  // as soon as it is written, before the next request is read: the host has its
  // answer without waiting for their teardown, and still waits for their
  // threads to be gone before the process serves anyone again.
  private async reply(result: Message): Promise<void> {
    const released = this.released.splice(0);
    const ended = Slot.ended.splice(0);
    for (const slot of released) ended.push(slot.id);
    try {
      await this.host.send({ ...result, keep: this.kept(), ended });
    } finally {
      for (const slot of released) slot.stop(false);
      this.modules.trim();
    }
  }

  // Ends the worker of a request that answered: its URLs are revoked at once,
  // and it is terminated once the reply naming it is written (see reply).
  private release(slot: Slot): void {
    slot.revoke();
    this.released.push(slot);
  }

  // Ends a request's worker: its URLs are revoked at once, and the host waits
  // for its thread to be gone before the process serves another request.
  private finish(slot: Slot): void {
    slot.revoke();
    slot.stop();
  }

  // Each load gets a fresh worker: nothing one module's top-level code does can
  // reach the next load's result.
  private async load(request: Message): Promise<Message> {
    const limitMs = Number(request.timeLimit) * 1000;
    const slot = this.take();
    await slot.ready;
    const started = performance.now();
    const source = String(request.source);
    let declared: Map<string, [number, boolean]> | null = null;
    let early = new Map<string, string>();
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
        source: request.op === "compile" ? source : "",
        url: request.op === "load"
          ? this.modules.url(source, sourceBytes.get(request))
          : "",
        key: (request.key as string) ?? "module",
        direct: request.op === "load" && cannotExportThen(source),
      });
      // Read while the worker loads the module on its own thread.
      if (request.op === "load") {
        declared = declarations(source);
        // The worker reports exports in the order a module namespace lists
        // them (by code unit): the first declared names in that order are
        // read now, each the signature of an export unless it is not one.
        const first = smallest(declared.keys(), this.settings.maxViews);
        const read = signatures(source, first, declared);
        early = new Map(first.map((name, k) => [name, read[k]]));
      }
    });
    slot.listener = null;
    if (outcome.op === "result") {
      // The worker answered, so the reply need not wait for it to end; one that
      // will not (it left a thread spinning) is caught by the idle watch.
      this.release(slot);
      const exports = Array.isArray(outcome.exports)
        ? outcome.exports.slice(0, this.settings.maxViews).map((e) =>
          String(e).slice(0, this.settings.maxTitleChars)
        )
        : [];
      const diagnostic =
        outcome.diagnostic === null || outcome.diagnostic === undefined
          ? null
          : capError(String(outcome.diagnostic), this.settings);
      // Each export's signature, in the order of the exports.
      const found = declared;
      const typed = found === null || diagnostic !== null
        ? []
        : exports.map((name) =>
          early.get(name) ?? signatures(source, [name], found)[0]
        );
      return { op: "result", diagnostic, exports, signatures: typed };
    }
    // A worker that did not answer may be one a terminate cannot stop: the host
    // replaces the whole process after this reply, so nothing of it runs on.
    this.finish(slot);
    const why = outcome.op === "timeout"
      ? `the module's top-level code did not finish within ${request.timeLimit} s`
      : `the module's worker ended: ${String(outcome.why)}`;
    return {
      op: "result",
      diagnostic: `1:1: ${capError(why, this.settings)}`,
      exports: [],
      restart: true,
    };
  }

  // One check(change) of a kept module, in the worker kept for its scope and
  // text when there is one. A kept worker is only ever handed checks of that
  // same module in that same scope (the host names the scope: one store of one
  // repository), so nothing of one store's checks can reach another's. A check
  // that fails in a kept worker in any way (it threw, outlived its limit, ran
  // out of memory, left a rejection unhandled) is not believed: the worker is
  // ended and the check is asked again of a fresh one, whose answer stands.
  private async check(request: Message): Promise<Message> {
    const key = JSON.stringify([String(request.scope), String(request.source)]);
    const limitMs = Number(request.timeLimit) * 1000;
    const known = this.checkers.get(key);
    this.checkers.delete(key);
    if (known !== undefined && !known.slot.exited) {
      const again = await this.checkIn(known, request, limitMs);
      if (again.keep) {
        this.keep(key, known);
        return again.result;
      }
      if (again.answered) return again.result;
      // The kept worker did not answer: the host replaces the process and asks a
      // fresh one, so no worker that may still run shares a process with the next.
      if (!again.verdict) return { op: "result", again: true, restart: true };
    }
    const fresh = { slot: this.take(), uses: 0, spentMs: 0 };
    await fresh.slot.ready;
    const first = await this.checkIn(fresh, request, limitMs);
    if (first.keep) this.keep(key, fresh);
    return first.verdict ? first.result : { ...first.result, restart: true };
  }

  private keep(key: string, kept: Kept): void {
    // A kept worker is retired once it has served its share of checks or spent
    // half a time limit on them, so that no worker's CPU time outgrows what the
    // host allows it (twice the limit).
    this.checkers.set(key, kept);
    while (this.checkers.size > KEPT) {
      const [oldest, evicted] = this.checkers.entries().next().value as [
        string,
        Kept,
      ];
      this.checkers.delete(oldest);
      this.finish(evicted.slot);
    }
  }

  private async checkIn(
    kept: Kept,
    request: Message,
    limitMs: number,
  ): Promise<
    { result: Message; keep: boolean; answered: boolean; verdict: boolean }
  > {
    const slot = kept.slot;
    const started = performance.now();
    const outcome = await new Promise<Message>((resolve) => {
      const timer = setTimeout(() => resolve({ op: "timeout" }), limitMs);
      slot.listener = (message) => {
        if (message.op === "verdict" || message.op === "gone") {
          clearTimeout(timer);
          resolve(message);
        }
      };
      slot.request({
        op: "check",
        url: kept.uses === 0
          ? this.modules.url(String(request.source), sourceBytes.get(request))
          : "",
        key: String(request.key ?? "module"),
        change: String(request.change),
      });
    });
    slot.listener = null;
    // What the worker made for its first check (the module's wiring) is revoked
    // at once; the module it linked stays loaded.
    slot.revoke();
    kept.uses++;
    kept.spentMs += performance.now() - started;
    if (outcome.op === "verdict") {
      const result: Message = {
        op: "result",
        kind: String(outcome.kind),
        message: typeof outcome.message === "string" ? outcome.message : null,
        error: typeof outcome.error === "string"
          ? capError(outcome.error, this.settings)
          : null,
      };
      const keep = outcome.reuse === true && kept.uses < KEPT_USES &&
        kept.spentMs < limitMs / 2;
      if (!keep) {
        // A failed check is believed only from a fresh worker.
        const believed = outcome.reuse === true || kept.uses === 1;
        this.finish(slot);
        return { result, keep: false, answered: believed, verdict: true };
      }
      return { result, keep: true, answered: true, verdict: true };
    }
    this.finish(slot);
    const error = outcome.op === "timeout"
      ? `the check did not finish within its time limit of ${request.timeLimit} s`
      : "the check's worker ended";
    return {
      result: { op: "result", kind: "error", message: null, error },
      keep: false,
      answered: kept.uses === 1,
      verdict: false,
    };
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
      timer = setTimeout(
        () => events.push({ op: "tick" }),
        Math.max(0, limitMs - spent),
      );
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
      for (const [key, source] of Object.entries(given)) {
        modules[key] = this.modules.url(String(source));
      }
    }
    const calls: string[] = Array.isArray(request.calls)
      ? request.calls.filter((c): c is string => typeof c === "string").slice(
        0,
        256,
      )
      : [];
    slot.request({
      op: "run",
      source: request.source as string,
      modules,
      kind: request.kind as string,
      calls,
      direct: cannotExportThen(String(request.source)),
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
          views.length < settings.maxViews &&
          title.length <= settings.maxTitleChars &&
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
        if (
          reply === null || reply.op !== "reply" ||
          reply.id !== Number(message.id)
        ) {
          clearTimeout(timer);
          this.finish(slot);
          return null;
        }
        const bytes = encoder.encode(
          JSON.stringify({ ok: reply.ok === true, text: String(reply.text) }),
        );
        slot.replies.start(Number(message.id), bytes);
        resume();
        continue;
      }
      if (message.op === "more") {
        // The clock runs: the worker takes the further parts of a long reply in
        // its own time.
        slot.replies.more(Number(message.id));
        continue;
      }
      if (message.op === "done" || message.op === "gone") {
        outcome = message;
        break;
      }
    }
    clearTimeout(timer);
    slot.listener = null;
    // Whatever the program left pending (timers, promises, loops) dies here: at
    // once when it did not report done (the host replaces the process), else
    // as soon as the reply is written.
    if (outcome.op === "done") this.release(slot);
    else this.finish(slot);
    if (truncated) output += "\n[output truncated]";
    let error: Json;
    if (outcome.op === "done") {
      error = outcome.error === null || outcome.error === undefined
        ? null
        : capError(String(outcome.error), settings);
    } else if (outcome.op === "timeout") {
      error =
        `the program did not finish within its time limit of ${request.timeLimit} s`;
    } else {error = capError(
        `the program's worker ended: ${String(outcome.why)}`,
        settings,
      );}
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
      // A worker that did not report done may be one a terminate cannot stop: the
      // host replaces the whole process after this reply.
      restart: outcome.op !== "done",
    };
  }
}

function harden(): void {
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  for (
    const name of [
      "caches",
      "BroadcastChannel",
      "localStorage",
      "sessionStorage",
      "nodeBootstrap",
    ]
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
  const conn = await Deno.connect({
    hostname: "127.0.0.1",
    port: Number(port),
  });
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

if (import.meta.main) {
  await main();
}
