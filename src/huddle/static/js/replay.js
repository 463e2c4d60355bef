// Replay: play the session back (0.5x to 10x), scrub over its time, step by event
// or by turn; the call, the tree and the usage are shown as of the scrub point.

import { renderFeed, renderStage } from "./call.js";
import { el, fmtClock, fmtDuration, fmtTokens, pill, tokensOf, typing } from "./common.js";
import { label, modelAt } from "./model.js";

const SPEEDS = [0.5, 1, 2, 5, 10];
const QUIET = new Set(["usage", "context", "title"]);
const SILENCE = 3; // seconds of session time skipped down to a beat when "skip silences" is on

export function mountReplay(box, S) {
  const btn = (text, title, fn) => el("button", { class: "btn", type: "button", title, text, onclick: fn });
  const playBtn = btn("▶ Play", "Play / pause (Space)", () => toggle());
  const speedSel = el(
    "select",
    { class: "btn", "aria-label": "Speed", title: "Speed (+/-)" },
    SPEEDS.map((s) => el("option", { value: s, selected: s === 1, text: `${s}x` })),
  );
  const scrub = el("input", { class: "scrub", type: "range", min: "0", max: "1000", step: "1", value: "0", "aria-label": "Time" });
  const clock = el("span", { class: "clock" });
  const est = el("span", { class: "est", hidden: true, text: "estimated time" });
  const skip = el("input", { type: "checkbox", checked: true, id: "skip-silences" });
  const controls = el(
    "div",
    { class: "controls" },
    btn("« Turn", "Previous turn (Shift+← or [)", () => stepTurn(-1)),
    btn("‹ Event", "Previous event (←)", () => stepEvent(-1)),
    playBtn,
    btn("Event ›", "Next event (→)", () => stepEvent(1)),
    btn("Turn »", "Next turn (Shift+→ or ])", () => stepTurn(1)),
    speedSel,
    scrub,
    clock,
    est,
    el("label", { class: "muted" }, skip, " skip silences"),
  );
  const stageBox = el("div");
  const feed = el("div", { class: "feed" });
  const treeCard = el("div", { class: "card" });
  const usageCard = el("div", { class: "card" });
  const note = el("p", { class: "est", hidden: true, text: "This session's times are partly estimated (spread between known times); they show as ~." });
  box.replaceChildren(controls, note, el("div", { class: "replay-grid" }, el("div", {}, stageBox, feed), el("div", { class: "side" }, treeCard, usageCard)));

  let at = null,
    playing = false,
    lastFrame = 0,
    raf = 0,
    lastDraw = 0;
  const span = () => {
    const tl = S.timeline;
    if (!tl.length) return [0, 0];
    return [tl[0].tt, tl[tl.length - 1].tt];
  };

  function draw() {
    if (!S.detail) return;
    const [t0, t1] = span();
    if (at === null) at = t0;
    at = Math.min(Math.max(at, t0), t1);
    const model = modelAt(S.detail, S.timeline, at);
    const byId = renderStage(stageBox, S.detail, model, at, null);
    renderFeed(feed, S.timeline, model, byId);
    scrub.value = t1 > t0 ? String(Math.round(((at - t0) / (t1 - t0)) * 1000)) : "1000";
    const e = model.current;
    clock.textContent = `${e && e.estimated ? "~" : ""}${fmtClock(at)}  +${fmtDuration(at - t0)} / ${fmtDuration(t1 - t0)}`;
    est.hidden = !(e && e.estimated);
    note.hidden = !S.detail.time_estimated;
    treeCard.replaceChildren(
      el("h3", { text: "Tree at this point" }),
      el(
        "ul",
        { class: "mini-tree" },
        model.agents
          .filter((a) => !a.info.quiet && a.joined !== null && a.joined <= at)
          .map((a) => {
            const li = el(
              "li",
              {},
              el("span", { class: "nm", text: label(a.info), title: a.info.name }),
              el("span", { class: "faint", text: fmtTokens(tokensOf(a.usage)) }),
              pill(a.state),
            );
            li.style.paddingLeft = `${(a.info.depth || 0) * 14}px`;
            return li;
          }),
      ),
    );
    const u = model.usage;
    usageCard.replaceChildren(
      el("h3", { text: "Usage at this point" }),
      el(
        "table",
        { class: "usage-table" },
        [
          ["Input", u.input],
          ["Output", u.output],
          ["Cache read", u.cache_read],
          ["Cache write", u.cache_write],
          ["Total", tokensOf(u)],
        ].map(([k, v]) => el("tr", {}, el("td", { text: k }), el("td", { text: v.toLocaleString() }))),
      ),
    );
    lastDraw = performance.now();
  }

  function frame(ts) {
    if (!playing) return;
    const [, t1] = span();
    const dt = ((ts - lastFrame) / 1000) * Number(speedSel.value);
    lastFrame = ts;
    at += dt;
    if (skip.checked) {
      const next = S.timeline.find((e) => e.tt > at && !QUIET.has(e.kind));
      if (next && next.tt - at > SILENCE) at = next.tt - 0.5;
    }
    if (at >= t1) {
      at = t1;
      pause();
      draw();
      return;
    }
    if (ts - lastDraw > 80) draw();
    raf = requestAnimationFrame(frame);
  }

  function play() {
    const [, t1] = span();
    if (at === null || at >= t1) at = span()[0];
    playing = true;
    playBtn.textContent = "❚❚ Pause";
    lastFrame = performance.now();
    raf = requestAnimationFrame(frame);
  }
  function pause() {
    playing = false;
    playBtn.textContent = "▶ Play";
    cancelAnimationFrame(raf);
  }
  function toggle() {
    playing ? pause() : play();
  }

  function stepEvent(dir) {
    pause();
    const tl = S.timeline.filter((e) => !QUIET.has(e.kind));
    const cur = at ?? span()[0];
    const e = dir > 0 ? tl.find((x) => x.tt > cur + 1e-6) : [...tl].reverse().find((x) => x.tt < cur - 1e-6);
    if (e) at = e.tt;
    draw();
  }
  function stepTurn(dir) {
    pause();
    const turns = S.timeline.filter((e) => e.kind === "prompt" || (e.kind === "turn_end" && e.agent === S.detail.lead));
    const cur = at ?? span()[0];
    const e = dir > 0 ? turns.find((x) => x.tt > cur + 1e-6) : [...turns].reverse().find((x) => x.tt < cur - 1e-6);
    at = e ? e.tt : dir > 0 ? span()[1] : span()[0];
    draw();
  }

  scrub.addEventListener("input", () => {
    const [t0, t1] = span();
    at = t0 + ((t1 - t0) * Number(scrub.value)) / 1000;
    draw();
  });
  document.addEventListener("keydown", (ev) => {
    if (box.hidden || (typing(ev.target) && ev.target !== scrub)) return;
    const k = ev.key;
    if (k === " ") {
      toggle();
      ev.preventDefault();
    } else if (k === "ArrowRight" || k === "]") {
      ev.shiftKey || k === "]" ? stepTurn(1) : stepEvent(1);
      ev.preventDefault();
    } else if (k === "ArrowLeft" || k === "[") {
      ev.shiftKey || k === "[" ? stepTurn(-1) : stepEvent(-1);
      ev.preventDefault();
    } else if (k === "+" || k === "=" || k === "-") {
      const i = SPEEDS.indexOf(Number(speedSel.value)) + (k === "-" ? -1 : 1);
      speedSel.value = String(SPEEDS[Math.max(0, Math.min(SPEEDS.length - 1, i))]);
    } else if (k === "Home") {
      pause();
      at = span()[0];
      draw();
    } else if (k === "End") {
      pause();
      at = span()[1];
      draw();
    }
  });

  return {
    update() {
      if (!playing) draw();
    },
    show: draw,
    stop: pause,
  };
}
