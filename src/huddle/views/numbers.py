"""Numbers in a few characters, for the terminal table and the exports alike."""

from __future__ import annotations


def short_tokens(n: int) -> str:
    """12, 31.1k, 1.25M."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.2f}M"
