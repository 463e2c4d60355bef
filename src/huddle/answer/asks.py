"""What an agent asks and what a person answers, in the one shape every surface uses.

An ask is pending from its `ask` entry in the run's log to its `answer` or `gone`
entry; its request id is the seq of that `ask` entry (unique in the run, across
restarts of the host), so an answer names exactly what it answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from huddle.errors import BadRequest, HuddleError, RequestError

PERMISSION = "permission"  # a tool call waits for Allow / Deny
QUESTION = "question"  # the agent asks a question (options and a free reply)
TURN = "turn"  # the agent's turn is over: the next user message

CHOICES = ("allow", "deny", "reply")
SURFACES = ("web", "cli", "notification", "keyboard", "send", "api")
TEXT_MAX = 100_000  # characters of a reply or a reason


class AnswerRefused(RequestError):
    """An answer the host will not pass on (stale, repeated, not offered); one line says why."""


class BadAnswer(BadRequest):
    """An answer that is not one (its shape): 400, before anything is asked of the host."""


class NotAnswerable(HuddleError):
    """This session cannot be answered from huddle at all (not hosted, no host running)."""


@dataclass
class Ask:
    """One pending request, as the channel read it from the agent."""

    type: str  # PERMISSION, QUESTION or TURN
    key: object = None  # the protocol's own id (Claude's request_id, a JSON-RPC id)
    tool: str = ""
    summary: str = ""  # one line: what the card says
    input: Any = None  # the tool's input (what "Allow with this edit" edits)
    questions: list[dict[str, Any]] = field(default_factory=list)  # {question, header, options, multi}
    options: list[dict[str, Any]] = field(default_factory=list)  # protocol options: {id, label, kind}
    offers: list[str] = field(default_factory=list)  # allow, allow_edit, deny, deny_reason, reply, option
    call: str = ""  # the tool call it holds up (tool_use_id, toolCallId, itemId)

    def shown(self) -> dict[str, Any]:
        """The ask as the log keeps it and the surfaces show it."""
        d: dict[str, Any] = {"type": self.type, "tool": self.tool, "summary": self.summary, "offers": self.offers}
        if self.input is not None:
            d["input"] = self.input
        if self.questions:
            d["questions"] = self.questions
        if self.options:
            d["options"] = self.options
        if self.call:
            d["call"] = self.call
        return d


@dataclass
class Answer:
    """What a person chose: `choice` (allow / deny / reply), with an edited input, a
    reason, a reply's text, a protocol option, or a question's answers."""

    request: int
    choice: str
    by: str = "api"
    input: Any = None
    message: str = ""
    text: str = ""
    option: str = ""
    answers: dict[str, str] = field(default_factory=dict)

    def logged(self) -> dict[str, Any]:
        d: dict[str, Any] = {"request": self.request, "choice": self.choice, "by": self.by}
        for k in ("input", "message", "text", "option", "answers"):
            v = getattr(self, k)
            if v not in (None, "", {}):
                d[k] = v
        return d


def parse_answer(body: object, by: str) -> Answer:
    """An answer from a request body or a CLI call, checked for shape (not yet against
    the ask: the host does that, holding the one truth of what is pending)."""
    if not isinstance(body, dict):
        raise BadAnswer('an answer is a JSON object: {"request": N, "choice": "allow|deny|reply", ...}')
    req = _request(body.get("request"))
    choice = body.get("choice")
    if choice not in CHOICES:
        raise BadAnswer(f'"choice" must be one of {", ".join(CHOICES)}, not {str(choice)[:40]!r}')
    a = Answer(request=req, choice=str(choice), by=by if by in SURFACES else "api")
    for k in ("message", "text", "option"):
        v = body.get(k)
        if v is not None:
            setattr(a, k, _text(k, v))
    if "input" in body and body["input"] is not None:
        if not isinstance(body["input"], dict):
            raise BadAnswer('"input" (the edited tool input) must be a JSON object')
        a.input = body["input"]
    answers = body.get("answers")
    if answers is not None:
        if not isinstance(answers, dict) or not all(isinstance(v, str) for v in answers.values()):
            raise BadAnswer('"answers" maps each question to its answer, as text')
        a.answers = {str(k): v for k, v in answers.items()}
    if a.choice == "reply" and not (a.text.strip() or a.answers or a.option):
        raise BadAnswer("a reply needs its text")
    return a


def _request(req: object) -> int:
    """The pending request an answer names (its number, or its number as text)."""
    if isinstance(req, str) and req.isdigit():
        req = int(req)
    if not isinstance(req, int) or isinstance(req, bool) or req < 1:
        raise BadAnswer('"request" must name the pending request (its number, as the card shows it)')
    return req


def _text(k: str, v: object) -> str:
    if not isinstance(v, str):
        raise BadAnswer(f'"{k}" must be text')
    if len(v) > TEXT_MAX:
        raise BadAnswer(f'"{k}" is longer than {TEXT_MAX:,} characters')
    return v


def check_offered(ask: Ask, a: Answer) -> None:
    """Refuse what this ask does not offer, in words a person can act on."""
    offers = set(ask.offers)
    if a.choice == "allow" and "allow" not in offers and not (a.option and "option" in offers):
        raise AnswerRefused(f"request {a.request} is {_what(ask)}: it takes a reply, not allow")
    if a.choice == "deny" and "deny" not in offers:
        raise AnswerRefused(f"request {a.request} is {_what(ask)}: it cannot be denied")
    if a.choice == "reply" and "reply" not in offers:
        raise AnswerRefused(f"request {a.request} is {_what(ask)}: it takes allow or deny, not a reply")
    if a.input is not None and "allow_edit" not in offers:
        raise AnswerRefused(f"request {a.request}: this agent takes no edited input")
    if a.message and "deny_reason" not in offers:
        raise AnswerRefused(f"request {a.request}: this agent takes no reason with a deny")
    if a.option and not any(o.get("id") == a.option for o in ask.options):
        known = ", ".join(str(o.get("id")) for o in ask.options) or "none"
        raise AnswerRefused(f"request {a.request} has no option {a.option!r} (its options: {known})")


def _what(ask: Ask) -> str:
    if ask.type == TURN:
        return "the agent's turn (it waits for your next message)"
    if ask.type == QUESTION:
        return "a question"
    return f"a permission prompt ({ask.tool})"
