// The delegation tree: each agent's order, state, report and usage.
import { el, fmtClock, fmtDuration, fmtTokens, oneLine, parseISO, pill, tokensOf } from "./common.js";
import { label } from "./model.js";

function node(a, byId) {
  const u = a.usage || {};
  const start = parseISO(a.started_at),
    end = parseISO(a.updated_at);
  const kids = (a.children || []).map((id) => byId.get(id)).filter((c) => c && !c.quiet);
  return el(
    "li",
    {},
    el(
      "div",
      { class: "node", dataset: { agent: a.id } },
      el(
        "div",
        { class: "node-head" },
        el("span", { class: "name", text: label(a) }),
        a.type && a.type !== "main" ? el("span", { class: "badge", text: a.type }) : null,
        a.background ? el("span", { class: "badge", text: "background" }) : null,
        pill(a.state || "idle"),
        a.waiting_for ? el("span", { class: "muted", text: oneLine(a.waiting_for, 120) }) : null,
      ),
      el(
        "div",
        { class: "node-stats" },
        el("span", {
          title: `input ${u.input || 0} · output ${u.output || 0} · cache read ${u.cache_read || 0} · cache write ${u.cache_write || 0}`,
          text: `${fmtTokens(tokensOf(u))} tokens (${fmtTokens(u.output || 0)} out)`,
        }),
        a.model ? el("span", { text: a.model }) : null,
        start ? el("span", { text: `${fmtClock(start)} · ${fmtDuration((end || start) - start)}` }) : null,
        el("span", { text: `${a.events || 0} events` }),
      ),
      a.order ? el("details", {}, el("summary", { text: `Order: ${oneLine(a.order, 100)}` }), el("div", { class: "text", text: a.order })) : null,
      a.parent
        ? a.report
          ? el("details", { open: true }, el("summary", { text: "Report" }), el("div", { class: "text", text: a.report }))
          : el("p", { class: "faint", text: "No report yet." })
        : null,
    ),
    kids.length
      ? el(
          "ul",
          {},
          kids.map((k) => node(k, byId)),
        )
      : null,
  );
}

export function mountTree(box, S) {
  const draw = () => {
    if (!S.detail) return;
    const tree = S.detail.tree || [];
    const byId = new Map(tree.map((a) => [a.id, a]));
    const roots = tree.filter((a) => !a.parent || !byId.has(a.parent));
    box.replaceChildren(
      el(
        "ul",
        { class: "tree" },
        roots.map((r) => node(r, byId)),
      ),
    );
  };
  return { update: draw, show: draw, stop() {} };
}
