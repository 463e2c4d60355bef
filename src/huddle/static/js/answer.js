// Answering a run huddle hosts, from its card and its page: Allow, Allow with this edit,
// Deny (with a reason), a question's options and a free reply, the next message on its
// turn. The server says what is pending (the row's `answer`); the host decides: the first
// answer wins, a stale or repeated one comes back refused, and the box says so.
import { el, fmtClock, oneLine, parseISO } from "./common.js";

let tokenP = null;
function token() {
  if (!tokenP) {
    tokenP = fetch("/api/info", { headers: { accept: "application/json" }, credentials: "same-origin" })
      .then((r) => r.json())
      .then((i) => i.answer_token || "");
  }
  return tokenP;
}

export async function postAnswer(sessionId, body) {
  const t = await token();
  const r = await fetch(`/api/sessions/${encodeURIComponent(sessionId)}/answer`, {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json", accept: "application/json", "x-huddle-token": t },
    body: JSON.stringify(body),
  });
  let data = null;
  try {
    data = await r.json();
  } catch {
    data = null;
  }
  if (!r.ok) throw new Error((data && data.error) || `${r.status} ${r.statusText}`);
  return data;
}

const SAID = { allow: "allowed", deny: "denied", reply: "replied" };

// The asks the person can act on now: permissions and questions before the turn.
export function pendingOf(answer) {
  const asks = (answer && answer.pending) || [];
  return [...asks].sort((a, b) => (a.type === "turn") - (b.type === "turn") || a.request - b.request);
}

// The box for one session's pending asks. `opts.by`: "web" (a click) or "keyboard".
export function answerBox(sessionId, answer, opts = {}) {
  const asks = pendingOf(answer);
  if (!asks.length) return null;
  const box = el("div", { class: `answer${opts.compact ? " compact" : ""}`, dataset: { session: sessionId } });
  for (const ask of asks) box.append(askBox(sessionId, ask, opts));
  return box;
}

function askBox(sessionId, ask, opts) {
  const part = el("div", { class: `ask ask-${ask.type}`, dataset: { request: String(ask.request) } });
  const status = el("div", { class: "ask-status", role: "status" });
  const send = async (body, by) => {
    for (const b of part.querySelectorAll("button, textarea, input")) b.disabled = true;
    status.className = "ask-status";
    status.textContent = "sending…";
    try {
      const r = await postAnswer(sessionId, { request: ask.request, by: by || "web", ...body });
      status.textContent = `${SAID[r.choice] || r.choice} (request ${r.request})`;
      part.classList.add("done");
    } catch (e) {
      status.className = "ask-status refused";
      status.textContent = e.message;
      for (const b of part.querySelectorAll("button, textarea, input")) b.disabled = false;
    }
  };
  part._send = send;
  const offers = new Set(ask.offers || []);
  const when = parseISO(ask.at);
  const head = el(
    "div",
    { class: "ask-head" },
    el("span", { class: "ask-kind", text: ask.type === "turn" ? "your turn" : ask.type === "question" ? "question" : "permission" }),
    el("span", { class: "ask-what", text: oneLine(ask.summary || ask.tool || "", 220), title: ask.summary || "" }),
    when ? el("span", { class: "ask-when", text: fmtClock(when) }) : null,
  );
  part.append(head);

  if (ask.type === "permission") {
    const edit = el("textarea", { class: "ask-input", rows: 4, spellcheck: "false", "aria-label": "The tool's input (JSON)", hidden: true });
    edit.value = JSON.stringify(ask.input ?? {}, null, 2);
    const reason = el("input", {
      class: "ask-reason",
      type: "text",
      placeholder: "Why not, or what to do instead (optional)",
      "aria-label": "Reason",
      hidden: true,
    });
    const row = el("div", { class: "ask-buttons" });
    const options = ask.options || [];
    if (offers.has("allow"))
      row.append(
        el("button", {
          class: "btn ok",
          type: "button",
          dataset: { act: "allow" },
          text: "Allow",
          title: "Allow (a)",
          onclick: () => send({ choice: "allow" }),
        }),
      );
    if (offers.has("allow_edit")) {
      row.append(
        el("button", {
          class: "btn",
          type: "button",
          dataset: { act: "edit" },
          text: "Allow with this edit",
          title: "Edit the input, then allow (e)",
          onclick: () => {
            if (edit.hidden) {
              edit.hidden = false;
              edit.focus();
              return;
            }
            let input;
            try {
              input = JSON.parse(edit.value);
            } catch (e) {
              status.className = "ask-status refused";
              status.textContent = `not JSON: ${e.message}`;
              return;
            }
            send({ choice: "allow", input });
          },
        }),
      );
    }
    if (offers.has("deny")) {
      row.append(
        el("button", {
          class: "btn no",
          type: "button",
          dataset: { act: "deny" },
          text: offers.has("deny_reason") ? "Deny…" : "Deny",
          title: "Deny (d)",
          onclick: () => {
            if (offers.has("deny_reason") && reason.hidden) {
              reason.hidden = false;
              reason.focus();
              return;
            }
            send({ choice: "deny", ...(reason.value.trim() ? { message: reason.value.trim() } : {}) });
          },
        }),
      );
    }
    for (const o of options) {
      if (!/always/.test(o.kind || "")) continue; // once and reject are Allow and Deny
      row.append(
        el("button", {
          class: "btn",
          type: "button",
          dataset: { act: `option-${o.id}` },
          text: o.label,
          title: o.kind,
          onclick: () => send({ choice: o.kind.startsWith("reject") ? "deny" : "allow", option: o.id }),
        }),
      );
    }
    reason.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") {
        ev.preventDefault();
        send({ choice: "deny", ...(reason.value.trim() ? { message: reason.value.trim() } : {}) });
      }
    });
    if (ask.input_cut) part.append(el("div", { class: "ask-note", text: "The input is too large to edit here: allow or deny it as it is." }));
    part.append(row, edit, reason);
  } else if (ask.type === "question") {
    for (const q of ask.questions || []) {
      const qbox = el("div", { class: "ask-q" }, el("div", { class: "ask-qtext", text: q.question }));
      const row = el("div", { class: "ask-buttons" });
      for (const o of q.options || []) {
        row.append(
          el("button", {
            class: "btn",
            type: "button",
            text: o.label,
            title: o.description || "",
            onclick: () => send({ choice: "reply", answers: { [q.question]: o.label } }),
          }),
        );
      }
      qbox.append(row);
      part.append(qbox);
    }
    part.append(
      replyRow("Or answer in your own words", (text) => {
        const first = (ask.questions || [])[0];
        send(first ? { choice: "reply", answers: { [first.question]: text } } : { choice: "reply", text });
      }),
    );
    if (offers.has("deny"))
      part.append(
        el(
          "div",
          { class: "ask-buttons" },
          el("button", { class: "btn no", type: "button", dataset: { act: "deny" }, text: "Decline to answer", onclick: () => send({ choice: "deny" }) }),
        ),
      );
  } else {
    part.append(replyRow("Your next message", (text) => send({ choice: "reply", text })));
  }
  part.append(status);
  return part;
}

