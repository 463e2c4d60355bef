// The palette, on every page (Ctrl+K, or ⌘K): find a session by its title, the start of
// its id or the words said in it (the search index: one row per session), and open it
// from the keyboard. The board's rows come from GET /api/sessions, the words from GET /api/search.
import { agentDot, el, fmtDay, getJSON, loadAgents, parseISO, SOURCE_LABEL, STATE_LABEL } from "./common.js";
import { marked } from "./highlight.js";

const SHOWN = 8;
let dialog = null,
  input = null,
  list = null;
let rows = null; // the board's rows, fetched when the palette opens
let items = []; // what Enter can open: [{href, node}]
let active = 0;
let said = { q: "", sessions: [] };
let seq = 0,
  timer = null;

function build() {
  dialog = el("dialog", { class: "palette", "aria-label": "Find a session" });
  input = el("input", {
    type: "search",
    class: "palette-input",
    placeholder: "A title, the start of an id, or words said in a session",
    role: "combobox",
    "aria-expanded": "true",
    "aria-controls": "palette-list",
    "aria-autocomplete": "list",
    "aria-label": "Find a session",
    autocomplete: "off",
    spellcheck: "false",
  });
  list = el("ul", { id: "palette-list", class: "palette-list", role: "listbox", "aria-label": "Sessions found" });
  dialog.append(
    input,
    list,
    el(
      "p",
      { class: "palette-keys" },
      el("kbd", { text: "↑" }),
      el("kbd", { text: "↓" }),
      " move · ",
      el("kbd", { text: "Enter" }),
      " open · ",
      el("kbd", { text: "Esc" }),
      " close",
    ),
  );
  document.body.append(dialog);
  input.addEventListener("input", () => {
    draw();
    words();
  });
  input.addEventListener("keydown", keys);
  dialog.addEventListener("click", (ev) => {
    if (ev.target === dialog) dialog.close();
  }); // the backdrop
}

export async function openPalette() {
  if (!dialog) build();
  if (!dialog.open) dialog.showModal();
  input.select();
  if (!Object.keys(SOURCE_LABEL).length) await loadAgents();
  try {
    rows = (await getJSON("/api/sessions")).sessions || [];
  } catch {
    rows = [];
  }
  draw();
  words();
}

// Sessions whose id starts with what was typed, or whose title (project, agent) holds every word of it.
function byName(q) {
  const all = rows || [];
  const t = q.trim().toLowerCase();
  const newest = (a, b) => (parseISO(b.updated_at) || 0) - (parseISO(a.updated_at) || 0);
  if (!t) return [...all].sort(newest).slice(0, SHOWN);
  const ws = t.split(/\s+/);
  const scored = [];
  for (const r of all) {
    const id = String(r.id).toLowerCase();
    let score = -1;
    if (t.length >= 2 && (id.startsWith(t) || `${r.source}:${id}`.startsWith(t))) score = 0;
    else {
      const title = String(r.title || "").toLowerCase();
      const hay = `${title} ${r.project || ""} ${SOURCE_LABEL[r.source] || r.source}`.toLowerCase();
      if (ws.every((w) => hay.includes(w))) score = title.startsWith(ws[0]) ? 1 : 2;
    }
    if (score >= 0) scored.push([score, r]);
  }
  scored.sort((a, b) => a[0] - b[0] || newest(a[1], b[1]));
  return scored.slice(0, SHOWN).map(([, r]) => r);
}

// The words said: the search index asked once typing pauses.
function words() {
  clearTimeout(timer);
  const q = input.value.trim();
  if (q.length < 2) {
    said = { q: "", sessions: [] };
    draw();
    return;
  }
  const mine = ++seq;
  timer = setTimeout(async () => {
    try {
      const d = await getJSON(`/api/search?${new URLSearchParams({ q, limit: String(SHOWN) })}`);
      if (mine === seq) {
        said = { q, sessions: d.sessions || [] };
        draw();
      }
    } catch {
      if (mine === seq) {
        said = { q, sessions: [] };
        draw();
      }
    }
  }, 180);
}

function option(href, ...kids) {
  const node = el("li", { class: "palette-item", role: "option", id: `palette-${items.length}`, "aria-selected": "false" }, ...kids);
  const i = items.length;
  node.addEventListener("mousemove", () => select(i));
  node.addEventListener("click", () => go(href));
  items.push({ href, node });
  return node;
}

function draw() {
  if (!list) return;
  const q = input.value.trim();
  items = [];
  const named = byName(q);
  const out = [];
  if (named.length) out.push(el("li", { class: "palette-group", role: "presentation", text: q ? "Sessions" : "Latest sessions" }));
  for (const r of named) {
    out.push(
      option(
        `/session/${encodeURIComponent(r.id)}`,
        el("span", { class: "p-title" }, agentDot(r.source), r.title || r.id),
        el("span", {
          class: "p-meta",
          text: [STATE_LABEL[r.state] || "", r.project, fmtDay(parseISO(r.updated_at)), String(r.id).slice(0, 8)].filter(Boolean).join(" · "),
        }),
      ),
    );
  }
  const names = new Set(named.map((r) => r.id));
  const hits = said.q === q ? said.sessions.filter((g) => !names.has(g.session)) : [];
  if (hits.length) out.push(el("li", { class: "palette-group", role: "presentation", text: "Said in" }));
  for (const g of hits) {
    const r = g.hit;
    const p = new URLSearchParams({ agent: r.agent, ref: r.ref, q });
    out.push(
      option(
        `/session/${encodeURIComponent(g.session)}#conversation?${p}`,
        el(
          "span",
          { class: "p-title" },
          agentDot(g.source),
          g.title || g.session,
          el("span", { class: "p-hits", text: `${g.hits} hit${g.hits === 1 ? "" : "s"}` }),
        ),
        el("span", { class: "p-snip" }, marked(r.snippet.text, r.snippet.marks)),
      ),
    );
  }
  if (q) out.push(option(`/search?${new URLSearchParams({ q })}`, el("span", { class: "p-title", text: `Search every message for “${q}”` })));
  if (!out.length) out.push(el("li", { class: "palette-none", role: "presentation", text: rows === null ? "Loading…" : "No session yet." }));
  list.replaceChildren(...out);
  select(Math.min(active, Math.max(0, items.length - 1)), true);
}

function select(i, quiet) {
  active = i;
  items.forEach((it, j) => it.node.setAttribute("aria-selected", j === i ? "true" : "false"));
  const cur = items[i];
  if (cur) {
    input.setAttribute("aria-activedescendant", cur.node.id);
    if (!quiet) cur.node.scrollIntoView({ block: "nearest" });
  } else input.removeAttribute("aria-activedescendant");
}

function go(href) {
  dialog.close();
  location.href = href;
}

function keys(ev) {
  if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
    ev.preventDefault();
    if (items.length) select((active + (ev.key === "ArrowDown" ? 1 : items.length - 1)) % items.length);
  } else if (ev.key === "Enter") {
    ev.preventDefault();
    ev.stopPropagation();
    if (items[active]) go(items[active].href);
  }
}

document.addEventListener("keydown", (ev) => {
  if ((ev.ctrlKey || ev.metaKey) && !ev.altKey && !ev.shiftKey && ev.key.toLowerCase() === "k") {
    ev.preventDefault();
    if (dialog && dialog.open) dialog.close();
    else openPalette();
  }
});
