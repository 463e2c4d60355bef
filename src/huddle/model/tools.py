"""Tool roles: what a tool call means, whatever the agent that made it.

Every agent names its tools its own way (Claude Code's `AskUserQuestion`, Codex's
`request_user_input`, Vibe's `ui.ask_user_question`). The attention rules, the
readers and the wording ask by role, never by a name list of their own:

    QUESTION  asks the human and blocks on the answer: the agent needs you while it is open
    SHELL     runs a command (its result carries an exit code)
    SPAWN     starts a sub-agent: the call is an order, its answer a report
    MESSAGE   sends a running sub-agent more work
    WAIT      sits waiting on other agents (the caller is "waiting", not "working")
    ANSWER    a wait whose result carries the sub-agent's answer
    STOP      stops a sub-agent
    HANDBACK  a sub-agent hands its answer back to its lead (the call is a report)

A new agent's tools are added here, in one place. Standard library only, importing
nothing: the status line may import it.
"""

from __future__ import annotations

QUESTION = "question"
SHELL = "shell"
SPAWN = "spawn"
MESSAGE = "message"
WAIT = "wait"
ANSWER = "answer"
STOP = "stop"
HANDBACK = "handback"

# role -> the tool names that have it, by agent (a name may have several roles)
ROLES: dict[str, frozenset[str]] = {
    QUESTION: frozenset(
        {
            "AskUserQuestion",  # Claude Code
            "request_user_input",  # Codex
            "ask_user_question",
            "ui.ask_user_question",  # Vibe
            "ask_user",  # Gemini CLI
            "question",  # OpenCode
            "ask_question",  # Cline CLI
        }
    ),
    SHELL: frozenset(
        {
            "Bash",  # Claude Code
            "exec_command",  # Codex (unified exec)
            "shell",
            "shell_command",
            "local_shell",
            "container.exec",
            "file_system.bash",  # Vibe (unified)
            "bash",  # Vibe (legacy), OpenCode
            "run_shell_command",  # Gemini CLI
            "run_commands",  # Cline CLI
        }
    ),
    SPAWN: frozenset(
        {
            "Agent",  # Claude Code (Task before 2.x)
            "Task",
            "spawn_agent",  # Codex, Cline CLI
            "subagent.spawn",  # Vibe 2.26
            "agents.spawn",  # Vibe 3.x
            "task",  # Vibe (legacy), OpenCode
            "invoke_agent",  # Gemini CLI
            "agent",  # Qwen Code
            "subagent",  # Pi's example extension
        }
    ),
    MESSAGE: frozenset({"subagent.send_message", "agents.send_message", "send_message"}),  # Vibe, Qwen Code
    WAIT: frozenset({"wait_agent", "wait", "subagent.wait", "self.wait"}),  # Codex, Vibe
    ANSWER: frozenset({"subagent.wait"}),  # Vibe 2.26
    STOP: frozenset({"subagent.stop", "task_stop"}),  # Vibe, Qwen Code
    HANDBACK: frozenset({"SubagentHandback", "complete_task"}),  # Claude Code, Gemini CLI
}

QUESTION_TOOLS = ROLES[QUESTION]
SHELL_TOOLS = ROLES[SHELL]
SPAWN_TOOLS = ROLES[SPAWN]
MESSAGE_TOOLS = ROLES[MESSAGE]
WAIT_TOOLS = ROLES[WAIT]
ANSWER_TOOLS = ROLES[ANSWER]
STOP_TOOLS = ROLES[STOP]
HANDBACK_TOOLS = ROLES[HANDBACK]


def roles(name: str) -> frozenset[str]:
    """Every role of the tool called `name` (none for most tools)."""
    return frozenset(r for r, names in ROLES.items() if name in names)


def is_question(name: str) -> bool:
    return name in QUESTION_TOOLS
