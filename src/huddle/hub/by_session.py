"""`huddle usage --hub --by session`: a line per session, tens of thousands of them on a
team's hub, each said straight from its summed row (no usage.report.Line per session):
the dict Line.to_dict gives, field for field, in the local report's order."""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator
from contextlib import contextmanager
from operator import itemgetter
from typing import Any

from huddle.model.times import iso
from huddle.usage.report import Line

from .report import WIDTH


@contextmanager
def no_cycles() -> Iterator[None]:
    """The cycle collector paused while the report is read and built: its 50,000 rows,
    lists and dicts (none in a cycle) set it off again and again, a third of the time.
    After, what was made goes to the oldest generation as it is (freeze, then unfreeze:
    no walk), or the first young collection would walk all 150,000 (0.1 s). Garbage
    made meanwhile, if any, waits for the next full collection. (Not when something is
    frozen for good already, as a one-answer process's store is: it stays so.)"""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if not gc.get_freeze_count():
            gc.freeze()
            gc.unfreeze()
        if was:
            gc.enable()


def cost_of(hi: Any, lo: Any) -> float:
    """math.fsum(sums.exact_cost(hi, lo)): the exact hi * 2**-40 + lo * 2**-100 rounded
    once (a Python int converts to its nearest double; the power of two then scales it
    exactly: the least part is 2**-100, far above the subnormals)."""
    return math.ldexp(float((int(hi) << 60) + int(lo)), -100)


def _names(models: list[str] | None) -> list[str]:
    """A line's models (each once: grouped so) in Python's order."""
    if models is None:
        return []
    return models if len(models) < 2 else sorted(models)


def _row(row: tuple) -> tuple[tuple, dict]:
    _, key, _, _, _, n, i, o, cr, cw, cw1h, first, priced, _, hi, lo, k, sid, title, project, started, source = row[:22]
    if type(n) is not int:  # (numerics: the sums of a report over some days)
        n, i, o, cr, cw, cw1h = (int(v or 0) for v in (n, i, o, cr, cw, cw1h))
    d: dict[str, Any] = {
        "key": key,
        "source": source,
        "title": title,
        "project": project,
        "started_at": iso(started),
        "session": sid,
        "input": i,
        "output": o,
        "cache_read": cr,
        "cache_write": cw,
    }
    if cw1h:
        d["cache_write_1h"] = cw1h
    d["total_tokens"] = i + o + cr + cw
    d["cost_usd"] = round(cost_of(hi, lo), 6) if priced else (None if row[WIDTH + 18] else 0.0)
    d["unpriced"] = _names(row[WIDTH + 18])
    d["models"] = _names(row[WIDTH + 17])
    d["responses"] = n
    d["sessions"] = int(k or 0)
    return (first is None, first or 0.0, key), d


def rows(plain: list[tuple], lines: dict[str, Line]) -> list[dict]:
    """The report's rows: the plain lines said from their rows, the others (a session the
    rows added to) from their Line; ordered as usage.report orders sessions."""
    out = [_row(r) for r in plain]
    for key, line in lines.items():
        out.append(((line.first is None, line.first or 0.0, key), {"key": key, **line.info, **line.to_dict()}))
    out.sort(key=itemgetter(0))
    return [d for _, d in out]
