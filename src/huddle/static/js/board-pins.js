// Pins on the board: sessions a person keeps at the top, whatever the sort (kept by the
// server in $HUDDLE_HOME/pins.json: GET /api/pins; POST /api/sessions/{id}/pin with the
// server's write token, as answers are sent). `p` pins the selected row.
import { el, getJSON } from "./common.js";

const pins = new Set(); // "source:id"
let tokenP = null;

function token() {
  if (!tokenP) tokenP = getJSON("/api/info").then((i) => i.answer_token || "");
  return tokenP;
}

export async function loadPins() {
  const d = await getJSON("/api/pins");
  pins.clear();
  for (const p of d.pins || []) pins.add(p.key);
}

export function isPinned(key) {
  return pins.has(key);
}
export function pinCount() {
  return pins.size;
}

// Pinned rows first (ties fall to the board's own order).
export function pinFirst(a, b) {
  return isPinned(`${b.source}:${b.id}`) - isPinned(`${a.source}:${a.id}`);
}

export async function togglePin(r) {
  const key = `${r.source}:${r.id}`;
  const want = !pins.has(key);
  const t = await token();
  const res = await fetch(`/api/sessions/${encodeURIComponent(r.id)}/pin`, {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json", accept: "application/json", "x-huddle-token": t },
    body: JSON.stringify({ pinned: want }),
  });
  let d = null;
  try {
    d = await res.json();
  } catch {
    d = null;
  }
  if (!res.ok) throw new Error((d && d.error) || `${res.status} ${res.statusText}`);
  pins.clear();
  for (const p of d.pins || []) pins.add(p.key);
  return pins.has(key);
}

const NS = "http://www.w3.org/2000/svg";
function icon() {
  const s = document.createElementNS(NS, "svg");
  s.setAttribute("viewBox", "0 0 16 16");
  s.setAttribute("aria-hidden", "true");
  const p = document.createElementNS(NS, "path");
  p.setAttribute("d", "M5 1h6v1.5l-1 1V7l2.5 2.5V11H8.75v4h-1.5v-4H3.5V9.5L6 7V3.5l-1-1z");
  s.append(p);
  return s;
}

// The row's pin: shown always on a pinned row, on hover or focus on the others.
export function pinButton(r, changed) {
  const on = isPinned(`${r.source}:${r.id}`);
  const b = el(
    "button",
    {
      type: "button",
      class: `pin${on ? " on" : ""}`,
      "aria-pressed": on ? "true" : "false",
      title: on ? "Unpin (p)" : "Pin to the top (p)",
      "aria-label": on ? "Unpin this session" : "Pin this session to the top",
    },
    icon(),
  );
  b.addEventListener("click", async (ev) => {
    ev.stopPropagation();
    try {
      await togglePin(r);
      changed();
    } catch (e) {
      b.title = `huddle: ${e.message}`;
    }
  });
  return b;
}
