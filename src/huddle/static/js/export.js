// An exported session, opened from a file: the data sits in the page (gzip, base64)
// and is inflated here; the conversation nests every sub-agent under the call that
// started it, with tokens and cost per turn; the replay and the tree are the web
// app's own. It reads as the app does (agent text as Markdown, through markdown.js with
// raw HTML off; a slash command as typed) and says every time one way, with its date (an
// export is read on another day). Nothing in the data runs.
import { avatar, el, fmtDuration, fmtTokens, fmtWhen, loadAgents, oneLine, parseISO, SOURCE_LABEL } from "./common.js";
import { markdown, plainWords } from "./markdown.js";
import { label, timeline, waitWords } from "./model.js";
import { mountReplay } from "./replay.js";
import { mountTree } from "./tree.js";

const QUIET = new Set(["usage", "title", "turn_end"]);
const typed = (e) => e.kind === "context" && e.name === "command"; // a slash command the person typed
const EAGER = 3000; // events: a session up to this size is drawn whole at once
const CHUNK = 400; // messages drawn at a time in a bigger one
const usd = (v) => (v === null || v === undefined ? "—" : v > 0 && v < 0.01 ? "<$0.01" : `$${v.toFixed(2)}`);

async function inflate() {
  const node = document.getElementById("huddle-data");
  const bin = atob(node.textContent.trim());
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}

function pre(text, cls) {
  return el("pre", { class: cls || "out", text });
}

// -- the nested conversation ---------------------------------------------------------

