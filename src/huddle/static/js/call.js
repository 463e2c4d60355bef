// The call: the lead and its sub-agents as participants of a live call.
import { avatar, el, fmtClock, fmtDuration, fmtTokens, oneLine, pill, tokensOf } from "./common.js";
import { LEAVE_AFTER, LONG_CALL, label, modelAt, nowDoing, SPEAKING, silenceText, waitingCalls, waitWords, words } from "./model.js";
import { shownText } from "./translate.js";

// Draw the participants as of `at` into `box`. `server` (optional) maps agent id to
// the server's state for "now", which wins over the replayed one.
export function renderStage(box, detail, model, at, server) {
  const byId = new Map(model.agents.map((a) => [a.info.id, a]));
  const present = [];
  const left = [];
  for (const a of model.agents) {
    if (a.info.quiet) continue;
    if (a.joined === null || a.joined > at) continue; // not ordered yet
    if (a.left !== null && at - a.left > LEAVE_AFTER) left.push(a);
    else present.push(a);
  }
  let speaker = null;
  for (const a of present) if (a.say && at - a.say.t < SPEAKING && (!speaker || a.say.t > speaker.say.t)) speaker = a;

  const stage = el("div", { class: "stage" });
  const seen = box._seen || new Set();
  box._seen = new Set(present.map((a) => a.info.id));
  for (const a of present) {
    const st = (server && server.get(a.info.id)) || null;
    const state = st && st.state ? st.state : a.state;
    const doing = nowDoing(a, byId);
    const callAge = doing && doing.since !== null ? at - doing.since : null;
    const quiet = silenceText({ ...a, state }, at);
    const tile = el(
      "div",
      {
        class: `tile t-${state}${a.info.parent ? "" : " lead"}${a === speaker ? " speaking" : ""}${a.left !== null ? " leaving" : ""}${seen.has(a.info.id) ? "" : " joining"}`,
        dataset: { agent: a.info.id },
      },
      el(
        "div",
        { class: "tile-head" },
        avatar(label(a.info), a.index),
        el(
          "div",
          { class: "tile-id" },
          el("div", { class: "tile-name", text: label(a.info), title: a.info.name }),
          el("div", {
            class: "tile-kind",
            text: [a.info.type && a.info.type !== "main" ? a.info.type : null, a.info.model].filter(Boolean).join(" · ") || "\u00a0",
          }),
        ),
        pill(state),
      ),
      a.say
        ? el("div", { class: "bubble", text: shownText(a.say), title: a.say.text })
        : el("div", { class: "bubble empty-bubble", text: "hasn't spoken yet" }),
      st && st.state === "needs_you" && (st.waiting_for || st.waiting_call)
        ? el(
            "div",
            { class: "now long" },
            el("span", { text: "needs you" }),
            el("span", { class: "what", text: a.open.has(st.waiting_call) ? waitWords(st.waiting_kind, a.open.get(st.waiting_call)) : st.waiting_for }),
          )
        : doing
          ? el(
              "div",
              { class: `now${callAge !== null && callAge > LONG_CALL ? " long" : ""}` },
              el("span", { text: "now" }),
              el("span", { class: "what", text: doing.text, title: doing.text }),
              el("span", { class: "dur", text: callAge !== null ? fmtDuration(callAge) : "" }),
            )
          : null,
      quiet ? el("div", { class: "silence", text: quiet }) : null,
      a.left !== null ? el("div", { class: "now" }, el("span", { text: "reported" }), el("span", { class: "what", text: oneLine(a.report, 140) })) : null,
      el(
        "div",
        { class: "tile-foot" },
        el("span", { text: `${fmtTokens(tokensOf(a.usage))} tokens` }),
        a.joined !== -Infinity && a.joined !== null ? el("span", { text: `joined ${fmtClock(a.joined)}` }) : null,
        a.say ? el("span", { text: `spoke ${fmtDuration(at - a.say.t)} ago` }) : null,
      ),
    );
    stage.append(tile);
  }
  const parts = [stage];
  if (left.length) {
    parts.push(
      el(
        "div",
        { class: "left-call" },
        el("h3", { text: "Left the call" }),
        el(
          "div",
          { class: "chips" },
          left.map((a) =>
            el(
              "span",
              { class: "chip", title: a.report || "" },
              avatar(label(a.info), a.index),
              el("span", { class: "r", text: `${label(a.info)} · ${oneLine(a.report || "done", 80)}` }),
            ),
          ),
        ),
      ),
    );
  }
  box.replaceChildren(...parts);
  return byId;
}

// `waits` (optional): the calls waiting on the person now, said so instead of "running".
export function renderFeed(box, tl, model, byId, n = 12, waits = null) {
  const items = [];
  for (let i = model.index; i >= 0 && items.length < n; i--) {
    const e = tl[i];
    if (e.kind === "usage" || e.kind === "context" || e.kind === "turn_end") continue;
    const a = byId.get(e.agent);
    items.push(
      el(
        "li",
        { class: i === model.index ? "cur" : "" },
        el("span", { class: "tm", text: (e.estimated ? "~" : "") + fmtClock(e.tt) }),
        el("span", { class: "who", text: a ? label(a.info) : e.agent }),
        el("span", { class: "w", text: words(e, byId, waits) }),
      ),
    );
  }
  box.replaceChildren(el("h3", { text: "Latest" }), el("ol", {}, items));
}

// The Call tab: the stage as of now, redrawn on every change and every second.
export function mountCall(box, S) {
  const banner = el("p", { class: "call-banner" });
  const stageBox = el("div");
  const feed = el("div", { class: "feed" });
  box.replaceChildren(banner, stageBox, feed);
  let model = null;
  const draw = () => {
    if (!S.detail) return;
    const at = Date.now() / 1000;
    if (!model) model = modelAt(S.detail, S.timeline, null);
    const server = new Map((S.detail.tree || []).map((a) => [a.id, a]));
    const lead = server.get(S.detail.lead);
    if (lead && ["idle", "ended"].includes(S.detail.state)) server.set(lead.id, { ...lead, state: S.detail.state });
    const byId = renderStage(stageBox, S.detail, model, at, server);
    renderFeed(feed, S.timeline, model, byId, 12, waitingCalls(S.detail));
    const live = ["working", "needs_you", "waiting"].includes(S.detail.state);
    const last = model.current ? model.current.tt : null;
    banner.replaceChildren(
      live
        ? el("span", { text: "Live" })
        : el("span", { class: "muted", text: `This call is quiet${last ? `: last heard ${fmtDuration(at - last)} ago` : ""}. Replay shows how it went.` }),
      el("span", { class: "faint", text: `${model.agents.filter((a) => !a.info.quiet).length} participants` }),
    );
  };
  const timer = setInterval(draw, 1000);
  return {
    update() {
      model = null;
      draw();
    },
    show: draw,
    stop() {
      clearInterval(timer);
    },
  };
}
