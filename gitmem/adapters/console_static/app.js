// gitmem console: one page over the console's JSON API.
// Every text that comes from a memory is put in the page with textContent (never as
// HTML), so a memory holding markup shows as the characters it holds.
"use strict";

(function () {
  const main = document.getElementById("main");
  const tabs = document.getElementById("tabs");
  const banner = document.getElementById("banner");
  const live = document.getElementById("live");

  // The launch's token comes once, in the address `gitmem console` printed. The page
  // keeps it in its own origin's storage, which no other port of this host can read
  // (a cookie would be sent to every one of them), sends it with each request, and
  // takes it out of the address bar.
  const TOKEN_KEY = "gitmem-console-token";
  const offered = new URLSearchParams(location.search).get("token");
  let token = offered;
  try {
    if (offered !== null) localStorage.setItem(TOKEN_KEY, offered);
    else token = localStorage.getItem(TOKEN_KEY);
  } catch (error) {
    // no storage (a private window may refuse it): the token lasts as long as the page
  }
  if (offered !== null) history.replaceState(null, "", location.pathname + location.hash);

  // how often a page whose data waits for a store's history asks again
  const POLL_MS = 1000;

  const state = { dirty: false, view: null, heads: {}, flash: null, renders: 0, stale: () => false, drawn: null, poll: null, locked: false, events: null };

  // -- small helpers ------------------------------------------------------------------

  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (key === "class") node.className = value;
      else if (key === "style") Object.assign(node.style, value);
      else node.setAttribute(key, String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  // a table that reflows on a narrow screen: each row becomes a card whose cells are
  // labelled with their column's heading (the stylesheet hides the heading row there)
  function gridTable(tag, attrs, ...children) {
    const table = h(tag, attrs, ...children);
    const headings = [...table.querySelectorAll("thead th")].map((th) => th.textContent);
    for (const row of table.querySelectorAll("tbody tr")) {
      [...row.children].forEach((cell, i) => {
        if (headings[i]) cell.setAttribute("data-label", headings[i]);
      });
    }
    return h("div", { class: "scroll" }, table);
  }

  // replaceChildren would write a null as the text "null"
  function fill(node, ...children) {
    node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  }

  // A live update re-asks the page's data; when the answer is what is already drawn,
  // nothing is redrawn, so an open revision, a scrolled list or a button under the
  // pointer stays put while other stores (or other memories) are written.
  function same(fresh, ...data) {
    const drawn = location.hash + "\n" + JSON.stringify(data);
    if (!fresh && state.drawn === drawn) return true;
    state.drawn = drawn;
    return false;
  }

  // A commit's time in UTC. A commit may claim any time git can hold, far past what a
  // calendar date can show: such a time is shown as the number it is, never a failure
  // that would leave the page empty.
  function when(epoch) {
    const date = new Date(epoch * 1000);
    if (!Number.isFinite(date.getTime())) return `@${epoch}`;
    return date.toISOString().replace("T", " ").slice(0, 19) + " UTC";
  }

  function number(n) {
    return Number(n).toLocaleString("en-US");
  }

  function plural(n, one, many) {
    return `${number(n)} ${n === 1 ? one : many}`;
  }

  function storePath(store) {
    return store.split("/").map(encodeURIComponent).join("/");
  }

  async function api(method, path, body, headers) {
    const init = { method, headers: Object.assign({}, headers || {}), credentials: "omit" };
    init.headers["Authorization"] = `Bearer ${token}`;
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers["Content-Type"] = "application/json";
    }
    const response = await fetch(path, init);
    const data = await response.json().catch(() => null);
    if (response.status === 401) door();
    return { status: response.status, ok: response.ok, data };
  }

  async function get(path) {
    const answer = await api("GET", path);
    if (!answer.ok) throw new Error(message(answer));
    return answer.data;
  }

  function message(answer) {
    const error = answer.data && answer.data.error;
    return error ? `${error.message} (${error.kind})` : `the console answered ${answer.status}`;
  }

  // Without this launch's token (none given, or one of an earlier launch): how to get in.
  function door() {
    state.locked = true;
    if (state.events) state.events.close();
    say("");
    fill(tabs);
    live.textContent = "no token";
    live.className = "live";
    fill(
      main,
      h(
        "section",
        { id: "door" },
        h("h2", {}, "How to get in"),
        h(
          "p",
          {},
          "This page needs the token of this launch of the console. In the terminal where it runs, ",
          h("code", {}, "gitmem console"),
          " printed its address with the token, ending in ",
          h("code", {}, "/?token=..."),
          ": open that address. Each launch has a fresh token; once the page is open it keeps the token for you.",
        ),
      ),
    );
  }

  function say(text, kind) {
    banner.hidden = !text;
    banner.className = kind || "info";
    banner.textContent = text || "";
  }

  function leaveOk() {
    return !state.dirty || confirm("You have unsaved edits. Leave and discard them?");
  }

  // -- routing ------------------------------------------------------------------------

  function route() {
    // split before decoding: a file's path ("notes%2Ftodo.md") is one encoded part
    const parts = location.hash.replace(/^#\/?/, "").split("?")[0].split("/").filter(Boolean).map(decodePart);
    if (parts[0] === "store" && parts.length >= 3) {
      const kinds = ["memories", "timeline", "memory"];
      // store ids hold "/": the view name is the last known word from the right
      for (let i = parts.length - 1; i >= 2; i--) {
        const after = parts.length - 1 - i;
        if (kinds.includes(parts[i]) && (parts[i] === "memory" ? after === 1 || after === 2 : after === 0)) {
          return { name: parts[i], store: parts.slice(1, i).join("/"), rest: parts.slice(i + 1) };
        }
      }
    }
    if (parts[0] === "agents" || parts[0] === "modules" || parts[0] === "review") return { name: parts[0] };
    return { name: "stores" };
  }

  function decodePart(part) {
    try {
      return decodeURIComponent(part);
    } catch {
      return part;
    }
  }

  function link(view, store, rest) {
    const tail = rest ? "/" + rest : "";
    return `#/store/${store}/${view}${tail}`;
  }

  let lastHash = location.hash;
  window.addEventListener("hashchange", () => {
    if (state.dirty && !leaveOk()) {
      history.replaceState(null, "", lastHash);
      return;
    }
    state.dirty = false;
    lastHash = location.hash;
    render(true);
  });
  window.addEventListener("beforeunload", (event) => {
    if (state.dirty) {
      event.preventDefault();
      event.returnValue = "";
    }
  });

  async function render(fresh) {
    if (state.locked) return;
    const view = route();
    state.view = view;
    // renders overlap (a live update, a navigation): only the latest may draw
    const mine = ++state.renders;
    state.stale = () => mine !== state.renders;
    clearTimeout(state.poll);
    drawTabs(view);
    if (fresh) say(...(state.flash || [""]));
    state.flash = null;
    try {
      if (view.name === "memories") await memoriesPage(view.store, fresh);
      else if (view.name === "timeline") await timelinePage(view.store, fresh);
      else if (view.name === "memory") await memoryPage(view.store, view.rest[0], fresh, view.rest[1]);
      else if (view.name === "agents") await agentsPage(fresh);
      else if (view.name === "modules") await modulesPage(fresh);
      else if (view.name === "review") await reviewPage(fresh);
      else await storesPage(fresh);
    } catch (error) {
      if (mine === state.renders && !state.locked) say(error.message, "error");
    }
  }

  function drawTabs(view) {
    const items = [
      h("a", { href: "#/stores", class: view.name === "stores" ? "on" : "" }, "Stores"),
      h("a", { href: "#/agents", class: view.name === "agents" ? "on" : "" }, "Agents"),
      h("a", { href: "#/modules", class: view.name === "modules" ? "on" : "" }, "Modules"),
      h("a", { href: "#/review", class: view.name === "review" ? "on" : "" }, "Review"),
    ];
    if (view.store) {
      items.push(
        h("span", { class: "crumb" }, view.store),
        h("a", { href: link("memories", view.store), class: view.name === "memories" ? "on" : "" }, "Memories"),
        h("a", { href: link("timeline", view.store), class: view.name === "timeline" ? "on" : "" }, "Timeline"),
      );
    }
    fill(tabs, ...items);
  }

  // -- Stores -------------------------------------------------------------------------

  async function storesPage(fresh) {
    const stale = state.stale;
    const stores = await get("/api/stores");
    if (stale()) return;
    // a store whose history is still being read: ask again until it is
    if (stores.some((s) => s.history && s.history.state === "reading")) {
      state.poll = setTimeout(() => {
        if (!stale()) render(false);
      }, POLL_MS);
    }
    if (same(fresh, stores)) return;
    if (!stores.length) {
      fill(main, h("p", { class: "muted" }, "This repository has no stores yet."));
      return;
    }
    const rows = stores.map((s) =>
      h(
        "tr",
        { "data-store": s.store },
        h("td", {}, h("a", { href: link("memories", s.store) }, s.store)),
        h("td", {}, s.strategy || "—"),
        h("td", {}, limitText(s.limits)),
        h("td", { class: "num" }, `${number(s.totals.count)} / ${number(s.peaks.count)}`),
        h("td", { class: "num" }, `${number(s.totals.chars)} / ${number(s.peaks.chars)}`),
        h("td", { class: "num" }, s.history ? unread(s.history) : number(s.memories_ever)),
        h(
          "td",
          {},
          s.instances === null
            ? unread(s.history)
            : s.instances.map((i) =>
                h("span", { class: "pill" + (s.holders.includes(i) ? " holder" : "") }, i),
              ),
        ),
        h("td", {}, s.shared === null ? unread(s.history) : s.shared ? "shared" : s.instances.length ? "one instance" : "—"),
      ),
    );
    fill(main, 
      h("h2", {}, "Stores"),
      h(
        "p",
        { class: "muted" },
        "Each store once, with every instance that holds it: watermark holders (outlined) and the agents that wrote it.",
      ),
      gridTable(
        "table",
        { class: "grid", id: "stores" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["store", "strategy", "limits", "memories now / peak", "chars now / peak", "ever held", "instances", "held by"].map(
              (t) => h("th", {}, t),
            ),
          ),
        ),
        h("tbody", {}, rows),
      ),
    );
  }

  // a Stores cell only the store's history knows, while it is read (or why it was not)
  function unread(history) {
    return history.state === "failed"
      ? h("span", { class: "pending failed", title: history.message }, "history not read")
      : h("span", { class: "pending" }, "reading history…");
  }

  function limitText(limits) {
    const on = Object.entries(limits).filter(([, v]) => v);
    return on.length ? on.map(([k, v]) => `${k}=${number(v)}`).join(" ") : "none";
  }

  // -- Agents and Modules -------------------------------------------------------------

  function instancePill(name, watching) {
    return h("span", { class: "pill" + (watching ? " holder" : ""), "data-instance": name }, name);
  }

  async function agentsPage(fresh) {
    const stale = state.stale;
    const profiles = await get("/api/agents");
    if (stale() || same(fresh, profiles)) return;
    const rows = profiles.map((p) =>
      h(
        "tr",
        { "data-profile": p.profile === null ? "" : p.profile },
        h("td", {}, p.profile === null ? h("span", { class: "muted" }, "not recorded") : p.profile),
        h("td", {}, p.scope || "—"),
        h("td", {}, p.holding, p.expected ? h("div", { class: "muted" }, `asked: ${p.expected}`) : null),
        h("td", {}, p.instances.map((i) => h("div", {}, instancePill(i.instance, false), " ", i.stores.map((st) => h("a", { href: link("memories", st) }, st, " "))))),
        h(
          "td",
          { class: "divergence-cell" },
          p.divergence.length
            ? p.divergence.map((d) => h("div", { class: "divergence" }, d))
            : h("span", { class: p.scope ? "agrees" : "muted" }, p.scope ? "as asked" : "—"),
        ),
      ),
    );
    fill(
      main,
      h("h2", {}, "Agents"),
      h(
        "p",
        { class: "muted" },
        "Each profile with its instances, as the repository records them: whether they share one store or take one each, and where that differs from what the scope asked for.",
      ),
      profiles.length
        ? gridTable(
            "table",
            { class: "grid", id: "agents" },
            h("thead", {}, h("tr", {}, ["profile", "scope", "instances hold", "instances and their stores", "divergence"].map((t) => h("th", {}, t)))),
            h("tbody", {}, rows),
          )
        : h("p", { class: "muted" }, "No agent has written or watched a store yet."),
    );
  }

  async function modulesPage(fresh) {
    const stale = state.stale;
    const stores = await get("/api/modules");
    if (stale() || same(fresh, stores)) return;
    const rows = stores.map((s) =>
      h(
        "tr",
        { "data-store": s.store },
        h("td", {}, h("a", { href: link("memories", s.store) }, s.store)),
        h("td", {}, s.strategy || "—"),
        h(
          "td",
          {},
          s.instances.length
            ? s.instances.map((i) =>
                h(
                  "div",
                  {},
                  instancePill(i.instance, i.watching),
                  h("span", { class: "muted" }, ` ${i.profile === null ? "profile not recorded" : "profile " + i.profile}` + (i.wrote ? ` · ${plural(i.wrote, "commit", "commits")}` : " · reads")),
                ),
              )
            : h("span", { class: "muted" }, "no agent (an operator's store)"),
        ),
        h("td", {}, s.shared ? "shared" : s.instances.length ? "one instance" : "—"),
      ),
    );
    fill(
      main,
      h("h2", {}, "Modules"),
      h("p", { class: "muted" }, "Each memory store once, with every instance holding it: those that wrote it, and those that follow it for notices (outlined)."),
      stores.length
        ? gridTable(
            "table",
            { class: "grid", id: "modules" },
            h("thead", {}, h("tr", {}, ["store", "strategy", "held by", "shared"].map((t) => h("th", {}, t)))),
            h("tbody", {}, rows),
          )
        : h("p", { class: "muted" }, "This repository has no stores yet."),
    );
  }

  // -- Memories panel -----------------------------------------------------------------

  // While the store's history is first read, the panel answers with the rows its
  // listing knows (each live memory's name, description and size) and says how far
  // the reading has gone; every field it does not know yet is null, shown as "reading
  // history…", and the page asks again (every POLL_MS) until the history is complete.

  async function memoriesPage(store, fresh) {
    const stale = state.stale;
    const [st, panel, actions] = await Promise.all([
      get(`/api/stores/${storePath(store)}/state`),
      get(`/api/stores/${storePath(store)}/memories`),
      get(`/api/stores/${storePath(store)}/actions`),
    ]);
    if (stale()) return;
    const history = Array.isArray(panel) ? null : panel.history;
    const memories = history ? panel.rows : panel;
    if (history && history.state === "reading") {
      state.poll = setTimeout(() => {
        if (!stale()) render(false);
      }, POLL_MS);
    }
    // while the history is read, only the line saying how far it is changes: the
    // treemap of thousands of tiles is drawn again only when the rows change
    if (same(fresh, st, memories, actions)) {
      const note = document.getElementById("history");
      if (note && history) note.replaceWith(historyNote(history));
      return;
    }
    const keep = !fresh && document.getElementById("new-memory");
    const listing = main.querySelector("details.listing");
    const listed = !fresh && listing !== null && listing.open;
    // offer only what the store's strategy lets an operator do; say why otherwise
    const form = !actions.allowed.includes("create")
      ? h("p", { class: "muted", id: "no-create" }, actions.refused.create)
      : keep
        ? document.getElementById("new-memory")
        : newMemoryForm(store);
    const live = memories.filter((m) => m.live);
    const gone = memories.filter((m) => !m.live);
    fill(main,
      h("h2", {}, "Memories"),
      totals(st),
      history ? historyNote(history) : null,
      h(
        "p",
        { class: "muted" },
        `${plural(live.length, "live memory", "live memories")}, sized by characters` +
          (gone.length ? `; ${plural(gone.length, "deleted one", "deleted ones")} below` : "") +
          (history ? "; deleted ones show once the history is read" : "") +
          ". Click one for its history.",
      ),
      treemap(store, live),
      deletedStrip(store, gone),
      legendList(store, memories, listed),
      form,
    );
  }

  // how far the first reading of the store's history has gone, or why it failed
  function historyNote(history) {
    if (history.state === "failed") {
      return h("p", { class: "history failed", id: "history" }, history.message);
    }
    const far =
      history.of !== null
        ? `${number(history.revisions)} of ${plural(history.of, "revision", "revisions")} read`
        : history.commits
          ? `${plural(history.commits, "commit", "commits")} walked`
          : "just started";
    return h(
      "p",
      { class: "history reading", id: "history" },
      h("span", { class: "spinner", "aria-hidden": "true" }),
      `Reading history… ${far}. Sizes and names are the store's now; the columns marked “reading history…” fill in when it is read.`,
    );
  }

  // a field the panel does not know yet (null while the history is read)
  function known(value, shown) {
    return value === null ? h("span", { class: "pending" }, "reading history…") : shown(value);
  }

  function totals(st) {
    const limit = { count: st.limits.maxCount, chars: st.limits.maxTotalLen };
    const cells = ["count", "chars", "lines"].map((key) =>
      h(
        "div",
        { class: "figure", "data-figure": key },
        h("div", { class: "big" }, number(st.totals[key])),
        h("div", {}, key === "count" ? "memories" : key),
        h("div", { class: "muted" }, `peak ${number(st.peaks[key])}` + (limit[key] ? ` · limit ${number(limit[key])}` : "")),
        limit[key] ? gauge(st.totals[key], st.peaks[key], limit[key]) : null,
      ),
    );
    return h("div", { class: "figures" }, cells, h("div", { class: "figure limits" }, h("div", {}, "limits"), h("div", { class: "muted" }, limitText(st.limits))));
  }

  function gauge(now, peak, limit) {
    const pct = (x) => `${Math.min(100, (100 * x) / limit)}%`;
    return h("div", { class: "gauge" }, h("div", { class: "peak", style: { width: pct(peak) } }), h("div", { class: "now", style: { width: pct(now) } }));
  }

  // A squarified treemap (Bruls, Huizing, van Wijk) that keeps the memories in slug
  // order (ordered rows, never sorted by size): a memory that grows or shrinks moves
  // its neighbours a little but never reshuffles the map.
  function squarify(items, x, y, w, hgt) {
    const out = [];
    const total = items.reduce((a, b) => a + b.size, 0);
    if (!total) return out;
    const scale = (w * hgt) / total;
    let rest = items.map((it) => ({ item: it, area: it.size * scale }));
    let box = { x, y, w, h: hgt };
    while (rest.length) {
      const side = Math.min(box.w, box.h);
      let row = [rest[0]];
      let worst = ratio(row, side);
      let i = 1;
      while (i < rest.length) {
        const next = ratio(row.concat([rest[i]]), side);
        if (next > worst) break;
        row.push(rest[i]);
        worst = next;
        i++;
      }
      rest = rest.slice(i);
      const sum = row.reduce((a, b) => a + b.area, 0);
      const thick = sum / side;
      let at = 0;
      for (const cell of row) {
        const len = cell.area / thick;
        if (box.w >= box.h) out.push({ item: cell.item, x: box.x, y: box.y + at, w: thick, h: len });
        else out.push({ item: cell.item, x: box.x + at, y: box.y, w: len, h: thick });
        at += len;
      }
      if (box.w >= box.h) box = { x: box.x + thick, y: box.y, w: box.w - thick, h: box.h };
      else box = { x: box.x, y: box.y + thick, w: box.w, h: box.h - thick };
    }
    return out;
  }

  function ratio(row, side) {
    const sum = row.reduce((a, b) => a + b.area, 0);
    const max = Math.max(...row.map((r) => r.area));
    const min = Math.min(...row.map((r) => r.area));
    return Math.max((side * side * max) / (sum * sum), (sum * sum) / (side * side * min));
  }

  function contentWidth() {
    const style = getComputedStyle(main);
    const width = main.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return Math.max(200, width || 960);
  }

  // the live memories, sized by their characters now; as wide as the figures above,
  // and as tall as the number of memories needs (capped), so one memory is a band
  // with its name on it, not a wall of colour
  function treemap(store, memories) {
    if (!memories.length) return h("p", { class: "muted", id: "treemap-empty" }, "No live memories.");
    const width = contentWidth();
    const height = Math.round(Math.min(430, width * 0.6, Math.max(72, Math.sqrt(memories.length) * 64)));
    // a memory of no characters still gets a sliver
    const items = memories.map((m) => ({ m, size: Math.max(m.chars, 1) }));
    const cells = squarify(items, 0, 0, width, height).map((c) => {
      const m = c.item.m;
      const size = `${number(m.chars)} chars`;
      const title =
        m.peak_chars === null
          ? `${m.slug} — ${size} (history still being read)\n${m.description}`
          : `${m.slug} — ${size} (peak ${number(m.peak_chars)}), ${m.revisions} revisions\n${m.description}`;
      const roomy = c.w > 70 && c.h > 34;
      return h(
        "a",
        {
          class: "cell",
          href: link("memory", store, encodeURIComponent(m.slug)),
          "data-slug": m.slug,
          "data-chars": m.chars,
          title,
          style: {
            left: `${(100 * c.x) / width}%`,
            top: `${c.y}px`,
            width: `calc(${(100 * c.w) / width}% - 2px)`,
            height: `${Math.max(c.h - 2, 1)}px`,
          },
        },
        c.w > 40 && c.h > 16 ? h("span", { class: "slug" }, m.slug) : null,
        roomy ? h("span", { class: "size" }, size) : null,
        roomy && c.h > 52 && m.description ? h("span", { class: "description" }, m.description) : null,
      );
    });
    return h("div", { class: "treemap", id: "treemap", style: { height: `${height}px` } }, cells);
  }

  // deleted memories apart: small tiles of one size, each opening its history
  function deletedStrip(store, gone) {
    if (!gone.length) return null;
    return h(
      "div",
      { class: "deleted-strip", id: "deleted" },
      h("span", { class: "muted" }, `Deleted (${gone.length}):`),
      gone.map((m) =>
        h(
          "a",
          {
            class: "chip deleted",
            href: link("memory", store, encodeURIComponent(m.slug)),
            "data-slug": m.slug,
            title: `${m.slug} — deleted at revision ${m.revision}, removing ${number(m.chars)} chars\n${m.description}`,
          },
          m.slug,
        ),
      ),
    );
  }

  function legendList(store, memories, open) {
    return h(
      "details",
      { class: "listing", open },
      h("summary", {}, "as a list"),
      gridTable(
        "table",
        { class: "grid" },
        h("thead", {}, h("tr", {}, ["memory", "chars", "peak", "revisions", "last by", "when"].map((t) => h("th", {}, t)))),
        h(
          "tbody",
          {},
          memories.map((m) =>
            h(
              "tr",
              { class: m.live ? "" : "deleted" },
              h("td", {}, h("a", { href: link("memory", store, encodeURIComponent(m.slug)) }, m.slug), m.live ? "" : " (deleted)"),
              h("td", { class: "num" }, number(m.chars)),
              h("td", { class: "num" }, known(m.peak_chars, number)),
              h("td", { class: "num" }, known(m.revisions, String)),
              h("td", {}, known(m.author, String)),
              h("td", {}, known(m.time, when)),
            ),
          ),
        ),
      ),
    );
  }

  function newMemoryForm(store) {
    const slug = h("input", { name: "slug", placeholder: "name (letters, digits, - _ .)", required: true });
    const description = h("input", { name: "description", placeholder: "what it is for (one line)" });
    const body = h("textarea", { name: "body", rows: 5, placeholder: "the text" });
    const mark = () => (state.dirty = Boolean(slug.value || description.value || body.value));
    for (const field of [slug, description, body]) field.addEventListener("input", mark);
    const form = h(
      "form",
      {
        id: "new-memory",
        class: "editor",
        onsubmit: async (event) => {
          event.preventDefault();
          const answer = await api(
            "PUT",
            `/api/stores/${storePath(store)}/memories/${encodeURIComponent(slug.value)}`,
            { description: description.value, body: body.value },
            { "If-Match": "0" },
          );
          if (!answer.ok) return say(message(answer), "error");
          state.dirty = false;
          state.flash = [`created ${answer.data.slug} (revision ${answer.data.revision})`, "ok"];
          location.hash = link("memory", store, encodeURIComponent(answer.data.slug));
        },
      },
      h("h3", {}, "New memory"),
      slug,
      description,
      body,
      h("button", { type: "submit" }, "Create"),
    );
    return form;
  }

  // -- one memory -----------------------------------------------------------------------

  async function memoryPage(store, slug, fresh, opened) {
    const stale = state.stale;
    const found = await get(`/api/stores/${storePath(store)}/memories/${encodeURIComponent(slug)}`);
    if (stale() || same(fresh, found)) return;
    const editor = document.getElementById("editor");
    const keepEditor = !fresh && state.dirty && editor && editor.dataset.slug === slug;
    const header = h(
      "div",
      { class: "memory-head" },
      h("h2", {}, found.slug),
      h("span", { class: "pill" + (found.live ? "" : " gone") }, found.live ? `live · revision ${found.revision}` : `deleted at revision ${found.revision}`),
    );
    if (keepEditor && Number(editor.dataset.revision) !== found.revision) {
      say(`${slug} changed to revision ${found.revision} while you were editing; saving will show you the newer text`, "warn");
    }
    // a revision is a commit and never changes: a live update keeps the drawn ones (open
    // or closed, diff or whole text) and adds only the new
    const drawn = new Map();
    if (!fresh) {
      for (const node of main.querySelectorAll("#history details.revision[data-commit]")) {
        drawn.set(node.dataset.commit, node);
      }
    }
    const blame = !fresh && document.getElementById("blame");
    const who = found.live ? (blame && blame.dataset.slug === slug ? blame : blameView(store, slug)) : null;
    fill(main, header, keepEditor ? editor : memoryEditor(store, found), who, revisionList(found, drawn));
    // a link from the timeline names the revision to open: r<N>
    const wanted = fresh && opened ? main.querySelector(`details.revision[data-revision="${Number(opened.slice(1))}"]`) : null;
    if (wanted) {
      wanted.open = true;
      wanted.scrollIntoView({ block: "center" });
    }
  }

  function memoryEditor(store, found) {
    const memory = found.memory || { description: "", body: "", code: "", on_use: "" };
    const description = h("input", { name: "description", value: memory.description });
    const body = h("textarea", { name: "body", rows: Math.min(24, Math.max(6, memory.body.split("\n").length + 1)) });
    body.value = memory.body;
    const mark = () => (state.dirty = description.value !== memory.description || body.value !== memory.body);
    description.addEventListener("input", mark);
    body.addEventListener("input", mark);
    const base = () => Number(form.dataset.revision);
    const url = `/api/stores/${storePath(store)}/memories/${encodeURIComponent(found.slug)}`;
    const newer = h("div", { class: "newer", hidden: true });
    // offer only what the store's strategy lets an operator do; say why otherwise
    const actions = found.actions || { allowed: [], refused: {} };
    const saveAs = found.live ? "edit" : "create";
    const saving = actions.allowed.includes(saveAs);
    const deleting = found.live && actions.allowed.includes("delete");
    const refusals = [...new Set([saving ? null : actions.refused[saveAs], found.live && !deleting ? actions.refused.delete : null].filter(Boolean))];
    if (!saving) {
      description.readOnly = true;
      body.readOnly = true;
    }

    async function save(event) {
      event.preventDefault();
      const answer = await api("PUT", url, { description: description.value, body: body.value }, { "If-Match": String(base()) });
      if (answer.status === 412) return stale(answer);
      if (!answer.ok) return say(message(answer), "error");
      state.dirty = false;
      say(`saved ${found.slug} as revision ${answer.data.revision}, authored as ${answer.data.author}`, "ok");
      render(false);
    }

    async function remove() {
      if (!confirm(`Delete ${found.slug}? Its history stays.`)) return;
      const answer = await api("DELETE", url, undefined, { "If-Match": String(base()) });
      if (answer.status === 412) return stale(answer);
      if (!answer.ok) return say(message(answer), "error");
      state.dirty = false;
      say(`deleted ${found.slug} (revision ${answer.data.revision})`, "ok");
      render(false);
    }

    function stale(answer) {
      say(message(answer), "error");
      const current = answer.data.current;
      const text = current && current.memory ? current.memory : null;
      newer.hidden = false;
      fill(newer, 
        h("h3", {}, current ? `The newer text (revision ${current.revision}${current.live ? "" : ", deleted"})` : "The memory is gone"),
        text ? h("p", { class: "muted" }, text.description) : null,
        text ? h("pre", { class: "text" }, text.body) : null,
        h(
          "button",
          {
            type: "button",
            onclick: () => {
              state.dirty = false;
              render(true);
            },
          },
          "Discard my edits and load it",
        ),
        h(
          "button",
          {
            type: "button",
            onclick: () => {
              // keep my text, and base the next save on what I have now seen
              form.dataset.revision = String(current ? current.revision : 0);
              newer.hidden = true;
              say("your edits are kept; save again to replace the newer text", "warn");
            },
          },
          "Keep my edits over it",
        ),
      );
    }

    const form = h(
      "form",
      { id: "editor", class: "editor", "data-slug": found.slug, "data-revision": found.revision, onsubmit: save },
      h("label", {}, "description", description),
      h("label", {}, "body", body),
      h(
        "div",
        { class: "buttons" },
        saving ? h("button", { type: "submit", id: "save" }, found.live ? "Save" : "Save (re-create)") : null,
        deleting ? h("button", { type: "button", id: "delete", class: "danger", onclick: remove }, "Delete") : null,
        saving || deleting
          ? h("span", { class: "muted" }, "Saved as the operator; the replaced text stays in the history.")
          : null,
      ),
      refusals.map((why) => h("p", { class: "muted refused" }, why)),
      memory.code ? h("div", {}, h("h3", {}, "code"), h("pre", { class: "code" }, memory.code)) : null,
      memory.on_use ? h("div", {}, h("h3", {}, "onUse"), h("pre", { class: "code" }, memory.on_use)) : null,
      newer,
    );
    return form;
  }

  // who last changed each line, asked for on demand: it reads the memory's whole history
  function blameView(store, slug) {
    const shown = h("div", { class: "shown" });
    async function load() {
      try {
        const lines = await get(`/api/stores/${storePath(store)}/memories/${encodeURIComponent(slug)}/blame`);
        fill(
          shown,
          gridTable(
            "table",
            { class: "blame" },
            h("thead", {}, h("tr", {}, ["file", "line", "revision", "by", "session", "when", "text"].map((t) => h("th", {}, t)))),
            h(
              "tbody",
              {},
              lines.map((b) =>
                h(
                  "tr",
                  { "data-revision": b.revision, "data-commit": b.commit },
                  h("td", { class: "muted" }, b.file),
                  h("td", { class: "num" }, b.line),
                  h("td", {}, h("b", {}, `r${b.revision}`), h("code", { class: "muted" }, ` ${b.commit.slice(0, 12)}`)),
                  h("td", { class: "author" }, b.author, h("span", { class: "muted" }, ` (${b.by})`)),
                  h("td", { class: "muted" }, b.session ? b.session.slice(0, 16) : ""),
                  h("td", { class: "muted" }, when(b.time)),
                  h("td", {}, h("code", { class: "line" }, b.text)),
                ),
              ),
            ),
          ),
        );
      } catch (error) {
        say(error.message, "error");
      }
    }
    return h(
      "section",
      { id: "blame", "data-slug": slug },
      h("h3", {}, "Who wrote each line"),
      h("div", { class: "buttons" }, h("button", { type: "button", onclick: load }, "blame")),
      shown,
    );
  }

  function revisionList(found, drawn) {
    return h(
      "section",
      { id: "history" },
      h("h3", {}, "Revisions, newest first"),
      found.revisions.map((r) => drawn.get(r.commit) || revision(r)),
    );
  }

  function revision(r) {
    const shown = h("div", { class: "shown" });
    const asDiff = () => shown.replaceChildren(diffView(r.diff));
    const whole = () =>
      fill(
        shown,
        h("p", { class: "muted" }, r.removed ? "the text this revision removed" : "description: " + r.description),
        r.removed ? h("p", { class: "muted" }, "description: " + r.description) : null,
        h("pre", { class: "text" }, r.body),
        r.code ? h("div", {}, h("h4", {}, "code"), h("pre", { class: "code" }, r.code)) : null,
        r.on_use ? h("div", {}, h("h4", {}, "onUse"), h("pre", { class: "code" }, r.on_use)) : null,
      );
    const item = h(
      "details",
      { class: "revision" + (r.removed ? " deleted" : ""), "data-revision": r.revision, "data-commit": r.commit },
      h(
        "summary",
        {},
        h("b", {}, `r${r.revision}`),
        ` ${r.op} by `,
        h("span", { class: "author" }, r.author),
        ` · ${when(r.time)} · `,
        h("span", { class: "add" }, `+${r.lines_added}`),
        " ",
        h("span", { class: "del" }, `−${r.lines_removed}`),
        h("code", { class: "muted" }, ` ${r.commit.slice(0, 12)}`),
      ),
      h("div", { class: "buttons" }, h("button", { type: "button", onclick: asDiff }, "diff"), h("button", { type: "button", onclick: whole }, "whole text")),
      shown,
    );
    item.addEventListener("toggle", () => {
      if (item.open && !shown.childNodes.length) asDiff();
    });
    return item;
  }

  function diffView(text) {
    return h(
      "pre",
      { class: "diff" },
      text.split("\n").map((line) => {
        const kind = line.startsWith("+++") || line.startsWith("---") ? "file" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "";
        return h("span", { class: kind }, line + "\n");
      }),
    );
  }

  // -- Review ---------------------------------------------------------------------------

  async function reviewPage(fresh) {
    const stale = state.stale;
    const answer = await get("/api/review");
    if (stale() || same(fresh, answer)) return;
    // each decision names the proposal's head as shown here: one its holder has
    // written to since is refused, so what is approved is what was read
    async function decide(decision, proposal, slugs, head) {
      const done = await api("POST", `/api/review/${decision}`, { proposal, slugs, head });
      if (!done.ok) return say(message(done), "error");
      const d = done.data;
      const rest = d.pending.length ? ` Still pending: ${d.pending.join(", ")}.` : "";
      state.flash = [`${d.decision === "approved" ? "Approved" : "Rejected"} ${d.slugs.join(", ")} of ${d.proposal}.${rest}`, "info"];
      render(true);
    }
    const buttons = (p, slugs) => [
      h("button", { type: "button", class: "approve", onclick: () => decide("approve", p.proposal, slugs, p.head) }, "Approve"),
      " ",
      h("button", { type: "button", class: "reject", onclick: () => decide("reject", p.proposal, slugs, p.head) }, "Reject"),
    ];
    const cards = answer.proposals.map((p) =>
      h(
        "section",
        { class: "proposal", "data-proposal": p.proposal },
        h("h3", {}, `${p.holder} → ${p.store}`, " ", h("code", {}, p.proposal)),
        h("p", {}, plural(p.memories.length, "memory", "memories"), " pending. ", ...buttons(p, [])),
        p.memories.map((m) =>
          h(
            "div",
            { class: "proposed", "data-slug": m.slug },
            h("h4", {}, `${m.op} `, h("code", {}, m.slug), " ", h("span", { class: "add" }, `+${m.added}`), " ", h("span", { class: "del" }, `−${m.removed}`), " ", ...buttons(p, [m.slug])),
            diffView(m.diff),
          ),
        ),
      ),
    );
    fill(
      main,
      h("h2", {}, "Review"),
      h("p", { class: "muted" }, "What agents whose writes await review have proposed, each against the store as it is now. Approving merges it into the store; rejecting puts it back on the proposal, and the store is not touched."),
      cards.length ? cards : h("p", { class: "muted", id: "no-proposals" }, "No proposals are pending."),
    );
  }

  // -- Timeline -------------------------------------------------------------------------

  async function timelinePage(store, fresh) {
    const stale = state.stale;
    const select = document.getElementById("author");
    const author = !fresh && select ? select.value : new URLSearchParams(location.hash.split("?")[1] || "").get("author") || "";
    const query = author ? `?author=${encodeURIComponent(author)}` : "";
    const [rows, stores] = await Promise.all([
      get(`/api/stores/${storePath(store)}/timeline${query}`),
      get("/api/stores"),
    ]);
    if (stale() || same(fresh, query, rows, stores)) return;
    const here = stores.find((s) => s.store === store);
    const everyone = here ? Object.keys(here.authors) : [];
    const picker = h(
      "select",
      { id: "author", onchange: () => render(false) },
      h("option", { value: "" }, "every author"),
      everyone.map((a) => h("option", { value: a, selected: a === author }, a)),
    );
    fill(main, 
      h("h2", {}, "Timeline"),
      h("p", { class: "muted" }, "Every version of the store, newest first. ", h("label", {}, "Author: ", picker)),
      gridTable(
        "table",
        { class: "grid", id: "timeline" },
        h("thead", {}, h("tr", {}, ["when", "author", "memory", "op", "lines", "commit"].map((t) => h("th", {}, t)))),
        h(
          "tbody",
          {},
          rows.map((r) =>
            h(
              "tr",
              { class: r.removed ? "deleted" : "" },
              h("td", {}, when(r.time)),
              // a commit gitmem did not make names whoever its maker chose: marked so
              h("td", {}, r.author, r.by === "git" ? h("span", { class: "muted by-git", title: "a plain git commit: its author is the name its maker gave" }, " (git)") : null),
              h("td", {}, h("a", { href: link("memory", store, `${encodeURIComponent(r.slug)}/r${r.revision}`) }, r.slug, ` r${r.revision}`)),
              h("td", {}, r.op),
              h("td", {}, h("span", { class: "add" }, `+${r.lines_added}`), " ", h("span", { class: "del" }, `−${r.lines_removed}`)),
              h("td", {}, h("code", {}, r.commit.slice(0, 12))),
            ),
          ),
        ),
      ),
    );
  }

  // -- live updates ---------------------------------------------------------------------

  function listen() {
    // an event stream cannot carry a header: the token goes in its address, to this
    // origin only
    const events = new EventSource(`/api/events?token=${encodeURIComponent(token)}`);
    state.events = events;
    events.addEventListener("open", () => {
      live.textContent = "live";
      live.className = "live on";
    });
    events.addEventListener("error", () => {
      if (state.locked) return;
      live.textContent = "reconnecting…";
      live.className = "live";
    });
    events.addEventListener("heads", (event) => {
      const heads = JSON.parse(event.data);
      // the first event may already carry a write made since the page loaded
      const moved = JSON.stringify(heads) !== JSON.stringify(state.heads);
      state.heads = heads;
      if (moved) render(false);
    });
  }

  if (token === null) door();
  else {
    render(true);
    listen();
  }
})();
