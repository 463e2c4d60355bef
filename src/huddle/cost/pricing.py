"""What tokens cost: a dated price table shipped with huddle, overridable by the user.

The built-in table (`data/pricing.json`) holds each model's list price in USD per
million tokens for input, output, cache read and cache write, and the date it was
taken. `$HUDDLE_HOME/pricing.json`, in the same format, adds or replaces models.
A model in neither is *unpriced*: reported by name, never priced like a neighbour.

Offline by design: huddle never fetches prices. Rates are per request; a model with
`long_context` is billed whole at the long rates when one request's prompt passes
`above` tokens, which only a per-response price (`Price.request_cost`) can apply.
"""

from __future__ import annotations

import json
import os
import re
import time
import weakref
from typing import Any

import msgspec

from huddle.errors import InputError
from huddle.io import folders
from huddle.io.safefile import read_small
from huddle.model.events import COUNT_MAX, USAGE, Usage
from huddle.model.session import Session

MILLION = 1_000_000.0
RATE_MAX = 1_000_000.0  # USD per million tokens (a dollar a token): past it a rate is a typo, and
# with COUNT_MAX tokens it keeps every cost, sum and SQL product a finite double
FIELDS = ("input", "output", "cache_read", "cache_write")
USER_FILE = "pricing.json"
UNKNOWN_MODEL = "(unknown)"  # usage whose records name no model


class PricingError(InputError, ValueError):
    """A pricing file huddle cannot use; the message names the file and the line."""


class Rates(msgspec.Struct, frozen=True):
    """USD per million tokens. (Structs, not dataclasses: `dataclasses` loads `inspect`,
    ~10 ms of every one-shot run that prices a row.)"""

    input: float
    output: float
    cache_read: float
    cache_write: float
    cache_write_1h: float  # 1-hour cache writes (Claude); equals cache_write where none is published

    def cost(self, u: Usage) -> float:
        return self.cost_of(u.input, u.output, u.cache_read, u.cache_write, u.cache_write_1h)

    def cost_of(self, input: int, output: int, cache_read: int, cache_write: int, cache_write_1h: int) -> float:
        """`cost` of the counts as they are (a sum of many rows need not make a Usage of each)."""
        return (
            input * self.input
            + output * self.output
            + cache_read * self.cache_read
            + (cache_write - cache_write_1h) * self.cache_write
            + cache_write_1h * self.cache_write_1h
        ) / MILLION


class Price(msgspec.Struct, frozen=True):
    base: Rates
    long: Rates | None = None  # rates for a request whose prompt exceeds `above`
    above: int = 0
    origin: str = "built-in"  # or the user file that set it

    def request_cost(self, u: Usage) -> float:
        """The cost of one model response (the long-context rule applies per request)."""
        return self.request_cost_of(u.input, u.output, u.cache_read, u.cache_write, u.cache_write_1h)

    def request_cost_of(self, input: int, output: int, cache_read: int, cache_write: int, cache_write_1h: int) -> float:
        """`request_cost` of one response's counts as they are."""
        rates = self.long if self.long is not None and input + cache_read + cache_write > self.above else self.base
        return rates.cost_of(input, output, cache_read, cache_write, cache_write_1h)


_DATE_SUFFIX = re.compile(r"(-\d{8}|-\d{4}-\d{2}-\d{2}|@\d{8}|-v\d+:\d+)$")
_BRACKET_SUFFIX = re.compile(r"\[[^\]]*\]$")


def candidates(model: str) -> list[str]:
    """Names a model id may be listed under: itself, then without a provider prefix,
    a `[1m]`-style variant tag or a date/version suffix. The same model, never a
    neighbour: `claude-opus-5-5` is not `claude-opus-5`."""
    m = model.strip()
    out = [m]
    low = m.lower()
    if "/" in low:
        low = low.rsplit("/", 1)[1]
    for _ in range(2):  # e.g. "anthropic.claude-sonnet-4-5-20250929-v1:0"
        low = _BRACKET_SUFFIX.sub("", low)
        low = _DATE_SUFFIX.sub("", low)
    for prefix in ("anthropic.", "us.anthropic.", "eu.anthropic."):
        if low.startswith(prefix):
            low = low[len(prefix) :]
    if low not in out:
        out.append(low)
    return out