function replyRow(placeholder, go) {
  const text = el("textarea", { class: "ask-reply", rows: 2, placeholder: `${placeholder} (Enter sends, Shift+Enter a new line)`, "aria-label": placeholder });
  const button = el("button", {
    class: "btn ok",
    type: "button",
    dataset: { act: "reply" },
    text: "Send",
    onclick: () => {
      if (text.value.trim()) go(text.value);
    },
  });
  text.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey) {
      ev.preventDefault();
      if (text.value.trim()) go(text.value);
    }
  });
  return el("div", { class: "ask-replyrow" }, text, button);
}

// The last request settled, for "answered elsewhere" (shown for two minutes).
export function settledLine(answer) {
  const s = answer && answer.settled && answer.settled[answer.settled.length - 1];
  if (!s) return null;
  const t = parseISO(s.at);
  if (t && Date.now() / 1000 - t > 120) return null;
  const how = s.choice ? `${SAID[s.choice] || s.choice} from ${s.by || "huddle"}` : `gone: ${s.why || "ended"}`;
  return el("div", { class: "ask-settled", text: `Request ${s.request}: ${how}${t ? ` at ${fmtClock(t)}` : ""}` });
}

export function readOnlyNote() {
  return el("div", {
    class: "ask-readonly",
    text: "Read-only: huddle reads this session's files. Answer it where it runs, or start agents with `huddle run` to answer them here.",
  });
}

// Keyboard: a / e / d / r on the box of the first pending ask in `root`.
export function answerKey(ev, root) {
  const part = root && root.querySelector(".answer .ask:not(.done)");
  if (!part) return false;
  const click = (act) => {
    const b = part.querySelector(`button[data-act="${act}"]`);
    if (b && !b.disabled) {
      b.click();
      return true;
    }
    return false;
  };
  if (ev.key === "a" && part.querySelector('button[data-act="allow"]')) {
    part._send({ choice: "allow" }, "keyboard");
    return true;
  }
  if (ev.key === "e") return click("edit");
  if (ev.key === "d") return click("deny");
  if (ev.key === "r") {
    const t = part.querySelector(".ask-reply, .ask-reason");
    if (t) {
      t.hidden = false;
      t.focus();
      return true;
    }
  }
  return false;
}