function conversation(data) {
  const BIG = data.events.length > EAGER;
  const lead = data.session.lead;
  const agents = new Map(data.agents.map((a, i) => [a.id, { ...a, index: i }]));
  const lanes = new Map();
  const results = new Map();
  for (const e of data.events) {
    if (QUIET.has(e.kind)) continue;
    if (e.kind === "tool_result") {
      results.set(`${e.agent} ${e.id}`, e);
      continue;
    }
    if (!lanes.has(e.agent)) lanes.set(e.agent, []);
    lanes.get(e.agent).push(e);
  }
  const turns = new Map(data.turns.map((t) => [t.start_seq, t]));
  const shown = new Set();
  const usageOf = (id) => {
    const a = agents.get(id);
    return a ? a.usage : null;
  };
  // An agent's words as the app draws them: Markdown (raw HTML shown as text, never run).
  const rich = (text) => el("div", { class: "body rich" }, markdown(text || ""));

  function who(e) {
    if (e.kind === "prompt" || typed(e)) return "You";
    const a = agents.get(e.agent);
    return a ? label(a) : e.agent;
  }

  function head(e) {
    return el(
      "div",
      { class: "who" },
      el("span", { text: who(e) }),
      e.t ? el("span", { class: "t-when", text: (e.estimated ? "~" : "") + fmtWhen(e.t) }) : null,
    );
  }

  function toolPane(e, r) {
    const pane = el("div", { class: "pane" });
    const fill = () => {
      if (pane.childNodes.length) return;
      const parts = [el("h4", { text: "Input" }), pre(e.input !== undefined ? JSON.stringify(e.input, null, 2) : e.detail || "")];
      if (r) {
        parts.push(el("h4", { text: r.ok === false || r.is_error ? "Error" : "Result" }), pre(r.output || "(empty)"));
        for (const img of r.images || []) parts.push(el("img", { src: `data:${img.media_type};base64,${img.data}`, alt: "image from the tool result" }));
        if (r.images_dropped) parts.push(el("p", { class: "faint", text: `${r.images_dropped} image(s) left out of this export` }));
      } else parts.push(el("p", { class: "faint", text: "No result." }));
      pane.replaceChildren(...parts);
    };
    return [pane, fill];
  }

  function status(r) {
    if (!r) return el("span", { class: "st run", text: "no result" });
    if (r.ok === false) return el("span", { class: "st bad", text: "failed" });
    const size = r.output_trimmed ? r.output_trimmed.bytes : r.size || 0;
    return el("span", { class: "st ok", text: `done · ${fmtTokens(size)}B${r.output_trimmed ? " (trimmed)" : ""}` });
  }

  function tool(e) {
    const r = results.get(`${e.agent} ${e.id}`);
    const [pane, fill] = toolPane(e, r);
    const d = el(
      "details",
      { class: "tool" },
      el("summary", {}, el("span", { class: "what", text: e.doing || e.name, title: e.detail || "" }), status(r)),
      pane,
    );
    d.addEventListener("toggle", () => {
      if (d.open) fill();
    });
    return el("div", { class: "msg agent wide", dataset: { seq: e.seq } }, d);
  }

  function sub(e, depth) {
    const a = agents.get(e.target);
    shown.add(e.target);
    const u = usageOf(e.target);
    const name = a ? label(a) : e.name || "a sub-agent";
    const r = results.get(`${e.agent} ${e.id}`);
    const body = el(
      "div",
      { class: "sub-body" },
      el("div", { class: "msg delegation" }, el("div", { class: "who", text: `Asked by ${who(e)}` }), rich(e.text || e.detail)),
    );
    let filled = false;
    const fill = () => {
      if (filled) return;
      filled = true;
      body.append(lane(e.target, depth + 1));
      if (r && r.output)
        body.append(el("div", { class: "msg delegation" }, el("div", { class: "who", text: "Result returned to the caller" }), rich(r.output)));
    };
    const box = el(
      "details",
      { class: "sub", open: !BIG && depth < 1, dataset: { agent: e.target } },
      el(
        "summary",
        {},
        avatar(name, a ? a.index : 0),
        el("span", { class: "nm", text: `${name}` }),
        a && a.type ? el("span", { class: "badge", text: a.type }) : null,
        el("span", { class: "faint", text: `${fmtTokens(u ? (u.input || 0) + (u.output || 0) + (u.cache_read || 0) + (u.cache_write || 0) : 0)} tokens` }),
      ),
      body,
    );
    if (BIG)
      box.addEventListener("toggle", () => {
        if (box.open) fill();
      }); // a big session draws a sub-agent when it is opened
    else fill();
    return el("div", { class: "msg wide", dataset: { seq: e.seq } }, box);
  }

  function message(e, depth) {
    switch (e.kind) {
      case "prompt":
        return el(
          "div",
          { class: "msg human", dataset: { seq: e.seq } },
          head(e),
          el("div", { class: "body", text: e.text || "" }),
          ...(e.images || []).map((img) => el("img", { src: `data:${img.media_type};base64,${img.data}`, alt: "image in the prompt" })),
        );
      case "say":
        return el("div", { class: "msg agent", dataset: { seq: e.seq } }, head(e), rich(e.text));
      case "think":
        return el(
          "div",
          { class: "msg agent wide", dataset: { seq: e.seq } },
          el(
            "details",
            { class: "think" },
            el("summary", { text: `Thinking · ${oneLine(plainWords(e.text), 90)}` }),
            el("div", { class: "pane rich" }, markdown(e.text || "")),
          ),
        );
      case "tool_call":
        return tool(e);
      case "order":
        return e.agent !== e.target && depth < 12 ? sub(e, depth) : el("div", { class: "msg delegation", dataset: { seq: e.seq } }, head(e), rich(e.text));
      case "report":
        return el(
          "div",
          { class: "msg delegation", dataset: { seq: e.seq } },
          head(e),
          el("div", { class: "who", text: `Report from ${label(agents.get(e.target) || { parent: 1, name: "a sub-agent" })}` }),
          rich(e.text),
        );
      case "context":
        if (typed(e)) return el("div", { class: "msg human command", dataset: { seq: e.seq } }, head(e), el("div", { class: "body", text: e.text || "" }));
        return el(
          "div",
          { class: "msg context", dataset: { seq: e.seq } },
          el("details", { class: "ctx" }, el("summary", { text: `context · ${e.name || "harness"}` }), el("div", { class: "pane", text: e.text || "" })),
        );
      case "waiting":
        return el(
          "div",
          { class: "msg system k-waiting" },
          el("div", { class: "body", text: waitWords(e.wait, { detail: e.detail || e.name }).replace(/^w/, "W") }),
        );
      case "resolved":
        return el("div", { class: "msg system" }, el("div", { class: "body", text: "Answered" }));
      case "error":
        return el("div", { class: "msg system k-error" }, el("div", { class: "body", text: e.text || "error" }));
      case "interrupt":
        return el("div", { class: "msg system k-interrupt" }, el("div", { class: "body", text: "Interrupted" }));
      case "compaction":
        return el("div", { class: "msg system k-compaction" }, el("div", { class: "body", text: "Conversation compacted" }));
      default:
        return null;
    }
  }

  function turnHead(t) {
    return el(
      "div",
      { class: "turn-head", dataset: { turn: t.n } },
      el("span", { class: "tn", text: `Turn ${t.n}` }),
      t.t ? el("span", { class: "t-when", text: fmtWhen(parseISO(t.t)) }) : null,
      el("span", { text: `${fmtTokens(t.tokens)} tokens` }),
      el("span", { text: usd(t.cost_usd) + (t.unpriced.length ? "+?" : ""), title: t.unpriced.length ? `unpriced: ${t.unpriced.join(", ")}` : "" }),
      el("span", { class: "faint", text: `${t.responses} model responses` }),
    );
  }

  // A lane's messages; a big session draws them CHUNK at a time as the reader scrolls on.
  function lane(agent, depth) {
    const box = el("div", { class: "lane" });
    shown.add(agent);
    const items = lanes.get(agent) || [];
    let i = 0;
    const more = () => {
      const end = BIG ? Math.min(items.length, i + CHUNK) : items.length;
      const frag = document.createDocumentFragment();
      for (; i < end; i++) {
        const e = items[i];
        if (depth === 0 && turns.has(e.seq)) frag.append(turnHead(turns.get(e.seq)));
        const n = message(e, depth);
        if (n) frag.append(n);
      }
      box.append(frag);
      if (i < items.length) {
        const mark = el("div", { class: "more-msgs", text: `${(items.length - i).toLocaleString()} more messages…` });
        box.append(mark);
        const seen = new IntersectionObserver(
          (entries) => {
            if (!entries.some((x) => x.isIntersecting)) return;
            seen.disconnect();
            mark.remove();
            more();
          },
          { rootMargin: "1200px" },
        );
        seen.observe(mark);
      }
    };
    more();
    return box;
  }

  const main = lane(lead, 0);
  if (data.turns.length && !turns.has((lanes.get(lead) || [{}])[0].seq)) main.prepend(turnHead(data.turns[0]));
  const ordered = new Set(data.events.filter((e) => e.kind === "order" && e.agent !== e.target).map((e) => e.target));
  const rest = [...agents.keys()].filter((id) => id !== lead && !ordered.has(id) && lanes.has(id));
  if (rest.length) {
    main.append(el("h3", { class: "other-agents", text: "Other agents" }));
    for (const id of rest) {
      const a = agents.get(id);
      main.append(
        el(
          "details",
          { class: "sub", open: true, dataset: { agent: id } },
          el("summary", {}, avatar(label(a), a.index), el("span", { class: "nm", text: label(a) })),
          lane(id, 1),
        ),
      );
    }
  }
  return el("div", { class: "chat export-chat" }, main);
}