class Table:
    """The prices in force: built-in models, replaced or extended by the user file."""

    def __init__(
        self,
        models: dict[str, Price],
        aliases: dict[str, str],
        as_of: str,
        user_file: str | None = None,
        user_as_of: str | None = None,
        problem: str | None = None,
    ):
        self.models = models
        self.aliases = aliases
        self.as_of = as_of
        self.user_file = user_file
        self.user_as_of = user_as_of
        self.problem = problem  # the user file could not be used: why, in one line
        self._memo: dict[str, Price | None] = {}

    def price(self, model: str) -> Price | None:
        try:
            return self._memo[model]
        except KeyError:
            pass
        found = None
        if model and model != UNKNOWN_MODEL:
            for name in candidates(model):
                name = self.aliases.get(name, name)
                found = self.models.get(name)
                if found is not None:
                    break
        self._memo[model] = found
        return found

    def cost(self, model: str, u: Usage) -> float | None:
        """What one model response cost, in USD: the one cost function (the board's
        session costs and `huddle usage` both sum it); None when the model is unpriced."""
        p = self.price(model)
        return p.request_cost(u) if p is not None else None

    def describe(self) -> dict:
        d: dict = {"as_of": self.as_of, "models": len(self.models)}
        if self.user_file:
            d["user_file"] = self.user_file
            if self.user_as_of:
                d["user_as_of"] = self.user_as_of
        if self.problem:
            d["problem"] = self.problem
        return d


# -- reading pricing files ----------------------------------------------------------


def _line_of(text: str, key: str) -> int:
    """The line where `"key"` first appears (for a message about that entry)."""
    i = text.find(json.dumps(key))
    return text.count("\n", 0, i) + 1 if i >= 0 else 1


def _rate(v: object) -> float | None:
    """A rate: a finite number from 0 to RATE_MAX (JSON's 1e400 is inf, NaN is not one)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:  # an int past a float
        return None
    return f if 0 <= f <= RATE_MAX else None


def _rates(obj: object, path: str, text: str, name: str, where: str) -> Rates:
    if not isinstance(obj, dict):
        raise PricingError(f"{path}:{_line_of(text, name)}: {where} must be an object of rates")
    vals = []
    for f in FIELDS:
        v = obj.get(f)
        rate = _rate(v)
        if rate is None:
            got = "missing" if f not in obj else f"{v!r}"[:40]
            raise PricingError(
                f"{path}:{_line_of(text, name)}: {where}: {f} must be a number >= 0 and at most {RATE_MAX:,.0f}"
                f" (USD per million tokens), got {got}"
            )
        vals.append(rate)
    one_hour = _rate(obj.get("cache_write_1h", vals[3]))
    if one_hour is None:
        raise PricingError(
            f"{path}:{_line_of(text, name)}: {where}: cache_write_1h must be a number >= 0 and at most {RATE_MAX:,.0f},"
            f" got {obj.get('cache_write_1h')!r}"[:300]
        )
    return Rates(vals[0], vals[1], vals[2], vals[3], one_hour)


def parse(text: str, path: str, origin: str = "built-in") -> tuple[dict[str, Price], dict[str, str], str]:
    """A pricing file's models, aliases and date. Raises PricingError naming file and line."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PricingError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(doc, dict):
        raise PricingError(f'{path}:1: expected a JSON object with "models"')
    models_doc = doc.get("models", {})
    aliases_doc = doc.get("aliases", {})
    if not isinstance(models_doc, dict):
        raise PricingError(f'{path}:{_line_of(text, "models")}: "models" must be an object of model -> rates')
    if not isinstance(aliases_doc, dict) or not all(isinstance(v, str) for v in aliases_doc.values()):
        raise PricingError(f'{path}:{_line_of(text, "aliases")}: "aliases" must map model names to model names')
    as_of = doc.get("as_of")
    if as_of is not None and not isinstance(as_of, str):
        raise PricingError(f'{path}:{_line_of(text, "as_of")}: "as_of" must be a date like "2026-11-30"')
    models: dict[str, Price] = {}
    for name, entry in models_doc.items():
        base = _rates(entry, path, text, name, f"model {name!r}")
        long = None
        above = 0
        lc = entry.get("long_context")
        if lc is not None:
            long = _rates(lc, path, text, name, f"model {name!r} long_context")
            above = lc.get("above")
            if isinstance(above, bool) or not isinstance(above, int) or not 0 < above <= COUNT_MAX:
                raise PricingError(
                    f"{path}:{_line_of(text, name)}: model {name!r} long_context: above must be a token count > 0"
                )
        models[name.lower()] = Price(base, long, above, origin)
    aliases = {k.lower(): v.lower() for k, v in aliases_doc.items()}
    return models, aliases, as_of or ""


def builtin_text() -> str:
    # beside this package, as installed (importlib.resources costs a board a fifth of its
    # imports); through it only when huddle is not installed as files (a zip)
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "pricing.json")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        pass
    from importlib import resources

    return resources.files("huddle").joinpath("data", "pricing.json").read_text(encoding="utf-8")


