// Agent text as Markdown, rendered safely: markdown-it (vendored from npm, see
// scripts/vendor-js) with raw HTML off, so HTML an agent wrote shows as text and is never
// passed through; links only to http(s) and mailto, opened in a new tab without the
// opener; images are not fetched (they show as their link); bare words like app.py are
// not guessed into links.
import markdownit from "../vendor/markdown-it/markdown-it.js";

const md = markdownit({ html: false, linkify: true, breaks: false, typographer: false });
md.linkify.set({ fuzzyLink: false, fuzzyEmail: false });
md.disable(["image"]);
const validate = md.validateLink.bind(md);
md.validateLink = (url) => /^(https?:|mailto:)/i.test(String(url).trim()) && validate(url);
const linkOpen = md.renderer.rules.link_open || ((tokens, i, opts, env, self) => self.renderToken(tokens, i, opts));
md.renderer.rules.link_open = (tokens, i, opts, env, self) => {
  tokens[i].attrSet("target", "_blank");
  tokens[i].attrSet("rel", "noopener noreferrer nofollow");
  return linkOpen(tokens, i, opts, env, self);
};

export function markdown(text) {
  const box = document.createElement("div");
  box.className = "md";
  box.innerHTML = md.render(text || ""); // markdown-it escapes every character of raw HTML
  return box;
}

// Markdown said as plain words, for a one-line summary: the marks (**, `, #, >, list
// bullets, a link's target) dropped, the words kept.
export function plainWords(text) {
  return String(text || "")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/^\s{0,3}(#{1,6}|>|[-*+]|\d+[.)])\s+/gm, "")
    .replace(/(\*\*|__|\*|_|`+|~~)(?=\S)([\s\S]*?\S)\1/g, "$2");
}
