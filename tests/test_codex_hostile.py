"""The Codex source under hostile and live conditions: rollouts written piece by piece
(any cut gives the same events as one whole read), new child threads appearing mid-way,
truncated, reordered and garbage lines, unreadable files, rewritten files."""

from __future__ import annotations

import json
import random
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLES
from huddle.model import events as ev
from huddle.sources import Settings
from huddle.sources.codex import CodexSource

CODEX = SAMPLES / "codex"
SHAPES = [
    "subagents_v2",
    "subagents_v2__v0.144.3",
    "subagents_collab_old__v0.96.0",
    "guardian",
    "multiturn",
    "tui_approval__v0.144.3",
    "compaction__v0.96.0",
]


class Home:
    """A CODEX_HOME in a temporary folder and a source reading it like the core does."""

    def __init__(self, root: Path):
        self.root = root
        self.src = CodexSource(Settings(folders={"codex": str(root)}))
        self.handles: dict = {}

    def refresh(self) -> dict:
        self.handles = self.src.scan(self.handles)
        for h in self.handles.values():
            h.refresh()
        return self.handles

    def sessions(self):
        return {k: h.session for k, h in self.handles.items()}


def signature(session) -> dict:
    """Each agent's events, as views see them (everything but the timeline position)."""
    out: dict[str, list] = {}
    for e in session.events:
        out.setdefault(e.agent, []).append(
            (
                e.kind,
                e.t,
                e.offset,
                e.id,
                e.name,
                e.text,
                e.detail,
                e.ok,
                e.target,
                e.copied,
                e.usage.to_dict() if e.usage else None,
            )
        )
    return out


def whole(name: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "codex_home"
        shutil.copytree(CODEX / name / "codex_home" / "sessions", root / "sessions")
        home = Home(root)
        home.refresh()
        return {k: (signature(s), s.summary()) for k, s in home.sessions().items()}


def timeline(name: str) -> list[tuple[str, bytes]]:
    """All lines of a scenario's rollouts in the order Codex wrote them (by timestamp)."""
    rows = []
    base = CODEX / name / "codex_home"
    for p in sorted((base / "sessions").rglob("rollout-*.jsonl")):
        for i, line in enumerate(p.read_bytes().splitlines(keepends=True)):
            rows.append((json.loads(line)["timestamp"], str(p.relative_to(base)), i, line))
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    return [(rel, line) for _, rel, _, line in rows]


WHOLE = {name: whole(name) for name in SHAPES}
TIMELINES = {name: timeline(name) for name in SHAPES}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(SHAPES), cuts=st.lists(st.floats(0, 1), max_size=12))
def test_any_cut_gives_the_same_events_as_a_whole_read(name, cuts):
    """Codex appends line by line to several rollouts at once; huddle reads whatever is
    there at each poll, half lines included. The end result must not depend on when."""
    pieces = TIMELINES[name]
    total = sum(len(line) for _, line in pieces)
    marks = sorted({int(c * total) for c in cuts} | {total})
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "codex_home"
        (root / "sessions").mkdir(parents=True)
        home = Home(root)
        written, i, inside = 0, 0, 0
        for mark in marks:
            while written < mark and i < len(pieces):
                rel, line = pieces[i]
                take = min(len(line) - inside, mark - written)
                path = root / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "ab") as f:
                    f.write(line[inside : inside + take])
                written += take
                inside += take
                if inside == len(line):
                    i, inside = i + 1, 0
            home.refresh()
        got = {k: (signature(s), s.summary()) for k, s in home.sessions().items()}
    assert got == WHOLE[name]


def test_appended_lines_are_read_alone(tmp_path):
    """A live rollout costs reads of its new bytes: the earlier events stay as they were
    and a poll with nothing new changes nothing."""
    pieces = TIMELINES["subagents_v2"]
    root = tmp_path / "codex_home"
    home = Home(root)
    (root / "sessions").mkdir(parents=True)
    seen: list = []
    for rel, line in pieces:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab") as f:
            f.write(line)
        home.refresh()
        for h in home.handles.values():
            assert not h.refresh()  # nothing new: nothing changes
        events = [e for s in home.sessions().values() for e in s.events]
        assert events[: len(seen)] == seen
        seen = events
        for h in home.handles.values():
            for tf in h.threads.values():
                assert tf.reader.cursor.offset == path.stat().st_size or tf.path != str(path)
    (s,) = home.sessions().values()
    assert signature(s) == WHOLE["subagents_v2"][s.key][0]
    assert len(s.agents) == 3


