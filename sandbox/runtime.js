// Built from runtime.ts (sha256 cb02a15accf6b5ebcc61a7074268898ce3b6adffb8bbb2fca58f8e874cb26d6b) by `make runtime`: edit runtime.ts, not this.
// sandbox/runtime.ts
var encoder = new TextEncoder();
var decoder = new TextDecoder();
var sourceDecoder = new TextDecoder("utf-8", {
  ignoreBOM: true
});
var sourceBytes = /* @__PURE__ */ new WeakMap();
function splitImports(source, whole = false) {
  if (!whole && source.indexOf("gitmem") < 0 && !/\/[/*][#@]/.test(source)) {
    return [
      source
    ];
  }
  const parts = [];
  let part = "";
  let from = 0;
  const n = source.length;
  let i = 0;
  let prev = "";
  let before = "";
  let depth = 0;
  const templates = [];
  const keywords = /* @__PURE__ */ new Set([
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
    "await"
  ]);
  const word = (c) => c >= 65 && c <= 90 || c >= 97 && c <= 122 || c >= 48 && c <= 57 || c === 36 || c === 95 || c > 127;
  const token = (t) => {
    before = prev;
    prev = t;
  };
  const lineEnd = (at) => {
    while (at < n && source.charCodeAt(at) !== 10 && source.charCodeAt(at) !== 13) at++;
    return at;
  };
  const template = (at) => {
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
      } else if (prev === "" || keywords.has(prev) || !word(prev.charCodeAt(0)) && prev !== ")" && prev !== "]" && prev !== "}") {
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
      if ((prev === "from" || prev === "import" || prev === "(" && before === "import") && end - i === 8 && source.slice(i + 1, i + 7) === "gitmem" && source.charCodeAt(at) === c) {
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
var EXPORT_STAR_OR_COMMENT = /export\s*[*/]/;
function cannotExportThen(source) {
  return source.indexOf("then") < 0 && source.indexOf("\\") < 0 && !EXPORT_STAR_OR_COMMENT.test(source);
}
function joinImports(parts, target) {
  const quoted = JSON.stringify(target);
  let text = parts[0];
  for (let k = 1; k < parts.length; k++) text += quoted + parts[k];
  return text;
}
var SIGNATURE_WINDOW = 2e3;
var SPACE = "\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
var SPACES = new RegExp(`[${SPACE}]+`);
var LEADING_SPACES = new RegExp(`^[${SPACE}]+`);
var IS_SPACE = new RegExp(`[${SPACE}]`);
var LETTER_OR_DIGIT = /[\p{L}\p{N}]/uy;
var SURROGATE = /[\ud800-\udfff]/;
var ASCII_CLASS = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  if (c >= 65 && c <= 90 || c >= 97 && c <= 122 || c === 95 || c === 36) {
    ASCII_CLASS[c] = 1;
  } else if (c >= 48 && c <= 57) ASCII_CLASS[c] = 2;
  else if (c >= 9 && c <= 13 || c >= 28 && c <= 32) ASCII_CLASS[c] = 4;
}
function width(source, at) {
  const c = source.charCodeAt(at);
  return c >= 55296 && c <= 56319 && (source.charCodeAt(at + 1) & 64512) === 56320 ? 2 : 1;
}
function classAt(source, at) {
  const w = width(source, at);
  if (w === 1 && IS_SPACE.test(source[at])) return [
    4,
    1
  ];
  LETTER_OR_DIGIT.lastIndex = at;
  return [
    LETTER_OR_DIGIT.test(source) ? 2 : 0,
    w
  ];
}
function stringEnd(text, at, quote) {
  const n = text.length;
  while (at < n) {
    const c = text.charCodeAt(at);
    if (c === 92) at += 2;
    else if (c === quote) return at + 1;
    else at++;
  }
  return n;
}
var scanned = {
  start: 0,
  end: 0
};
function nextToken(source, at) {
  const n = source.length;
  while (at < n) {
    const c = source.charCodeAt(at);
    if (c < 128) {
      const kind2 = ASCII_CLASS[c];
      if (kind2 === 1) {
        let end = at + 1;
        while (end < n) {
          const d = source.charCodeAt(end);
          if (d < 128) {
            if (ASCII_CLASS[d] & 3) end++;
            else break;
          } else {
            const [other, width3] = classAt(source, end);
            if (other !== 2) break;
            end += width3;
          }
        }
        scanned.start = at;
        scanned.end = end;
        return true;
      }
      if (kind2 !== 0) {
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
    const [kind, width2] = classAt(source, at);
    if (kind === 0) {
      scanned.start = at;
      scanned.end = at + width2;
      return true;
    }
    at += width2;
  }
  return false;
}
var Tokens = class {
  source;
  at;
  words;
  starts;
  ends;
  constructor(source, at) {
    this.source = source;
    this.at = at;
    this.words = [];
    this.starts = [];
    this.ends = [];
  }
  // Token `k`, or "" past the end.
  word(k) {
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
  end(k) {
    return this.ends[k];
  }
  // Where token `k` begins, or the end of the source past the last token.
  start(k) {
    return this.word(k) ? this.starts[k] : this.source.length;
  }
};
var isName = (token) => token !== "" && (ASCII_CLASS[token.charCodeAt(0)] & 1) === 1;
var STOPS = /\/\/|\/\*|["'`]|function|const|let|var|export/g;
function continuesWord(source, at) {
  if (at >= source.length) return false;
  const c = source.charCodeAt(at);
  return c < 128 ? (ASCII_CLASS[c] & 3) !== 0 : classAt(source, at)[0] === 2;
}
function startsWord(source, at) {
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
    const from = (c & 64512) === 56320 && i > 0 && width(source, i - 1) === 2 ? i - 1 : i;
    if (classAt(source, from)[0] !== 2) return true;
    i = from - 1;
  }
  return true;
}
function declarations(source) {
  const found = /* @__PURE__ */ new Map();
  let at = 0;
  for (; ; ) {
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
      const plain = c === 101 ? EXPORT_FUNCTION : c === 102 ? FUNCTION : null;
      let head = null;
      if (plain !== null) {
        plain.lastIndex = where;
        head = plain.exec(source);
      }
      if (head !== null) {
        if (!found.has(head[1])) found.set(head[1], [
          plain.lastIndex,
          false
        ]);
        at = plain.lastIndex;
      } else if (c === 101 && !(nextToken(source, end) && isDefault(source, scanned.start))) {
        at = end;
      } else at = readDeclaration(new Tokens(source, where), found);
    }
  }
}
var isDefault = (source, at) => scanned.end - at === 7 && source.startsWith("default", at);
var FUNCTION = /function[ \t]+([A-Za-z_$][A-Za-z0-9_$]*)(?=[(<])/y;
var EXPORT_FUNCTION = /export[ \t]+function[ \t]+([A-Za-z_$][A-Za-z0-9_$]*)(?=[(<])/y;
function readDeclaration(tokens, found) {
  const word = (k2) => tokens.word(k2);
  const declare = (name2, at, arrow2) => {
    if (!found.has(name2)) found.set(name2, [
      at,
      arrow2
    ]);
  };
  const token = word(0);
  if (token === "export") {
    if (word(1) !== "default") return tokens.end(0);
    const [k2, arrow2] = functionHead(tokens, 2);
    if (!arrow2 && (word(k2) === "(" || word(k2) === "<")) {
      declare("default", tokens.end(k2 - 1), false);
    }
    return tokens.start(k2);
  }
  if (token === "function") {
    let k2 = 1;
    if (word(k2) === "*") k2++;
    const name2 = word(k2);
    if (isName(name2)) declare(name2, tokens.end(k2), false);
    return tokens.start(k2 + 1);
  }
  let k = 1;
  const name = word(k);
  if (!isName(name)) return tokens.start(k);
  k++;
  if (word(k) === ":") {
    let depth = 0;
    for (; ; ) {
      const t = word(k);
      if (!t) break;
      if (t === "(" || t === "[" || t === "{" || t === "<") depth++;
      else if ((t === ")" || t === "]" || t === "}" || t === ">") && depth) {
        depth--;
      } else if (depth === 0 && (t === ";" || t === "=" && word(k + 1) !== ">")) break;
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
function functionHead(tokens, k) {
  if (tokens.word(k) === "async") k++;
  if (tokens.word(k) !== "function") return [
    k,
    true
  ];
  k++;
  if (tokens.word(k) === "*") k++;
  if (tokens.word(k) !== "(" && tokens.word(k) !== "<") k++;
  return [
    k,
    false
  ];
}
function smallest(names, k) {
  const kept = [];
  for (const name of names) {
    if (kept.length === k && name >= kept[k - 1]) continue;
    let at = kept.length;
    while (at > 0 && kept[at - 1] > name) at--;
    kept.splice(at, 0, name);
    if (kept.length > k) kept.pop();
  }
  return kept;
}
function signatures(source, names, found = declarations(source)) {
  const result = [];
  for (const name of names) {
    const declared = found.get(name);
    if (declared === void 0) {
      result.push(`${name}(...)`);
      continue;
    }
    const [at, arrow] = declared;
    let window = source.slice(at, at + SIGNATURE_WINDOW);
    if (SURROGATE.test(window)) {
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
var spaced = (text) => text.split(SPACES).filter((part) => part !== "").join(" ");
function balanced(text, start) {
  const stack = [];
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
    const closer = c === 40 ? 41 : c === 91 ? 93 : c === 123 ? 125 : c === 60 ? 62 : 0;
    if (closer) stack.push(closer);
    else if (stack.length && c === stack[stack.length - 1]) {
      stack.pop();
      if (!stack.length) return i + 1;
    }
    i++;
  }
  return n;
}
function returnType(text, at, arrow) {
  const n = text.length;
  let i = at;
  while (i < n && IS_SPACE.test(text[i])) i++;
  if (i >= n || text[i] !== ":") return "";
  i++;
  const begin = i;
  let depth = 0;
  for (; ; i++) {
    if (i >= n) return "";
    const c = text[i];
    if (c === "(" || c === "[" || c === "<") depth++;
    else if ((c === ")" || c === "]" || c === ">") && depth && !(c === ">" && text[i - 1] === "=")) {
      depth--;
    } else if (c === "{") {
      let last = i - 1;
      while (last >= begin && IS_SPACE.test(text[last])) last--;
      const before = last >= begin ? text[last] : "";
      if (depth === 0 && before !== "" && !":|&,<".includes(before) && !(before === ">" && last > begin && text[last - 1] === "=")) break;
      i = balanced(text, i) - 1;
    } else if (depth === 0 && arrow && (c === ";" || c === "\n" || c === "=" && text[i + 1] === ">")) {
      break;
    }
  }
  return spaced(text.slice(begin, i));
}
function signatureAt(text, name, arrow) {
  let generics = "";
  let at = 0;
  if (text[0] === "<") {
    const end2 = balanced(text, 0);
    generics = text.slice(0, end2);
    at = end2;
    while (at < text.length && IS_SPACE.test(text[at])) at++;
  }
  if (at >= text.length || text[at] !== "(") return `${name}(...)`;
  const end = balanced(text, at);
  if (end >= text.length) return `${name}(...)`;
  const params = spaced(text.slice(at + 1, end - 1));
  const returns = returnType(text, end, arrow);
  return `${name}${generics}(${params})` + (returns ? `: ${returns}` : "");
}
var HEAD = 8;
var PART = 1 << 16;
function replyReader(sab) {
  const wait = Atomics.wait;
  const load = Atomics.load;
  const U8 = Uint8Array;
  const apply = Reflect.apply;
  const copy = Uint8Array.prototype.set;
  const head = new Int32Array(sab, 0, 2);
  const room = sab.byteLength - 8;
  let last = 0;
  const fresh = () => last = last + 1 | 0 || 1;
  return (call, more) => {
    let ticket = fresh();
    call(ticket);
    let bytes = null;
    let total = 0;
    let at = 0;
    for (; ; ) {
      for (; ; ) {
        const seen = load(head, 0);
        if (seen === ticket) break;
        wait(head, 0, seen);
      }
      if (bytes === null) {
        total = load(head, 1);
        bytes = new U8(total);
      }
      const length = total - at < room ? total - at : room;
      apply(copy, bytes, [
        new U8(sab, 8, length),
        at
      ]);
      at += length;
      if (at >= total) return bytes;
      ticket = fresh();
      more(ticket);
    }
  };
}
var ReplyWriter = class {
  sab;
  head;
  bytes;
  at;
  ticket;
  constructor(sab) {
    this.sab = sab;
    this.bytes = null;
    this.at = 0;
    this.ticket = 0;
    this.head = new Int32Array(sab, 0, 2);
  }
  // A call's reply, its first part written at once for the call's ticket. A
  // reply still being taken is dropped: the worker gave it up to call again.
  start(ticket, bytes) {
    this.bytes = bytes;
    this.at = 0;
    this.put(ticket);
  }
  // The next part, if the worker asks for it with the ticket after the last one.
  more(ticket) {
    if (this.bytes === null || ticket !== (this.ticket + 1 | 0 || 1)) {
      return;
    }
    this.put(ticket);
  }
  put(ticket) {
    const bytes = this.bytes;
    const part = bytes.subarray(this.at, this.at + this.sab.byteLength - HEAD);
    new Uint8Array(this.sab, HEAD).set(part);
    this.at += part.length;
    this.ticket = ticket;
    if (this.at >= bytes.length) this.bytes = null;
    Atomics.store(this.head, 1, bytes.length);
    Atomics.store(this.head, 0, ticket);
    Atomics.notify(this.head, 0);
  }
};
function workerMain(split, makeReader) {
  const g = globalThis;
  const denoInspect = g.Deno.inspect;
  const inspect = (value) => denoInspect(value, {
    depth: 4,
    colors: false
  });
  const post = g.postMessage.bind(g);
  const apply = Reflect.apply;
  const uncurry = (f) => (self, ...args) => apply(f, self, args);
  const decoder2 = new TextDecoder();
  const decode = uncurry(TextDecoder.prototype.decode);
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
  let setTimer = null;
  let setRepeat = null;
  let clearTimer = () => {
  };
  const sliceText = uncurry(String.prototype.slice);
  const codeAt = uncurry(String.prototype.charCodeAt);
  const findText = uncurry(String.prototype.indexOf);
  const lastText = uncurry(String.prototype.lastIndexOf);
  const splitText = uncurry(String.prototype.split);
  const joinText = uncurry(Array.prototype.join);
  const startsWith = uncurry(String.prototype.startsWith);
  const includes = uncurry(String.prototype.includes);
  const execRe = uncurry(RegExp.prototype.exec);
  const testRe = uncurry(RegExp.prototype.test);
  const toLocale = uncurry(Number.prototype.toLocaleString);
  const number = (n) => toLocale(n, "en-US");
  const promiseThen = uncurry(Promise.prototype.then);
  let cryptoRunning = 0;
  let cryptoClosed = false;
  let cryptoIdle = () => {
  };
  let cryptoBusy = false;
  let cryptoFirst = null;
  let cryptoLast = null;
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
      found.value = function(...args) {
        if (cryptoClosed) {
          throw new ErrorOf(`crypto.subtle.${name} cannot be called once the run has ended`);
        }
        const self = this;
        cryptoRunning++;
        return new PromiseOf((resolve, reject) => {
          const start = () => {
            let started;
            try {
              started = apply(original, self, args);
            } catch (error) {
              cryptoDone();
              reject(error);
              return;
            }
            promiseThen(started, (value) => {
              cryptoDone();
              resolve(value);
            }, (error) => {
              cryptoDone();
              reject(error);
            });
          };
          if (!cryptoBusy) {
            cryptoBusy = true;
            start();
            return;
          }
          const waiting = {
            start,
            next: null
          };
          if (cryptoLast === null) cryptoFirst = waiting;
          else cryptoLast.next = waiting;
          cryptoLast = waiting;
        });
      };
      defineProperty(subtle, name, found);
    }
  }
  const cryptoSettled = async () => {
    while (cryptoRunning > 0) {
      await new PromiseOf((resolve) => cryptoIdle = resolve);
    }
    cryptoClosed = true;
  };
  const stopHere = uncurry(Event.prototype.stopImmediatePropagation);
  let onMessage = () => {
  };
  g.addEventListener("message", (event) => {
    stopHere(event);
    onMessage(event.data);
  });
  const append = (list, item) => defineProperty(list, list.length, {
    value: item,
    writable: true,
    enumerable: true,
    configurable: true
  });
  const allowed = /* @__PURE__ */ new Set([
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
    "PerformanceMeasure"
  ]);
  for (const name of Object.getOwnPropertyNames(g)) {
    if (allowed.has(name)) continue;
    try {
      delete g[name];
    } catch {
    }
    if (name in g) {
      try {
        defineProperty(g, name, {
          value: void 0,
          writable: false,
          configurable: false
        });
      } catch {
        try {
          g[name] = void 0;
        } catch {
        }
      }
    }
  }
  for (const name of [
    "createObjectURL",
    "revokeObjectURL"
  ]) {
    defineProperty(URL, name, {
      value: void 0,
      writable: false,
      enumerable: false,
      configurable: false
    });
  }
  onMessage = (data) => {
    const init = data;
    {
      const token = init.token;
      const settings = init.settings;
      const readReply = makeReader(init.sab);
      let written = 0;
      let outputFull = false;
      let viewsOpened = 0;
      const send = (message) => post({
        ...message,
        t: token
      });
      const write = (args) => {
        if (outputFull) return;
        let text = "";
        for (let k = 0; k < args.length && text.length <= settings.outputCap; k++) {
          const a = args[k];
          text += (k > 0 ? " " : "") + (typeof a === "string" ? a : inspect(a));
        }
        text += "\n";
        if (text.length > settings.outputCap) {
          text = sliceText(text, 0, settings.outputCap + 1);
        }
        written += text.length;
        if (written > settings.outputCap) outputFull = true;
        send({
          op: "out",
          text
        });
      };
      const capture = {
        log: (...a) => write(a),
        info: (...a) => write(a),
        debug: (...a) => write(a),
        warn: (...a) => write(a),
        error: (...a) => write(a),
        trace: (...a) => write(a),
        dir: (a) => write([
          a
        ]),
        table: (a) => write([
          a
        ]),
        assert: (ok, ...a) => {
          if (!ok) write([
            "Assertion failed",
            ...a
          ]);
        }
      };
      defineProperty(g, "console", {
        value: capture,
        writable: true,
        configurable: true
      });
      const refuse = (what, attempted, limit, max, fix) => new RangeErrorOf(`refused: ${what} would be ${number(attempted)}, over ${limit} (${number(max)}). ${fix}`);
      let loading = true;
      let checking = false;
      const call = (name, args) => {
        if (checking) {
          throw new ErrorOf("a check cannot read or write memories; return a verdict instead");
        }
        if (loading) {
          throw new ErrorOf(`memories.${name} cannot be called while a module loads`);
        }
        if (args === void 0) args = {};
        if (args === null || typeof args !== "object" || ArrayIsArray(args)) {
          throw new TypeErrorOf(`memories.${name} takes one object argument`);
        }
        let json;
        try {
          json = stringify(args);
        } catch (e) {
          throw new TypeErrorOf(`memories.${name}: the argument is not JSON: ${e}`);
        }
        if (typeof json !== "string") {
          throw new TypeErrorOf(`memories.${name} takes one object argument`);
        }
        if (json.length > settings.maxArgsChars) {
          throw refuse(`the argument to memories.${name}`, json.length, "the argument limit", settings.maxArgsChars, "Send less in one call.");
        }
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
          throw refuse(`the nesting of the argument to memories.${name}`, deepest, "the nesting limit", settings.maxArgsDepth, "Pass a flat object.");
        }
        const bytes = readReply((id) => send({
          op: "call",
          id,
          name,
          args: json
        }), (id) => send({
          op: "more",
          id
        }));
        const reply = parse(decode(decoder2, bytes));
        if (reply.ok !== true) throw new ErrorOf(StringOf(reply.text));
        return StringOf(reply.text);
      };
      const callName = (name) => {
        if (name.length < 1 || name.length > 64) return false;
        for (let i = 0; i < name.length; i++) {
          const c = codeAt(name, i);
          const letter = c >= 65 && c <= 90 || c >= 97 && c <= 122;
          const digitOrUnderscore = c >= 48 && c <= 57 || c === 95;
          if (!letter && (i === 0 || !digitOrUnderscore)) return false;
        }
        return true;
      };
      const listed = [];
      const isListed = (name) => {
        for (let k = 0; k < listed.length; k++) {
          if (listed[k] === name) return true;
        }
        return false;
      };
      const callOf = (name) => (args) => call(name, args);
      const memories = new ProxyOf(createObject(null), {
        get: (_target, name) => {
          if (typeof name !== "string" || name === "then") return void 0;
          if (!callName(name)) {
            return () => {
              throw new TypeErrorOf(`memories has no call named ${stringify(sliceText(name, 0, 64))}`);
            };
          }
          return callOf(name);
        },
        has: (_target, name) => isListed(name),
        ownKeys: () => {
          const keys = [];
          for (let k = 0; k < listed.length; k++) append(keys, listed[k]);
          return keys;
        },
        getOwnPropertyDescriptor: (_target, name) => isListed(name) ? {
          value: callOf(name),
          writable: false,
          enumerable: true,
          configurable: true
        } : void 0,
        set: () => false,
        defineProperty: () => false,
        deleteProperty: () => false
      });
      const views = freeze({
        openText(title, text) {
          if (typeof title !== "string" || typeof text !== "string") {
            throw new TypeErrorOf("views.openText(title, text) takes two strings");
          }
          if (viewsOpened >= settings.maxViews) {
            throw refuse("the views opened in one run", viewsOpened + 1, "the view limit", settings.maxViews, "Put more in each view.");
          }
          if (title.length > settings.maxTitleChars) {
            throw refuse("the view's title", title.length, "the title limit", settings.maxTitleChars, "Use a shorter title.");
          }
          if (text.length > settings.maxViewChars) {
            throw refuse("the view's text", text.length, "the view text limit", settings.maxViewChars, "Open a shorter text, or split it across views.");
          }
          viewsOpened += 1;
          send({
            op: "view",
            title,
            text
          });
        }
      });
      let linked = false;
      const runtimeSlot = {
        memories,
        views,
        started: () => linked = true
      };
      defineProperty(g, Symbol.for("gitmem.runtime"), {
        value: runtimeSlot
      });
      let unhandled = null;
      addListener("unhandledrejection", (event) => {
        event.preventDefault();
        if (unhandled === null) unhandled = describe(event.reason);
      });
      addListener("error", (event) => {
        event.preventDefault();
        if (unhandled === null) unhandled = describe(event.error);
      });
      const labels = [];
      const label = (url, name) => append(labels, [
        url,
        name
      ]);
      const replaceAll = (text, from, to) => {
        let out = "";
        let at = 0;
        for (; ; ) {
          const found = findText(text, from, at);
          if (found < 0) break;
          out += sliceText(text, at, found) + to;
          at = found + from.length;
        }
        return out + sliceText(text, at);
      };
      const relabel = (text) => {
        for (let k = 0; k < labels.length; k++) {
          text = replaceAll(text, labels[k][0], labels[k][1]);
        }
        return text;
      };
      const capped = (text) => text.length > settings.maxErrorChars ? sliceText(text, 0, settings.maxErrorChars) + " [error text truncated]" : text;
      const frameLine = /^\s+at /;
      const describe = (error) => {
        try {
          return describeOnce(error);
        } catch {
          return "Uncaught error";
        }
      };
      const describeOnce = (error) => {
        if (error instanceof ErrorOf) {
          const stack = typeof error.stack === "string" ? capped(error.stack) : "";
          let head = "";
          try {
            head = capped(`${StringOf(error.name)}: ${StringOf(error.message)}`);
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
      const syntax = /SyntaxError: ([^\n]*)/;
      const position = /^:(\d+):(\d+)/;
      const diagnose = (error, shift = 0) => {
        let text;
        try {
          text = capped(error instanceof ErrorOf ? `${StringOf(error.name)}: ${StringOf(error.message)}
${StringOf(error.stack ?? "")}` : StringOf(error));
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
              where: name
            };
          }
        }
        return {
          diagnostic: `1:1: ${relabel(message)}`,
          where: labels.length ? labels[labels.length - 1][1] : ""
        };
      };
      const toUrl = (source, media = "application/typescript") => {
        const url = createUrl(new BlobOf([
          source
        ], {
          type: media
        }));
        send({
          op: "url",
          url
        });
        return url;
      };
      const join = (parts, target) => {
        const quoted = stringify(target);
        let text = parts[0];
        for (let k = 1; k < parts.length; k++) text += quoted + parts[k];
        return text;
      };
      const baseUrl = init.baseUrl;
      const linkedUrl = init.linkedUrl;
      const settle = (promise) => new PromiseOf((resolve) => {
        promiseThen(promise, (value) => resolve({
          ok: true,
          value
        }), (value) => resolve({
          ok: false,
          value
        }));
      });
      let namespace = null;
      defineProperty(runtimeSlot, "loaded", {
        value: (secret, ns) => {
          if (secret === token) namespace = ns;
        }
      });
      freeze(runtimeSlot);
      const reporter = toUrl(`const r = globalThis[Symbol.for("gitmem.runtime")];
const loaded = r.loaded;
export const got = (ns) => loaded(${stringify(token)}, ns);
`, "application/javascript");
      const load = async (request) => {
        loading = true;
        const stop = request.op === "compile" ? `throw ${stringify(token)};` : "";
        const url = stop ? toUrl(join(split(stop + StringOf(request.source)), baseUrl)) : StringOf(request.url);
        label(url, request.op === "load" ? StringOf(request.key) : "module");
        let outcome;
        if (!stop && request.direct === true) {
          outcome = await settle(import(url));
          if (outcome.ok) namespace = outcome.value;
        } else {
          const wrapper = toUrl(`import { got } from ${stringify(reporter)};
import * as ns from ${stringify(url)};
got(ns);
`, "application/javascript");
          outcome = await settle(import(wrapper));
        }
        await cryptoSettled();
        if (outcome.ok && namespace !== null) {
          const ns = namespace;
          const names = keysOf(ns);
          const exports = [];
          for (let k = 0; k < names.length && exports.length < settings.maxViews; k++) {
            const name = names[k];
            if (typeof ns[name] === "function" && name.length <= settings.maxTitleChars) {
              append(exports, name);
            }
          }
          send({
            op: "result",
            diagnostic: null,
            exports
          });
          return;
        }
        const error = outcome.value;
        if (stop && error === token) {
          send({
            op: "result",
            diagnostic: null,
            exports: []
          });
          return;
        }
        const found = diagnose(error, stop.length);
        let diagnostic;
        if (found) diagnostic = found.diagnostic;
        else {
          const text = describe(error);
          const end = findText(text, "\n");
          diagnostic = `1:1: ${end < 0 ? text : sliceText(text, 0, end)}`;
        }
        send({
          op: "result",
          diagnostic: capped(diagnostic),
          exports: []
        });
      };
      const missingExport = (error, gitmemUrl) => {
        try {
          if (linked || !(error instanceof SyntaxErrorOf)) return null;
        } catch {
          return null;
        }
        const head = `The requested module '${gitmemUrl}' does not provide an export named '`;
        const message = StringOf(error.message);
        if (!startsWith(message, head)) return null;
        const end = findText(message, "'", head.length);
        return end < 0 ? null : sliceText(message, head.length, end);
      };
      const run = async (request) => {
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
            configurable: true
          });
          defineProperty(g, "views", {
            value: views,
            writable: true,
            configurable: true
          });
        }
        const parts = split(StringOf(request.source));
        const imported = [];
        const importedUrls = [];
        let error = null;
        for (; ; ) {
          let head = `import ${stringify(linkedUrl)};
export * from ${stringify(baseUrl)};
`;
          for (let k = 0; k < imported.length; k++) {
            head += `export * as ${imported[k]} from ${stringify(importedUrls[k])};
`;
          }
          const gitmemUrl = toUrl(head, "application/javascript");
          label(gitmemUrl, "gitmem");
          const programUrl = toUrl(join(parts, gitmemUrl));
          label(programUrl, kind);
          const outcome = await settle(request.direct === true ? import(programUrl) : import(toUrl(`import ${stringify(programUrl)};
`, "application/javascript")));
          if (outcome.ok) break;
          const e = outcome.value;
          const missing = missingExport(e, gitmemUrl);
          if (missing !== null && imported.indexOf(missing) < 0 && Object.prototype.hasOwnProperty.call(modules, missing)) {
            const url = StringOf(modules[missing]);
            label(url, missing);
            append(imported, missing);
            append(importedUrls, url);
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
        await cryptoSettled();
        if (error === null && unhandled !== null) error = unhandled;
        send({
          op: "done",
          error: error === null ? null : capped(error),
          imported
        });
      };
      let kept = null;
      const timers = [];
      const verdict = async (ok, value, reuse) => {
        await cryptoSettled();
        let kind = "error";
        let message = null;
        let error = null;
        if (!ok) error = capped(describe(value));
        else if (value === void 0 || value === null) kind = "accept";
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
          reuse: reuse && error === null
        });
      };
      const lockDown = () => {
        const keep = (target) => {
          if (typeof target === "object" && target !== null || typeof target === "function") {
            freeze(target);
          }
        };
        keep(Object.prototype);
        keep(Array.prototype);
        keep(Function.prototype);
        const names = ownNames(g);
        for (let k = 0; k < names.length; k++) {
          const found = ownDescriptor(g, names[k]);
          if (found !== void 0 && "value" in found && found.configurable) {
            defineProperty(g, names[k], {
              writable: false,
              configurable: false
            });
          }
        }
        preventExtensions(g);
      };
      const checkOnce = async (request) => {
        cryptoClosed = false;
        if (kept === null) {
          loading = true;
          setTimer = g.setTimeout;
          setRepeat = g.setInterval;
          clearTimer = g.clearTimeout;
          defineProperty(g, "setTimeout", {
            value: (...args) => {
              const id = apply(setTimer, g, args);
              append(timers, id);
              return id;
            },
            writable: true,
            configurable: true
          });
          defineProperty(g, "setInterval", {
            value: (...args) => {
              const id = apply(setRepeat, g, args);
              append(timers, id);
              return id;
            },
            writable: true,
            configurable: true
          });
          const url = StringOf(request.url);
          const key = StringOf(request.key);
          label(url, key);
          const wrapper = toUrl(`import { got } from ${stringify(reporter)};
import * as ns from ${stringify(url)};
got(ns);
`, "application/javascript");
          const outcome2 = await settle(import(wrapper));
          if (!outcome2.ok || namespace === null) {
            const found = diagnose(outcome2.value);
            await cryptoSettled();
            if (found) {
              send({
                op: "verdict",
                kind: "error",
                error: capped(`SyntaxError in module ${key}: ${found.diagnostic}`),
                reuse: false
              });
            } else void verdict(false, outcome2.value, false);
            return;
          }
          kept = namespace;
          lockDown();
        }
        const module = kept;
        const check = module.check;
        if (typeof check !== "function") {
          void verdict(false, new ErrorOf("the module exports no check(change) function"), false);
          return;
        }
        checking = true;
        let change;
        try {
          change = parse(StringOf(request.change));
        } catch (e) {
          void verdict(false, e, false);
          return;
        }
        const outcome = await settle(new PromiseOf((resolve) => resolve(apply(check, module, [
          change
        ]))));
        for (let k = 0; k < timers.length; k++) clearTimer(timers[k]);
        timers.length = 0;
        void verdict(outcome.ok, outcome.value, true);
      };
      onMessage = (data2) => {
        const request = data2;
        if (request === null || typeof request !== "object" || request.t !== token) return;
        if (request.op === "check") {
          void checkOnce(request);
          return;
        }
        if (request.op === "compile" || request.op === "load") {
          void load(request);
        } else if (request.op === "run") {
          void run(request);
        }
      };
      PromiseOf.all([
        import(init.warmUrl),
        import(reporter)
      ]).catch(() => {
      }).finally(() => send({
        op: "ready"
      }));
    }
  };
}
var Host = class {
  conn;
  buffer;
  constructor(conn) {
    this.conn = conn;
    this.buffer = new Uint8Array(0);
  }
  async send(message) {
    const body = encoder.encode(JSON.stringify(message));
    const frame = new Uint8Array(4 + body.length);
    new DataView(frame.buffer).setUint32(0, body.length);
    frame.set(body, 4);
    let at = 0;
    while (at < frame.length) at += await this.conn.write(frame.subarray(at));
  }
  async receive() {
    for (; ; ) {
      if (this.buffer.length >= 4) {
        const length = new DataView(this.buffer.buffer, this.buffer.byteOffset).getUint32(0);
        if (this.buffer.length >= 4 + length) {
          const body = this.buffer.subarray(4, 4 + length);
          const cut = body.indexOf(10);
          const message = JSON.parse(decoder.decode(cut < 0 ? body : body.subarray(0, cut)));
          if (cut >= 0) {
            const bytes = body.subarray(cut + 1);
            message.source = sourceDecoder.decode(bytes);
            sourceBytes.set(message, bytes);
          }
          this.buffer = this.buffer.slice(4 + length);
          return message;
        }
        const whole = new Uint8Array(4 + length);
        whole.set(this.buffer);
        let at = this.buffer.length;
        while (at < whole.length) {
          const n2 = await this.conn.read(whole.subarray(at));
          if (n2 === null) return null;
          at += n2;
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
};
function capError(text, settings) {
  return text.length > settings.maxErrorChars + 32 ? text.slice(0, settings.maxErrorChars) + " [error text truncated]" : text;
}
var IDLE_EXIT = 3;
var SPARES = 3;
var BOOT_AFTER_MS = 60;
var BOOT_AT_ONCE = 2;
var Slot = class _Slot {
  // Deno names each worker's thread `worker-<n>`, counting the workers of the
  // process from 1 in the order they are made; only this class makes any.
  static made = 0;
  // The numbers of the workers terminated since the last reply: the host waits
  // for their threads to be gone (a terminate does not stop a thread caught in
  // a microtask loop, a Deno defect) before the process serves anyone again.
  static ended = [];
  id = ++_Slot.made;
  worker;
  token = crypto.randomUUID();
  sab = new SharedArrayBuffer(HEAD + PART);
  replies = new ReplyWriter(this.sab);
  ready;
  listener = null;
  // Ready for its request: its thread is up and its warm-up module imported.
  booted = false;
  exited = false;
  // The blob URLs the worker made for its request, revoked when it ends.
  urls = [];
  revoked = false;
  constructor(settings, urls) {
    this.worker = new Worker(urls.workerUrl, {
      type: "module"
    });
    let markReady = () => {
    };
    this.ready = new Promise((resolve) => markReady = resolve);
    this.worker.onmessage = (event) => {
      const message = event.data;
      if (message === null || typeof message !== "object" || message.t !== this.token) return;
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
    this.worker.onerror = (event) => {
      event.preventDefault();
      this.stop();
      markReady();
      this.listener?.({
        op: "gone",
        why: String(event.message)
      });
    };
    this.worker.onmessageerror = () => {
    };
    this.worker.postMessage({
      token: this.token,
      sab: this.sab,
      settings,
      ...urls
    });
  }
  request(message) {
    this.worker.postMessage({
      ...message,
      t: this.token
    });
  }
  // No later request, any holder's, can import what this one made.
  revoke() {
    this.revoked = true;
    for (const url of this.urls) URL.revokeObjectURL(url);
    this.urls = [];
  }
  // `named`: whether the next reply still has to name it (one released by a
  // reply was named in that reply).
  stop(named = true) {
    if (this.exited) return;
    this.exited = true;
    this.worker.terminate();
    if (named) _Slot.ended.push(this.id);
  }
};
var Queue = class {
  items = [];
  waiter = null;
  push(message) {
    if (this.waiter !== null) {
      const waiter = this.waiter;
      this.waiter = null;
      waiter(message);
    } else this.items.push(message);
  }
  next() {
    const item = this.items.shift();
    if (item !== void 0) return Promise.resolve(item);
    return new Promise((resolve) => this.waiter = resolve);
  }
};
var Modules = class {
  base;
  settings;
  urls;
  chars;
  // The URLs the current request uses: never revoked under it, so a request may
  // hold more modules than the bounds (until the next request's first new one).
  pinned;
  // URLs let go of, revoked by trim.
  evicted;
  begin() {
    this.pinned.clear();
  }
  constructor(base, settings) {
    this.base = base;
    this.settings = settings;
    this.urls = /* @__PURE__ */ new Map();
    this.chars = 0;
    this.pinned = /* @__PURE__ */ new Set();
    this.evicted = [];
  }
  // The URL of a module's text, made once and kept; `bytes`, when given, are
  // the text's UTF-8, used as they are when nothing in the text is rewritten.
  url(source, bytes) {
    const parts = splitImports(source);
    const text = joinImports(parts, this.base);
    let url = this.urls.get(text);
    if (url !== void 0) {
      this.urls.delete(text);
      this.urls.set(text, url);
      this.pinned.add(url);
      return url;
    }
    url = URL.createObjectURL(new Blob([
      text === source && bytes !== void 0 ? bytes : text
    ], {
      type: "application/typescript"
    }));
    this.urls.set(text, url);
    this.pinned.add(url);
    this.chars += text.length;
    const { cachedModules, cachedChars } = this.settings;
    while (this.urls.size > cachedModules || this.chars > cachedChars) {
      const [oldest, oldUrl] = this.urls.entries().next().value;
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
  trim() {
    for (const url of this.evicted.splice(0)) URL.revokeObjectURL(url);
  }
  kept() {
    return [
      ...this.urls.values()
    ];
  }
};
var KEPT = 4;
var KEPT_USES = 200;
var Runtime = class {
  host;
  settings;
  spares;
  // Workers whose request answered, ended as its reply is written.
  released;
  checkers;
  bootTimer;
  busy;
  // Bumped as each request ends and as each spare boots: a watch window that saw
  // either is not idle time.
  work;
  // Spares booted and not yet ready.
  booting;
  // Requests that found no booted spare and waited for one to finish booting.
  cold;
  // Requests that found no spare at all, and had their worker made on their way.
  made;
  retiring;
  urls;
  modules;
  constructor(host, settings) {
    this.host = host;
    this.settings = settings;
    this.spares = [];
    this.released = [];
    this.checkers = /* @__PURE__ */ new Map();
    this.bootTimer = null;
    this.busy = true;
    this.work = 0;
    this.booting = 0;
    this.cold = 0;
    this.made = 0;
    this.retiring = false;
    const script = (text, type = "application/javascript") => URL.createObjectURL(new Blob([
      text
    ], {
      type
    }));
    this.urls = {
      baseUrl: script('const g = globalThis[Symbol.for("gitmem.runtime")];\nexport const memories = g.memories;\nexport const views = g.views;\n'),
      linkedUrl: script('globalThis[Symbol.for("gitmem.runtime")].started();\n'),
      warmUrl: script("export const warm: number = 1;\n", "application/typescript"),
      workerUrl: script(`(${workerMain.toString()})(${splitImports.toString()}, ${replyReader.toString()});
`)
    };
    this.modules = new Modules(this.urls.baseUrl, settings);
  }
  // The transpiled files the host keeps: the modules' and the warm-up's.
  kept() {
    return [
      ...this.modules.kept(),
      this.urls.warmUrl
    ];
  }
  boot() {
    const spare = new Slot(this.settings, this.urls);
    this.spares.push(spare);
    this.booting++;
    this.work++;
    void spare.ready.then(() => this.booting--);
  }
  // Boots the missing spares one at a time, each after `after` ms without a
  // request. A request cancels the plan; its end makes a new one.
  warm(after = BOOT_AFTER_MS) {
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
  take() {
    const spare = this.spares.shift();
    if (spare === void 0 || !spare.booted) this.cold++;
    if (spare !== void 0) return spare;
    this.made++;
    return new Slot(this.settings, this.urls);
  }
  // A terminated worker caught in a microtask loop keeps its thread spinning
  // (a Deno defect). While idle, nothing of ours should use a core, so a
  // process that does is spent: it says so in a "retire" frame, serves nothing
  // more, and exits. The frame goes out before any reply could, so the host
  // reads it first whenever it next asks, and never mistakes the exit for a
  // crash, however slow the exit is (a spinning thread can hold it up).
  retire() {
    if (this.retiring) return;
    this.retiring = true;
    void this.host.send({
      op: "retire"
    }).finally(() => exitNow(IDLE_EXIT));
  }
  async watchIdle() {
    const cpuUsage = denoCpuUsage ?? (await import("node:process")).default.cpuUsage;
    let last = cpuUsage();
    let lastAt = performance.now();
    let strikes = 0;
    let work = this.work;
    const timer = setInterval(() => {
      const now = cpuUsage();
      const at = performance.now();
      const used = (now.user + now.system - last.user - last.system) / 1e3;
      const share = used / Math.max(1, at - lastAt);
      last = now;
      lastAt = at;
      if (this.busy || this.booting > 0 || work !== this.work) {
        work = this.work;
        strikes = 0;
        return;
      }
      strikes = share > 0.05 ? strikes + 1 : 0;
      if (strikes >= 3) this.retire();
    }, 250);
    Deno.unrefTimer(timer);
  }
  async serve(token) {
    void this.watchIdle();
    await this.host.send({
      op: "ready",
      token
    });
    this.warm(0);
    for (; ; ) {
      this.busy = false;
      const request = await this.host.receive();
      if (this.retiring) await new Promise(() => {
      });
      this.busy = true;
      if (request === null) return;
      const op = request.op;
      if (op === "ping") {
        const spares = this.spares.filter((spare) => spare.booted).length;
        await this.host.send({
          op: "pong",
          spares,
          cold: this.cold,
          made: this.made
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
      } else {
        await this.host.send({
          op: "error",
          message: `unknown op ${String(op)}`
        });
      }
      this.work++;
      if (this.spares.length < BOOT_AT_ONCE && !this.retiring) this.boot();
      this.warm();
    }
  }
  // A request's result, with the cache the host keeps and the workers it ended.
  // The workers the request released are named in it as ended and terminated
  // as soon as it is written, before the next request is read: the host has its
  // answer without waiting for their teardown, and still waits for their
  // threads to be gone before the process serves anyone again.
  async reply(result) {
    const released = this.released.splice(0);
    const ended = Slot.ended.splice(0);
    for (const slot of released) ended.push(slot.id);
    try {
      await this.host.send({
        ...result,
        keep: this.kept(),
        ended
      });
    } finally {
      for (const slot of released) slot.stop(false);
      this.modules.trim();
    }
  }
  // Ends the worker of a request that answered: its URLs are revoked at once,
  // and it is terminated once the reply naming it is written (see reply).
  release(slot) {
    slot.revoke();
    this.released.push(slot);
  }
  // Ends a request's worker: its URLs are revoked at once, and the host waits
  // for its thread to be gone before the process serves another request.
  finish(slot) {
    slot.revoke();
    slot.stop();
  }
  // Each load gets a fresh worker: nothing one module's top-level code does can
  // reach the next load's result.
  async load(request) {
    const limitMs = Number(request.timeLimit) * 1e3;
    const slot = this.take();
    await slot.ready;
    const started = performance.now();
    const source = String(request.source);
    let declared = null;
    let early = /* @__PURE__ */ new Map();
    const outcome = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve({
        op: "timeout"
      }), Math.max(0, limitMs - (performance.now() - started)));
      slot.listener = (message) => {
        if (message.op === "result" || message.op === "gone") {
          clearTimeout(timer);
          resolve(message);
        }
      };
      slot.request({
        op: request.op,
        source: request.op === "compile" ? source : "",
        url: request.op === "load" ? this.modules.url(source, sourceBytes.get(request)) : "",
        key: request.key ?? "module",
        direct: request.op === "load" && cannotExportThen(source)
      });
      if (request.op === "load") {
        declared = declarations(source);
        const first = smallest(declared.keys(), this.settings.maxViews);
        const read = signatures(source, first, declared);
        early = new Map(first.map((name, k) => [
          name,
          read[k]
        ]));
      }
    });
    slot.listener = null;
    if (outcome.op === "result") {
      this.release(slot);
      const exports = Array.isArray(outcome.exports) ? outcome.exports.slice(0, this.settings.maxViews).map((e) => String(e).slice(0, this.settings.maxTitleChars)) : [];
      const diagnostic = outcome.diagnostic === null || outcome.diagnostic === void 0 ? null : capError(String(outcome.diagnostic), this.settings);
      const found = declared;
      const typed = found === null || diagnostic !== null ? [] : exports.map((name) => early.get(name) ?? signatures(source, [
        name
      ], found)[0]);
      return {
        op: "result",
        diagnostic,
        exports,
        signatures: typed
      };
    }
    this.finish(slot);
    const why = outcome.op === "timeout" ? `the module's top-level code did not finish within ${request.timeLimit} s` : `the module's worker ended: ${String(outcome.why)}`;
    return {
      op: "result",
      diagnostic: `1:1: ${capError(why, this.settings)}`,
      exports: [],
      restart: true
    };
  }
  // One check(change) of a kept module, in the worker kept for its scope and
  // text when there is one. A kept worker is only ever handed checks of that
  // same module in that same scope (the host names the scope: one store of one
  // repository), so nothing of one store's checks can reach another's. A check
  // that fails in a kept worker in any way (it threw, outlived its limit, ran
  // out of memory, left a rejection unhandled) is not believed: the worker is
  // ended and the check is asked again of a fresh one, whose answer stands.
  async check(request) {
    const key = JSON.stringify([
      String(request.scope),
      String(request.source)
    ]);
    const limitMs = Number(request.timeLimit) * 1e3;
    const known = this.checkers.get(key);
    this.checkers.delete(key);
    if (known !== void 0 && !known.slot.exited) {
      const again = await this.checkIn(known, request, limitMs);
      if (again.keep) {
        this.keep(key, known);
        return again.result;
      }
      if (again.answered) return again.result;
      if (!again.verdict) return {
        op: "result",
        again: true,
        restart: true
      };
    }
    const fresh = {
      slot: this.take(),
      uses: 0,
      spentMs: 0
    };
    await fresh.slot.ready;
    const first = await this.checkIn(fresh, request, limitMs);
    if (first.keep) this.keep(key, fresh);
    return first.verdict ? first.result : {
      ...first.result,
      restart: true
    };
  }
  keep(key, kept) {
    this.checkers.set(key, kept);
    while (this.checkers.size > KEPT) {
      const [oldest, evicted] = this.checkers.entries().next().value;
      this.checkers.delete(oldest);
      this.finish(evicted.slot);
    }
  }
  async checkIn(kept, request, limitMs) {
    const slot = kept.slot;
    const started = performance.now();
    const outcome = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve({
        op: "timeout"
      }), limitMs);
      slot.listener = (message) => {
        if (message.op === "verdict" || message.op === "gone") {
          clearTimeout(timer);
          resolve(message);
        }
      };
      slot.request({
        op: "check",
        url: kept.uses === 0 ? this.modules.url(String(request.source), sourceBytes.get(request)) : "",
        key: String(request.key ?? "module"),
        change: String(request.change)
      });
    });
    slot.listener = null;
    slot.revoke();
    kept.uses++;
    kept.spentMs += performance.now() - started;
    if (outcome.op === "verdict") {
      const result = {
        op: "result",
        kind: String(outcome.kind),
        message: typeof outcome.message === "string" ? outcome.message : null,
        error: typeof outcome.error === "string" ? capError(outcome.error, this.settings) : null
      };
      const keep = outcome.reuse === true && kept.uses < KEPT_USES && kept.spentMs < limitMs / 2;
      if (!keep) {
        const believed = outcome.reuse === true || kept.uses === 1;
        this.finish(slot);
        return {
          result,
          keep: false,
          answered: believed,
          verdict: true
        };
      }
      return {
        result,
        keep: true,
        answered: true,
        verdict: true
      };
    }
    this.finish(slot);
    const error = outcome.op === "timeout" ? `the check did not finish within its time limit of ${request.timeLimit} s` : "the check's worker ended";
    return {
      result: {
        op: "result",
        kind: "error",
        message: null,
        error
      },
      keep: false,
      answered: kept.uses === 1,
      verdict: false
    };
  }
  // Returns null when the host hung up mid-run.
  async run(request) {
    const limitMs = Number(request.timeLimit) * 1e3;
    const settings = this.settings;
    const slot = this.take();
    await slot.ready;
    let output = "";
    let truncated = false;
    const views = [];
    const events = new Queue();
    slot.listener = (message) => events.push(message);
    let spent = 0;
    let since = performance.now();
    let timer;
    const arm = () => {
      timer = setTimeout(() => events.push({
        op: "tick"
      }), Math.max(0, limitMs - spent));
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
    const modules = {};
    const given = request.modules;
    if (given !== null && typeof given === "object" && !Array.isArray(given)) {
      for (const [key, source] of Object.entries(given)) {
        modules[key] = this.modules.url(String(source));
      }
    }
    const calls = Array.isArray(request.calls) ? request.calls.filter((c) => typeof c === "string").slice(0, 256) : [];
    slot.request({
      op: "run",
      source: request.source,
      modules,
      kind: request.kind,
      calls,
      direct: cannotExportThen(String(request.source))
    });
    let outcome;
    for (; ; ) {
      const message = await events.next();
      if (message.op === "tick") {
        if (spent + (performance.now() - since) >= limitMs) {
          outcome = {
            op: "timeout"
          };
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
        if (views.length < settings.maxViews && title.length <= settings.maxTitleChars && text.length <= settings.maxViewChars) {
          views.push([
            title,
            text
          ]);
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
          args: args.length > settings.maxArgsChars ? "" : args
        });
        const reply = await this.host.receive();
        if (reply === null || reply.op !== "reply" || reply.id !== Number(message.id)) {
          clearTimeout(timer);
          this.finish(slot);
          return null;
        }
        const bytes = encoder.encode(JSON.stringify({
          ok: reply.ok === true,
          text: String(reply.text)
        }));
        slot.replies.start(Number(message.id), bytes);
        resume();
        continue;
      }
      if (message.op === "more") {
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
    if (outcome.op === "done") this.release(slot);
    else this.finish(slot);
    if (truncated) output += "\n[output truncated]";
    let error;
    if (outcome.op === "done") {
      error = outcome.error === null || outcome.error === void 0 ? null : capError(String(outcome.error), settings);
    } else if (outcome.op === "timeout") {
      error = `the program did not finish within its time limit of ${request.timeLimit} s`;
    } else {
      error = capError(`the program's worker ended: ${String(outcome.why)}`, settings);
    }
    const imported = outcome.op === "done" && Array.isArray(outcome.imported) ? outcome.imported : [];
    return {
      op: "result",
      ok: error === null,
      output,
      error,
      views,
      imported,
      // A worker that did not report done may be one a terminate cannot stop: the
      // host replaces the whole process after this reply.
      restart: outcome.op !== "done"
    };
  }
};
function harden() {
  const g = globalThis;
  for (const name of [
    "caches",
    "BroadcastChannel",
    "localStorage",
    "sessionStorage",
    "nodeBootstrap"
  ]) {
    try {
      delete g[name];
    } catch {
    }
  }
  let kept = true;
  try {
    kept = !delete g.process;
  } catch {
  }
  if (kept) {
    for (const name of [
      "exit",
      "kill",
      "abort",
      "reallyExit",
      "_kill",
      "binding",
      "dlopen",
      "getBuiltinModule"
    ]) {
      try {
        delete g.process[name];
      } catch {
      }
    }
  }
  try {
    delete g.Deno.kill;
    delete g.Deno.exit;
  } catch {
  }
}
async function main() {
  const [port, token, config] = Deno.args;
  const settings = JSON.parse(config);
  const conn = await Deno.connect({
    hostname: "127.0.0.1",
    port: Number(port)
  });
  conn.setNoDelay(true);
  const d = Deno;
  try {
    delete d[d.internal];
  } catch {
  }
  harden();
  await new Runtime(new Host(conn), settings).serve(token);
  conn.close();
  exitNow(0);
}
var exitNow = Deno.exit;
var denoCpuUsage = (() => {
  const own = Deno.cpuUsage;
  return typeof own === "function" ? own.bind(Deno) : null;
})();
if (import.meta.main) {
  await main();
}
