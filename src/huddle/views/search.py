"""`huddle search --json` and GET /api/search: the same dict, from the search index.

Hits come from the index (huddle.search); everything shown about them (title,
project, agent, the ref that opens the conversation there) from the core's own
sessions, and the snippet from the event's record read back from its file, so the
index stores no text. The query never fails: a term without words is dropped and
said, a query with nothing to look for answers no results and says why.
"""

from __future__ import annotations

import re
import sqlite3
from typing import TYPE_CHECKING, Any

import msgspec

from huddle.errors import BadRequest
from huddle.model.times import iso, project_name
from huddle.search import Damaged, index_for
from huddle.search.query import Query, parse
from huddle.search.stem import stems
from huddle.search.store import is_damage, ms_of
from huddle.search.text import CODE_KIND, COLUMNS, DEFAULT_SCOPE, KIND_GROUP, alone, fold_char, string_values

from .api import check_id, files_index
from .operations import SEARCH_LIMIT

if TYPE_CHECKING:
    from huddle.core import Huddle

SNIPPET = 220  # characters around the first hit
SCAN_MAX = 1 << 20  # characters of one string looked through for the snippet
_SOURCE = re.compile(r"^[a-z][a-z0-9_-]{0,30}$")
_decode = msgspec.json.Decoder().decode


def _kinds(kind: object) -> tuple[str, ...] | None:
    if kind in (None, ""):
        return None
    if not isinstance(kind, str):
        raise BadRequest(f"bad kind: {kind!r}")
    got = tuple(dict.fromkeys(k.strip() for k in kind.split(",") if k.strip()))
    bad = [k for k in got if k not in COLUMNS]
    if bad or not got:
        raise BadRequest(f"bad kind: {kind[:40]!r} (want {', '.join(COLUMNS)})")
    return got


# -- snippets -----------------------------------------------------------------------------


def _pattern(q: Query, stemmed: bool = False) -> re.Pattern[str] | None:
    """Where the positive terms stand in folded text (any case, any separators; a
    character of a script without spaces right after the one before). `stemmed`: any
    word that starts with a term's stem stands for it."""
    alts = []
    for t in q.positive:
        ws = stems(list(t.words)) if stemmed else list(t.words)
        body = ""
        for i, w in enumerate(ws):
            if i:
                body += r"[\W_]*" if alone(ws[i - 1][-1]) or alone(w[0]) else r"[\W_]+"
            body += re.escape(w)
        head = "" if alone(ws[0][0]) else r"(?<![^\W_])"
        tail = r"[^\W_]*" if stemmed else "" if t.prefix or alone(ws[-1][-1]) else r"(?![^\W_])"
        alts.append(head + body + tail)
    return re.compile("|".join(alts)) if alts else None


def _folded(s: str) -> str:
    """Lower case without diacritics, same length (so positions carry over to the original)."""
    return s.lower() if s.isascii() else "".join(map(fold_char, s))


