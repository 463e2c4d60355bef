"""huddle's errors: one tree, each a problem said in one line (what was wrong, and
where), never a traceback. A client shows the message; the server maps the classes
to HTTP statuses (`huddle.server.app.STATUS`), the CLI to a one-line error.

    HuddleError                 a problem huddle can say in one line
    ├── RequestError            what was asked cannot be answered
    │   ├── BadRequest          a malformed id, ref or paging value
    │   │   └── BadAnswer       answer/asks: an answer that is not one (its shape)
    │   ├── NotFound            no such session, file or event
    │   ├── Forbidden           a file outside the agent folders
    │   └── AnswerRefused       answer/asks: an answer the host will not pass on (stale, repeated, not offered)
    ├── NotAnswerable           answer/asks: a session huddle cannot answer at all (not hosted, no host running)
    ├── InputError              a file huddle reads cannot be used (the message names it)
    │   ├── PricingError        cost/pricing: a pricing file
    │   ├── RedactFileError     redact/redactor: a file of redaction patterns
    │   ├── StoreError          sources/vibe/store: a Vibe session store
    │   │   └── Unparsed        a store file that is no JSON (yet): CURRENT caught half-written
    │   ├── DbError             sources/opencode/db: OpenCode's database, now
    │   └── Damaged             search/store: the search index is not a usable database
    │       └── Reset           the index was deleted while being written: built again
    ├── BundleError             views/export_html: huddle's own pages could not be bundled (a bug)
    └── HostingError            a service huddle runs or talks to: the host, the hub, an OTLP endpoint
        ├── HostError           host/client: a host answered with an error, or none answers
        ├── LogError            host/log: the run's log cannot be written
        │   └── LogBusy         another host is writing it
        ├── StartError          host/process: the agent's command could not be started
        ├── RunError            host/run: `huddle run` cannot go on (a bad name, a busy run)
        ├── HubError            hub: the PostgreSQL hub cannot be reached or used
        ├── ExportFailed        otel/export: the OTLP endpoint did not take the spans
        └── Unavailable         live/desktop: no way to show desktop notifications here

Exceptions used as control flow and caught beside where they are raised (Vibe's
`Rewritten`: read the session again) are not errors and stay out of the tree.
Imports nothing: every layer may raise them.
"""

from __future__ import annotations


class HuddleError(Exception):
    """A clear, one-line problem."""


class RequestError(HuddleError):
    """What was asked cannot be answered."""


class BadRequest(RequestError):
    """The request itself is malformed."""


class NotFound(RequestError):
    """No such session, file or event."""


class Forbidden(RequestError):
    """What was asked lies outside what huddle may read."""


class InputError(HuddleError):
    """A file huddle reads cannot be used; the message names the file and what is wrong."""


class HostingError(HuddleError):
    """A service huddle runs or talks to went wrong (the host of a run, the hub, an OTLP endpoint)."""
