"""The fault matrix (tests/faults.py): truncate, rewrite (same size, shorter), rotate,
delete, chmod, FIFO, symlink escape and loop, deep nesting, huge numbers, far-future
times on every reader, with a running server and a cold read; then the 100 MB line and
the 2 GB sparse file. Each target's failures are listed one a line.

The default suite runs one case per reader (a far-future time and huge numbers in its
first file, then a record that must still be read, the CLI too); the whole matrix and
the very large files are the `slow` set, which CI runs after the default suite
(`pytest -m slow`)."""

from __future__ import annotations

import pytest

import faults

SLOW = [
    ("long_line", "claude.main"),
    ("long_line", "hosted.events"),
    ("sparse", "codex.lead"),
    ("sparse", "vibe.current"),
]


def _one_per_reader() -> list[tuple[str, str]]:
    """Each reader's first file of lines (else its first side file, else its database's
    rows: Kilo's), with a content fault the `huddle status --json` CLI runs on too
    (faults.CLI_FAULTS)."""
    out: dict[str, tuple[str, str]] = {}
    for kind in ("lines", "side", "rows"):
        for name, k in faults.targets_names():
            if k == kind:
                out.setdefault(name.split(".")[0], (faults.CLI_FAULTS[0], name))
    return list(out.values())


ONE_PER_READER = _one_per_reader()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("faults") / "world"
    faults.build_world(root)
    return root


@pytest.fixture(scope="module")
def outcomes(world):
    return faults.run_matrix(world, faults.cases())


@pytest.fixture(scope="module")
def fast_outcomes(world):
    return faults.run_matrix(world, ONE_PER_READER)


def _said(failed: list[faults.Outcome]) -> str:
    return "\n".join(
        f"{o.fault} on {o.target}: {', '.join(k for k, v in o.checks.items() if not v)}: {'; '.join(o.detail)[:400]}"
        for o in failed
    )


@pytest.mark.timeout(600)  # the first one runs the cases (the module's fixture)
@pytest.mark.parametrize(("fault", "target"), ONE_PER_READER)
def test_a_fault_on_each_reader(fast_outcomes, fault, target):
    (o,) = [o for o in fast_outcomes if (o.fault, o.target) == (fault, target)]
    assert o.survived, _said([o])


def test_every_reader_has_its_fast_case():
    readers = {name.split(".")[0] for name, _kind in faults.targets_names()}
    assert {t.split(".")[0] for _f, t in ONE_PER_READER} == readers


@pytest.mark.slow
@pytest.mark.timeout(1200)  # the first one runs the whole matrix (the module's fixture)
@pytest.mark.parametrize("target", [name for name, _kind in faults.targets_names()])
def test_every_fault_on_every_reader(outcomes, target):
    mine = [o for o in outcomes if o.target == target]
    assert mine, f"no case ran on {target}"
    failed = [o for o in mine if not o.survived]
    assert not failed, _said(failed)


SIDE = [name for name, kind in faults.targets_names() if kind == "side"]


@pytest.fixture(scope="module")
def sparse_outcomes(world):
    return faults.run_matrix(world, [("sparse", name) for name in SIDE])


@pytest.mark.slow
@pytest.mark.timeout(900)  # the first one runs them all (the module's fixture)
@pytest.mark.parametrize("target", SIDE)
def test_a_2_gb_sparse_side_file_is_said_and_costs_nothing_else(sparse_outcomes, target):
    """A registry entry, a meta, a project root grown to 2 GB: never read whole, said in
    one line while it stays so (a size cap with no cap remembered was forgotten at once)."""
    (o,) = [o for o in sparse_outcomes if o.target == target]
    assert o.survived, _said([o])


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize(("fault", "target"), SLOW)
def test_a_100_mb_line_and_a_2_gb_sparse_file(world, fault, target):
    (o,) = faults.run_matrix(world, [(fault, target)], workers=1)
    assert o.survived, _said([o])