def snippet(raw: bytes, q: Query, stemmed: bool = False) -> dict:
    """The string of the record that holds the most of the terms, cut around the first
    hit, with the hits marked: {"text", "marks": [[start, end], ...]}."""
    try:
        rec = _decode(raw)
        strings = string_values(rec, [])
    except msgspec.DecodeError:
        strings = [raw.decode("utf-8", "replace")]
    pat = _pattern(q, stemmed)
    best, best_hits, best_score = "", [], (-1, 0)
    for s in strings:
        if len(s) < 2:
            continue
        folded = _folded(s[:SCAN_MAX])
        hits = [(m.start(), m.end(), m.group(0)) for m in pat.finditer(folded)] if pat else []
        distinct = len({re.sub(r"[\W_]+", " ", h[2]) for h in hits})
        score = (distinct, len(s))
        if score > best_score:
            best, best_hits, best_score = s, hits, score
    if not best_hits:
        text = " ".join(best.split())[:SNIPPET]
        return {"text": text, "marks": []}
    first = best_hits[0][0]
    start = max(0, min(first - SNIPPET // 3, len(best) - SNIPPET))
    if start:
        sp = best.find(" ", start, first)
        start = sp + 1 if 0 <= sp < first else start
    end = min(len(best), start + SNIPPET)
    if end < len(best):
        sp = best.rfind(" ", max(start, best_hits[0][1]), end)
        end = sp if sp > best_hits[0][1] else end
    lead = "…" if start else ""
    text = lead + best[start:end].translate(_SPACES) + ("…" if end < len(best) else "")
    shift = len(lead) - start
    marks = [[a + shift, b + shift] for a, b, _ in best_hits if a >= start and b <= end]
    return {"text": text, "marks": marks}


_SPACES = str.maketrans({"\n": " ", "\r": " ", "\t": " "})


# -- the route ------------------------------------------------------------------------------


def _agent_name(s: Any, agent: str) -> str:
    if agent == s.lead_id:
        return "lead"
    a = s.agents.get(agent)
    if a is None:
        return agent
    return s.label_of(a) or agent  # the one name every view gives it (a Codex sub-agent: "Zeno (/root/review)")


def _source(source: object) -> str | None:
    """The `source` filter, checked (None: every source)."""
    if source in (None, ""):
        return None
    if not isinstance(source, str) or not _SOURCE.match(source):
        raise BadRequest(f"bad source: {str(source)[:40]!r}")
    return source


def search(
    h: Huddle,
    q: object = None,
    *,
    source: object = None,
    project: object = None,
    session: object = None,
    kind: object = None,
    since: float | None = None,
    until: float | None = None,
    limit: int = SEARCH_LIMIT,
    rank: bool = False,
    exact: bool = False,
) -> dict:
    """GET /api/search?q=...: messages matching the query, newest first (or by
    relevance with `rank`): the words as typed first, then (unless `exact`) the
    messages only their stems match (`tests` finds "test"); `sessions` says the same
    one row per session, with its hits counted. The caller brings the index level
    first (the server's indexing thread, or the command before it asks)."""
    text = q if isinstance(q, str) else ""
    if len(text) > 2000:
        raise BadRequest("the query is too long (2,000 characters at most)")
    kinds = _kinds(kind)
    src = _source(source)
    proj = project if isinstance(project, str) and project else None
    sess = check_id(session) if session not in (None, "") else None
    if sess is not None:
        sess = h.find(sess).session.id  # a unique start of an id names it too
    t_since, t_until, n, by_rank, only_exact = since, until, limit, rank, exact  # (views/operations.py read them)
    query = parse(text)
    scope = kinds or (DEFAULT_SCOPE + (("tool",) if query.tool else ()))
    notes = [f"ignored {d!r}: no word in it to look for" for d in query.dropped]
    out: dict = {
        "query": text,
        "terms": [{**t.to_dict(), "stems": stems(list(t.words))} for t in query.positive],
        "excluded": [t.to_dict() for t in query.negative],
        "scope": list(scope),
        "order": "rank" if by_rank else "newest",
        "match": "exact" if only_exact else "exact+stem",
        "filters": {
            "source": src,
            "project": proj,
            "session": sess,
            "since": iso(t_since),
            "until": iso(t_until),
        },
        "results": [],
        "sessions": [],
        "more": False,
        "notes": notes,
    }
    index = index_for(h)
    match = query.fts(tuple(scope))
    if index is None:
        notes.append("search needs huddle's home folder (HUDDLE_HOME) for its index")
        return out
    out["index"] = _index_state(index)
    if match is None:
        if text.strip():
            notes.append("nothing to look for: give at least one word that must be there")
        return out
    where: dict[str, Any] = {
        "since_ms": None if t_since is None else int(t_since * 1000),
        "until_ms": None if t_until is None else int(t_until * 1000),
        "sources": (src,) if src else (),
        "project": proj,
        "session": sess,
    }
    try:
        hits = [(hit, False) for hit in index.store.search(match, **where, rank=by_rank, limit=n + 1)]
        if not only_exact and len(hits) <= n:
            more = index.store.search(
                match, **where, rank=by_rank, limit=n + 1 - len(hits), table="stem", besides=match
            )
            hits += [(hit, True) for hit in more]
        groups = _groups(index.store, match, where, by_rank, only_exact, n)
    except sqlite3.Error as exc:
        if not is_damage(exc):
            raise
        index.reset()
        notes.append("the search index was damaged: it is being built again")
        out["index"] = _index_state(index)
        return out
    except Damaged:
        notes.append("the search index was damaged: it is being built again")
        return out
    out["more"] = len(hits) > n
    with h.lock:  # (only here: the index query above never holds up the board's refresh)
        out["results"] = [r for r in (_result(h, hit, query, stem) for hit, stem in hits[:n]) if r is not None]
        out["sessions"] = _session_rows(h, index.store, groups, query)
    return out


def _groups(store: Any, match: str, where: dict, by_rank: bool, only_exact: bool, n: int) -> list[dict]:
    """The sessions holding hits, one each: its exact and stemmed hits counted, the hit
    to show (its newest, an exact one when it has any); those with exact hits first,
    then newest (or most relevant) first; `n` of them."""
    got: dict[str, dict] = {}
    for key, count, newest, best in store.per_session(match, **where):
        got[key] = {"key": key, "exact": count, "stem": 0, "show": (newest, False), "newest": newest, "best": best}
    if not only_exact:
        for key, count, newest, best in store.per_session(match, **where, table="stem", besides=match):
            g = got.get(key)
            if g is None:
                got[key] = {
                    "key": key,
                    "exact": 0,
                    "stem": count,
                    "show": (newest, True),
                    "newest": newest,
                    "best": best,
                }
            else:
                g["stem"] = count
                g["newest"] = max(g["newest"], newest)
    order = (lambda g: (g["exact"] == 0, g["best"])) if by_rank else (lambda g: (g["exact"] == 0, -g["newest"]))
    return sorted(got.values(), key=order)[:n]


def _session_rows(h: Huddle, store: Any, groups: list[dict], q: Query) -> list[dict]:
    where = store.located([g["show"][0] for g in groups])
    out = []
    for g in groups:
        hit = where.get(g["show"][0])
        shown = _result(h, hit, q, g["show"][1]) if hit is not None else None
        if shown is None:
            continue  # (gone since it was indexed: the next update sees to it)
        out.append(
            {
                **{k: shown[k] for k in ("session", "key", "source", "title", "project")},
                "hits": g["exact"] + g["stem"],
                "exact": g["exact"],
                "stem": g["stem"],
                "last": iso(ms_of(g["newest"]) / 1000),
                "hit": shown,
            }
        )
    return out


def _index_state(index: Any) -> dict:
    st = index.store.stats()
    done, total = index.progress
    st["building"] = bool(index.building)
    if index.building:
        st["progress"] = {"done_bytes": done, "total_bytes": total}
    return st


def _result(h: Huddle, hit: tuple, q: Query, stemmed: bool = False) -> dict | None:
    rowid, path, off, ln, nth, kind_code, agent, key = hit
    handle = h.handles.get(key)
    if handle is None and key in (getattr(h, "dormant", None) or ()):
        handle = h.handle(key)  # left unread (lazy): read from the cache now
    if handle is None:
        return None
    s = handle.session
    fi = files_index(handle).get(path)
    if fi is None:
        return None
    try:
        raw = handle.read_record(path, off, ln)
    except OSError:
        return None
    if len(raw) < ln:
        return None  # the file shrank since it was indexed: the next update sees to it
    kind = CODE_KIND.get(kind_code, "")
    ref = f"{fi}-{off}-{ln}" + (f"-{nth}" if nth else "")
    return {
        "session": s.id,
        "key": s.key,
        "source": s.source,
        "title": s.title,
        "project": project_name(s.cwd),
        "agent": agent or s.lead_id,
        "agent_name": _agent_name(s, agent or s.lead_id),
        "kind": kind,
        "group": KIND_GROUP.get(kind, ""),
        "t": iso(ms_of(rowid) / 1000),
        "ref": ref,
        "match": "stem" if stemmed else "exact",
        "snippet": snippet(raw, q, stemmed),
    }
