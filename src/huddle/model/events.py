"""The event model: one typed list of what happened, whatever agent wrote it.

Every source adapter turns its own files into these events. Everything above the
source layer (sessions, states, board, views) reads only these.

An event stays small: heavy content (a 5 MB tool output, an image) is not kept,
only where it lives (`file`, `offset`, `length`), so it can be read back on demand.
"""

from __future__ import annotations

import msgspec

# Kinds. Strings rather than an enum: they go straight to JSON and to the web app.
PROMPT = "prompt"  # typed by the human
SAY = "say"  # agent text
THINK = "think"  # agent reasoning
TOOL_CALL = "tool_call"  # name, id, short input summary
TOOL_RESULT = "tool_result"  # call id, ok or error, output size
ORDER = "order"  # lead -> sub-agent, with its prompt
REPORT = "report"  # sub-agent -> its lead
USAGE = "usage"  # one per model response
TURN_END = "turn_end"
INTERRUPT = "interrupt"
COMPACTION = "compaction"
TITLE = "title"
WAITING = "waiting"  # waiting for you: a question or a permission prompt
RESOLVED = "resolved"  # a waiting-for-you was answered
CONTEXT = "context"  # harness text (reminders, notes, command wrappers): never the human's words
ERROR = "error"  # API error, failed turn

KINDS = (
    PROMPT,
    SAY,
    THINK,
    TOOL_CALL,
    TOOL_RESULT,
    ORDER,
    REPORT,
    USAGE,
    TURN_END,
    INTERRUPT,
    COMPACTION,
    TITLE,
    WAITING,
    RESOLVED,
    CONTEXT,
    ERROR,
)

# Longest text kept in memory per event; the rest is read back from `file`.
TEXT_KEEP = 4000

# The most tokens one record may count (a response's, or a session total a file gives
# as one): a trillion, far past any model's window. A count beyond it is no count (it
# would overflow a float price, an SQLite or PostgreSQL integer sum, an OTel int64).
COUNT_MAX = 10**12


# gc=False: events and usage hold only strings and numbers (no cycles), and a big
# session has hundreds of thousands of them; untracked, they cost the collector nothing.
class Usage(msgspec.Struct, omit_defaults=True, gc=False):
    """Tokens of one model response (or a sum of them). Same meaning for every agent:
    `input` excludes cached input, `cache_read` / `cache_write` are apart,
    `output` includes reasoning."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cache_write_1h: int = 0  # the part of cache_write kept for an hour (Claude): priced higher

    def add(self, other: Usage) -> None:
        self.input += other.input
        self.output += other.output
        self.cache_read += other.cache_read
        self.cache_write += other.cache_write
        self.cache_write_1h += other.cache_write_1h

    def sub(self, other: Usage) -> None:
        self.input -= other.input
        self.output -= other.output
        self.cache_read -= other.cache_read
        self.cache_write -= other.cache_write
        self.cache_write_1h -= other.cache_write_1h

    def largest(self, other: Usage) -> Usage:
        """Each field at its larger value: the final counts of a response whose records
        carry partial ones (Claude writes one record per block while it streams)."""
        return Usage(
            max(self.input, other.input),
            max(self.output, other.output),
            max(self.cache_read, other.cache_read),
            max(self.cache_write, other.cache_write),
            max(self.cache_write_1h, other.cache_write_1h),
        )

    def problem(self) -> str:
        """What is wrong with these counts, "" when each is an integer from 0 to
        COUNT_MAX. Checked for every source where events enter a session (a negative
        count would be a negative cost, an absurd one an overflow in every sum)."""
        a, b, c, d, e = self.input, self.output, self.cache_read, self.cache_write, self.cache_write_1h
        ints = type(a) is int and type(b) is int and type(c) is int and type(d) is int and type(e) is int
        if (
            ints
            and 0 <= a <= COUNT_MAX
            and 0 <= b <= COUNT_MAX
            and 0 <= c <= COUNT_MAX
            and 0 <= d <= COUNT_MAX >= e >= 0
        ):
            return ""  # (the common case, without a loop: checked for every response)
        for name in USAGE_FIELDS:
            v = getattr(self, name)
            if type(v) is not int or v < 0:
                return f"usage {name} is {_short(v)}, not a count"
            if v > COUNT_MAX:
                return f"usage {name} is {_short(v)}, out of range (more than {COUNT_MAX:.0e} tokens)"
        return ""

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def to_tuple(self) -> tuple[int, int, int, int, int]:
        return (self.input, self.output, self.cache_read, self.cache_write, self.cache_write_1h)

    def to_dict(self) -> dict[str, int]:
        return {
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            **({"cache_write_1h": self.cache_write_1h} if self.cache_write_1h else {}),
        }


USAGE_FIELDS = ("input", "output", "cache_read", "cache_write", "cache_write_1h")


def _short(v: object) -> str:
    """A value as a problem line shows it: a 400-digit count by its size."""
    if type(v) is int and abs(v) >= 10**15:
        return f"a {len(str(abs(v)))}-digit number"
    return repr(v)[:60]


class Event(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    kind: str
    agent: str  # id of the agent within its session (the lead's id for the lead)
    t: float | None = None  # unix seconds; None when the record carries no time
    estimated: bool = False  # `t` was spread between known times, not recorded
    file: str = ""  # where it came from
    offset: int = -1  # byte offset of its line (or record) in `file`
    length: int = 0  # bytes of that line
    id: str = ""  # tool call id (call/result/order/report), message id (usage)
    name: str = ""  # tool name; model for usage; sub-agent type for order
    text: str = ""  # what was typed / said / thought / reported / asked (capped)
    detail: str = ""  # a short summary of a tool's input; why a wait is
    truncated: bool = False  # `text` was cut at TEXT_KEEP; the whole is in `file`
    ok: bool | None = None  # tool result: succeeded?
    size: int = 0  # tool result: output size in bytes
    target: str = ""  # order/report: the sub-agent's id
    usage: Usage | None = None
    copied: bool = False  # copied from another session (fork history): not counted again
    counted_in: str = ""  # usage: the same response counts in that session (model/ledger.py)
    origin: str = ""  # usage: the session id the record names when it is not this one (a copy)
    seq: int = -1  # position in its session's timeline, set by the session


def cap(text: str) -> tuple[str, bool]:
    """Keep at most TEXT_KEEP characters of a text; say whether it was cut."""
    if len(text) <= TEXT_KEEP:
        return text, False
    return text[:TEXT_KEEP], True


def one_line(text: str, width: int = 120) -> str:
    """A short single-line summary of a text."""
    if 0 < 4 * width < len(text):  # a long text: its head's words begin the whole's, split alone
        s = " ".join(text[: 4 * width].split())
        if len(s) > width:
            return s[: width - 1] + "…"
    s = " ".join(text.split())
    return s if len(s) <= width else s[: width - 1] + "…"
