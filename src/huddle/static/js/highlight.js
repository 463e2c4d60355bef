// Terms drawn as <mark> in text that is already on the page (never through innerHTML):
// search snippets come with their marks; a message opened from a search gets its words marked.

// Text with [start, end] marks as nodes.
export function marked(text, marks) {
  const out = [];
  let pos = 0;
  for (const [a, b] of marks || []) {
    if (a < pos || b <= a) continue;
    if (a > pos) out.push(document.createTextNode(text.slice(pos, a)));
    const m = document.createElement("mark");
    m.textContent = text.slice(a, b);
    out.push(m);
    pos = b;
  }
  if (pos < text.length) out.push(document.createTextNode(text.slice(pos)));
  return out;
}

// The words of a query a person typed, for marking: quoted phrases and words,
// without the excluded ones (-word), the `tool:` switch or stars.
export function queryWords(q) {
  const out = [];
  const re = /(-?)"([^"]*)"?(\*?)|(\S+)/g;
  let m;
  while ((m = re.exec(String(q || "")))) {
    if (m[4] !== undefined) {
      let w = m[4];
      if (w.startsWith("-") && w.length > 1) continue;
      if (/^tool:/i.test(w)) w = w.slice(5);
      w = w.replace(/\*+$/, "");
      for (const part of w.split(/[^\p{L}\p{N}]+/u)) if (part) out.push(part);
    } else if (!m[1]) {
      for (const part of m[2].split(/[^\p{L}\p{N}]+/u)) if (part) out.push(part);
    }
  }
  return [...new Set(out.map((w) => w.toLowerCase()))];
}

function fold(s) {
  return s.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase();
}

// Scripts written without spaces (Chinese, Japanese) and Korean: a word is found inside a run.
const ALONE = /[\u1100-\u11ff\u2e80-\u2fdf\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f]/u;

// A word's rough stem, for marking what the search's stemmed match found ("tests" marks
// "test", "passing" marks "passed"): a common ending taken off.
export function roughStem(w) {
  const m = /^(.{3,}?)(ing|ed|es|s|ly)$/u.exec(w);
  return m ? m[1] : w;
}

// Where `word` stands inside `text` (a run of a script without spaces).
function inside(text, word, marks) {
  for (let i = text.indexOf(word); i >= 0; i = text.indexOf(word, i + word.length)) marks.push([i, i + word.length]);
}

// Mark every word that starts like one of `words` (or its rough stem) inside `root`; returns how many.
export function highlight(root, words) {
  if (!root || !words || !words.length) return 0;
  const folded = words.map(fold);
  const runs = folded.filter((w) => ALONE.test(w));
  const wanted = folded.filter((w) => !ALONE.test(w)).map(roughStem);
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentNode && n.parentNode.nodeName === "MARK" ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  let count = 0;
  const wordRe = /[\p{L}\p{N}]+/gu;
  for (const node of nodes) {
    const text = node.nodeValue;
    let marks = [];
    let m;
    wordRe.lastIndex = 0;
    while ((m = wordRe.exec(text))) {
      const w = fold(m[0]);
      if (wanted.some((x) => w.startsWith(x))) marks.push([m.index, m.index + m[0].length]);
    }
    if (runs.length && text.length === fold(text).length) for (const r of runs) inside(fold(text), r, marks);
    if (!marks.length) continue;
    marks = marks.sort((a, b) => a[0] - b[0]).filter((x, i, all) => !i || x[0] >= all[i - 1][1]);
    count += marks.length;
    node.replaceWith(...marked(text, marks));
  }
  return count;
}
