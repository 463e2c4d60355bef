"""The one event model: events, sessions and their agents, tools in plain words.
It imports nothing above it."""
