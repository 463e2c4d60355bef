"""The core object (`Huddle`), its handle cache and cold reads."""

from .huddle import Huddle

__all__ = ["Huddle"]
