"""What huddle.session_lines and huddle.model_sums (hub/lines.py) must hold, said in
Python from the session_sums beside them: each session's line (its sums, its models in
Python's order, its unpriced models with their tokens) and the hub's sums per model and
source."""

from __future__ import annotations

SUMS = "n, input, output, cache_read, cache_write, cache_write_1h"


def _rows(conn, sql: str) -> list[tuple]:
    got = conn.execute(sql).fetchall()
    conn.commit()
    return got


def lines_again(conn) -> dict[str, tuple]:
    out: dict[str, list] = {}
    for key, model, *v in _rows(
        conn, f"SELECT session_key, model, {SUMS}, first_t, priced, odd, hi, lo FROM huddle.session_sums"
    ):
        sums, first, priced, odd, hi, lo = v[:6], v[6], v[7], v[8], v[9], v[10]
        line = out.setdefault(key, [[0] * 6, None, 0, 0, 0, 0, {}, {}])
        line[0] = [a + b for a, b in zip(line[0], sums, strict=True)]
        line[1] = first if line[1] is None or (first is not None and first < line[1]) else line[1]
        line[2] += priced
        line[3] += odd
        line[4] += hi
        line[5] += lo
        line[6][model] = line[6].get(model, 0) + priced
        line[7][model] = line[7].get(model, 0) + sum(sums[1:5])
    said = {}
    for key, (sums, first, priced, odd, hi, lo, models, tokens) in out.items():
        unpriced = sorted(m for m, p in models.items() if p == 0)
        said[key] = (
            *sums, first, priced, odd, hi, lo, sorted(models),
            unpriced or None, [tokens[m] for m in unpriced] or None,
        )  # fmt: skip
    return said


def model_sums_again(conn) -> list[tuple]:
    return _rows(
        conn,
        f"SELECT model, source, {', '.join(f'sum({c})' for c in SUMS.split(', '))}, sum(priced), sum(odd),"
        " sum(hi), sum(lo) FROM huddle.session_sums GROUP BY 1, 2 ORDER BY 1, 2",
    )


def assert_lines_kept(conn) -> None:
    kept = {
        key: tuple(rest)
        for key, *rest in _rows(
            conn,
            f"SELECT session_key, {SUMS}, first_t, priced, odd, hi, lo, models, unpriced, unpriced_tokens"
            " FROM huddle.session_lines",
        )
    }
    assert kept and kept == lines_again(conn)
    totals = _rows(conn, f"SELECT model, source, {SUMS}, priced, odd, hi, lo FROM huddle.model_sums ORDER BY 1, 2")
    assert totals == model_sums_again(conn)