_BUILTIN: tuple[dict[str, Price], dict[str, str], str] | None = None


def _builtin() -> tuple[dict[str, Price], dict[str, str], str]:
    global _BUILTIN
    if _BUILTIN is None:
        _BUILTIN = parse(builtin_text(), "huddle/data/pricing.json")
    return _BUILTIN


def load(huddle_home: str | None = None) -> Table:
    """Read the table now: built-in plus `$HUDDLE_HOME/pricing.json` if it exists.
    A user file that cannot be used leaves the built-in prices and sets `problem`."""
    models, aliases, as_of = _builtin()
    models, aliases = dict(models), dict(aliases)
    path = os.path.join(huddle_home or _default_home(), USER_FILE)
    try:
        text = read_small(path, follow=True).decode("utf-8")  # huddle's own file, but a FIFO must not block
    except FileNotFoundError:
        return Table(models, aliases, as_of)
    except (OSError, UnicodeDecodeError) as exc:
        return Table(models, aliases, as_of, user_file=path, problem=f"{path}:1: cannot read: {exc}")
    try:
        user_models, user_aliases, user_as_of = parse(text, path, origin=path)
    except PricingError as exc:
        return Table(models, aliases, as_of, user_file=path, problem=str(exc))
    models.update(user_models)
    aliases.update(user_aliases)
    for name in user_models:  # a model the user prices is not an alias of another
        aliases.pop(name, None)
    return Table(models, aliases, as_of, user_file=path, user_as_of=user_as_of or None)


def _default_home() -> str:
    return folders.huddle_home()


_cache: dict[str, tuple[float, tuple, Table]] = {}
RECHECK = 1.0  # seconds between looks at the user file (the status line calls this a lot)


def current(huddle_home: str | None = None) -> Table:
    """The table in force, cached; the user file is looked at again at most once a second."""
    home = huddle_home or _default_home()
    now = time.monotonic()
    hit = _cache.get(home)
    if hit is not None and now - hit[0] < RECHECK:
        return hit[2]
    path = os.path.join(home, USER_FILE)
    ident: tuple[int, ...]
    try:
        st = os.stat(path)
        ident = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        ident = ()
    if hit is not None and hit[1] == ident:
        _cache[home] = (now, ident, hit[2])
        return hit[2]
    table = load(home)
    _cache[home] = (now, ident, table)
    return table


# -- costs ----------------------------------------------------------------------------


def model_name(name: str) -> str:
    return name or UNKNOWN_MODEL


_long: weakref.WeakKeyDictionary[Session, tuple[tuple[int, int, int], int, float]] = weakref.WeakKeyDictionary()


def session_cost(session: Session, table: Table | None = None) -> dict[str, Any]:
    """A session's cost for the board: `{"usd": float | None, "unpriced": [models]}`.

    The sum of `Table.cost` over the responses the session counts, the per-response
    price `huddle usage` sums too, so the two agree. A price is linear in the tokens,
    so for most models the sum is one call on the model's total (`model_usage`, already
    counted once per response); a model with long-context rates is priced response by
    response, walking only the usage events added since the last call. `usd` is the
    priced part; None when nothing in the session is priced."""
    t = table or current()
    usd = 0.0
    priced = False
    unpriced: set[str] = set()
    per_response = False
    for model, u in session.model_usage.items():
        if not u.total:
            continue
        p = t.price(model)
        if p is None:
            unpriced.add(model_name(model))
        elif p.long is not None:
            per_response = priced = True
        else:
            usd += t.cost(model, u) or 0.0
            priced = True
    if per_response:
        usd += _per_response(session, t)
    if not priced:  # nothing priced: none when some is unpriced or nothing was ever counted (unknown)
        return {"usd": None if unpriced or session.usage_unknown else 0.0, "unpriced": sorted(unpriced)}
    return {"usd": usd, "unpriced": sorted(unpriced)}


def _per_response(session: Session, t: Table) -> float:
    """The cost of the responses of models with long-context rates, new events only."""
    key = (id(t), session.epoch, session.usage_epoch)  # counted usage moved: walk them all again
    seen = _long.get(session)
    events = session.events
    start, usd = (seen[1], seen[2]) if seen is not None and seen[0] == key and seen[1] <= len(events) else (0, 0.0)
    for e in events[start:]:
        u = e.usage
        if e.kind != USAGE or u is None or e.copied or e.counted_in:
            continue
        p = t.price(e.name)
        if p is not None and p.long is not None:
            usd += t.cost(e.name, u) or 0.0
    try:
        _long[session] = (key, len(events), usd)
    except TypeError:  # an object without weak references: no memo, still right
        pass
    return usd
