"""A small recording notification server on a real D-Bus session bus.

    dbus-run-session -- python notification_server.py RECORD ADDRESS_FILE

It owns org.freedesktop.Notifications, answers Notify / CloseNotification /
GetCapabilities / GetServerInformation as a desktop's notification daemon does, and
appends each call to RECORD as one JSON line. Once it owns the name it writes the bus
address to ADDRESS_FILE (for the test to hand to huddle); a line `invoke ID KEY` on
its standard input is a person pressing that notification's action (ActionInvoked);
it stops when its standard input closes. Nothing is mocked: clients speak real D-Bus to a real dbus-daemon.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time

from jeepney import DBusAddress, HeaderFields, MessageType, new_error, new_method_return, new_signal
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection

NAME = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"
INTROSPECTION = f"""<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
<node>
  <interface name="org.freedesktop.DBus.Introspectable">
    <method name="Introspect"><arg name="xml" type="s" direction="out"/></method>
  </interface>
  <interface name="{NAME}">
    <method name="Notify">
      <arg type="s" direction="in"/><arg type="u" direction="in"/><arg type="s" direction="in"/>
      <arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="as" direction="in"/>
      <arg type="a{{sv}}" direction="in"/><arg type="i" direction="in"/><arg type="u" direction="out"/>
    </method>
    <method name="CloseNotification"><arg type="u" direction="in"/></method>
    <method name="GetCapabilities"><arg type="as" direction="out"/></method>
    <method name="GetServerInformation">
      <arg type="s" direction="out"/><arg type="s" direction="out"/><arg type="s" direction="out"/><arg type="s" direction="out"/>
    </method>
    <signal name="NotificationClosed"><arg type="u"/><arg type="u"/></signal>
    <signal name="ActionInvoked"><arg type="u"/><arg type="s"/></signal>
  </interface>
</node>"""


def plain(value):
    """D-Bus values as JSON: variants (signature, value) keep their value."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        return plain(value[1])
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value


def main(record: str, address_file: str) -> None:
    conn = open_dbus_connection(bus="SESSION")
    reply = conn.send_and_get_reply(message_bus.RequestName(NAME, 4))  # 4: do not queue
    if reply.body[0] != 1:
        raise SystemExit(f"could not own {NAME}: {reply.body}")
    emitter = DBusAddress(PATH, interface=NAME)
    stop = threading.Event()
    pressed: queue.Queue[tuple[int, str]] = queue.Queue()

    def read_stdin() -> None:
        for line in sys.stdin:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "invoke":
                pressed.put((int(parts[1]), parts[2]))
        stop.set()

    threading.Thread(target=read_stdin, daemon=True).start()
    with open(address_file + ".tmp", "w") as f:
        f.write(os.environ["DBUS_SESSION_BUS_ADDRESS"])
    os.replace(address_file + ".tmp", address_file)
    last_id = 0
    open_ids: set[int] = set()

    def log(entry: dict) -> None:
        entry["t"] = time.time()
        with open(record, "a") as f:
            f.write(json.dumps(entry) + "\n")

    while not stop.is_set():
        while not pressed.empty():
            nid, key = pressed.get()
            log({"call": "ActionInvoked", "id": nid, "key": key})
            conn.send(new_signal(emitter, "ActionInvoked", "us", (nid, key)))
        try:
            msg = conn.receive(timeout=0.05)
        except TimeoutError:
            continue
        if msg.header.message_type != MessageType.method_call:
            continue
        member = msg.header.fields.get(HeaderFields.member)
        iface = msg.header.fields.get(HeaderFields.interface)
        if member == "Introspect":
            conn.send(new_method_return(msg, "s", (INTROSPECTION,)))
            continue
        if iface not in (NAME, None):
            conn.send(new_error(msg, "org.freedesktop.DBus.Error.UnknownInterface", "s", (str(iface),)))
            continue
        if member == "Notify":
            app, replaces, icon, summary, body, actions, hints, timeout = msg.body
            nid = replaces if replaces in open_ids else last_id + 1
            last_id = max(last_id, nid)
            open_ids.add(nid)
            log(
                {
                    "call": "Notify",
                    "id": nid,
                    "app": app,
                    "replaces": replaces,
                    "icon": icon,
                    "summary": summary,
                    "body": body,
                    "actions": list(actions),
                    "hints": plain(hints),
                    "timeout": timeout,
                    "sender": msg.header.fields.get(HeaderFields.sender),
                }
            )
            conn.send(new_method_return(msg, "u", (nid,)))
        elif member == "CloseNotification":
            (nid,) = msg.body
            log({"call": "CloseNotification", "id": nid})
            conn.send(new_method_return(msg))
            if nid in open_ids:
                open_ids.discard(nid)
                conn.send(new_signal(emitter, "NotificationClosed", "uu", (nid, 3)))
        elif member == "GetCapabilities":
            conn.send(new_method_return(msg, "as", (["body", "actions", "persistence"],)))
        elif member == "GetServerInformation":
            conn.send(new_method_return(msg, "ssss", ("huddle-test-recorder", "huddle", "1", "1.2")))
        else:
            conn.send(new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod", "s", (str(member),)))
    conn.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
