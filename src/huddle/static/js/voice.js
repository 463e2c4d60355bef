// Voices (opt-in): the call's lines spoken in this window while it holds the claim.
// Only one open window plays: the last to press Listen, kept by heartbeats (voice-beat.js);
// the others say where it plays. Mute this call or every call (kept in this browser, and
// told to the server so it does not speak for nobody).
import { el, getJSON } from "./common.js";

const WINDOW = Array.from(crypto.getRandomValues(new Uint8Array(9)), (b) => b.toString(16).padStart(2, "0")).join("");
const MUTED = "huddle.voice.muted"; // JSON {session id: true}
const MUTE_ALL = "huddle.voice.muteAll";
const STALE = 30; // seconds after which a clip is not played (the server drops lines at 20)

function mutedMap() {
  try {
    return JSON.parse(localStorage.getItem(MUTED) || "{}") || {};
  } catch {
    return {};
  }
}

export async function mountVoice(S, es, before) {
  let state;
  try {
    state = await getJSON("/api/voice");
  } catch {
    return;
  }
  const listen = el("button", { class: "btn", type: "button", id: "voice-listen", text: "Listen" });
  const mute = el("button", { class: "btn", type: "button", id: "voice-mute", text: "Mute" });
  const muteAll = el("button", { class: "btn", type: "button", id: "voice-mute-all", text: "Mute all" });
  const where = el("span", { class: "faint", id: "voice-where" });
  for (const b of [listen, mute, muteAll]) b.style.whiteSpace = "nowrap";
  const box = el("span", { class: "actions", id: "s-voice" }, listen, mute, muteAll, where);
  before.before(box);
  if (!state.on) {
    listen.disabled = true;
    listen.style.opacity = "0.55";
    listen.style.cursor = "not-allowed";
    listen.title = state.why || "voices are off";
    mute.hidden = muteAll.hidden = true;
    return;
  }
  const q = `session=${encodeURIComponent(S.id)}&window=${WINDOW}`;
  let listening = false,
    playing = false,
    worker = null;
  const queue = [];
  let current = null;
  const sessionMuted = () => !!mutedMap()[S.id];
  const allMuted = () => localStorage.getItem(MUTE_ALL) === "1";
  const muted = () => sessionMuted() || allMuted();

  function render() {
    listen.classList.toggle("on", playing);
    listen.textContent = playing ? "Listening" : listening ? "Play here" : "Listen";
    where.textContent = listening && !playing ? "playing in another window" : "";
    mute.classList.toggle("on", sessionMuted());
    mute.textContent = sessionMuted() ? "Unmute" : "Mute";
    muteAll.classList.toggle("on", allMuted());
    muteAll.textContent = allMuted() ? "Unmute all" : "Mute all";
    document.body.dataset.voice = playing ? (muted() ? "muted" : "playing") : listening ? "elsewhere" : "off";
  }
  function stopAudio() {
    queue.length = 0;
    if (current) {
      current.pause();
      current = null;
    }
  }
  function apply(r) {
    playing = !!r.playing;
    if (!playing) stopAudio();
    if (listening && !r.claimed) claim(); // lapsed (a sleeping laptop): take it again
    render();
  }
  function beats() {
    if (!worker) {
      worker = new Worker("/static/js/voice-beat.js");
      worker.onmessage = (ev) => apply(ev.data);
    }
    worker.postMessage({ url: `/api/voice/beat?${q}`, muted: muted(), every: 2000 });
  }
  async function claim() {
    listening = true;
    try {
      apply(await getJSON(`/api/voice/claim?${q}`));
    } catch (e) {
      where.textContent = e.message;
      return;
    }
    beats();
  }
  function next() {
    if (current || !queue.length) return;
    const d = queue.shift();
    const a = new Audio(d.url);
    current = a;
    const done = () => {
      if (current === a) current = null;
      next();
    };
    a.onended = done;
    a.onerror = done;
    a.play()
      .then(() => {
        document.body.dataset.voiceHeard = String(d.n);
      })
      .catch(done);
  }

  listen.addEventListener("click", () => {
    if (playing) {
      // stop listening here
      listening = playing = false;
      stopAudio();
      if (worker) worker.postMessage({});
      render();
    } else claim();
  });
  mute.addEventListener("click", () => {
    const m = mutedMap();
    if (m[S.id]) delete m[S.id];
    else m[S.id] = true;
    localStorage.setItem(MUTED, JSON.stringify(m));
    if (muted()) stopAudio();
    if (listening) beats();
    render();
  });
  muteAll.addEventListener("click", () => {
    localStorage.setItem(MUTE_ALL, allMuted() ? "0" : "1");
    if (muted()) stopAudio();
    if (listening) beats();
    render();
  });
  window.addEventListener("storage", () => {
    if (listening) beats();
    render();
  });
  es.addEventListener("voice", (ev) => {
    let d = null;
    try {
      d = JSON.parse(ev.data);
    } catch {
      return;
    }
    if (!playing || muted() || d.session !== S.id) return;
    if (d.at && Date.now() / 1000 - d.at > STALE) return; // replayed after a reconnect: too late to say
    queue.push(d);
    next();
  });
  render();
}
