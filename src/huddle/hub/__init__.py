"""A shared PostgreSQL hub for many machines (the optional extra `huddle[hub]`).

`huddle push` writes this machine's sessions, agents and model responses there
(push.py, rows.py); `huddle status/usage/serve --hub` read every machine's back through
the same views and JSON shapes as the local commands (read.py, watcher.py). The schema
is huddle's own, versioned (schema.py). Credentials come only from the DSN, PGPASSFILE
or the libpq environment (PGPASSWORD...); huddle never prints a DSN, only its host,
port and database (`describe`).
"""

from __future__ import annotations

from typing import Any

from huddle.errors import HostingError

EXTRA_MISSING = "the hub needs psycopg: pip install 'huddle[hub]'"


class HubError(HostingError):
    """The hub's database cannot be reached or used; the message says why."""


def driver() -> Any:
    try:
        import psycopg
    except ImportError:
        raise HubError(EXTRA_MISSING) from None
    return psycopg


def describe(dsn: str) -> str:
    """A DSN as it may be printed: host, port and database, never a user or password."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        d = conninfo_to_dict(dsn)
    except Exception:
        return "(the hub)"
    host = str(d.get("host") or "local socket")
    port = f":{d['port']}" if d.get("port") else ""
    db = f"/{d['dbname']}" if d.get("dbname") else ""
    return f"postgresql {host}{port}{db}"


def scrub(text: str, dsn: str) -> str:
    """An error message with the DSN's password (if one is in it) taken out."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        pw = conninfo_to_dict(dsn).get("password")
    except Exception:
        pw = None
    out = text.replace(dsn, describe(dsn))
    if pw:
        out = out.replace(str(pw), "***")
    return " ".join(out.split())


def connect(dsn: str, timeout: int = 10) -> Any:
    """A connection to the hub with its schema migrated to what this huddle knows."""
    psycopg = driver()
    try:
        conn = psycopg.connect(dsn, connect_timeout=timeout, application_name="huddle")
    except psycopg.Error as exc:
        raise HubError(f"cannot reach the hub ({describe(dsn)}): {scrub(str(exc), dsn)}") from None
    from .schema import LATEST, current_version, migrate

    try:
        migrate(conn)
        v = current_version(conn)
        conn.commit()
    except psycopg.Error as exc:
        conn.close()
        raise HubError(f"the hub's schema ({describe(dsn)}): {scrub(str(exc), dsn)}") from None
    if v > LATEST:
        conn.close()
        raise HubError(f"the hub ({describe(dsn)}) has schema {v}, newer than this huddle's {LATEST}: upgrade huddle")
    return conn
