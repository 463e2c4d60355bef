"""scripts/diff-release: how it finds homes in a folder and compares two answers (the
installs and runs themselves take minutes and the network: run the script)."""

from __future__ import annotations

import importlib.util
from importlib.machinery import SourceFileLoader
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "diff-release"
_loader = SourceFileLoader("diff_release", str(SCRIPT))
_spec = importlib.util.spec_from_loader("diff_release", _loader)
assert _spec is not None
dr = importlib.util.module_from_spec(_spec)
_loader.exec_module(dr)


def test_homes_are_found_side_by_side_and_alone(tmp_path):
    ext = tmp_path / "external"
    (ext / "label" / "claude" / "projects" / "-p").mkdir(parents=True)
    (ext / "label" / "codex" / "sessions" / "2026").mkdir(parents=True)
    (ext / "label" / "vibe" / "logs" / "session").mkdir(parents=True)
    samples = tmp_path / "samples"
    (samples / "claude" / "01-basic" / "config" / "projects").mkdir(parents=True)
    (samples / "claude" / "01-basic" / "stream").mkdir()
    (samples / "codex" / "qa" / "codex_home" / "sessions").mkdir(parents=True)
    (samples / "vibe" / "2.26.1-qa" / "logs" / "session").mkdir(parents=True)
    (samples / "gemini" / "01-qa" / "home" / ".gemini").mkdir(parents=True)
    homes = dr.find_homes([samples, ext])
    assert homes == {
        "external/label": {
            "claude": str(ext / "label" / "claude"),
            "codex": str(ext / "label" / "codex"),
            "vibe": str(ext / "label" / "vibe"),
        },
        "samples/claude/01-basic": {"claude": str(samples / "claude" / "01-basic" / "config")},
        "samples/codex/qa": {"codex": str(samples / "codex" / "qa" / "codex_home")},
        "samples/gemini/01-qa": {"home": str(samples / "gemini" / "01-qa" / "home")},
        "samples/vibe/2.26.1-qa": {"vibe": str(samples / "vibe" / "2.26.1-qa")},
    }
    # a home given itself is one home
    alone = dr.find_homes([samples / "claude" / "01-basic" / "config"])
    assert list(alone.values()) == [{"claude": str(samples / "claude" / "01-basic" / "config")}]
    env = dr.env_for(homes["external/label"], tmp_path / "hh", tmp_path / "empty")
    assert env["CLAUDE_CONFIG_DIR"].endswith("claude") and env["HOME"] == str(tmp_path / "empty")
    assert env["HUDDLE_HOME"] == str(tmp_path / "hh") and not any(k.startswith("XDG_") for k in env)


def test_answers_are_compared_leaf_by_leaf_without_their_volatile_values():
    a = {"sessions": [{"id": "s", "usage": {"output": 41}, "exported_at": "t1"}], "index": {"rows": 2, "bytes": 10}}
    b = {"sessions": [{"id": "s", "usage": {"output": 194}, "exported_at": "t2"}], "index": {"rows": 2, "bytes": 99}}
    assert dr.leaf_diffs(dr.steady(a), dr.steady(b)) == [(".sessions[0].usage.output", 41, 194)]
    routes = dr.compare({"h": {"GET /x": {"1": a, "2": {"k": 1}}}}, {"h": {"GET /x": {"1": b, "3": {"k": 1}}}})
    r = routes["GET /x"]
    assert (r["same"], r["differ"], r["only A"], r["only B"]) == (0, 1, 1, 1)
    text = dr.report("a", "b", {"h": {}}, routes, show=3)
    assert ".sessions[0].usage.output: 41 -> 194" in text
