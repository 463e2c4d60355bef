"""The fault matrix (tests/faults.py): truncate, rewrite (same size, shorter), rotate,
delete, chmod, FIFO, symlink escape and loop, deep nesting, huge numbers, far-future
times on every reader, with a running server and a cold read; then the 100 MB line and
the 2 GB sparse file (slow, still run). Each target's failures are listed one a line."""

from __future__ import annotations

import pytest

import faults

SLOW = [
    ("long_line", "claude.main"),
    ("long_line", "hosted.events"),
    ("sparse", "codex.lead"),
    ("sparse", "vibe.current"),
]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("faults") / "world"
    faults.build_world(root)
    return root


@pytest.fixture(scope="module")
def outcomes(world):
    return faults.run_matrix(world, faults.cases())


def _said(failed: list[faults.Outcome]) -> str:
    return "\n".join(
        f"{o.fault} on {o.target}: {', '.join(k for k, v in o.checks.items() if not v)}: {'; '.join(o.detail)[:400]}"
        for o in failed
    )


@pytest.mark.timeout(1200)  # the first one runs the whole matrix (the module's fixture)
@pytest.mark.parametrize("target", [name for name, _kind in faults.targets_names()])
def test_every_fault_on_every_reader(outcomes, target):
    mine = [o for o in outcomes if o.target == target]
    assert mine, f"no case ran on {target}"
    failed = [o for o in mine if not o.survived]
    assert not failed, _said(failed)


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize(("fault", "target"), SLOW)
def test_a_100_mb_line_and_a_2_gb_sparse_file(world, fault, target):
    (o,) = faults.run_matrix(world, [(fault, target)], workers=1)
    assert o.survived, _said([o])
