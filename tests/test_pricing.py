"""The price table: shipped data, lookups, per-request rules, user overrides, bad files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import claude_huddle
from huddle.cost import pricing
from huddle.cost.pricing import PricingError, builtin_text, candidates, load, parse, session_cost
from huddle.model.events import USAGE, Event, Usage
from huddle.model.session import Session
from huddle.usage.report import report

SAMPLES = Path(__file__).parent / "fixtures" / "samples"
# Models in the samples that have no published price: Codex's guardian alias, and the
# scripted fake model Vibe and OpenCode were driven with.
# "<synthetic>": what Claude Code names its own error messages (never counted as usage)
NO_PUBLISHED_PRICE = {"codex-auto-review", "fake", "fake-model", "fake/fake-model", "<synthetic>"}


def test_builtin_table_is_dated_and_complete():
    doc = json.loads(builtin_text())
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", doc["as_of"])
    t = load("/nonexistent-huddle-home")
    assert t.as_of == doc["as_of"] and t.problem is None and t.user_file is None
    for name, p in t.models.items():
        for rates in filter(None, (p.base, p.long)):
            assert rates.input > 0 and rates.output > 0, name
            assert 0 < rates.cache_read <= rates.input, name
            assert rates.cache_write >= rates.input and rates.cache_write_1h >= rates.cache_write, name
    for alias, target in t.aliases.items():
        assert target in t.models, alias


def sample_models() -> set[str]:
    """Every model name the real agent programs wrote into the samples."""
    found: set[str] = set()
    rx = re.compile(rb'"(?:model|model_name|active_model)": ?"([^"]+)"')
    for f in SAMPLES.rglob("*"):  # not truth.json: the corpus driver wrote it (it names side calls no file holds)
        if f.is_file() and f.suffix in (".jsonl", ".json") and f.name != "truth.json":
            found.update(m.decode() for m in rx.findall(f.read_bytes()))
    return found


def test_every_model_in_the_samples_is_priced_or_known_to_have_no_price():
    t = load("/nonexistent-huddle-home")
    models = sample_models()
    assert {"claude-opus-5-5", "claude-sonnet-4-5", "gpt-5.5", "gpt-5.1-codex", "gpt-6.1-sol"} <= models
    unpriced = {m for m in models if t.price(m) is None}
    assert unpriced == NO_PUBLISHED_PRICE & models


@pytest.mark.parametrize(
    "model,listed",
    [
        ("claude-opus-5-5", "claude-opus-5-5"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("anthropic/claude-haiku-4-5", "claude-haiku-4-5"),
        ("claude-opus-5-5[1m]", "claude-opus-5-5"),
        ("openai/gpt-5.5-2026-04-23", "gpt-5.5"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
        ("mistral-vibe-cli-latest", "mistral-medium-3.5"),
    ],
)
def test_the_same_model_under_another_spelling_is_found(model, listed):
    t = load("/nonexistent-huddle-home")
    assert t.price(model) is t.models[listed]
    assert listed in candidates(model) or t.aliases.get(candidates(model)[-1]) == listed


@pytest.mark.parametrize("model", ["claude-opus-5-5-preview", "claude-opus-6", "gpt-5.5-pro-max", "", "(unknown)"])
def test_a_neighbour_is_never_used(model):
    assert load("/nonexistent-huddle-home").price(model) is None


def test_opus_5_5_is_not_opus_5():
    t = load("/nonexistent-huddle-home")
    assert t.price("claude-opus-5-5").base.input == 4
    assert t.price("claude-opus-5").base.input == 5


def test_cost_per_request_with_one_hour_cache_writes():
    p = load("/nonexistent-huddle-home").price("claude-opus-5-5")
    u = Usage(input=10, output=100, cache_read=1000, cache_write=3000, cache_write_1h=1000)
    assert p.request_cost(u) == pytest.approx((10 * 4 + 100 * 20 + 1000 * 0.2 + 2000 * 5 + 1000 * 8) / 1e6)


def test_long_context_rates_apply_to_the_whole_request_past_the_threshold():
    p = load("/nonexistent-huddle-home").price("claude-sonnet-4-5")
    short = Usage(input=100_000, output=100, cache_read=100_000)  # prompt exactly 200k
    long = Usage(input=150_000, output=100, cache_read=100_000)  # prompt 250k
    assert p.request_cost(short) == pytest.approx((100_000 * 3 + 100 * 15 + 100_000 * 0.3) / 1e6)
    # Anthropic bills a request whose input (cache included) passes 200k at long rates in
    # full. ccusage 20.0.24 prices each token kind apart and only the part above 200k,
    # so it says $0.4815 here where the bill is $0.96225.
    assert p.request_cost(long) == pytest.approx((150_000 * 6 + 100 * 22.5 + 100_000 * 0.6) / 1e6)
    gpt = load("/nonexistent-huddle-home").price("gpt-6.1-sol")
    assert gpt.request_cost(Usage(input=272_001)) == pytest.approx(272_001 * 4 / 1e6)


def _session(events: list[tuple[str, Usage, bool]]) -> Session:
    s = Session("claude", "s1")
    s.agent("s1", parent=None)
    for i, (model, u, copied) in enumerate(events):
        s.add(Event(kind=USAGE, agent="s1", t=1796000000.0 + i, id=f"msg_{i}", name=model, usage=u, copied=copied))
    return s


def test_session_cost_applies_long_context_per_request_and_follows_new_events():
    t = load("/nonexistent-huddle-home")
    p = t.price("claude-sonnet-4-5")
    reqs = [Usage(input=10, output=5, cache_read=150_000), Usage(input=10, output=5, cache_read=250_000)]
    s = _session([("claude-sonnet-4-5", u, False) for u in reqs])
    assert session_cost(s, t)["usd"] == pytest.approx(sum(p.request_cost(u) for u in reqs))
    more = Usage(input=300_000, output=1)
    s.add(Event(kind=USAGE, agent="s1", t=1796000100.0, id="msg_x", name="claude-sonnet-4-5", usage=more))
    assert session_cost(s, t)["usd"] == pytest.approx(sum(p.request_cost(u) for u in reqs + [more]))


def test_session_cost_lists_unpriced_models_and_prices_the_rest():
    t = load("/nonexistent-huddle-home")
    s = _session(
        [
            ("claude-opus-5-5", Usage(input=1000), False),
            ("mystery-7", Usage(input=5), False),
            ("", Usage(output=3), False),
            ("claude-opus-5-5", Usage(input=10**6), True),
        ]
    )
    assert session_cost(s, t) == {"usd": pytest.approx(1000 * 4 / 1e6), "unpriced": ["(unknown)", "mystery-7"]}
    only_unknown = _session([("mystery-7", Usage(input=5), False)])
    assert session_cost(only_unknown, t) == {"usd": None, "unpriced": ["mystery-7"]}
    assert session_cost(Session("claude", "empty"), t) == {"usd": 0.0, "unpriced": []}


@pytest.mark.parametrize(
    "name", ["01-basic-tools", "02-subagents", "04-resume-continue-fork", "12-nested-and-custom-agents"]
)
def test_board_cost_equals_the_usage_report_per_session(name):
    h = claude_huddle(SAMPLES / "claude" / name / "config")
    rows = {r["key"]: r for r in report(h, by="session")["rows"]}
    for s in h.sessions():
        c = session_cost(s)
        assert c["unpriced"] == []
        assert c["usd"] == pytest.approx(rows[s.key]["cost_usd"], abs=1e-6)


# -- bad pricing files --------------------------------------------------------------

BAD = [
    ('{\n  "models": {\n    "m": {"input": 1 "output": 2}\n  }\n}', 3, "not valid JSON"),
    (
        '{"models": {\n "m": {"input": 1, "output": "2", "cache_read": 0, "cache_write": 1}}}',
        2,
        "output must be a number",
    ),
    ('{"models": {\n\n "m": {"input": 1, "output": 2, "cache_read": 0}}}', 3, "cache_write must be a number"),
    (
        '{"models": {"a": {"input": 1, "output": 2, "cache_read": 0, "cache_write": 1},\n "m": {"input": -1, "output": 2, "cache_read": 0, "cache_write": 1}}}',
        2,
        "input must be a number >= 0",
    ),
    ('{"models": {\n "m": [1, 2, 3]}}', 2, "must be an object of rates"),
    (
        '{"models": {\n "m": {"input": 1, "output": 2, "cache_read": 0, "cache_write": 1,\n "long_context": {"input": 1, "output": 2, "cache_read": 0, "cache_write": 1}}}}',
        2,
        "above must be a token count",
    ),
    ("[1, 2]", 1, "expected a JSON object"),
    ('{\n"models": 5}', 2, '"models" must be an object'),
    ('{"models": {},\n "aliases": {"x": 3}}', 2, '"aliases" must map'),
    ("", 1, "not valid JSON"),
]


@pytest.mark.parametrize("text,line,what", BAD)
def test_a_bad_pricing_file_is_one_line_naming_file_and_line(text, line, what):
    with pytest.raises(PricingError) as err:
        parse(text, "/home/me/.local/share/huddle/pricing.json")
    msg = str(err.value)
    assert msg.startswith(f"/home/me/.local/share/huddle/pricing.json:{line}: "), msg
    assert what in msg and "\n" not in msg


def test_a_broken_user_file_keeps_builtin_prices_and_says_why(tmp_path):
    (tmp_path / "pricing.json").write_text('{"models": {"claude-opus-5-5": {"input": "cheap"}}}')
    t = load(str(tmp_path))
    assert t.problem.startswith(f"{tmp_path / 'pricing.json'}:1: model 'claude-opus-5-5'")
    assert t.price("claude-opus-5-5").base.input == 4
    assert t.describe()["problem"] == t.problem


def test_user_file_adds_models_replaces_models_and_aliases(tmp_path):
    (tmp_path / "pricing.json").write_text(
        json.dumps(
            {
                "as_of": "2026-12-24",
                "models": {
                    "fake-model": {"input": 1, "output": 3, "cache_read": 0.1, "cache_write": 1},
                    "Claude-Opus-5-5": {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75},
                    "mistral-vibe-cli-latest": {"input": 9, "output": 9, "cache_read": 9, "cache_write": 9},
                },
                "aliases": {"fake": "fake-model"},
            }
        )
    )
    t = load(str(tmp_path))
    assert t.problem is None and t.user_as_of == "2026-12-24"
    assert t.price("fake").base.output == 3
    assert t.price("claude-opus-5-5").base.input == 3
    assert t.price("claude-opus-5-5").origin == str(tmp_path / "pricing.json")
    assert t.price("mistral-vibe-cli-latest").base.input == 9  # the user's own entry beats the built-in alias
    assert t.price("claude-sonnet-4-5").origin == "built-in"


def test_current_table_is_cached_and_sees_a_changed_file(tmp_path, monkeypatch):
    home = str(tmp_path)
    first = pricing.current(home)
    assert pricing.current(home) is first
    (tmp_path / "pricing.json").write_text(
        json.dumps({"models": {"x-1": {"input": 1, "output": 1, "cache_read": 1, "cache_write": 1}}})
    )
    monkeypatch.setattr(pricing, "RECHECK", 0.0)
    second = pricing.current(home)
    assert second is not first and second.price("x-1") is not None
    assert pricing.current(home) is second  # same file, same table


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
model_docs = st.fixed_dictionaries(
    {},
    optional={
        "as_of": json_values,
        "models": st.dictionaries(st.text(max_size=12), json_values, max_size=4) | json_values,
        "aliases": json_values,
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(st.text(max_size=200), model_docs.map(json.dumps), json_values.map(json.dumps)))
def test_any_user_file_gives_a_table_or_one_line_never_a_traceback(tmp_path, text):
    (tmp_path / "pricing.json").write_text(text, encoding="utf-8")
    t = load(str(tmp_path))
    assert t.price("claude-opus-5-5") is not None  # built-in prices stay
    if t.problem is not None:
        assert t.problem.startswith(str(tmp_path / "pricing.json") + ":") and "\n" not in t.problem