def test_a_rewritten_rollout_is_read_again(tmp_path):
    root = tmp_path / "codex_home"
    shutil.copytree(CODEX / "shell" / "codex_home" / "sessions", root / "sessions")
    home = Home(root)
    home.refresh()
    (s,) = home.sessions().values()
    before = signature(s)
    (path,) = (root / "sessions").rglob("*.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:12]))  # shorter: rewritten in place
    home.refresh()
    (s,) = home.sessions().values()
    assert s.epoch >= 1 and len(s.events) < sum(len(v) for v in before.values())
    path.write_bytes(b"".join(lines))
    home.refresh()
    assert signature(next(iter(home.sessions().values()))) == before


GARBAGE = st.one_of(
    st.binary(min_size=1, max_size=60).map(lambda b: b.replace(b"\n", b" ").replace(b"\r", b" ")),
    st.sampled_from(
        [
            b"{",
            b"[1,2",
            b'{"type": 5}',
            b'{"type":"response_item","payload":{"type":"message","content":5}}',
            b'{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","exit_code":"x"}}}',
            b'{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":-5}}}}',
            b'{"type":"response_item","payload":{"type":"function_call_output","call_id":"nope","output":[1,{"text":2}]}}',
            b'{"type":"future_record","payload":{"anything":[1,2,3]}}',
            b"null",
            b"\xff\xfe",
        ]
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(SHAPES), data=st.data())
def test_hostile_lines_cost_only_themselves(name, data):
    files = sorted((CODEX / name / "codex_home" / "sessions").rglob("rollout-*.jsonl"))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "codex_home"
        inserted = 0
        for p in files:
            lines = p.read_bytes().splitlines()
            head, body = lines[:1], lines[1:]  # the first line says what the thread is
            how = data.draw(st.sampled_from(["garbage", "shuffle", "drop", "truncate"]))
            if how == "garbage":
                for _ in range(data.draw(st.integers(1, 5))):
                    body.insert(data.draw(st.integers(0, len(body))), data.draw(GARBAGE))
                    inserted += 1
            elif how == "shuffle" and body:
                a = data.draw(st.integers(0, len(body) - 1))
                b = data.draw(st.integers(a, len(body)))
                part = body[a:b]
                random.Random(data.draw(st.integers(0, 9))).shuffle(part)
                body[a:b] = part
            elif how == "drop" and body:
                del body[data.draw(st.integers(0, len(body) - 1))]
            raw = b"\n".join(head + body) + b"\n"
            if how == "truncate":
                raw = raw[: data.draw(st.integers(len(head[0]) + 1, len(raw)))]
            out = root / p.relative_to(CODEX / name / "codex_home")
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(raw)
        home = Home(root)
        home.refresh()
        for s in home.sessions().values():
            assert s.error is None
            assert s.skipped_lines <= inserted
            assert all(x >= 0 for x in s.usage.to_dict().values())
            s.summary()
            for h in home.handles.values():
                h.live()


def test_an_unreadable_rollout_costs_its_own_row(tmp_path):
    root = tmp_path / "codex_home"
    shutil.copytree(CODEX / "qa" / "codex_home" / "sessions", root / "sessions")
    day = next((root / "sessions").rglob("30"))
    (day / "rollout-2026-11-30T09-00-00-01a22a99-0000-7000-8000-000000000000.jsonl").write_bytes(
        b"not json at all\n{}\n"
    )
    (day / "rollout-2026-11-30T09-00-01-01a22a99-0000-7000-8000-000000000001.jsonl").write_bytes(
        b'{"type":"event_msg","payload":{}}\n'
    )
    (day / "rollout-2026-11-30T09-00-02-01a22a99-0000-7000-8000-000000000002.jsonl").write_bytes(b'{"type":"sess')
    home = Home(root)
    home.refresh()
    rows = home.sessions()
    assert not [s for s in rows.values() if s.error]
    # no session_meta (garbage, or another record first): still read, named by its file, said so;
    # the third has no whole first line yet: no verdict
    garbage, other = (rows[f"codex:01a22a99-0000-7000-8000-00000000000{i}"] for i in (0, 1))
    assert garbage.skipped_lines == 1 and "not a session_meta" in garbage.problems[0]
    assert other.skipped_lines == 0 and "not a session_meta: named by its file" in other.problems[0]
    assert "codex:01a22a99-0000-7000-8000-000000000002" not in rows
    good = [s for s in rows.values() if s.counts.get(ev.SAY)]
    assert len(good) == 1 and good[0].counts.get(ev.SAY) == 1


def test_a_rollout_without_session_meta_gets_an_id_show_accepts(tmp_path):
    from huddle.sources.codex.records import id_from_name
    from huddle.views.api import check_id

    for name in (
        "rollout-2026-01-01T00-00-00-rollout_model_switch",
        "-odd name (1)",
        "rollout-x-01a22a99-0000-7000-8000-0000000000ff",
    ):
        assert check_id(id_from_name(f"/x/{name}.jsonl")) == id_from_name(f"/x/{name}.jsonl")
    assert (
        id_from_name("/x/rollout-1-01a22a99-0000-7000-8000-0000000000ff.jsonl")
        == "01a22a99-0000-7000-8000-0000000000ff"
    )


def test_orphan_children_stay_together_under_their_missing_root(tmp_path):
    """A guardian whose user thread's rollout is gone is still never a session of its own."""
    root = tmp_path / "codex_home"
    shutil.copytree(CODEX / "guardian" / "codex_home" / "sessions", root / "sessions")
    lead = next(p for p in (root / "sessions").rglob("*.jsonl") if "d6d6" in p.name)
    lead.unlink()
    home = Home(root)
    home.refresh()
    (s,) = home.sessions().values()
    assert s.id.startswith("01a22a65-d6d6") and s.lead_id == s.id
    assert [a.quiet for a in s.tree_order()] == [False, True]


def test_an_odd_timestamp_keeps_its_line(tmp_path):
    root = tmp_path / "codex_home"
    shutil.copytree(CODEX / "qa" / "codex_home" / "sessions", root / "sessions")
    (path,) = (root / "sessions").rglob("*.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    say = next(i for i, line in enumerate(lines) if b'"role":"assistant"' in line)
    d = json.loads(lines[say])
    d["timestamp"] = "sometime on Monday"
    lines[say] = json.dumps(d).encode() + b"\n"
    path.write_bytes(b"".join(lines))
    home = Home(root)
    home.refresh()
    (s,) = home.sessions().values()
    (e,) = [e for e in s.events if e.kind == ev.SAY]
    assert e.text == "2 + 2 = 4." and e.t is not None and s.skipped_lines == 0


def test_a_reasoning_summary_given_as_text_costs_nothing(tmp_path):
    """`summary` is a list of parts on reasoning items and a string in turn_context: a
    reasoning item carrying a string is odd but valid JSON, and must not stop the read."""
    root = tmp_path / "codex_home"
    shutil.copytree(CODEX / "qa" / "codex_home" / "sessions", root / "sessions")
    (path,) = (root / "sessions").rglob("*.jsonl")
    odd = {
        "timestamp": "2026-11-30T09:00:00.000Z",
        "type": "response_item",
        "payload": {"type": "reasoning", "summary": "thinking, as one string"},
    }
    with path.open("ab") as f:
        f.write(json.dumps(odd).encode() + b"\n")
    home = Home(root)
    home.refresh()
    (s,) = home.sessions().values()
    assert s.error is None and s.counts.get(ev.SAY) == 1


def test_a_reasoning_item_with_a_plain_string_summary_reads_on(tmp_path):
    root = tmp_path / "codex_home"
    shutil.copytree(CODEX / "qa__v0.96.0" / "codex_home" / "sessions", root / "sessions")
    (f,) = (root / "sessions").rglob("*.jsonl")
    clean = Home(root)
    clean.refresh()
    (before,) = clean.sessions().values()
    lines = f.read_bytes().splitlines(keepends=True)
    out = []
    for line in lines:
        d = json.loads(line)
        p = d.get("payload") or {}
        if d.get("type") == "response_item" and p.get("type") == "reasoning":
            p["summary"] = "Answering directly"  # one string, not a list of parts
            line = (json.dumps(d) + "\n").encode()
        out.append(line)
    f.write_bytes(b"".join(out))
    home = Home(root)
    home.refresh()
    (s,) = home.sessions().values()
    assert s.error is None and s.skipped_lines == 0
    assert [e.text for e in s.events if e.kind == ev.THINK] == ["Answering directly"]
    assert s.counts.get(ev.SAY) == before.counts.get(ev.SAY) and s.usage == before.usage
