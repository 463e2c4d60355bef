"""Answering the agents huddle hosts: Allow, Deny and Reply, from any surface.

Only a run huddle hosts can be answered (`huddle run` / `huddle host`: the host owns
the agent's stdin), and only while the exact request is pending. Each agent speaks its
own protocol behind one small interface (`channel.Channel`):

asks.py      Ask (what the agent asked, as shown), Answer (what a person chose), the checks
channel.py   the interface a protocol implements
protocols.py which one a command line speaks
claude.py    Claude Code headless: stream-json with `--permission-prompt-tool stdio`
acp.py       the Agent Client Protocol (Gemini CLI --acp, Copilot CLI --acp, opencode acp)
codex.py     `codex app-server` (JSON-RPC: command and file-change approvals)
session.py   answer a session by id: the library function `huddle answer` and
             POST /api/sessions/{id}/answer both call
"""