// -- the page ----------------------------------------------------------------------------

function header(data) {
  const s = data.session;
  const r = data.redaction;
  const start = parseISO(s.started_at),
    end = parseISO(s.updated_at);
  return [
    el(
      "header",
      { class: "top" },
      el("span", { class: "brand" }, el("span", { class: "logo", "aria-hidden": "true" }), "huddle"),
      el("span", { class: "crumb", text: "/" }),
      el("div", { class: "head-title" }, el("h1", { id: "s-title", text: s.title || s.id, title: s.title || s.id })),
      el("div", { class: "spacer" }),
      el(
        "div",
        { class: "head-meta" },
        el("span", { text: SOURCE_LABEL[s.source] || s.source }),
        s.project ? el("span", { text: s.project, title: s.cwd || "" }) : null,
        start ? el("span", { class: "s-started", text: fmtWhen(start) }) : null,
        start ? el("span", { text: fmtDuration((end || start) - start) }) : null,
        el("span", { text: `${fmtTokens(s.tokens)} tokens` }),
        el("span", { text: usd(s.cost && s.cost.usd) }),
      ),
    ),
    el(
      "p",
      { class: `export-note${r.enabled ? "" : " warn"}` },
      "Exported ",
      el("span", { class: "t-when", text: fmtWhen(parseISO(data.exported_at)) }),
      r.enabled
        ? ` by huddle ${data.huddle}. ${r.replaced} secret${r.replaced === 1 ? "" : "s"} replaced before export.`
        : ` by huddle ${data.huddle}, without redaction.`,
      data.trimmed.pieces ? ` ${data.trimmed.pieces} heavy tool output${data.trimmed.pieces === 1 ? "" : "s"} trimmed (full sizes stated).` : "",
      data.images.dropped ? ` ${data.images.dropped} image${data.images.dropped === 1 ? "" : "s"} left out.` : "",
    ),
  ];
}

