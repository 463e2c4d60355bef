// The board header's plan quotas: each agent's share of its 5-hour (and, past half, 7-day)
// window as the agent said it, and where the pace leads (GET /api/limits == huddle usage --limits).

import { el, fmtClock, getJSON, parseISO } from "./common.js";

const EVERY = 60_000;

function chip(agent, w) {
  const name = { five_hour: "5h", seven_day: "7d" }[w.window] || w.window;
  const out = w.pace && w.pace.runs_out_at ? parseISO(w.pace.runs_out_at) : null;
  const used = w.used_percent === null ? "reset" : `${Math.round(w.used_percent)}%`;
  const text = `${agent.name} ${name} ${used}${w.estimate ? " (est.)" : ""}${out ? ` · runs out ${fmtClock(out)}` : ""}`;
  const tip = [w.said_by, w.pace && w.pace.says].filter(Boolean).join(" · ");
  return el("span", { class: `limit${out ? " limit-short" : ""}${w.estimate ? " limit-est" : ""}`, title: tip, text });
}

async function show() {
  const box = document.getElementById("limits");
  if (!box) return;
  let data;
  try {
    data = await getJSON("/api/limits");
  } catch {
    return;
  }
  const chips = [];
  for (const a of data.agents || []) {
    for (const w of a.windows || []) {
      if (w.window === "five_hour" || (w.used_percent !== null && w.used_percent >= 50)) chips.push(chip(a, w));
    }
  }
  box.replaceChildren(...chips);
  box.hidden = chips.length === 0;
}

show();
setInterval(show, EVERY);
