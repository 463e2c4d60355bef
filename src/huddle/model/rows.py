"""The board's rows as typed structs: a session's summary (`Summary`), its board row
(`Row`: the summary with its state, cost and what the keeper needs) and each agent in
it (`AgentRow`). `huddle status --json`, `GET /api/sessions` and the pages read these
fields; views build them, the live watcher, the notifier, the hub's pusher, the
telemetry export and the CLI read them by attribute, never by key.

A field left `UNSET` is left out of the JSON, as the board always did with what it does
not know (`error`, `pid`, `resume`...); a field with no default is always said, null or
not. Stores keep rows as bytes (the keeper's JSON, the status line's board file, the
hub's jsonb): `decode` and `plain` are the one seam between the two.
"""

from __future__ import annotations

import types
from typing import Any, TypeVar, get_args, get_origin

import msgspec
from msgspec import UNSET, UnsetType


class Tokens(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Token counts, once per model response: model.events.Usage as a row says it (its
    four counts always, zeros too)."""

    input: int
    output: int
    cache_read: int
    cache_write: int
    cache_write_1h: int = 0  # the part of cache_write kept for an hour: said only when some was

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write


class Cost(msgspec.Struct, kw_only=True):
    """A session's cost at the current prices: `usd` None when nothing in it is priced."""

    usd: float | None
    unpriced: list[str] = msgspec.field(default_factory=list)


class AgentRow(msgspec.Struct, kw_only=True):
    """One agent of a row: the lead or a sub-agent, with its own state once decided."""

    id: str
    parent: str | None
    name: str
    label: str
    type: str
    tool_use_id: str | None
    usage: Tokens
    quiet: bool
    state: str | UnsetType = UNSET
    state_since: str | UnsetType | None = UNSET
    waiting_for: str | UnsetType | None = UNSET
    urgency: int | UnsetType = UNSET
    doing: str | UnsetType = UNSET
    next_change: str | UnsetType = UNSET
    guess: str | UnsetType = UNSET


class Summary(msgspec.Struct, kw_only=True):
    """A session as the board lists it, before any state (model.session.Session.summary)."""

    id: str
    source: str
    title: str | None
    cwd: str | None
    project: str
    started_at: str | None
    updated_at: str | None
    usage: Tokens
    models: dict[str, Tokens]
    agents: list[AgentRow]
    events: dict[str, int]
    skipped_lines: int
    continues: str | UnsetType = UNSET
    parent_session: str | UnsetType = UNSET
    usage_note: str | UnsetType = UNSET
    usage_unknown: bool | UnsetType = UNSET
    archived: bool | UnsetType = UNSET
    times_estimated: bool | UnsetType = UNSET
    error: str | UnsetType = UNSET


class Row(Summary, kw_only=True):
    """One board row: the summary, its tokens and cost, the state the rules decided
    (model.attention) with each agent's, and what a user can do with it."""

    tokens: int = 0
    cost: Cost = msgspec.field(default_factory=lambda: Cost(usd=None))
    resume: str | UnsetType = UNSET  # the agent's own command to carry it on
    state: str = ""
    state_since: str | None = None
    waiting_for: str | None = None
    urgency: int = 0
    doing: str | UnsetType = UNSET
    next_change: str | UnsetType = UNSET  # when time alone moves the state
    guess: str | UnsetType = UNSET  # why the state is a guess
    background: list[str] = msgspec.field(default_factory=list)
    pid: int | UnsetType = UNSET
    answer: Any = UNSET  # a hosted run's pending question or approval (huddle.answer)
    empty: bool | UnsetType = UNSET  # nothing said or done: off the board

    @property
    def key(self) -> str:
        return f"{self.source}:{self.id}"

    @property
    def listed(self) -> bool:
        """Whether the board shows it: a session with no conversation is not."""
        return not self.empty


class HubRow(Row, kw_only=True):
    """A row as a team hub says it (huddle.hub.read): the machine that pushed it, every
    machine holding a copy, when it was pushed, and whether its machine went quiet."""

    machine: str | None = None
    machines: list[str] = msgspec.field(default_factory=list)
    pushed_at: str | None = None
    stale: bool | UnsetType = UNSET


class Board(msgspec.Struct, kw_only=True):
    """A board as `huddle status --json` says it, rows typed (what the CLI reads back
    from a stored answer)."""

    sessions: list[Row]
    notes: list[str] | UnsetType = UNSET
    files: dict[str, Any] | UnsetType = UNSET


def board_of(raw: bytes | bytearray | memoryview | str) -> dict[str, Any]:
    """A board's JSON read back as the views give it: a dict of typed rows."""
    b = msgspec.json.decode(raw, type=Board)
    out: dict[str, Any] = {"sessions": b.sessions}
    if b.notes is not UNSET:
        out["notes"] = b.notes
    if b.files is not UNSET:
        out["files"] = b.files
    return out


class Kept(msgspec.Struct, kw_only=True):
    """A sleeping session's row as its brief (what sorts and lists it, what the status
    line's board file shows: views.board.brief_of, kept in the session's head by
    core.cache), with the row's JSON as kept (`json`): a board said as JSON says it as it
    stands (views.said), never decoded to be encoded again."""

    id: str = ""
    source: str = ""
    title: str | None = None
    project: str = ""
    state: str = ""
    state_since: str | None = None
    waiting_for: str | None = None
    updated_at: str | None = None
    tokens: int = 0
    cost: Cost = msgspec.field(default_factory=lambda: Cost(usd=None))
    background: bool = False
    empty: bool | UnsetType = UNSET
    pid: int | UnsetType = UNSET
    still: bool = False  # time alone cannot move it (core.modes)
    process: bool = False  # it names a process, which may go (core.answering)
    json: Any = None  # the row's JSON as kept (bytes or a view of them), as a board says it

    @property
    def key(self) -> str:
        return f"{self.source}:{self.id}"


def kept(brief: Any, json: Any) -> Kept | None:
    """A row kept as its brief and JSON; None when the brief is not one (an older store)."""
    try:
        out = msgspec.convert(brief, Kept)
    except (msgspec.ValidationError, TypeError):
        return None
    out.json = json
    return out


_decoder = msgspec.json.Decoder(Row)


def decode(raw: bytes | memoryview | str) -> Row:
    """A row from its JSON (a store's bytes, an API answer's). Raises msgspec's
    ValidationError/DecodeError on what is not a row."""
    return _decoder.decode(raw)


def as_row(value: Any) -> Row:
    """A row as given by a store (a Row, or its plain values decoded). Raises msgspec's
    ValidationError on what is not a row."""
    return value if isinstance(value, Row) else msgspec.convert(value, Row)


T = TypeVar("T", bound=msgspec.Struct)


def fitted(value: dict[str, Any], kind: type[T]) -> T:
    """A row another program wrote (another machine's huddle, another version, a hub
    role's narrowed view) as `kind`: a null where the field takes none is left out, a
    field it lacks is blank (nothing, zero, empty), nested rows alike. Raises msgspec's
    ValidationError where a value is of another type (views take what comes typed)."""
    return msgspec.convert(_fit(value, kind), kind)


def _fit(value: Any, kind: Any) -> Any:
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        if not isinstance(value, dict):
            return value  # (convert says what it is)
        out: dict[str, Any] = {}
        for f in msgspec.structs.fields(kind):
            v = value.get(f.encode_name)
            if v is None and (f.encode_name not in value or not _takes_none(f.type)):
                if f.required:
                    out[f.encode_name] = _fit({}, f.type) if _is_struct(f.type) else _blank(f.type)
                continue
            out[f.encode_name] = _fit(v, f.type)
        return out
    origin, args = get_origin(kind), get_args(kind)
    if origin is list and args and _is_struct(args[0]) and isinstance(value, list):
        return [_fit(x, args[0]) for x in value]
    if origin is dict and len(args) == 2 and _is_struct(args[1]) and isinstance(value, dict):
        return {k: _fit(x, args[1]) for k, x in value.items()}
    return value


def _is_struct(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, msgspec.Struct)


def _takes_none(kind: Any) -> bool:
    return kind is Any or type(None) in get_args(kind)


def _blank(kind: Any) -> Any:
    base = get_origin(kind) or kind
    if base is types.UnionType:
        return None if _takes_none(kind) else _blank(get_args(kind)[0])
    return {str: "", int: 0, float: 0.0, bool: False, list: [], dict: {}}.get(base)


def plain(row: Row | Kept) -> dict[str, Any]:
    """A row as plain values (what a store of plain values keeps: the board file's
    marshal, a hub's jsonb), UNSET fields left out; a kept row as its brief."""
    if isinstance(row, Kept):
        json, row.json = row.json, None
        try:
            brief: dict[str, Any] = msgspec.to_builtins(row)
        finally:
            row.json = json
        del brief["json"]
        return brief
    out: dict[str, Any] = msgspec.to_builtins(row)
    return out
