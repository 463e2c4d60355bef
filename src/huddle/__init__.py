"""huddle: see what all your AI coding agents are doing, from the files they write."""

__version__ = "0.1.0"
