// The search page: every session's messages, newest first; a result opens the
// conversation at that message with the words marked.
import { el, getJSON, loadAgents, SOURCE_LABEL, typing } from "./common.js";
import { marked } from "./highlight.js";

const $ = (id) => document.getElementById(id);
const DEFAULT_KINDS = "prompt,say,think";

export function sessionLink(r, q) {
  const p = new URLSearchParams({ agent: r.agent, ref: r.ref, q });
  return `/session/${encodeURIComponent(r.session)}#conversation?${p}`;
}

function kinds() {
  const on = [...document.querySelectorAll('input[name="kind"]:checked')].map((i) => i.value).join(",");
  return on === DEFAULT_KINDS ? "" : on;
}

function params() {
  const p = new URLSearchParams();
  const q = $("q").value.trim();
  if (q) p.set("q", q);
  const k = kinds();
  if (k) p.set("kind", k);
  if ($("source").value) p.set("source", $("source").value);
  if ($("project").value.trim()) p.set("project", $("project").value.trim());
  if ($("order").value) p.set("rank", "1");
  const session = new URLSearchParams(location.search).get("session");
  if (session) p.set("session", session);
  return p;
}

function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return d.toLocaleString([], { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", hour12: false });
}

const plural = (n, what) => `${n.toLocaleString()} ${what}${n === 1 ? "" : "s"}`;
const byStem = (r) => (r.match === "stem" ? el("span", { class: "r-stem", text: "similar word", title: "Found by the word's stem (tests finds test)" }) : null);

// One hit: the message, where it was said.
function hitItem(r, q) {
  return el(
    "li",
    { class: "result" },
    el(
      "a",
      { href: sessionLink(r, q), class: "r-link" },
      el(
        "div",
        { class: "r-head" },
        el("span", { class: "r-title", text: r.title || r.session }),
        el("span", { class: "r-meta", text: [SOURCE_LABEL[r.source] || r.source, r.project, r.agent_name, r.kind].filter(Boolean).join(" · ") }),
        byStem(r),
        el("span", { class: "r-time", text: when(r.t) }),
      ),
      el("div", { class: `r-snip k-${r.group}` }, marked(r.snippet.text, r.snippet.marks)),
    ),
  );
}

// One session: its hits counted, its newest hit shown, a link to every hit of it.
function sessionItem(g, q) {
  const all = new URLSearchParams(params());
  all.set("session", g.session);
  const r = g.hit;
  const count = plural(g.hits, "hit") + (g.stem ? ` (${g.stem} by a similar word)` : "");
  return el(
    "li",
    { class: "result r-group" },
    el(
      "a",
      { href: sessionLink(r, q), class: "r-link" },
      el(
        "div",
        { class: "r-head" },
        el("span", { class: "r-title", text: g.title || g.session }),
        el("span", { class: "r-meta", text: [SOURCE_LABEL[g.source] || g.source, g.project].filter(Boolean).join(" · ") }),
        el("span", { class: "r-time", text: when(g.last) }),
      ),
      el("div", { class: `r-snip k-${r.group}` }, marked(r.snippet.text, r.snippet.marks)),
    ),
    el(
      "div",
      { class: "r-foot" },
      g.hits > 1 ? el("a", { href: `/search?${all}`, class: "r-hits", text: `${count}: see them all` }) : el("span", { class: "r-hits", text: count }),
    ),
  );
}

function render(d, q) {
  const state = $("state");
  const bits = [];
  if (d.index && d.index.building) {
    const p = d.index.progress || {};
    const pct = p.total_bytes ? ` (${Math.round((100 * p.done_bytes) / p.total_bytes)}%)` : "";
    bits.push(`The index is being built${pct}: results so far.`);
  }
  for (const n of d.notes || []) bits.push(n);
  const one = !!d.filters.session; // one session asked for: its hits, one by one
  const items = one ? d.results : d.sessions;
  if (!items.length && q) bits.push("No messages found.");
  else if (one)
    bits.push(`${plural(d.results.length, "result")}${d.more ? "+" : ""} in this session, ${d.order === "rank" ? "most relevant" : "newest"} first`);
  else
    bits.push(
      `${plural(d.sessions.length, "session")}${d.sessions.length >= Number(params().get("limit") || 20) ? "+" : ""}, ${d.order === "rank" ? "most relevant" : "newest"} first; words as typed first, then similar words`,
    );
  state.textContent = bits.join(" ");
  if (one) {
    const every = params();
    every.delete("session");
    state.append(" ", el("a", { href: `/search?${every}`, text: "Back to every session" }));
  }
  $("results").replaceChildren(...(one ? d.results.map((r) => hitItem(r, q)) : d.sessions.map((g) => sessionItem(g, q))));
  $("more").hidden = !(one ? d.more : d.sessions.length >= 20);
}

let seq = 0;
async function run(push) {
  const p = params();
  const q = p.get("q") || "";
  const url = `/search${p.toString() ? `?${p}` : ""}`;
  if (push) history.pushState(null, "", url);
  else history.replaceState(null, "", url);
  document.title = q ? `${q} · huddle search` : "huddle · search";
  if (!q) {
    $("results").replaceChildren();
    $("state").textContent = "";
    $("more").hidden = true;
    return;
  }
  const mine = ++seq;
  $("state").textContent = "Searching…";
  try {
    const d = await getJSON(`/api/search?${p}`);
    if (mine === seq) render(d, q);
  } catch (e) {
    if (mine === seq) $("state").textContent = `huddle: ${e.message}`;
  }
}

function fromURL() {
  const p = new URLSearchParams(location.search);
  $("q").value = p.get("q") || "";
  const k = (p.get("kind") || DEFAULT_KINDS).split(",");
  for (const i of document.querySelectorAll('input[name="kind"]')) i.checked = k.includes(i.value);
  $("source").value = p.get("source") || "";
  $("project").value = p.get("project") || "";
  $("order").value = p.get("rank") ? "1" : "";
}

async function main() {
  await loadAgents();
  for (const [k, label] of Object.entries(SOURCE_LABEL)) $("source").append(el("option", { value: k, text: label }));
  fromURL();
  $("go").addEventListener("click", () => run(true));
  $("q").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") run(true);
  });
  for (const i of document.querySelectorAll(".search-opts input, .search-opts select")) i.addEventListener("change", () => run(false));
  window.addEventListener("popstate", () => {
    fromURL();
    run(false);
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "/" && !typing(ev.target)) {
      ev.preventDefault();
      $("q").focus();
      $("q").select();
    } else if (ev.key === "Escape" && !typing(ev.target)) location.href = "/";
  });
  $("q").focus();
  await run(false);
}

main();
