"""Redaction: every planted secret falls to its rule, clean transcripts pass untouched,
and no input makes it fail."""

from __future__ import annotations

import glob

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SAMPLES
from huddle.redact.redactor import RedactFileError, Redactor, redact, strings_of, user_patterns
from planted import PLANTED, all_secrets


@pytest.mark.parametrize(
    ("rule", "secret", "template"), PLANTED, ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(PLANTED)]
)
def test_each_planted_secret_falls_to_its_rule(rule, secret, template):
    r = Redactor()
    text = template.format(s=secret)
    out = r.text(text)
    assert secret not in out
    assert r.counts.get(rule, 0) >= 1, (out, r.counts)
    assert f"[REDACTED:{rule}]" in out
    assert r.text(out) == out, "a second pass finds nothing more"


def test_context_survives_around_a_secret():
    out, n = redact("DATABASE_URL=postgres://admin:S3cr3tPLANTEDpass@db.example.com:5432/app")
    assert n == 1
    assert out == "DATABASE_URL=postgres://admin:[REDACTED:url-password]@db.example.com:5432/app"
    out, _ = redact("HOME=/root\nDB_PASSWORD=hunter2PLANTED\nPATH=/usr/bin")
    assert out == "HOME=/root\nDB_PASSWORD=[REDACTED:env-secret]\nPATH=/usr/bin"


def test_a_json_value_keeps_its_shape_and_loses_its_secrets():
    secrets = all_secrets()
    value = {
        "title": f"deploy with {secrets[0]}",
        "nested": [{"cmd": t.format(s=s)} for _, s, t in PLANTED],
        secrets[1]: 3,  # a key is text too
        "n": 1.5,
        "ok": True,
        "none": None,
    }
    r = Redactor()
    out = r.value(value)
    blob = msgspec.json.encode(out).decode()
    for s in secrets:
        assert s not in blob
    assert out["n"] == 1.5 and out["ok"] is True and out["none"] is None
    assert len(out["nested"]) == len(PLANTED)
    assert r.replaced >= len(PLANTED)


def test_many_strings_at_once_equal_one_by_one():
    texts = [t.format(s=s) for _, s, t in PLANTED] + ["short", "", "a\x00b AKIAQ3EGRT7PLANTED01 c", "plain words here"]
    together = Redactor().texts(texts)
    alone = [Redactor().text(t) for t in texts]
    assert together == alone


def test_clean_transcripts_are_left_alone():
    """Every string of every sample transcript: real agent traffic (code, shell output,
    env listings of the test machines) that holds no credential."""
    strings: list[str] = []
    for path in glob.glob(str(SAMPLES / "**" / "*.jsonl"), recursive=True):
        with open(path, "rb") as f:
            for line in f:
                try:
                    strings_of(msgspec.json.decode(line), strings)
                except msgspec.DecodeError:
                    continue
    assert len(strings) > 10_000
    r = Redactor()
    out = r.texts(strings)
    changed = [(a, b) for a, b in zip(strings, out) if a != b]
    assert not changed, changed[:3]


def test_words_that_look_like_keys_are_not_keys():
    for text in [
        "const STORAGE_KEY = 'todos';",
        "const KEY_MODELS = 'models'",
        "MONKEY=banana",
        "pip install scikit-learn; sk-learn-model-selection is a name",
        "the bearer of good news",
        "password: str",
        "token = get_token()",
        '{"key": "name-of-the-thing"}',
        "max_tokens=4096",
        "export API_KEY=$API_KEY",
        "git@github.com:owner/repo.git",
    ]:
        assert redact(text) == (text, 0), text


def test_user_patterns(tmp_path):
    f = tmp_path / "mine.txt"
    f.write_text("# my company's tokens\nACME-[0-9]{6}\n\ninternal host (db\\d+\\.corp)\n")
    pats = user_patterns(str(f))
    r = Redactor(pats)
    out = r.text("call ACME-123456 on internal host db7.corp now")
    assert "ACME-123456" not in out and "db7.corp" not in out
    assert "internal host [REDACTED:user-pattern]" in out
    assert r.counts["user-pattern"] == 2


@pytest.mark.parametrize(
    ("content", "what"),
    [("ok\n(unclosed\n", ":2: not a regular expression"), ("a*\n", ":1: the pattern matches empty text")],
)
def test_a_bad_pattern_file_is_one_line(tmp_path, content, what):
    f = tmp_path / "bad.txt"
    f.write_text(content)
    with pytest.raises(RedactFileError) as exc:
        user_patterns(str(f))
    assert str(f) in str(exc.value) and what in str(exc.value)
    with pytest.raises(RedactFileError, match="cannot read"):
        user_patterns(str(tmp_path / "missing.txt"))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400), st.sampled_from(PLANTED), st.text(max_size=50))
def test_any_text_around_a_secret(before, planted, after):
    _rule, secret, template = planted
    text = before + "\n" + template.format(s=secret) + "\n" + after
    r = Redactor()
    out = r.text(text)
    assert secret not in out
    assert r.text(out) == out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=200), max_size=8))
def test_any_text_never_fails(texts):
    r = Redactor()
    out = r.texts(texts)
    assert len(out) == len(texts)
    for a, b in zip(texts, out):
        assert a == b or "[REDACTED:" in b


def test_a_summary_cut_inside_a_secret_loses_the_part_it_kept():
    """A tool call's one-line summary, cut at its width, can end in the first letters
    of a secret that the rules see only whole (in the full input beside it)."""
    r = Redactor()
    full = "grep x; aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLANTED1KE"
    out = r.value({"input": {"command": full}, "detail": full[:40] + "…", "title": "Let me check..."})
    assert out == {
        "input": {"command": "grep x; aws_secret_access_key = [REDACTED:aws-secret-key]"},
        "detail": "grep x; aws_secret_access_key = [REDACTED:cut-secret]…",
        "title": "Let me check...",
    }
    assert r.text("a long generated tail 9f8e7d6c5b4a3f2e1d…") == "a long generated tail 9f8e7d6c5b4a3f2e1d…"
    assert r.value(["a long generated tail 9f8e7d6c5b4a3f2e1d…"]) == ["a long generated tail [REDACTED:cut-secret]…"]


def test_a_secret_said_in_many_places_counts_in_each_and_in_place_is_the_same():
    key = "AKIAQ3EGRT7PLANTED01"
    value = {"a": [f"k={key}", f"k={key}", ("t", f"x {key}")], f"k={key}": {"n": 1, "s": "plain text here"}}
    r1, r2 = Redactor(), Redactor()
    copy = r1.value(value)
    assert r1.counts == {"aws-access-key": 4}
    import copy as copying

    mine = copying.deepcopy(value)
    same = r2.value(mine, in_place=True)
    assert same is mine and same == copy and r2.counts == r1.counts
    assert key not in repr(copy) and value["a"][0] == f"k={key}", "the copy leaves the original alone"


@pytest.mark.parametrize(
    "text",
    [
        "mysql -u root -p shop",  # asks for the password: nothing on the line
        "mysql -P 3306 -h db",  # a port
        "mysql -p$MYSQL_PASSWORD shop",  # a variable, not the secret
        "curl -u admin https://x.example.com",  # curl asks for it
        "curl -sS https://x.example.com/page -o out.html",
        "the machine learning password reset flow",
        "xapp is the app's name",
    ],
)
def test_look_alikes_of_the_command_line_rules_stay(text):
    r = Redactor()
    assert r.text(text) == text and r.replaced == 0
