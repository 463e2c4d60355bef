"""The layers, as the imports draw them (docs/architecture.md): one arrow direction,
no cycle, the standard-library islands kept so, modules small.

Read from the source with `ast` (every import but those under `if TYPE_CHECKING:`,
function-local ones included: a cycle through a function is still a cycle)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
MAX_LINES = 450  # "aim under ~400": a module past this wants splitting
# Over the limit for now, each with the issue that owns it (remove the entry once split).
TOO_LONG_FOR_NOW: dict[str, str] = {}


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for p in SRC.rglob("*.py"):
        parts = list(p.relative_to(SRC).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (p, is_pkg)
    return out


MODULES = _modules()


def _type_only(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            t = node.test
            if (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
                isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
            ):
                skip.update(id(sub) for sub in ast.walk(node))
    return skip


def imports(name: str) -> set[str]:
    """Every module `name` imports (top-level package names for third-party ones)."""
    path, is_pkg = MODULES[name]
    tree = ast.parse(path.read_text())
    pkg = name if is_pkg else name.rsplit(".", 1)[0]
    skip = _type_only(tree)
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in MODULES]
            if len(subs) < len(node.names):
                out.add(mod)  # `from . import x` names submodules only: not the package's __init__
            out.update(subs)
    out.discard("__future__")
    return out


GRAPH = {m: imports(m) for m in MODULES}


def _ours(deps: set[str]) -> set[str]:
    return {d for d in deps if d in MODULES}


def _third_party(deps: set[str]) -> set[str]:
    return {d for d in deps if d.split(".")[0] != "huddle" and d.split(".")[0] not in sys.stdlib_module_names}


def layer(m: str) -> str:
    """huddle.io.reader -> io; a top-level module is its own (huddle.demo -> demo)."""
    parts = m.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_no_import_cycle():
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in _ours(GRAPH[v]) - {v}:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert cycles == []


def _edges(src_layer: str) -> list[tuple[str, str]]:
    return [(m, d) for m in sorted(GRAPH) if layer(m) == src_layer for d in sorted(_ours(GRAPH[m]))]


def test_the_model_imports_nothing_above_it():
    assert [(m, d) for m, d in _edges("model") if layer(d) != "model"] == []


def test_the_rule_tables_import_nothing_at_all():
    # the status line may import them: no huddle module, no third-party one
    for m in ("huddle.model", "huddle.model.attention", "huddle.model.tools"):
        assert _ours(GRAPH[m]) == set() and _third_party(GRAPH[m]) == set(), m


def test_io_is_standard_library_only():
    assert [(m, d) for m, d in _edges("io") if layer(d) != "io"] == []
    assert {m: _third_party(GRAPH[m]) for m in GRAPH if layer(m) == "io" and _third_party(GRAPH[m])} == {}


def test_the_status_line_is_standard_library_only():
    allowed = {"huddle.model", "huddle.model.attention"}
    assert [(m, d) for m, d in _edges("statusline") if layer(d) not in ("io", "statusline") and d not in allowed] == []
    assert {m: _third_party(GRAPH[m]) for m in GRAPH if layer(m) == "statusline" and _third_party(GRAPH[m])} == {}


def test_no_source_imports_a_view_the_core_or_a_client():
    above = ("views", "core", "server", "cli", "statusline", "demo", "entry", "refresh")
    assert [(m, d) for m, d in _edges("sources") if layer(d) in above] == []


def test_the_core_imports_no_view_and_the_views_no_client():
    assert [(m, d) for m, d in _edges("core") if layer(d) in ("views", "server", "cli")] == []
    assert [(m, d) for m, d in _edges("views") if layer(d) in ("server", "cli", "statusline")] == []


def test_modules_stay_small():
    long = {}
    for m, (path, _) in MODULES.items():
        n = len(path.read_text().splitlines())
        if n > MAX_LINES and m not in TOO_LONG_FOR_NOW:
            long[m] = n
    assert long == {}


# The packages, lowest first: a module imports only from its own layer or one below it.
# (The top-level `huddle` package holds the version alone.)
LAYERS = [
    "",
    "errors",
    "model",
    "io",
    "cost",
    "redact",
    "optin",
    "voice",
    "sources",
    "core",
    "search",
    "usage",
    "views",
    "stored",
    "translate",
    "answer",
    "host",
    "live",
    "oneshot",
    "refresh",
    "hub",
    "demo",
    "server",
    "otel",
    "statusline",
    "cli",
    "entry",
    "__main__",
]
# Imports that still run up a layer, each with why (remove an entry once its piece moves
# down; an edge not listed fails, and so does an entry no import needs any more).
BACK_EDGES_FOR_NOW = {
    ("huddle.usage.own", "huddle.translate.store"): "huddle's own model calls, as translate's store keeps them",
    ("huddle.answer.session", "huddle.host.client"): "an answer to a hosted run goes through the host's socket",
}


def test_every_package_has_its_layer():
    assert {layer(m) for m in MODULES} - set(LAYERS) == set()


def test_the_layers_hold():
    rank = {name: i for i, name in enumerate(LAYERS)}
    up = {(m, d) for m in GRAPH for d in _ours(GRAPH[m]) if rank[layer(d)] > rank[layer(m)]}
    # (the edges the layers were drawn to end: a source reading the host's runs, the
    # search index reading a record's pieces through a view)
    assert ("huddle.sources.hosted.source", "huddle.host.paths") not in up
    assert ("huddle.search.index", "huddle.views.content") not in up
    assert sorted(up - set(BACK_EDGES_FOR_NOW)) == []
    assert sorted(set(BACK_EDGES_FOR_NOW) - up) == []
