// Shared helpers: DOM building (never innerHTML with data), the API, the live stream, formatting.

export const STATE_LABEL = {
  needs_you: "needs you",
  waiting: "waiting",
  working: "working",
  your_turn: "your turn",
  idle: "idle",
  ended: "ended",
};
// The agents' names and colours: the server's one table (GET /api/agents, or embedded in
// an export page), filled by loadAgents() before a page draws. An agent not in it shows its key.
export const SOURCE_LABEL = {};
export const AGENT = {};

export async function loadAgents() {
  const node = document.getElementById("huddle-agents");
  let table = null;
  try {
    table = node ? JSON.parse(node.textContent) : await getJSON("/api/agents");
  } catch {
    return; // names fall back to the agents' keys
  }
  for (const [k, v] of Object.entries((table && table.agents) || {})) {
    AGENT[k] = v;
    SOURCE_LABEL[k] = v.label;
  }
}

// A small dot in the agent's colour (set through the CSSOM: no inline style in markup).
export function agentDot(source) {
  const dot = el("span", { class: "agent-dot", "aria-hidden": "true" });
  const colour = (AGENT[source] || {}).colour;
  if (colour) dot.style.setProperty("--agent", colour);
  return dot;
}

export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export function pill(state) {
  const s = state || "idle";
  return el("span", { class: `pill s-${s}`, text: STATE_LABEL[s] || s });
}

export async function getJSON(path) {
  const r = await fetch(path, { headers: { accept: "application/json" }, credentials: "same-origin" });
  let data = null;
  try {
    data = await r.json();
  } catch {
    data = null;
  }
  if (!r.ok) throw new Error((data && data.error) || `${r.status} ${r.statusText}`);
  return data;
}

export const api = {
  board: () => getJSON("/api/sessions"),
  info: () => getJSON("/api/info"),
  doctor: () => getJSON("/api/doctor"),
  session: (id) => getJSON(`/api/sessions/${encodeURIComponent(id)}`),
  events: (id, after, limit) => getJSON(`/api/sessions/${encodeURIComponent(id)}/events?${after >= 0 ? `after=${after}&` : ""}limit=${limit || 5000}`),
  transcripts: (id) => getJSON(`/api/sessions/${encodeURIComponent(id)}/transcripts`),
  transcript: (id, q) => {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v !== null && v !== undefined) p.set(k, v);
    return getJSON(`/api/sessions/${encodeURIComponent(id)}/transcript?${p}`);
  },
  content: (id, ref) => getJSON(`/api/sessions/${encodeURIComponent(id)}/content/${encodeURIComponent(ref)}`),
};

// The live stream. EventSource reconnects by itself and sends Last-Event-ID,
// so the server replays what was missed (or says `reset`).
export function stream(session, handlers) {
  const url = session ? `/api/stream?session=${encodeURIComponent(session)}` : "/api/stream";
  const es = new EventSource(url);
  for (const kind of ["hello", "board", "events", "reset"]) {
    es.addEventListener(kind, (ev) => {
      const fn = handlers[kind];
      if (!fn) return;
      let data = null;
      try {
        data = JSON.parse(ev.data);
      } catch {
        return;
      }
      fn(data, ev);
    });
  }
  es.onerror = () => handlers.error && handlers.error();
  es.onopen = () => handlers.open && handlers.open();
  return es;
}

export function parseISO(s) {
  return s ? Date.parse(s) / 1000 : null;
}
export function now() {
  return Date.now() / 1000;
}

