"""Errors a client of the library can show as one line (and the server as a status)."""

from __future__ import annotations


class HuddleError(Exception):
    """A clear, one-line problem with what was asked. `status` is its HTTP status."""

    status = 400


class BadRequest(HuddleError):
    status = 400


class NotFound(HuddleError):
    status = 404


class Forbidden(HuddleError):
    status = 403
