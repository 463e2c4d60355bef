// Events -> who is in the call and what each agent does, as of a time.
// The server's states are the truth: for "now" (the session's tree) and for any point
// of the timeline (an event that moved its agent's state carries it as `state`, by the
// server's one rule table). This replays the timeline for the call view (who joined,
// who speaks, what runs) and for the replay at any point; it never decides a state.
import { fmtDuration, oneLine } from "./common.js";
import { shownText } from "./translate.js";

export const LEAVE_AFTER = 45; // seconds a sub-agent stays in the call after it reported
export const LONG_CALL = 30; // a command running longer than this is called out
export const LONG_SILENCE = 60; // a working agent quiet longer than this is called out
export const SPEAKING = 20; // the latest words count as "speaking" for this long

// Give every event a time `tt` (an event without one takes the last known time
// before it in its agent's file order) and sort by it.
export function timeline(events) {
  const last = {};
  let first = null;
  for (const e of events) {
    if (e.t !== undefined && e.t !== null) {
      e.tt = e.t;
      last[e.agent] = e.t;
      if (first === null || e.t < first) first = e.t;
    } else e.tt = last[e.agent] ?? null;
  }
  for (const e of events) if (e.tt === null) e.tt = first ?? 0;
  return [...events].sort((a, b) => a.tt - b.tt || a.seq - b.seq);
}

function blankUsage() {
  return { input: 0, output: 0, cache_read: 0, cache_write: 0 };
}
function addUsage(to, u) {
  if (!u) return;
  for (const k of Object.keys(to)) to[k] += u[k] || 0;
}

// The state of every agent after the events up to `at` (null: all of them).
export function modelAt(detail, tl, at) {
  const agents = new Map();
  const tree = (detail && detail.tree) || [];
  tree.forEach((a, i) => agents.set(a.id, blank(a, i)));
  const usage = blankUsage();
  let current = null;
  let index = -1;
  for (let i = 0; i < tl.length; i++) {
    const e = tl[i];
    if (at !== null && at !== undefined && e.tt > at) break;
    current = e;
    index = i;
    let a = agents.get(e.agent);
    if (!a) {
      a = blank({ id: e.agent, name: e.agent, parent: detail && detail.lead, depth: 1 }, agents.size);
      agents.set(e.agent, a);
    }
    if (a.joined === null) a.joined = e.tt;
    if (e.kind !== "usage" && e.kind !== "title" && e.kind !== "context") a.lastT = e.tt;
    a.events += 1;
    if (e.state) a.state = e.state;
    switch (e.kind) {
      case "usage":
        addUsage(a.usage, e.usage);
        addUsage(usage, e.usage);
        break;
      case "say":
        a.say = { text: e.text, t: e.tt, seq: e.seq };
        break;
      case "tool_call":
        if (e.id) a.open.set(e.id, e);
        break;
      case "tool_result":
        a.open.delete(e.id);
        break;
      case "order":
        if (e.agent !== e.target) {
          if (e.id) a.open.set(e.id, e);
          const sub = agents.get(e.target);
          if (sub && sub.joined === null) sub.joined = e.tt;
          if (sub && e.target_state) sub.state = e.target_state; // the server's word: it starts working
        }
        break;
      case "report": {
        a.open.delete(e.id);
        const sub = agents.get(e.target);
        if (sub && sub !== a) {
          sub.left = e.tt;
          sub.report = e.text;
          sub.open.clear();
          if (e.target_state) sub.state = e.target_state;
        }
        break;
      }
      case "turn_end":
      case "interrupt":
        a.open.clear();
        a.waits.clear();
        break;
      case "waiting":
        a.waits.set(e.id || String(e.seq), e);
        break;
      case "resolved":
        a.waits.delete(e.id || "");
        break;
    }
  }
  return { agents: [...agents.values()], usage, current, index, at: at ?? (current ? current.tt : null) };
}

function blank(info, index) {
  return {
    info,
    index,
    joined: info.parent ? null : -Infinity,
    left: null,
    say: null,
    lastT: null,
    open: new Map(),
    waits: new Map(),
    usage: blankUsage(),
    report: null,
    events: 0,
    state: "idle",
  };
}

// What an agent is doing right now, in plain words, and since when.
export function nowDoing(a, byId) {
  const waits = [...a.waits.values()];
  if (waits.length) {
    const w = waits[waits.length - 1];
    return { text: `waiting for you: ${w.detail || w.name || "a question"}`, since: w.tt, needs: true };
  }
  const open = [...a.open.values()];
  if (!open.length) return null;
  const c = open[open.length - 1];
  if (c.kind === "order") {
    const sub = byId && byId.get(c.target);
    return { text: `waiting on ${sub ? label(sub.info) : c.detail || "a sub-agent"}`, since: c.tt };
  }
  return { text: c.doing || c.name, since: c.tt };
}

// The calls the server says an agent waits on you for: call id -> "approval" or "answer"
// (a permission prompt or a question), from the session's tree as the server sent it.
export function waitingCalls(detail) {
  const out = new Map();
  for (const a of (detail && detail.tree) || []) if (a.state === "needs_you" && a.waiting_call) out.set(a.waiting_call, a.waiting_kind || "approval");
  return out;
}

// A call that waits on the person, in their words: "waiting for your approval: npm test"
// (what is asked: the command, the question, or what the call does).
export function waitWords(kind, e) {
  const what = String(e.doing || e.detail || e.name || "").replace(/^(running|asking:)\s+/, "");
  return `waiting for your ${kind === "answer" ? "answer" : "approval"}: ${what}`;
}

export function label(info) {
  if (!info) return "?";
  if (!info.parent) return "Lead";
  return info.label || info.description || info.name || info.id; // the server's one name for it
}

// One event in a few words, for feeds.
// `waits` (optional): the calls waiting on the person now (`waitingCalls`).
export function words(e, byId, waits) {
  const who = (id) => {
    const a = byId && byId.get(id);
    return a ? label(a.info) : "a sub-agent";
  };
  if (e.kind === "tool_call" && waits && e.id && waits.has(e.id)) return waitWords(waits.get(e.id), e);
  switch (e.kind) {
    case "prompt":
      return `you: ${oneLine(e.text, 140)}`;
    case "say":
      return `“${oneLine(shownText(e), 160)}”`; // (in the language, when translation is on)
    case "think":
      return "thinking…";
    case "tool_call":
      return e.doing || e.name;
    case "tool_result":
      return e.ok === false ? "the tool failed" : e.detail === "background" ? "started in the background" : "tool done";
    case "order":
      return e.agent === e.target ? `was asked: ${oneLine(e.text, 120)}` : `asked ${who(e.target)}: ${oneLine(e.detail || e.text, 120)}`;
    case "report":
      return `${who(e.target)} reported: ${oneLine(e.text, 140)}`;
    case "waiting":
      return waitWords(e.wait, { detail: oneLine(e.detail || e.name, 140) });
    case "resolved":
      return "you answered";
    case "turn_end":
      return "finished its turn";
    case "interrupt":
      return "interrupted";
    case "compaction":
      return "compacted the conversation";
    case "error":
      return `error: ${oneLine(e.text, 140)}`;
    case "title":
      return `titled: ${oneLine(e.text, 100)}`;
    default:
      return e.kind;
  }
}

export function silenceText(a, at) {
  if (a.lastT === null || !["working", "waiting"].includes(a.state)) return null;
  const quiet = at - a.lastT;
  return quiet > LONG_SILENCE ? `quiet for ${fmtDuration(quiet)}` : null;
}
