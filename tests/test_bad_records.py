"""Issue 11's single bad records, each as it was found, each followed by a valid record
that must be read (the fuzz properties try such records at random; these stay fixed):
a Vibe journal record numbered 2^63, hosted `usage` that is no object, a Codex record
whose typed decode fails after it parsed, a line nested too deep for any decoder."""

from __future__ import annotations

import json
import shutil
import uuid

import pytest

import faults
from huddle.core import Huddle


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad-records") / "world"
    faults.build_world(root)
    return root


def _append_then_canary(world, tmp_path, name: str, bad: list[bytes]) -> tuple[Huddle, Huddle, str]:
    root = tmp_path / "w"
    shutil.copytree(world, root, symlinks=True)
    t = faults.targets(root)[name]
    cfg = faults.settings_of(root)
    live = Huddle(cfg, sources=[t.source])
    live.refresh()
    marker = f"canary-{uuid.uuid4().hex[:8]}"
    block = b"".join(x + b"\n" for x in bad)
    faults.append(t, [*bad, faults.canary_record(t, marker, after=block)])  # (rows: a database's parts)
    live.refresh()
    cold = Huddle(cfg, sources=[t.source])
    cold.refresh()
    return live, cold, marker


def _read(h: Huddle, marker: str) -> bool:
    return any(marker in (e.text or "") for s in h.sessions() for e in s.events)


def _errors(h: Huddle) -> list[str]:
    return [s.error for s in h.sessions() if s.error]


def test_a_vibe_journal_record_numbered_2_63_is_one_bad_record(world, tmp_path):
    t = faults.targets(world)["vibe.journal"]
    rec = json.loads(faults.canary_record(t, "huge"))
    rec["sequence"] = 2**63
    live, cold, marker = _append_then_canary(world, tmp_path, "vibe.journal", [json.dumps(rec).encode()])
    for h in (live, cold):
        assert not _errors(h)
        assert _read(h, marker), "the records after a sequence of 2^63 were 'out of order'"


@pytest.mark.parametrize("usage", ["x", [1, 2], 5, None, {"input_tokens": "many"}])
def test_hosted_usage_that_is_no_object_costs_its_line(world, tmp_path, usage):
    t = faults.targets(world)["hosted.events"]
    recs = [json.loads(x) for x in t.path.read_bytes().splitlines()]
    seq = max(r["seq"] for r in recs) + 1
    bad = [
        {
            "seq": seq,
            "t": recs[-1]["t"],
            "kind": "stdout",
            "json": {"type": "result", "subtype": "success", "usage": usage},
        },
        {
            "seq": seq + 1,
            "t": recs[-1]["t"],
            "kind": "stdout",
            "json": {
                "type": "assistant",
                "message": {"id": "m-odd", "role": "assistant", "content": [], "usage": usage},
            },
        },
    ]
    live, cold, marker = _append_then_canary(world, tmp_path, "hosted.events", [json.dumps(b).encode() for b in bad])
    for h in (live, cold):
        assert not _errors(h)
        assert _read(h, marker)


@pytest.mark.parametrize(
    "payload",
    [
        {"type": "message", "role": "assistant", "content": "a string, not parts"},
        {"type": "reasoning", "summary": "a string, not parts"},
        {"type": "function_call", "name": 5, "arguments": [1], "call_id": {"x": 1}},
        {"type": "token_count", "info": "none"},
    ],
)
def test_a_codex_record_whose_typed_decode_fails_costs_its_line(world, tmp_path, payload):
    t = faults.targets(world)["codex.lead"]
    base = json.loads(faults.canary_record(t, "x"))
    bad = [
        json.dumps({"timestamp": base["timestamp"], "type": kind, "payload": payload}).encode()
        for kind in ("response_item", "event_msg")
    ]
    live, cold, marker = _append_then_canary(world, tmp_path, "codex.lead", bad)
    for h in (live, cold):
        assert not _errors(h)
        assert _read(h, marker)


@pytest.mark.parametrize("name", faults.FUZZ_TARGETS)
def test_a_line_nested_100000_deep_is_one_bad_line(world, tmp_path, name):
    deep = b'{"type":"user","x":' + b'{"a":' * 100_000 + b"1" + b"}" * 100_001
    live, cold, marker = _append_then_canary(world, tmp_path, name, [deep])
    for h in (live, cold):
        assert not _errors(h)
        assert _read(h, marker) or any(marker in (s.title or "") for s in h.sessions())
        said = [p for s in h.sessions() for p in s.problems if "nested too deep" in p]
        assert len(said) == 1, said
