// The voice claim's heartbeat, on a worker: a page's own timers slow to once a minute in a
// background tab, and the claim would lapse while the person listens from another window.
let timer = null;
self.onmessage = (ev) => {
  const d = ev.data || {};
  if (timer) {
    clearInterval(timer);
    timer = null;
  }
  if (!d.url) return;
  const beat = async () => {
    try {
      const r = await fetch(d.url + `&muted=${d.muted ? 1 : 0}`, { credentials: "same-origin", headers: { accept: "application/json" } });
      if (r.ok) self.postMessage(await r.json());
    } catch {
      /* the next beat tries again */
    }
  };
  beat();
  timer = setInterval(beat, d.every || 2000);
};
