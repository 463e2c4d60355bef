"""Every line reader against mutated records (bits flipped, cut short, a field of
another type, every field an odd value, nested too deep), each followed by a valid
canary record that must be read: a bad line costs its line, never the session,
live (read incrementally) or cold. bench/bench_faults.py --fuzz runs 100,000 records
per reader for the figures."""

from __future__ import annotations

import json
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import faults
from huddle.core import Huddle


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz") / "world"
    faults.build_world(root)
    return root


def _state(h: Huddle) -> dict:
    with h.lock:
        return {
            s.key: {
                "counts": dict(s.counts),
                "error": s.error,
                "title": s.title,
                "texts": [e.text or "" for e in s.events],
            }
            for s in h.sessions()
        }


@pytest.mark.parametrize("name", faults.FUZZ_TARGETS)
def test_a_mutated_record_costs_its_line_and_the_canary_after_it_is_read(world, name, tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz-" + name) / "w"
    shutil.copytree(world, root, symlinks=True)
    t = faults.targets(root)[name]
    original = faults.snapshot_of(t)
    cfg = faults.settings_of(root)
    template = faults.template_record(t)

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(rnd=st.randoms(use_true_random=False), n=st.integers(min_value=1, max_value=4))
    def check(rnd, n):
        faults.reset(t, original)  # a new file each time (new inode): read from the start
        live = Huddle(cfg, sources=[t.source])
        live.refresh()
        before = _state(live)
        records = [faults.mutate(template, rnd) for _ in range(n)]
        bad = b"".join(r + b"\n" for r in records)
        marker = f"canary-{rnd.randrange(1 << 30)}"
        faults.append(t, [*records, faults.canary_record(t, marker, after=bad)])
        live.refresh()
        cold = Huddle(cfg, sources=[t.source])
        cold.refresh()
        for where, h in (("live", live), ("cold", cold)):
            after = _state(h)
            assert set(after) == set(before), f"{where}: sessions came or went"
            for key, s in after.items():
                assert s["error"] is None, f"{where}: {s['error']}"
                old = before[key]
                assert all(s["counts"].get(k, 0) >= v for k, v in old["counts"].items()), f"{where}: events lost"
            seen = any(marker in x for s in after.values() for x in [*s["texts"], s["title"]])
            assert seen, f"{where}: the canary after {json.dumps(bad[:200].decode('utf-8', 'replace'))} was not read"

    check()
