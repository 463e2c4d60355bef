"""One error tree (huddle.errors), drawn in its docstring, with no HTTP in it: every
error huddle raises on purpose hangs from it, and the server maps classes to statuses."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import huddle
from huddle import errors
from huddle.errors import BadRequest, Forbidden, HuddleError, InputError, NotFound
from huddle.server.app import status_of


def _all_modules():
    for info in pkgutil.walk_packages(huddle.__path__, "huddle."):
        if not info.name.endswith("__main__"):  # (running it is the command line)
            yield importlib.import_module(info.name)


def _drawn() -> dict[str, str]:
    """name -> parent, from the tree in the docstring (indentation says the parent)."""
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in (errors.__doc__ or "").splitlines():
        m = re.match(r"^[ │]*(?:[├└]── )?([A-Z]\w+) ", line)
        if not m or not ("── " in line or m.group(1) == "HuddleError"):
            continue
        depth = len(line) - len(line.lstrip(" │├└─"))
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            parents[m.group(1)] = stack[-1][1]
        stack.append((depth, m.group(1)))
    return parents


# Exceptions that are control flow, caught beside where they are raised: not errors.
SIGNALS = {"Rewritten"}  # sources/vibe/legacy: a file was rewritten, its session is read again
# io/safefile's refusals are OSErrors (io/ is standard library only, it cannot import the tree):
# every reader already turns an OSError into the one line naming the file
OS_ERRORS = {"NotRegular", "TooBig", "Escapes"}


def test_every_error_of_huddle_hangs_from_the_tree_it_draws():
    drawn = _drawn()
    found = {
        name: cls
        for mod in _all_modules()
        for name, cls in inspect.getmembers(mod, inspect.isclass)
        if cls.__module__ == mod.__name__ and issubclass(cls, BaseException) and not name.startswith("_")
        if name not in SIGNALS and not (name in OS_ERRORS and issubclass(cls, OSError))
    }
    assert found and set(found) - {"HuddleError"} == set(drawn), "every public error is drawn, and only those"
    for name, cls in found.items():
        assert issubclass(cls, HuddleError), name
        if name != "HuddleError":
            parent = [b.__name__ for b in cls.__bases__ if issubclass(b, HuddleError)]
            assert parent == [drawn[name]], (name, parent)


def test_no_http_in_the_tree_the_server_maps_it():
    assert not any(hasattr(c, "status") for c in (HuddleError, BadRequest, NotFound, Forbidden, InputError))
    assert status_of(BadRequest("x")) == 400
    assert status_of(NotFound("x")) == 404
    assert status_of(Forbidden("x")) == 403
    assert status_of(InputError("a file huddle cannot use")) == 500
