"""The only place JSON shapes are made: states, the board, session pages, content,
usage and pricing."""
