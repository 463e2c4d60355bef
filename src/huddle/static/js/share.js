// Copy buttons (a session's id, the command that resumes it) and the export download menu.
import { el } from "./common.js";

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // no clipboard permission (an insecure context, an old browser): the old way
    const t = el("textarea", { class: "offscreen", readonly: true });
    t.value = text;
    document.body.append(t);
    t.select();
    let ok = false;
    try {
      ok = document.execCommand("copy");
    } catch {
      ok = false;
    }
    t.remove();
    return ok;
  }
}

export function copyButton(label, text, title) {
  const b = el("button", { class: "btn copy", type: "button", title: title || text, text: label, dataset: { copy: text } });
  b.addEventListener("click", async (ev) => {
    ev.stopPropagation();
    ev.preventDefault();
    const ok = await copyText(text);
    b.textContent = ok ? "Copied" : "Copy failed";
    b.classList.toggle("done", ok);
    setTimeout(() => {
      b.textContent = label;
      b.classList.remove("done");
    }, 1400);
  });
  return b;
}

export function copyButtons(row) {
  return [copyButton("ID", row.id, `Copy the session id: ${row.id}`), row.resume ? copyButton("Resume", row.resume, `Copy: ${row.resume}`) : null].filter(
    Boolean,
  );
}

function downloadMenu(id) {
  const redact = el("input", { type: "checkbox", checked: true });
  const images = el("input", { type: "checkbox", checked: true });
  const link = (format, label) => {
    const a = el("a", { href: "#", text: label, dataset: { format } });
    a.addEventListener("click", () => {
      const p = new URLSearchParams({ format, redact: redact.checked ? "1" : "0", images: images.checked ? "1" : "0" });
      a.href = `/api/sessions/${encodeURIComponent(id)}/export?${p}`;
      a.setAttribute("download", "");
    });
    return a;
  };
  const menu = el(
    "div",
    { class: "download-menu", id: "download-menu", hidden: true, role: "group", "aria-label": "Download this session" },
    link("html", "HTML page (opens anywhere, no network)"),
    link("md", "Markdown"),
    link("json", "JSON data"),
    el("label", {}, redact, "Replace secrets (keys, tokens, passwords)"),
    el("label", {}, images, "Keep images"),
  );
  const btn = el("button", {
    class: "btn",
    type: "button",
    text: "Download ▾",
    "aria-expanded": "false",
    "aria-controls": "download-menu",
    title: "Export this session to send it",
  });
  const open = (on) => {
    menu.hidden = !on;
    btn.setAttribute("aria-expanded", on ? "true" : "false");
  };
  btn.addEventListener("click", (ev) => {
    ev.stopPropagation();
    open(menu.hidden);
  });
  document.addEventListener("click", (ev) => {
    if (!menu.contains(ev.target) && !menu.hidden) open(false);
  });
  const box = el("span", { class: "download" }, btn, menu);
  box.addEventListener("keydown", (ev) => {
    // Escape closes it, back on its button (and goes no further)
    if (ev.key !== "Escape" || menu.hidden) return;
    ev.stopPropagation();
    open(false);
    btn.focus();
  });
  return box;
}

// The session page's actions; drawn once (the id and the command do not change).
export function renderShare(box, d) {
  if (!box || box.childNodes.length) return;
  box.replaceChildren(...copyButtons(d), downloadMenu(d.id));
}
