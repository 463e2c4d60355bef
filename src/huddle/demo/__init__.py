"""A built-in fictional session, played live, for a first run with no data.

The demo writes real Claude-Code-shaped files (the record shapes of
tests/fixtures/samples/claude) into a temp folder under $HUDDLE_HOME/demo/,
step by step over time, and a Huddle reads them like any other sessions: the
demo exercises the real pipeline. A lead and four sub-agents (one nested) work
on a change; midway the lead asks permission to push, with a live registry file
(sessions/<pid>.json, status "waiting", for this very process) so the board
shows "needs you". An earlier, finished session sits beside it on the board.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
import uuid

from huddle.sources import Settings

from .transcript import CWD, MODEL, Transcript, proc_start


class Demo:
    """The demo's folder, its session files and the player that writes them."""

    def __init__(self, settings: Settings | None = None, speed: float = 1.0):
        base = settings or Settings.from_env()
        root = os.path.join(base.huddle_home, "demo")
        os.makedirs(root, exist_ok=True)
        self.dir = tempfile.mkdtemp(prefix="run-", dir=root)
        self.claude_dir = os.path.join(self.dir, "claude")
        self.speed = speed
        self.session_id = str(uuid.uuid4())
        project = os.path.join(self.claude_dir, "projects", "-home-you-code-acme-shop")
        os.makedirs(project, exist_ok=True)
        os.makedirs(os.path.join(self.claude_dir, "sessions"), exist_ok=True)
        self.project = project
        self.lead = Transcript(os.path.join(project, self.session_id + ".jsonl"), self.session_id)
        self.registry = os.path.join(self.claude_dir, "sessions", f"{os.getpid()}.json")
        self.started = time.time()
        self.stopping = threading.Event()
        self.done = threading.Event()
        self.step = ""
        self._thread: threading.Thread | None = None

    def settings(self) -> Settings:
        return Settings(folders={"claude": self.claude_dir}, huddle_home=os.path.join(self.dir, "home"))

    def huddle(self):
        from huddle.core import Huddle

        return Huddle(self.settings(), sources=["claude"])

    # -- the player --------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self.play, name="huddle-demo", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        shutil.rmtree(self.dir, ignore_errors=True)

    def play(self, until: str | None = None) -> None:
        """Write the story, waiting between steps (speed 0: all at once). `until`
        stops after the step of that name."""
        self.write_past_session()
        t0 = time.time()
        for at, name, fn in self.script():
            if self.speed > 0:
                delay = t0 + at / self.speed - time.time()
                if delay > 0 and self.stopping.wait(delay):
                    return
            if self.stopping.is_set():
                return
            self.step = name
            fn(time.time() if self.speed > 0 else t0 + at)
            if name == until:
                return
        self.done.set()

    def _status(self, t: float, status: str, waiting_for: str | None = None) -> None:
        """This process's registry file, as a live Claude Code process keeps it."""
        ms = int(t * 1000)
        rec = {
            "pid": os.getpid(),
            "sessionId": self.session_id,
            "cwd": CWD,
            "startedAt": int(self.started * 1000),
            "procStart": proc_start(),
            "version": "2.1.332",
            "kind": "interactive",
            "entrypoint": "cli",
            "name": "acme-shop",
            "status": status,
            "updatedAt": ms,
            "statusUpdatedAt": ms,
        }
        if waiting_for:
            rec["waitingFor"] = waiting_for
        tmp = self.registry + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(rec, f)
        os.replace(tmp, self.registry)

    def _sub(self, agent_id: str, kind: str, description: str, call: str, parent: str | None = None) -> Transcript:
        folder = os.path.join(self.project, self.session_id, "subagents")
        os.makedirs(folder, exist_ok=True)
        meta = {
            "agentType": kind,
            "isBuiltIn": kind != "test-runner",
            "description": description,
            "toolUseId": call,
            "spawnDepth": 2 if parent else 1,
            "requestShape": "foreground",
            "model": MODEL,
        }
        if parent:
            meta["parentAgentId"] = parent
        with open(os.path.join(folder, f"agent-{agent_id}.meta.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f)
        return Transcript(os.path.join(folder, f"agent-{agent_id}.jsonl"), self.session_id, agent_id)

    def _finish(self, sub: Transcript) -> None:
        meta_path = sub.path[: -len(".jsonl")] + ".meta.json"
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
        meta["finished"] = True
        with open(meta_path, "w", encoding="utf-8") as f:
            json.dump(meta, f)

    def _agent_result(self, t: float, on: Transcript, cid: str, sub: Transcript, kind: str, report: str) -> None:
        frame = (
            "[Subagent hand-back] The text below is the final report of a subagent this session delegated to. "
            f"The report follows:\n  {report}\nagentId: {sub.agent_id} (use SendMessage to continue this agent)"
        )
        on.result(
            t,
            cid,
            frame,
            structured={
                "status": "completed",
                "agentId": sub.agent_id,
                "agentType": kind,
                "content": [{"type": "text", "text": report}],
            },
        )

    def script(self):
        """(seconds from start, step name, action): the story of one session."""
        L = self.lead
        s: dict = {}

        def order(on: Transcript, t: float, key: str, kind: str, desc: str, prompt: str, parent=None, say=None):
            cid = on.call(t, "Agent", {"description": desc, "subagent_type": kind, "prompt": prompt}, say=say)
            agent_id = "a" + uuid.uuid4().hex[:16]
            sub = s[key] = self._sub(agent_id, kind, desc, cid, parent)
            s[key + "_call"] = cid
            sub.prompt(t + 0.1, prompt)

        def tool(key: str, name: str, inp: dict, say=None):
            return lambda t: s.__setitem__(key + "_c", s[key].call(t, name, inp, say=say))

        def res(key: str, text: str, error: bool = False):
            return lambda t: s[key].result(t, s[key + "_c"], text, error)

        def report(key: str, on_key: str | None, kind: str, text: str):
            def act(t: float) -> None:
                s[key].say(t, text)
                self._finish(s[key])
                self._agent_result(t + 0.3, s[on_key] if on_key else L, s[key + "_call"], s[key], kind, text)

            return act

        def start(t: float) -> None:
            self._status(t, "busy")
            L.record("custom-title", t, customTitle="Add dark mode to the settings page")
            L.prompt(t, "Add a dark mode toggle to the settings page, with tests. Use helpers for the research.")

        s["lead"] = L
        return [
            (0.0, "start", start),
            (
                1.5,
                "plan",
                lambda t: L.assistant(
                    t,
                    [
                        {
                            "type": "thinking",
                            "thinking": "Three parts: map the settings UI, build theme tokens (with a colour audit), then run the tests.",
                            "signature": "demo",
                        },
                        {
                            "type": "text",
                            "text": "I'll bring in helpers: one maps the settings UI, one builds the theme; a test runner checks it at the end.",
                        },
                    ],
                ),
            ),
            (
                3.0,
                "order-map",
                lambda t: order(
                    L,
                    t,
                    "map",
                    "Explore",
                    "Map the settings UI",
                    "Find the settings page components and how styles are applied. Report file paths.",
                ),
            ),
            (
                3.6,
                "order-theme",
                lambda t: order(
                    L,
                    t,
                    "theme",
                    "general-purpose",
                    "Build the theme tokens",
                    "Add light/dark colour tokens and a toggle on the settings page. Audit hard-coded colours first.",
                ),
            ),
            (
                5.0,
                "map-ls",
                tool("map", "Bash", {"command": "ls src/settings src/styles", "description": "List settings files"}),
            ),
            (5.8, "map-ls-done", res("map", "SettingsPage.tsx\nSettingsPage.test.tsx\nToggle.tsx\nglobal.css")),
            (
                6.0,
                "theme-say",
                lambda t: s["theme"].say(
                    t, "Starting with a colour audit; a helper will list the hard-coded colours.", end=False
                ),
            ),
            (
                6.6,
                "order-audit",
                lambda t: order(
                    s["theme"],
                    t,
                    "audit",
                    "Explore",
                    "Find hard-coded colours",
                    "List every hard-coded hex colour under src/ with file and line.",
                    parent=s["theme"].agent_id,
                ),
            ),
            (7.0, "map-read", tool("map", "Read", {"file_path": CWD + "/src/settings/SettingsPage.tsx"})),
            (
                7.5,
                "map-read-done",
                res("map", 'export function SettingsPage() {\n  return <Panel title="Settings">…</Panel>\n}\n'),
            ),
            (
                8.0,
                "audit-rg",
                tool("audit", "Bash", {"command": "rg -n '#[0-9a-fA-F]{6}' src", "description": "Search hex colours"}),
            ),
            (
                9.5,
                "map-grep",
                tool("map", "Bash", {"command": "rg -n useTheme src", "description": "Find theme hooks"}),
            ),
            (10.2, "map-grep-done", res("map", "src/app/App.tsx:12: const theme = useTheme()")),
            (
                12.0,
                "audit-rg-done",
                res(
                    "audit",
                    "src/styles/global.css:4: #ffffff\nsrc/styles/global.css:9: #222222\nsrc/settings/Toggle.tsx:7: #3b82f6",
                ),
            ),
            (
                12.5,
                "map-report",
                report(
                    "map",
                    None,
                    "Explore",
                    "The settings page is src/settings/SettingsPage.tsx; styles come from src/styles/global.css and a useTheme() hook in src/app/App.tsx.",
                ),
            ),
            (
                13.5,
                "audit-report",
                report(
                    "audit",
                    "theme",
                    "Explore",
                    "Three hard-coded colours: two in global.css (#ffffff, #222222), one in Toggle.tsx (#3b82f6).",
                ),
            ),
            (
                14.5,
                "theme-write",
                tool(
                    "theme",
                    "Write",
                    {
                        "file_path": CWD + "/src/theme/tokens.ts",
                        "content": "export const light = {…}\nexport const dark = {…}\n",
                    },
                ),
            ),
            (15.0, "theme-write-done", res("theme", "File created successfully at: src/theme/tokens.ts")),
            (
                16.0,
                "theme-edit",
                tool(
                    "theme",
                    "Edit",
                    {
                        "file_path": CWD + "/src/settings/SettingsPage.tsx",
                        "old_string": "<Panel",
                        "new_string": "<ThemeToggle />\n<Panel",
                    },
                ),
            ),
            (16.6, "theme-edit-done", res("theme", "The file src/settings/SettingsPage.tsx has been updated.")),
            (
                18.0,
                "theme-css",
                tool(
                    "theme",
                    "Edit",
                    {"file_path": CWD + "/src/styles/global.css", "old_string": "#ffffff", "new_string": "var(--bg)"},
                ),
            ),
            (18.5, "theme-css-done", res("theme", "The file src/styles/global.css has been updated.")),
            (
                20.0,
                "theme-report",
                report(
                    "theme",
                    None,
                    "general-purpose",
                    "Added light/dark tokens in src/theme/tokens.ts, a ThemeToggle on the settings page, and replaced the three hard-coded colours with variables.",
                ),
            ),
            (
                21.5,
                "order-tests",
                lambda t: order(
                    L,
                    t,
                    "tests",
                    "test-runner",
                    "Run the test suite",
                    "Run the whole test suite and report failures with their first error line.",
                    say="The theme is in. Now the tests.",
                ),
            ),
            (23.0, "tests-run", tool("tests", "Bash", {"command": "npm test", "description": "Run the tests"})),
            (
                35.0,
                "tests-run-done",
                res("tests", "Test Suites: 12 passed, 12 total\nTests:       48 passed, 48 total\nTime:        11.8 s"),
            ),
            (
                36.0,
                "tests-report",
                report("tests", None, "test-runner", "All 48 tests pass (12 suites, 11.8 s). No snapshot changes."),
            ),
            (
                37.5,
                "push",
                lambda t: s.__setitem__(
                    "lead_c",
                    L.call(
                        t,
                        "Bash",
                        {"command": "git push -u origin dark-mode", "description": "Push the branch"},
                        say="Tests pass. I'd like to push the branch.",
                    ),
                ),
            ),
            (38.0, "permission", lambda t: self._status(t, "waiting", "permission prompt")),
            (48.0, "allowed", lambda t: self._status(t, "busy")),
            (50.0, "pushed", res("lead", "To github.com:acme/shop.git\n * [new branch]      dark-mode -> dark-mode")),
            (
                51.5,
                "done",
                lambda t: L.say(
                    t,
                    "Dark mode is in: theme tokens, a toggle on the settings page, no hard-coded colours left, all 48 tests pass, and the branch is pushed.",
                ),
            ),
            (52.0, "idle", lambda t: self._status(t, "idle")),
        ]

    def write_past_session(self) -> None:
        """A finished session from yesterday, so the board is not a single row."""
        sid = str(uuid.uuid4())
        p = Transcript(os.path.join(self.project, sid + ".jsonl"), sid)
        t = time.time() - 26 * 3600
        p.prompt(t, "The login test is flaky on CI. Find out why and fix it.")
        c = p.call(t + 4, "Read", {"file_path": CWD + "/tests/login.test.ts"}, say="Let me look at the test first.")
        p.result(t + 5, c, "await page.click('#login')\nexpect(await page.title()).toBe('Home')\n")
        c = p.call(
            t + 12,
            "Edit",
            {
                "file_path": CWD + "/tests/login.test.ts",
                "old_string": "expect(await",
                "new_string": "await page.waitForURL('/home')\nexpect(await",
            },
        )
        p.result(t + 13, c, "The file tests/login.test.ts has been updated.")
        c = p.call(
            t + 15, "Bash", {"command": "npm test -- login --repeat 20", "description": "Run the login test 20 times"}
        )
        p.result(t + 41, c, "20 passed")
        p.say(
            t + 43,
            "The test checked the title before navigation finished. It now waits for the URL; 20 runs in a row pass.",
        )
