// Conversation: one agent's chat flow. Latest first (at the bottom), scroll up for
// history (the view keeps its place), new messages appended live, a button to
// jump to them when scrolled up. Heavy pieces are fetched only when opened.
import { api, avatar, el, fmtClock, fmtTokens, oneLine } from "./common.js";
import { highlight, queryWords } from "./highlight.js";
import { markdown, plainWords } from "./markdown.js";
import { label, waitWords } from "./model.js";
import { translateBody } from "./translate.js";

const PAGE = 50;
const CLAMP = 1200; // characters shown before "Show more"

export function mountConversation(box, S) {
  const list = el("ul", { class: "agents-list", "aria-label": "Agents" });
  const chat = el("div", { class: "chat", tabindex: "0", "aria-live": "polite" });
  const newBtn = el("button", { class: "btn primary new-msgs", type: "button", hidden: true, text: "New messages ↓" });
  // Harness rows (reminders, notes, wrappers the agent program adds): one toggle for all, remembered.
  const harness = el("input", { type: "checkbox", id: "show-harness" });
  const harnessN = el("span", { class: "n" });
  harness.checked = localStorage.getItem("huddle.harness") === "1";
  const harnessBar = el("label", { class: "harness-toggle", for: "show-harness" }, harness, " harness messages ", harnessN);
  const showHarness = () => {
    chat.classList.toggle("show-harness", harness.checked);
    localStorage.setItem("huddle.harness", harness.checked ? "1" : "0");
  };
  harness.addEventListener("change", showHarness);
  showHarness();
  box.replaceChildren(el("div", { class: "convo" }, el("div", {}, list), el("div", { class: "chat-wrap" }, harnessBar, chat, newBtn)));

  let agent = null; // selected agent id
  let first = null,
    last = null,
    hasMore = false,
    loading = false,
    epoch = null;
  let hasAfter = false; // opened in the middle (from a search): later messages load on scrolling down
  let terms = []; // words from the search that opened it, marked wherever text appears
  const calls = new Map(); // call id -> its <details>, to attach results that come later
  let names = new Map();

  const nearBottom = () => chat.scrollHeight - chat.scrollTop - chat.clientHeight < 60;
  const toBottom = () => {
    chat.scrollTop = chat.scrollHeight;
    newBtn.hidden = true;
  };
  newBtn.addEventListener("click", toBottom);

  async function agents() {
    const t = await api.transcripts(S.id);
    names = new Map(t.agents.map((a) => [a.id, a]));
    if (!agent || !names.has(agent)) agent = t.lead;
    list.replaceChildren(
      ...t.agents
        .filter((a) => !a.quiet)
        .map((a, i) =>
          el(
            "li",
            {},
            el(
              "button",
              { type: "button", class: a.id === agent ? "on" : "", dataset: { agent: a.id }, onclick: () => select(a.id) },
              avatar(label(a), i),
              el("span", { class: "nm", text: label(a), title: a.name }),
              el("span", { class: "n", text: a.messages }),
            ),
          ),
        ),
    );
  }

  function clear(id) {
    agent = id;
    for (const b of list.querySelectorAll("button")) b.classList.toggle("on", b.dataset.agent === id);
    calls.clear();
    chat.replaceChildren();
    first = last = null;
    hasMore = false;
    hasAfter = false;
  }

  async function select(id) {
    clear(id);
    terms = [];
    const page = await api.transcript(S.id, { agent: id, limit: PAGE });
    epoch = page.epoch;
    take(page, "end");
    toBottom();
  }

  // Open at one message (a search result): the page around it, the message in view, its words marked.
  async function focusOn(f) {
    const id = f.agent && names.has(f.agent) ? f.agent : agent;
    let page;
    try {
      page = await api.transcript(S.id, { agent: id, limit: PAGE, around: f.ref });
    } catch {
      await select(id);
      return;
    }
    clear(id);
    terms = queryWords(f.q);
    epoch = page.epoch;
    take(page, "end");
    hasAfter = !!page.has_after;
    const node = chat.querySelector(`[data-line="${page.focus_line}"]`);
    if (!node) return;
    node.classList.add("focus");
    for (const d of node.querySelectorAll("details")) d.open = true;
    highlight(node, terms);
    node.scrollIntoView({ block: "center" });
  }

  function take(page, where) {
    const nodes = page.messages.map(render).filter(Boolean);
    if (where === "start") {
      const h = chat.scrollHeight,
        top = chat.scrollTop;
      const marker = chat.querySelector(".history");
      (marker ? marker.after.bind(marker) : chat.prepend.bind(chat))(...nodes);
      chat.scrollTop = top + (chat.scrollHeight - h); // keep the reader's place
      if (page.first_line !== null) first = page.first_line;
      hasMore = page.has_more;
    } else {
      chat.append(...nodes);
      if (first === null && page.first_line !== null) {
        first = page.first_line;
        hasMore = page.has_more;
      }
    }
    if (page.last_line !== null && (last === null || page.last_line > last)) last = page.last_line;
    historyMarker();
    const n = chat.querySelectorAll(".msg.context").length;
    harnessN.textContent = `(${n})`;
    harnessBar.hidden = n === 0;
  }

  function historyMarker() {
    let m = chat.querySelector(".history");
    if (!m) {
      m = el("div", { class: "history" });
      chat.prepend(m);
    }
    m.textContent = hasMore ? "Scroll up for earlier messages" : first === null ? "No messages yet." : "Start of the conversation";
  }

  async function older() {
    if (loading || !hasMore || first === null) return;
    loading = true;
    try {
      take(await api.transcript(S.id, { agent, limit: PAGE, before: first }), "start");
    } finally {
      loading = false;
    }
  }

  let pending = false;
  async function newer() {
    if (loading) {
      pending = true;
      return;
    }
    loading = true;
    try {
      const history = hasAfter; // reading on from the middle, not new messages arriving
      const stick = nearBottom() && !history;
      const paging = last !== null;
      const page = await api.transcript(S.id, paging ? { agent, limit: 500, after: last } : { agent, limit: PAGE });
      if (page.epoch !== epoch) {
        loading = false;
        await select(agent);
        return;
      }
      const before = chat.children.length;
      take(page, "end");
      if (paging) hasAfter = page.has_more;
      if (chat.children.length > before && !history) {
        if (stick) toBottom();
        else newBtn.hidden = false;
      }
    } finally {
      loading = false;
      if (pending) {
        pending = false;
        newer();
      }
    }
  }

  chat.addEventListener("scroll", () => {
    if (chat.scrollTop < 150) older();
    if (nearBottom()) {
      newBtn.hidden = true;
      if (hasAfter) newer();
    }
  });

  // -- one message -----------------------------------------------------------------
  const typed = (m) => m.kind === "context" && m.name === "command"; // a slash command the person typed

  function who(m) {
    if (m.kind === "prompt" || typed(m)) return "You";
    const a = names.get(m.agent);
    return a ? label(a) : m.agent;
  }

  // `md`: the agent's words, rendered as Markdown (safely: markdown.js); a person's, as typed.
  function textBlock(m, cls, md = false) {
    const body = el("div", { class: (cls || "body") + (md ? " rich" : "") });
    const full = m.text || "";
    const cut = full.length > CLAMP;
    const show = (text) => body.replaceChildren(md ? markdown(text) : text);
    show(cut ? full.slice(0, CLAMP) + "…" : full);
    translateBody(m, body, show); // (opt-in: nothing asked while translation is off)
    if (cut || m.truncated) {
      const more = el("button", { class: "more", type: "button", text: "Show more" });
      more.addEventListener("click", async () => {
        let text = full;
        if (m.truncated && m.ref) {
          try {
            text = (await api.content(S.id, m.ref)).text || full;
          } catch {
            /* keep what we have */
          }
        }
        show(text);
        highlight(body, terms);
      });
      return el("div", {}, body, more);
    }
    return body;
  }

  function header(m) {
    return el(
      "div",
      { class: "who" },
      el("span", { text: who(m) }),
      m.t ? el("span", { text: (m.estimated ? "~" : "") + fmtClock(m.t) }) : null,
      m.copied ? el("span", { text: "copied from the earlier session" }) : null,
    );
  }

  // The kind of wait ("approval", "answer") when this call is the one its agent waits on
  // you for (the server says which), else null.
  function waitOf(m) {
    const a = m && m.id && S.detail && (S.detail.tree || []).find((x) => x.id === m.agent);
    return a && a.state === "needs_you" && a.waiting_call === m.id ? a.waiting_kind || "approval" : null;
  }

  function callWords(m) {
    if (m.kind === "order") return `asked ${label(names.get(m.target) || { parent: 1, name: m.name })}: ${m.detail || oneLine(m.text, 80)}`;
    const wait = !m.result && waitOf(m);
    return wait ? waitWords(wait, m) : m.doing || m.name;
  }

  // A call with no result yet: running, or the one its agent waits on you for.
  function resultStatus(r, m) {
    if (!r) {
      if (waitOf(m)) return el("span", { class: "st wait", text: "needs you" });
      return el("span", { class: "st run", text: "running…" });
    }
    if (r.ok === false) return el("span", { class: "st bad", text: "failed" });
    return el("span", { class: "st ok", text: r.detail === "background" ? "in background" : `done · ${fmtTokens(r.size || 0)}B` });
  }

  async function fillTool(pane, m) {
    pane.replaceChildren(el("p", { class: "faint", text: "Loading…" }));
    const parts = [];
    try {
      if (m.ref) {
        const c = await api.content(S.id, m.ref);
        parts.push(el("h4", { text: "Input" }), el("pre", { class: "out", text: c.input !== undefined ? JSON.stringify(c.input, null, 2) : m.detail || "" }));
      }
      const r = m.result;
      if (r && r.ref) {
        const c = await api.content(S.id, r.ref);
        parts.push(el("h4", { text: r.ok === false ? "Error" : "Result" }), el("pre", { class: "out", text: c.text || "(empty)" }));
        for (const img of c.images || []) parts.push(el("img", { src: `data:${img.media_type};base64,${img.data}`, alt: "image from the tool result" }));
      } else if (!r) parts.push(el("p", { class: "faint", text: "No result yet." }));
    } catch (e) {
      parts.push(el("p", { class: "faint", text: `Could not load: ${e.message}` }));
    }
    pane.replaceChildren(...parts);
    highlight(pane, terms);
  }

  function restate(d) {
    d.querySelector(".st").replaceWith(resultStatus(d._m.result, d._m));
    d.querySelector(".what").textContent = callWords(d._m);
    d.classList.toggle("waits", !!(!d._m.result && waitOf(d._m)));
  }

  function toolNode(m) {
    const pane = el("div", { class: "pane" });
    const st = resultStatus(m.result, m);
    const d = el("details", { class: "tool" }, el("summary", {}, el("span", { class: "what", text: callWords(m), title: m.detail || "" }), st), pane);
    d.classList.toggle("waits", !!(!m.result && waitOf(m)));
    d._m = m;
    d.addEventListener("toggle", () => {
      if (d.open) fillTool(pane, d._m);
    });
    if (m.id) calls.set(m.id, d);
    return d;
  }

  function render(m) {
    switch (m.kind) {
      case "prompt":
        return el("div", { class: "msg human", dataset: { line: m.line } }, header(m), textBlock(m));
      case "say":
        return el("div", { class: `msg agent${m.copied ? " copied" : ""}`, dataset: { line: m.line } }, header(m), textBlock(m, null, true));
      case "think":
        return el(
          "div",
          { class: "msg agent wide", dataset: { line: m.line } },
          el(
            "details",
            { class: "think" },
            el("summary", { text: `Thinking · ${oneLine(plainWords(m.text), 90)}` }),
            el("div", { class: "pane rich" }, markdown(m.text)),
          ),
        );
      case "tool_call":
        return el("div", { class: "msg agent wide", dataset: { line: m.line } }, toolNode(m));
      case "tool_result": {
        const d = calls.get(m.id);
        // Shown on its call (the server attaches it to calls it sends); never on its own.
        if (d) {
          d._m = { ...d._m, result: m };
          restate(d);
        }
        return null;
      }
      case "order":
        if (m.agent === agent) return el("div", { class: "msg delegation wide", dataset: { line: m.line } }, header(m), toolNode(m));
        return el(
          "div",
          { class: "msg delegation", dataset: { line: m.line } },
          header(m),
          el("div", { class: "who", text: `Order from ${who(m)}` }),
          textBlock(m, null, true),
        );
      case "report":
        return el(
          "div",
          { class: "msg delegation", dataset: { line: m.line } },
          header(m),
          el("div", { class: "who", text: `Report from ${label(names.get(m.target) || { parent: 1, name: "a sub-agent" })}` }),
          textBlock(m, null, true),
        );
      case "context": {
        if (typed(m)) return el("div", { class: "msg human command", dataset: { line: m.line } }, header(m), el("div", { class: "body", text: m.text || "" }));
        const pane = el("div", { class: "pane", text: m.text || "" });
        const d = el("details", { class: "ctx" }, el("summary", { text: `context · ${m.name || "harness"}` }), pane);
        if (m.ref)
          d.addEventListener("toggle", async () => {
            if (!d.open || d._loaded) return;
            d._loaded = true;
            try {
              const c = await api.content(S.id, m.ref);
              pane.textContent = c.text || m.text || "";
            } catch {
              /* keep the short text */
            }
          });
        return el("div", { class: "msg context", dataset: { line: m.line } }, d);
      }
      case "waiting":
        return el(
          "div",
          { class: "msg system k-waiting", dataset: { line: m.line } },
          el("div", { class: "body", text: waitWords(m.wait, { detail: m.detail || m.name }).replace(/^w/, "W") }),
        );
      case "resolved":
        return el("div", { class: "msg system", dataset: { line: m.line } }, el("div", { class: "body", text: "Answered" }));
      case "error":
        return el("div", { class: "msg system k-error", dataset: { line: m.line } }, el("div", { class: "body", text: m.text || "error" }));
      case "interrupt":
        return el("div", { class: "msg system k-interrupt", dataset: { line: m.line } }, el("div", { class: "body", text: "Interrupted" }));
      case "compaction":
        return el(
          "div",
          { class: "msg system k-compaction", dataset: { line: m.line } },
          el("div", { class: "body", text: `Conversation compacted ${m.detail ? `(${m.detail})` : ""}` }),
        );
      default:
        return el("div", { class: "msg system", dataset: { line: m.line } }, el("div", { class: "body", text: m.text || m.kind }));
    }
  }

  // New events for this agent (or an order to it) -> fetch the new messages.
  S.listeners.add((fresh, reset) => {
    if (!agent) return;
    if (reset) {
      agents().then(() => select(agent));
      return;
    }
    if (fresh.some((e) => e.agent === agent || e.target === agent)) newer();
    if (fresh.length && !countsTimer)
      countsTimer = setTimeout(() => {
        countsTimer = null;
        agents().catch(() => {});
      }, 500);
  });
  let countsTimer = null; // the message counts beside each agent follow, a little behind

  let started = false;
  return {
    update() {
      // the session's states moved: the call a person is asked about says so
      for (const d of calls.values()) if (!d._m.result) restate(d);
    },
    async show() {
      if (started) {
        if (S.focus) await focusOn(S.focus);
        return;
      }
      started = true;
      await agents();
      if (S.focus) await focusOn(S.focus);
      else await select(agent);
    },
    stop() {},
  };
}
