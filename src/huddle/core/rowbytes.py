"""A row as a store's entry keeps it (core.store): marshalled, or as its JSON when a view
says it as it is kept, so it is said without being decoded."""

from __future__ import annotations

import marshal
from typing import Any

from .store import _loads

JSON = b"J"  # the first byte of a row kept as its JSON (else it is marshalled)


def dumps(row: Any, as_json: bool = False) -> bytes | None:
    """A row as an entry keeps it (None: no row): marshalled, or `as_json` (a row said as
    JSON as it is kept: `json_of`), marshalled still if JSON cannot say it."""
    if row is None:
        return None
    if as_json:
        import msgspec

        try:
            return JSON + msgspec.json.encode(row)
        except (TypeError, msgspec.EncodeError):
            pass
    return marshal.dumps(row)


def loads(raw: bytes | None) -> Any:
    """A row as `dumps` kept it (its checksum held when it was read)."""
    if raw is None:
        return None
    if raw[:1] == JSON:
        import msgspec

        try:
            return msgspec.json.decode(memoryview(raw)[1:])
        except msgspec.DecodeError:
            return None
    return _loads(raw)


def json_of(raw: bytes) -> bytes | memoryview:
    """A row's JSON (compact, as msgspec encodes it), without decoding it if kept so."""
    if raw[:1] == JSON:
        return memoryview(raw)[1:]
    import msgspec

    return msgspec.json.encode(_loads(raw))
