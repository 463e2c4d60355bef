"""Stored answers brought up to date. The answer's file and what it holds under are
`io/answers.py`; what a core's answer was worked out from, `core/answering.py`; here,
a stored board some sessions' files moved under, worked out again from those sessions
alone (`patching`). Above the views: it builds the moved rows as the board does."""
