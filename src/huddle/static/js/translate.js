// Translation (opt-in): the conversation's and the call's words in the language the server
// was told (`huddle translate LANG`, `huddle serve --translate LANG`), asked for in small
// batches by event `seq`, each kept here once fetched; the original one click away.
import { el, getJSON } from "./common.js";

const session = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop() || "");
const done = new Map(); // seq -> translated text (or null: nothing to translate)
const asked = new Map(); // seq -> [callbacks]
let lang = null;
const pending = [];
let timer = null;
let ready = null;

export function translationOn() {
  if (!ready && location.protocol === "file:") ready = Promise.resolve(null); // (an export: no server to ask)
  if (!ready)
    ready = getJSON("/api/translation")
      .then((r) => {
        lang = r.on ? r.lang : null;
        return lang;
      })
      .catch(() => null);
  return ready;
}

async function flush() {
  timer = null;
  const seqs = pending.splice(0, 100);
  if (!seqs.length) return;
  if (pending.length) timer = setTimeout(flush, 0);
  let r = null;
  try {
    r = await getJSON(`/api/sessions/${encodeURIComponent(session)}/translation?${seqs.map((s) => `seq=${s}`).join("&")}`);
  } catch {
    r = null;
  }
  const got = new Map(((r && r.items) || []).map((i) => [i.seq, i.translated ? i.text : null]));
  for (const s of seqs) {
    const text = got.has(s) ? got.get(s) : null;
    if (r) done.set(s, text); // (a failed request is asked again next time)
    for (const fn of asked.get(s) || []) fn(text);
    asked.delete(s);
  }
}

function ask(seq, fn) {
  if (done.has(seq)) {
    fn(done.get(seq));
    return;
  }
  if (asked.has(seq)) {
    asked.get(seq).push(fn);
    return;
  }
  asked.set(seq, [fn]);
  pending.push(seq);
  if (!timer) timer = setTimeout(flush, 30);
}

// A message body: once its translation arrives, shown in the language with a button to
// see the original (and back). `show(text)` draws the body's text.
export function translateBody(m, body, show) {
  if (m.seq === undefined || m.seq === null) return;
  translationOn().then((l) => {
    if (!l) return;
    ask(m.seq, (text) => {
      if (!text) return;
      let original = false;
      const flip = el("button", { class: "more", type: "button", text: "Show original", title: `Translated to ${l}` });
      flip.addEventListener("click", () => {
        original = !original;
        show(original ? m.text || "" : text);
        flip.textContent = original ? `Show ${l}` : "Show original";
        body.after(flip);
      });
      show(text);
      body.classList.add("translated");
      body.after(flip);
    });
  });
}

// A line on the call (redrawn every second): its translation if it is here, else the
// original while it is asked for.
export function shownText(e) {
  if (!lang || !e || e.seq === undefined) {
    translationOn();
    return e ? e.text : "";
  }
  if (done.has(e.seq)) return done.get(e.seq) || e.text;
  ask(e.seq, () => {});
  return e.text;
}
