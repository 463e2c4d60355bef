"""Runs hosted by `huddle run` / `huddle host`: $HUDDLE_HOME/runs/*/events.jsonl."""

from .source import HostedSource

__all__ = ["HostedSource"]
