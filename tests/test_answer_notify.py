"""A desktop notification's Allow button answers a run huddle hosts: the real Claude
Code CLI waits on a Bash call, the notification (on a real D-Bus session bus, to the
recording notification server) carries Allow / Deny for that exact request, a press
of Allow reaches the agent (the model sees the tool result), the notification closes."""

from __future__ import annotations

import time

import pytest

import agent_clis as ac
from fake_models import FakeModels
from huddle.answer.session import answer
from huddle.core import Huddle
from huddle.live.desktop import DBus
from huddle.live.notify import Notifier
from huddle.live.watcher import Watcher
from huddle.sources import Settings
from test_notify import bus  # noqa: F401  (a real dbus-daemon with the recording server)

SCRIPT = {"note": [("tool", "Bash", {"command": "echo pressed > out.txt", "description": "write out.txt"})]}


@pytest.mark.timeout(300)
def test_allow_from_the_notification(tmp_path, bus):  # noqa: F811
    hh = tmp_path / "huddle-home"
    with FakeModels(SCRIPT) as fm:
        env = ac.claude_env(tmp_path, fm.url)
        env["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        d, _ = ac.start_run(hh, "note", ac.claude_argv(), env, tmp_path / "proj", prompt="[[scn:note]] go")
        h = Huddle(Settings(folders={}, huddle_home=str(hh)))
        w = Watcher(h, lambda msgs: None)
        backend = DBus()
        errors: list[str] = []

        def on_answer(sid, request, choice):
            return answer(h, sid, {"request": request, "choice": choice}, by="notification", lock=h.lock)

        n = Notifier(
            backend, "http://127.0.0.1:7430/", on_error=errors.append, since=time.time() - 60, on_answer=on_answer
        )
        w.listen(n)
        w.start()
        try:
            ask = ac.wait_entry(d, kind="ask", type="permission")
            req = ask["request"]
            shown = [c for c in bus.wait("Notify", 1, within=60) if f"allow:{req}" in c["actions"]]
            assert shown and shown[-1]["actions"] == [f"allow:{req}", "Allow", f"deny:{req}", "Deny"]
            assert "Bash: write out.txt" in shown[-1]["body"]
            assert bus.proc.stdin is not None
            bus.proc.stdin.write(f"invoke {shown[-1]['id']} allow:{req}\n".encode())
            bus.proc.stdin.flush()
            got = ac.wait_entry(d, kind="answer", request=req)
            assert got["choice"] == "allow" and got["by"] == "notification"
            fm.wait_for(
                lambda reqs: any(
                    b.get("type") == "tool_result" and not b.get("is_error")
                    for r in reqs
                    for m in r["body"].get("messages") or []
                    if isinstance(m.get("content"), list)
                    for b in m["content"]
                    if isinstance(b, dict)
                ),
                "the allowed call's result",
            )
            assert (tmp_path / "proj" / "out.txt").read_text().strip() == "pressed"
            bus.wait("CloseNotification", 1, within=30)
            assert errors == []
        finally:
            w.stop()
            backend.stop()
            ac.huddle_cli("stop", str(d))
