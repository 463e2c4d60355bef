"""The core object (`Huddle`), its handle cache and cold reads."""

from .coldread import FirstRead
from .huddle import Huddle
from .keeper import Keeper
from .modes import BoardMode, TextMode, UsageMode, WholeMode

__all__ = ["BoardMode", "FirstRead", "Huddle", "Keeper", "TextMode", "UsageMode", "WholeMode"]
