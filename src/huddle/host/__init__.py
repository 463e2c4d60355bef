"""Hosting an agent: `huddle host`, its socket, and `huddle attach/send/stop/run`.

log.py       D/events.jsonl: the append-only, numbered log (one writer, any readers)
server.py    the host process: runs the agent, logs what passes, stops its tree
serving.py   D/host.sock: attach / write / stop / status, JSON lines
process.py   the agent's pipes and exit, on the host's event loop
proctree.py  the agent's process tree from /proc (setsid'd tools included)
client.py    talking to a host; reading its log when none runs
liveline.py  what a claude stream-json run is doing, in one line (pure, stdlib)
phrases.py   tool calls said as something being done
run.py       `huddle run`: host under $HUDDLE_HOME/runs, show the live line
"""
