"""Activity wording: a tool said as something being done, in at most 56 characters."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from huddle.model.doing import WIDTH, as_done, fit, gerund, said, tool_phrase


def test_gerunds():
    words = {
        "run": "running",
        "list": "listing",
        "make": "making",
        "stop": "stopping",
        "edit": "editing",
        "check": "checking",
        "fix": "fixing",
        "show": "showing",
        "tie": "tying",
        "see": "seeing",
        "format": "formatting",
        "grep": "grepping",
        "count": "counting",
        "read": "reading",
    }
    assert {w: gerund(w) for w in words} == words


def test_a_description_is_said_as_being_done():
    assert as_done("Run the test suite") == "running the test suite"
    assert as_done("Git status") == "running git status"
    assert as_done("Tests for the parser") == "running tests for the parser"
    assert as_done("API smoke test") == "running API smoke test"


def test_tools():
    assert tool_phrase("Read", {"file_path": "/home/dev/work/a/very/long/path/to/plan.md"}) == "reading plan.md"
    assert tool_phrase("Edit", {"file_path": "docs/spec.md"}) == "editing spec.md"
    assert (
        tool_phrase("Bash", {"command": "pytest -q tests/", "description": "Run the test suite"})
        == "running the test suite"
    )
    assert tool_phrase("Bash", {"command": "pytest -q\necho done"}) == "running pytest -q"
    assert tool_phrase("Agent", {"description": "Review the API", "prompt": "..."}) == "delegating: review the API"
    assert tool_phrase("Task", {"subagent_type": "Explore"}) == "delegating: explore"
    assert tool_phrase("WebFetch", {"url": "https://docs.example.com/a/b"}) == "fetching docs.example.com"
    assert (
        tool_phrase("TodoWrite", {"todos": [{"status": "in_progress", "activeForm": "Writing the tests"}]})
        == "writing the tests"
    )
    assert tool_phrase("mcp__github__create_issue", {}) == "using create_issue (github)"
    assert tool_phrase("Bash", None) == "running a command"
    assert tool_phrase("Frobnicate", {"description": "Frob the widgets"}) == "frobbing the widgets"


def test_what_the_agent_last_said():
    assert said("I read it. Now I'll run the tests.") == "Now I'll run the tests."
    assert said("Writing a long answer slowly. This sentence keeps goin") == "This sentence keeps goin"
    assert fit("x" * 100) == "x" * 55 + "…"


@given(
    st.text(max_size=300),
    st.dictionaries(
        st.sampled_from(["description", "command", "file_path", "pattern", "url", "query", "subject", "todos"]),
        st.one_of(st.text(max_size=300), st.integers(), st.none()),
    ),
)
def test_never_longer_than_a_spinner_line(name, inp):
    for tool in (name, "Bash", "Read", "Agent", "Grep", "WebFetch", "TodoWrite", "TaskCreate"):
        assert len(tool_phrase(tool, inp)) <= WIDTH


def test_the_board_and_the_live_line_word_a_tool_alike():
    """One table of verbs: a call said from its event (the board's `doing`) and from its
    whole input (the live line) use the same words."""
    from huddle.model.doing import doing

    cases = [
        ("Read", "/home/dev/plan.md", {"file_path": "/home/dev/plan.md"}),
        ("Edit", "src/app.py", {"file_path": "src/app.py"}),
        ("Write", "/tmp/notes.md", {"file_path": "/tmp/notes.md"}),
        ("Grep", "TODO", {"pattern": "TODO"}),
        ("Glob", "**/*.py", {"pattern": "**/*.py"}),
        ("WebSearch", "msgspec raw", {"query": "msgspec raw"}),
        ("Bash", "pytest -q", {"command": "pytest -q"}),
        ("TodoWrite", "3 todos", {}),
    ]
    for name, detail, inp in cases:
        assert doing(name, detail) == tool_phrase(name, inp), name
    for name in ("Bash", "exec_command", "file_system.bash", "AskUserQuestion", "request_user_input"):
        assert doing(name, "") == tool_phrase(name, {}), name  # nothing known yet: the same bare words
