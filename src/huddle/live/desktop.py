"""How a notification reaches the desktop.

- Linux: the freedesktop Notifications service on the D-Bus session bus, spoken to
  directly (jeepney, pure Python): Notify, and CloseNotification when the wait ends;
  its actions (Allow / Deny on a run huddle hosts) come back as ActionInvoked signals.
  Without jeepney, `notify-send` (libnotify) shows them; it cannot close them, so an
  answered wait replaces its notification with a short-lived "answered".
- macOS: `osascript` (display notification); notifications there close themselves.
- Anywhere, with the optional extra (`pip install 'huddle[notify]'`): desktop-notifier,
  whose notifications open the session's page when clicked.

`pick()` chooses; HUDDLE_NOTIFY=dbus|notify-send|osascript|desktop-notifier forces one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import subprocess
import sys
import threading
from typing import Any

from huddle.errors import HostingError
from huddle.io.visible import visible

APP = "huddle"
BUS_NAME = "org.freedesktop.Notifications"
BUS_PATH = "/org/freedesktop/Notifications"


def as_text(summary: str, body: str, markup: bool) -> tuple[str, str]:
    """What a session's files said, as text: control characters shown as escapes, and a
    body escaped where the server may render markup (the Notifications spec's <b>, <a
    href>, <img>): what the files said is shown as written, never followed or loaded."""
    body = visible(body, lines=True).replace("\t", " ")
    if markup:
        body = body.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return visible(summary), body


class Unavailable(HostingError):
    """No way to show desktop notifications here (said in one line)."""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "…"


def session_bus():
    """A connection to the D-Bus session bus (jeepney), or Unavailable saying why not in
    one line: the backends that speak D-Bus are passed over without one."""
    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        raise Unavailable("no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
    try:
        from jeepney.io.blocking import open_dbus_connection
    except ImportError as exc:
        raise Unavailable("jeepney is not installed") from exc
    try:
        return open_dbus_connection(bus="SESSION")
    except Exception as exc:  # an address with nothing behind it, a bus refusing us
        raise Unavailable(f"no D-Bus session bus ({type(exc).__name__}: {_one_line(exc)})") from exc


class DBus:
    """org.freedesktop.Notifications over the session bus, with jeepney."""

    name = "dbus"
    actions = True  # buttons on the notification: their key comes back to `listen`'s callback

    def __init__(self) -> None:
        self.conn = session_bus()
        from jeepney import DBusAddress

        self.addr = DBusAddress(BUS_PATH, bus_name=BUS_NAME, interface=BUS_NAME)
        self.lock = threading.Lock()
        self.listener: threading.Thread | None = None
        self.listening = threading.Event()

    def _call(self, method: str, signature: str, args: tuple) -> Any:
        from jeepney import new_method_call
        from jeepney.wrappers import unwrap_msg

        with self.lock:
            reply = self.conn.send_and_get_reply(new_method_call(self.addr, method, signature, args), timeout=5)
        return unwrap_msg(reply)

    def show(
        self, summary: str, body: str, url: str | None, replaces: object = None, actions: list | tuple = ()
    ) -> object:
        summary, body = as_text(summary, body, markup=True)
        hints = {"urgency": ("y", 2), "category": ("s", "im.received"), "desktop-entry": ("s", APP)}
        rid = replaces if isinstance(replaces, int) else 0
        flat = [x for key, label in actions for x in (key, label)]
        (nid,) = self._call("Notify", "susssasa{sv}i", (APP, rid, "dialog-question", summary, body, flat, hints, 0))
        return nid

    def listen(self, on_action) -> None:
        """Call `on_action(id, key)` for each action a person invokes (a thread of its own,
        on a connection of its own: replies to Notify never wait behind a signal)."""
        from jeepney.bus_messages import MatchRule, message_bus
        from jeepney.io.blocking import open_dbus_connection

        rule = MatchRule(type="signal", interface=BUS_NAME, member="ActionInvoked", path=BUS_PATH)
        conn = open_dbus_connection(bus="SESSION")
        conn.send_and_get_reply(message_bus.AddMatch(rule), timeout=5)
        self.listening.set()

        def run() -> None:
            with conn.filter(rule) as queue:
                while self.listening.is_set():
                    try:
                        msg = conn.recv_until_filtered(queue, timeout=0.2)
                    except TimeoutError:
                        continue
                    except Exception:  # the bus went away: no more actions
                        break
                    try:
                        nid, key = msg.body
                        on_action(nid, key)
                    except Exception:  # one bad signal or callback costs that action only
                        continue
            conn.close()

        self.listener = threading.Thread(target=run, name="huddle-notify-actions", daemon=True)
        self.listener.start()

    def close(self, handle: object) -> None:
        if isinstance(handle, int):
            self._call("CloseNotification", "u", (handle,))

    def stop(self) -> None:
        self.listening.clear()
        if self.listener is not None:
            self.listener.join(timeout=5)
        self.conn.close()


class NotifySend:
    """libnotify's notify-send: shows and replaces; cannot close."""

    name = "notify-send"

    def __init__(self) -> None:
        self.exe = shutil.which("notify-send")
        if not self.exe:
            raise Unavailable("notify-send is not installed (Debian: libnotify-bin)")
        if not os.environ.get("DISPLAY"):
            # libnotify speaks D-Bus too: with no bus it can only start one for an X display
            session_bus().close()

    def _run(self, *args: str) -> int | None:
        out = subprocess.run(
            [self.exe or "notify-send", f"--app-name={APP}", "--print-id", *args],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}")
        try:
            return int(out.stdout.strip().split()[0])
        except (ValueError, IndexError):
            return None

    def show(self, summary: str, body: str, url: str | None, replaces: object = None) -> object:
        summary, body = as_text(summary, body, markup=True)
        body = body.replace("\\", "\\\\")  # notify-send reads backslash escapes in a body (g_strcompress)
        extra = [f"--replace-id={replaces}"] if isinstance(replaces, int) else []
        return self._run("--urgency=critical", "--icon=dialog-question", *extra, "--", summary, body)

    def close(self, handle: object) -> None:
        if isinstance(handle, int):  # replaced by a note that goes away by itself
            self._run(f"--replace-id={handle}", "--urgency=low", "--expire-time=3000", "--", "Answered", "")


