"""The HTML export: one self-contained file that opens from file:// with no network.

It is the web app's own replay and tree (the same JS modules, bundled here with no
build step: each module becomes a function scope, its imports plain lookups) plus
the export page (static/js/export.js): the conversation with every sub-agent nested
under the call that started it, and tokens and cost per turn. The session's data is
embedded gzip-compressed and base64-encoded in a non-executable script element;
the page inflates it with the browser's DecompressionStream. A Content-Security-
Policy allows only this page's own script and style (by hash), images from data:
URLs, and no connection at all, so nothing in a transcript can run or call home.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import html
import json
import os
import re

import msgspec

from huddle.errors import HuddleError

STATIC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "static")
ENTRY = "export.js"
STYLES = ("huddle.css", "find.css")

_IMPORT = re.compile(r"^import\s*\{([^}]*)\}\s*from\s*[\"']\./([\w.-]+\.js)[\"'];?[ \t]*$", re.M)
# a default import of vendored code (markdown.js: `import markdownit from "../vendor/..."`)
_IMPORT_DEFAULT = re.compile(
    r"^import\s+([A-Za-z_$][\w$]*)\s+from\s*[\"'](\.\./vendor/[\w./-]+\.js)[\"'];?[ \t]*$", re.M
)
_IMPORT_ANY = re.compile(r"^import\b.*$", re.M)
_EXPORT_DECL = re.compile(r"^export\s+((?:async\s+)?function\*?|const|let|var|class)\s+([A-Za-z_$][\w$]*)", re.M)
_EXPORT_LIST = re.compile(r"^export\s*\{([^}]*)\};?[ \t]*$", re.M)


class BundleError(HuddleError, RuntimeError):
    """huddle's own pages could not be bundled into one file (a bug in huddle)."""


def _module(name: str) -> str:
    with open(os.path.join(STATIC, "js", name), encoding="utf-8") as f:
        return f.read()


def _deps(src: str) -> list[str]:
    return [m.group(2) for m in _IMPORT.finditer(src)] + [m.group(2) for m in _IMPORT_DEFAULT.finditer(src)]


def _order(entry: str) -> list[str]:
    """Modules in dependency order (each after what it imports)."""
    out: list[str] = []
    seen: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            raise BundleError(f"import cycle: {' -> '.join(path + (name,))}")
        if name in seen:
            return
        for dep in _deps(_module(name)):
            visit(dep, path + (name,))
        seen.add(name)
        out.append(name)

    visit(entry, ())
    return out


def _transform(name: str, src: str) -> str:
    names: list[str] = []
    src = _IMPORT.sub(lambda m: _named_import(m, name), src)
    src = _IMPORT_DEFAULT.sub(lambda m: f"const {m.group(1)} = __m[{name_js(m.group(2))}].default;", src)
    left = _IMPORT_ANY.search(src)
    if left:
        raise BundleError(f"{name}: an import the bundler does not know: {left.group(0)[:80]}")

    def decl(m: re.Match[str]) -> str:
        names.append(m.group(2))
        return f"{m.group(1)} {m.group(2)}"

    src = _EXPORT_DECL.sub(decl, src)
    src = _EXPORT_LIST.sub(lambda m: _export_list(m, names), src)
    if re.search(r"^export\b", src, re.M):
        raise BundleError(f"{name}: an export the bundler does not know")
    return f'__m[{name_js(name)}] = (() => {{\n"use strict";\n{src}\nreturn {{ {", ".join(names)} }};\n}})();\n'


def _named_import(m: re.Match[str], name: str) -> str:
    """`import { a, b as c } from "./x.js"`, as a module of the bundle takes them."""
    parts = []
    for item in m.group(1).split(","):
        item = item.strip()
        if not item:
            continue
        if " as " in item:
            a, b = (x.strip() for x in item.split(" as "))
            parts.append(f"{a}: {b}")
        else:
            parts.append(item)
    return f"const {{ {', '.join(parts)} }} = __m[{name_js(m.group(2))}];"


def _export_list(m: re.Match[str], names: list[str]) -> str:
    """`export { a, vr as default }`: the names the module's scope returns."""
    for x in m.group(1).split(","):
        local, _, public = (p.strip() for p in x.partition(" as "))
        if local:
            names.append(f"{public}: {local}" if public else local)  # `vr as default`: default: vr
    return ""


def name_js(s: str) -> str:
    return msgspec.json.encode(s).decode()


@functools.lru_cache(maxsize=1)
def bundle() -> str:
    """The export page's script: its modules, each in its own scope."""
    body = "".join(f"// --- {n}\n{_transform(n, _module(n))}" for n in _order(ENTRY))
    return "(() => {\nconst __m = {};\n" + body + "})();\n"


@functools.lru_cache(maxsize=1)
def styles() -> str:
    out = []
    for name in STYLES:
        with open(os.path.join(STATIC, "css", name), encoding="utf-8") as f:
            out.append(f.read())
    # the pages' logo is the favicon route: the export has no server
    return "\n".join(out).replace('url("/favicon.ico")', "none")


def _hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def pack(data: dict) -> str:
    """The data as it sits in the page: JSON, gzip, base64."""
    raw = msgspec.json.encode(data)
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


def unpack(blob: str) -> dict:
    """The inverse of `pack` (tests read exports back with it)."""
    out = msgspec.json.decode(gzip.decompress(base64.b64decode(blob)))
    assert isinstance(out, dict)
    return out


def _agents() -> str:
    """The agents' names (the one table, sources.registry.displays) for a page that may
    connect nowhere: JSON with no `<` in it, so it cannot end its element."""
    from huddle.sources.registry import displays

    return json.dumps({"agents": displays()}, ensure_ascii=True).replace("<", "\\u003c")


def page(data: dict) -> bytes:
    """The whole HTML file for an export's data (already redacted)."""
    script = bundle()
    style = styles()
    csp = (
        f"default-src 'none'; script-src '{_hash(script)}'; style-src '{_hash(style)}'; "
        "img-src data:; connect-src 'none'; font-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'"
    )
    title = html.escape(f"{data['session'].get('title') or data['session']['id']} · huddle export", quote=True)
    return (
        "<!doctype html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(csp, quote=True)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{title}</title>\n"
        f"<style>{style}</style>\n"
        "</head>\n"
        '<body class="page-session page-export">\n'
        '<main id="app"><p class="muted">Opening the export…</p></main>\n'
        '<noscript><p class="error-box">This export needs JavaScript to show the session.</p></noscript>\n'
        f'<script type="application/octet-stream" id="huddle-data">{pack(data)}</script>\n'
        f'<script type="application/json" id="huddle-agents">{_agents()}</script>\n'
        f"<script>{script}</script>\n"
        "</body>\n</html>\n"
    ).encode()