async function main() {
  await loadAgents();
  const app = document.getElementById("app");
  let data;
  try {
    data = await inflate();
    performance.mark("huddle:inflated");
  } catch (e) {
    app.replaceChildren(el("p", { class: "error-box", text: `This export could not be opened: ${e.message}` }));
    return;
  }
  const detail = { ...data.session, tree: data.agents, lead: data.session.lead, time_estimated: data.session.time_estimated };
  const S = { id: data.session.id, detail, events: data.events, timeline: timeline(data.events), listeners: new Set() };
  const tabs = {
    conversation: el("section", { class: "tab", id: "tab-conversation" }),
    replay: el("section", { class: "tab", id: "tab-replay", hidden: true }),
    tree: el("section", { class: "tab", id: "tab-tree", hidden: true }),
  };
  for (const [k, t] of Object.entries(tabs)) {
    t.setAttribute("role", "tabpanel");
    t.setAttribute("aria-labelledby", `tabbtn-${k}`);
  }
  const nav = el(
    "nav",
    { class: "tabs" },
    el(
      "div",
      { class: "tablist", role: "tablist", "aria-label": "Views of this session" },
      ...Object.keys(tabs).map((k) =>
        el("a", { role: "tab", id: `tabbtn-${k}`, href: `#${k}`, "aria-controls": `tab-${k}`, dataset: { tab: k }, text: k[0].toUpperCase() + k.slice(1) }),
      ),
    ),
  );
  document.body.replaceChildren(...header(data), nav, el("main", {}, ...Object.values(tabs)));
  tabs.conversation.append(conversation(data));
  performance.mark("huddle:built");
  const mounted = {};
  const mounts = { replay: mountReplay, tree: mountTree };
  const show = () => {
    const name = tabs[location.hash.slice(1)] ? location.hash.slice(1) : "conversation";
    for (const [k, t] of Object.entries(tabs)) t.hidden = k !== name;
    for (const a of nav.querySelectorAll("[role=tab]")) {
      const on = a.dataset.tab === name;
      a.classList.toggle("on", on);
      a.setAttribute("aria-selected", on ? "true" : "false");
    }
    if (mounts[name]) {
      if (!mounted[name]) mounted[name] = mounts[name](tabs[name], S);
      mounted[name].show();
    }
  };
  window.addEventListener("hashchange", show);
  show();
  document.title = `${data.session.title || data.session.id} · huddle export`;
  document.body.dataset.ready = "1";
}

main();