def _applescript(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Osascript:
    """macOS: display notification through AppleScript."""

    name = "osascript"

    def __init__(self) -> None:
        self.exe = shutil.which("osascript")
        if sys.platform != "darwin" or not self.exe:
            raise Unavailable("osascript is macOS only")

    def show(self, summary: str, body: str, url: str | None, replaces: object = None) -> object:
        summary, body = as_text(summary, body, markup=False)
        script = f"display notification {_applescript(body)} with title {_applescript(summary)}"
        subprocess.run([self.exe or "osascript", "-e", script], capture_output=True, timeout=10, check=True)
        return None

    def close(self, handle: object) -> None:
        return None


class Notifier:
    """desktop-notifier (optional extra): click a notification to open the session."""

    name = "desktop-notifier"

    def __init__(self) -> None:
        try:
            from desktop_notifier import DesktopNotifier
        except ImportError as exc:
            raise Unavailable("desktop-notifier is not installed (pip install 'huddle[notify]')") from exc
        if sys.platform.startswith("linux"):
            session_bus().close()  # it speaks D-Bus there: none, and it would fail at every wait
        # It logs a failed send with its traceback and returns as if sent: its records are
        # kept here (never printed) and a failure raised as one line from show().
        self.failures = _Failures()
        log = logging.getLogger("desktop_notifier")
        log.addHandler(self.failures)
        log.propagate = False
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="huddle-notify", daemon=True)
        self.thread.start()
        self.dn = DesktopNotifier(app_name=APP)

    def _run(self, coro) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=10)

    def show(self, summary: str, body: str, url: str | None, replaces: object = None) -> object:
        from desktop_notifier import Urgency

        summary, body = as_text(summary, body, markup=sys.platform.startswith("linux"))  # (D-Bus there)
        if isinstance(replaces, str):
            self.close(replaces)
        clicked = (lambda: open_page(url)) if url else None
        self.failures.last = None
        nid = self._run(self.dn.send(summary, body, urgency=Urgency.Critical, on_clicked=clicked, timeout=0))
        if self.failures.last is not None:
            raise RuntimeError(self.failures.last)
        return nid

    def close(self, handle: object) -> None:
        if isinstance(handle, str):
            self._run(self.dn.clear(handle))

    def stop(self) -> None:
        # desktop-notifier has no close of its own: its D-Bus connection (dbus-fast) is
        # ended here, where the library keeps it, when it is there at all.
        bus = getattr(getattr(self.dn, "_backend", None), "bus", None)
        if bus is not None and hasattr(bus, "wait_for_disconnect"):

            async def bye() -> None:
                bus.disconnect()
                await bus.wait_for_disconnect()

            try:
                self._run(bye())
            except Exception:  # a notification service gone away is already closed
                pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        if not self.thread.is_alive():
            self.loop.close()  # its selector and sockets, not left to the collector


class _Failures(logging.Handler):
    """desktop-notifier's error records, kept as one line (the last one), never printed."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.last: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        self.last = f"{type(exc).__name__}: {_one_line(exc)}" if exc is not None else record.getMessage()


def _detached(argv: list[str]) -> None:
    dn = subprocess.DEVNULL
    subprocess.Popen(argv, stdin=dn, stdout=dn, stderr=dn, start_new_session=True)


def open_page(url: str | None) -> bool:
    """Open `url` in a graphical browser, detached from this terminal; never a console
    browser (lynx, w3m...), which would take over the terminal huddle runs in. Returns
    whether one was started (if not, the caller says where to go)."""
    import webbrowser

    if not url:
        return False
    try:
        if sys.platform == "darwin":
            _detached(["open", url])
            return True
        if sys.platform.startswith("win"):
            return webbrowser.open(url)
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            return False  # no graphical session: a browser started now would be a console one
        for opener in (["xdg-open"], ["gio", "open"]):
            if shutil.which(opener[0]):
                _detached([*opener, url])
                return True
        b = webbrowser.get()
        if type(b) is webbrowser.GenericBrowser:  # one that runs in the terminal (www-browser, lynx...)
            return False
        return b.open(url)
    except (OSError, webbrowser.Error):
        return False


BACKENDS: dict[str, type] = {
    "desktop-notifier": Notifier,
    "dbus": DBus,
    "notify-send": NotifySend,
    "osascript": Osascript,
}


def pick(name: str | None = None) -> Any:
    """The first backend that works here (or the one named / in HUDDLE_NOTIFY)."""
    name = name or os.environ.get("HUDDLE_NOTIFY") or None
    if name:
        if name not in BACKENDS:
            raise Unavailable(f"no notification backend {name!r} (one of {', '.join(BACKENDS)})")
        return BACKENDS[name]()
    order = (
        ["desktop-notifier", "osascript"] if sys.platform == "darwin" else ["desktop-notifier", "dbus", "notify-send"]
    )
    why: dict[str, list[str]] = {}  # one reason, the backends it stopped
    for n in order:
        try:
            return BACKENDS[n]()
        except Unavailable as exc:
            why.setdefault(str(exc), []).append(n)
    raise Unavailable("; ".join(f"{', '.join(n)}: {w}" for w, n in why.items()))