export function fmtDuration(sec) {
  if (sec === null || sec === undefined || !Number.isFinite(Number(sec))) return "—";
  sec = Math.max(0, Math.round(sec));
  if (sec < 60) return `${sec}s`;
  const m = Math.floor(sec / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d`;
}

export function fmtTokens(n) {
  if (!n) return "0";
  if (n < 1000) return String(n);
  if (n < 1e6) return `${(n / 1e3).toFixed(n < 1e4 ? 1 : 0)}k`;
  return `${(n / 1e6).toFixed(n < 1e7 ? 2 : 1)}M`;
}

export function fmtCost(cost) {
  if (!cost || cost.usd === null || cost.usd === undefined) return "—";
  const usd = cost.usd;
  const s = usd < 0.01 ? "<$0.01" : `$${usd.toFixed(usd < 10 ? 2 : 0)}`;
  return cost.unpriced && cost.unpriced.length ? `${s}+` : s;
}

// A time on a session page: the clock today, with its date on any other day (a session
// read days later must not look like this morning's).
export function fmtClock(t) {
  if (t === null || t === undefined) return "";
  if (new Date(t * 1000).toDateString() === new Date().toDateString()) return fmtTime(t);
  return fmtWhen(t);
}

// A time with its date, the one way the pages and exports say one: "Mon, Nov 30, 03:04:09".
export function fmtWhen(t) {
  if (t === null || t === undefined) return "";
  return `${fmtDate(t)}, ${fmtTime(t)}`;
}

// The formatters of the times below, made once: toLocaleDateString(locales, options) makes
// one per call, and a board of a two-year history (2,900 rows) spent seconds making them.
const FORMAT = {
  hm: new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit", hour12: false }),
  hms: new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false }),
  weekday: new Intl.DateTimeFormat([], { weekday: "long" }),
  day: new Intl.DateTimeFormat([], { day: "numeric", month: "short" }),
  dayYear: new Intl.DateTimeFormat([], { day: "numeric", month: "short", year: "numeric" }),
  date: new Intl.DateTimeFormat([], { weekday: "short", day: "numeric", month: "short" }),
  dateYear: new Intl.DateTimeFormat([], { weekday: "short", day: "numeric", month: "short", year: "numeric" }),
};

// When a session was last active, as a person says it: "today 14:32", "yesterday 09:10",
// "Tuesday 16:05" within the week, else its date ("Nov 30", with the year when not this one).
export function fmtDay(t) {
  if (t === null || t === undefined) return "—";
  const d = new Date(t * 1000),
    today = new Date();
  const midnight = (x) => new Date(x.getFullYear(), x.getMonth(), x.getDate()).getTime();
  const days = Math.round((midnight(today) - midnight(d)) / 86400000);
  if (days >= 0 && days < 7) {
    const hm = FORMAT.hm.format(d);
    if (days === 0) return `today ${hm}`;
    if (days === 1) return `yesterday ${hm}`;
    return `${FORMAT.weekday.format(d)} ${hm}`;
  }
  return (d.getFullYear() !== today.getFullYear() ? FORMAT.dayYear : FORMAT.day).format(d);
}

export function fmtTime(t) {
  return FORMAT.hms.format(new Date(t * 1000));
}

export function fmtDate(t) {
  if (t === null || t === undefined) return "";
  const d = new Date(t * 1000);
  return (d.getFullYear() !== new Date().getFullYear() ? FORMAT.dateYear : FORMAT.date).format(d);
}

export function tokensOf(u) {
  if (!u) return 0;
  return (u.input || 0) + (u.output || 0) + (u.cache_read || 0) + (u.cache_write || 0);
}

const PALETTE = ["#3e63dd", "#30a46c", "#e38c00", "#8e4ec6", "#d6409f", "#0090ff", "#12a594", "#e5484d"];
export function colorFor(index) {
  return PALETTE[index % PALETTE.length];
}
export function initials(name) {
  const words = String(name || "?")
    .replace(/[:_-]/g, " ")
    .split(/\s+/)
    .filter(Boolean);
  return ((words[0] || "?")[0] + (words[1] ? words[1][0] : "")).toUpperCase();
}
export function avatar(name, index) {
  const a = el("span", { class: "avatar", text: initials(name), "aria-hidden": "true" });
  a.style.background = colorFor(index);
  return a;
}

export function oneLine(text, n) {
  const s = String(text || "")
    .replace(/\s+/g, " ")
    .trim();
  return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

export function typing(target) {
  const t = target && target.tagName;
  return t === "INPUT" || t === "TEXTAREA" || t === "SELECT" || (target && target.isContentEditable);
}
