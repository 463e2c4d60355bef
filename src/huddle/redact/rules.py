"""The redaction's rule table: each rule an expression that starts with a literal
(so the regex engine skips through text at memchr speed), the part of a match that
is the secret, whether it runs on the lowered text, and a small check that looks at
a match (a boundary, a name, "looks generated") before it counts. huddle.redact.redactor
runs them."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

Span = tuple[int, int]
Check = Callable[[re.Match[str], int], Span | None]


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    group: int = 0  # the part of the match that is the secret
    lower: bool = False  # matched against the lowered text (same positions)
    check: Check | None = None  # (match, group) -> the span to replace, or None to leave it


# -- checks ------------------------------------------------------------------------------

_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_TOKEN = _WORD | {"-"}
_PLACEHOLDERS = frozenset(
    {"none", "null", "true", "false", "changeme", "example", "redacted", "hidden", "xxxxxx", "your_key", "required"}
)


def _span(m: re.Match[str], g: int) -> Span:
    return m.start(g), m.end(g)


def _starts_token(m: re.Match[str], g: int, chars: frozenset[str] = _TOKEN) -> Span | None:
    """The match is not the tail of a longer token (`mask-...` is not `sk-...`)."""
    i = m.start(0)
    return _span(m, g) if i == 0 or m.string[i - 1] not in chars else None


def _generated(m: re.Match[str], g: int) -> Span | None:
    """Starts a token and looks generated: a digit and a letter (`sk-learn-models` has no digit)."""
    s = m.group(g)
    if not (any(c.isdigit() for c in s) and any(c.isalpha() for c in s)):
        return None
    return _starts_token(m, g)


def _real_value(s: str) -> bool:
    s = s.strip("'\"").lower()
    if len(s) < 4 or s.startswith(("$", "<", "{", "%", "[redacted", "***")) or len(set(s)) <= 2:
        return False
    return s not in _PLACEHOLDERS


def _unquoted(m: re.Match[str], g: int) -> Span:
    """The value's span without its quotes (so a token rule naming the same span wins)."""
    a, b = m.start(g), m.end(g)
    if b - a >= 2 and m.string[a] in "'\"" and m.string[b - 1] == m.string[a]:
        return a + 1, b - 1
    return a, b


def _value(m: re.Match[str], g: int) -> Span | None:
    return _unquoted(m, g) if _real_value(m.group(g)) else None


def _bearer(m: re.Match[str], g: int) -> Span | None:
    s = m.group(g)
    return _span(m, g) if _real_value(s) and any(c.isdigit() for c in s) else None


def _aws_key(m: re.Match[str], g: int) -> Span | None:
    s, i, j = m.string, m.start(0), m.end(0)
    if m.group(0)[:4] not in _AWS_PREFIXES:
        return None
    if (i and (s[i - 1].isdigit() or "A" <= s[i - 1] <= "Z")) or (
        j < len(s) and (s[j].isdigit() or "A" <= s[j] <= "Z")
    ):
        return None
    return i, j


def _back(chars: frozenset[str]) -> Callable[[str, int], int]:
    def start_of_name(s: str, i: int) -> int:
        while i > 0 and s[i - 1] in chars:
            i -= 1
        return i

    return start_of_name


_name_start = _back(frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"))
_lower_name_start = _back(frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-"))
_STRONG_PARTS = frozenset(
    {"PASSWORD", "PASSWD", "PASS", "PASSPHRASE", "PWD", "SECRET", "SECRETS", "TOKEN", "CREDENTIALS"}
)
_ENV_PARTS = frozenset(
    {"PASSWORD", "PASSWD", "PASS", "PASSPHRASE", "PWD", "SECRET", "SECRETS", "TOKEN", "KEY", "APIKEY", "ACCESSKEY"}
    | {"SECRETKEY", "PRIVATEKEY", "CREDENTIAL", "CREDENTIALS", "AUTH", "DSN"}
)


def _env(m: re.Match[str], g: int) -> Span | None:
    """`NAME=value` where NAME is an upper-case identifier one of whose parts names a secret."""
    s = m.string
    i = _name_start(s, m.start(0))
    if i and s[i - 1] in _WORD:
        return None  # part of a lower-case or mixed identifier: code, not an env dump
    name = s[i : m.start(2)].rstrip(" \t=")
    parts = name.split("_")
    strong = any(p in _STRONG_PARTS or p.endswith(("TOKEN", "SECRET", "PASSWORD", "APIKEY")) for p in parts)
    if not strong:
        if not any(p in _ENV_PARTS for p in parts):
            return None
        v = m.group(g).strip("'\"")
        if not (any(c.isdigit() for c in v) or len(v) >= 20):
            return None  # STORAGE_KEY=todos: a name, not a key
    return _value(m, g)


_KEY_NAMES = (
    "api_key",
    "apikey",
    "api-key",
    "access_key",
    "accesskey",
    "secret_key",
    "secretkey",
    "private_key",
    "privatekey",
    "auth_key",
    "signing_key",
    "encryption_key",
    "master_key",
    "account_key",
    "subscription_key",
    "client_key",
    "license_key",
)


def _config(keyword_ok: Callable[[str], bool]) -> Check:
    """`name: "value"`, `name = 'value'`, and unquoted `name: value` / `name=value` to the
    end of a line (YAML, .ini, .properties). `keyword_ok` looks at the whole name."""

    def check(m: re.Match[str], g: int) -> Span | None:
        s = m.string
        i = _lower_name_start(s, m.start(0))
        name = s[i : m.start(0)] + m.group(1)
        if not keyword_ok(name):
            return None
        value = m.group(g)
        if value[:1] not in ("'", '"'):
            end = m.end(g)
            rest = s[end : end + 2].lstrip(" \t")
            if rest[:1] not in ("", "\n", "\r", "\x00"):
                return None  # `token=get_token()` in code: only whole-line values count
            if m.group(2) == "=":
                line = s.rfind("\n", 0, i) + 1
                if s[line:i].strip(" \t-") or (i and s[i - 1] in "$."):
                    return None
        return _value(m, g)

    return check


def _name_is(*endings: str) -> Callable[[str], bool]:
    return lambda name: name.strip("'\"").endswith(endings)


_AWS_PREFIXES = frozenset(
    {"AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "AROA", "APKA", "ASCA"}
)


def _stripe(m: re.Match[str], g: int) -> Span | None:
    s, i = m.string, m.start(0)
    if i < 1 or s[i - 1] not in "srp" or (i > 1 and s[i - 2] in _TOKEN):
        return None
    return i - 1, m.end(0)


def _azure_secret(m: re.Match[str], g: int) -> Span | None:
    s, i = m.string, m.start(0)
    head = s[max(0, i - 4) : i]
    if len(head) < 4 or not head[3].isdigit() or any(c not in _TOKEN and c not in "~." for c in head[:3]):
        return None
    if i > 4 and (s[i - 5] in _TOKEN or s[i - 5] in "~."):
        return None
    return i - 4, m.end(0)


def _sig(m: re.Match[str], g: int) -> Span | None:
    i = m.start(0)
    return _span(m, g) if i and m.string[i - 1] in "?&" else None


# -- the table -----------------------------------------------------------------------------

_Q = r"[\"']?"  # an optional closing quote after a name
_QUOTED = r"\"[^\"\s\x00]{6,}\"|'[^'\s\x00]{6,}'"
_UNQUOTED = r"[^\s'\"#,;{}()\[\]\x00]{6,}"
_ARG = r"(\"[^\"\n\x00]+\"|'[^'\n\x00]+'|[^\s'\"\x00;&|]+)"  # one command-line argument, quoted or not
_CONF_VALUE = r"[ \t]*([:=])[ \t]*(" + _QUOTED + "|" + _UNQUOTED + ")"


def _conf(name: str, keyword: str, ok: Callable[[str], bool]) -> Rule:
    return Rule(name, re.compile("(" + keyword + ")" + _Q + _CONF_VALUE), group=3, lower=True, check=_config(ok))


RULES: tuple[Rule, ...] = (
    # Blocks first: a key inside a block is gone before the token rules look at it.
    Rule(
        "private-key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[^\x00]{0,20000}?-----END[A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,-]*)"
        ),
    ),
    Rule("private-key", re.compile(r"Private-Lines: \d+(?:\r?\n|\\n)([A-Za-z0-9+/=\r\n\\]+)"), group=1),
    Rule("aws-access-key", re.compile(r"A[BCGIKNPRS][A-Z]{2}[A-Z0-9]{16}"), check=_aws_key),
    Rule(
        "aws-secret-key",
        re.compile(
            r"aws[a-z0-9_.-]{0,20}secret[a-z0-9_]{0,20}" + _Q + r"\s*[:=]\s*" + _Q + r"([a-z0-9/+]{40})(?![a-z0-9/+])"
        ),
        group=1,
        lower=True,
    ),
    Rule(
        "aws-secret-key",
        re.compile(r"secret_?access_?key" + _Q + r"\s*[:=]\s*" + _Q + r"([a-z0-9/+]{40})(?![a-z0-9/+])"),
        group=1,
        lower=True,
    ),
    Rule("gcp-api-key", re.compile(r"AIza[0-9A-Za-z_\-]{35}")),
    Rule("gcp-oauth-token", re.compile(r"ya29\.[0-9A-Za-z_\-]{20,}")),
    Rule("gcp-oauth-secret", re.compile(r"GOCSPX-[0-9A-Za-z_\-]{20,}")),
    Rule("gcp-service-account", re.compile(r"private_key_id" + _Q + r"\s*:\s*[\"']([0-9a-f]{40})[\"']"), group=1),
    Rule("azure-key", re.compile(r"accountkey=([a-z0-9+/%]{20,}={0,2})"), group=1, lower=True),
    Rule("azure-key", re.compile(r"sharedaccesskey=([a-z0-9+/%]{20,}={0,2})"), group=1, lower=True),
    Rule("azure-key", re.compile(r"sig=([a-z0-9+/%]{20,}(?:={0,2}|(?:%3d){0,2}))"), group=1, lower=True, check=_sig),
    Rule("azure-client-secret", re.compile(r"Q~[\w~.-]{31,34}(?![\w~.-])"), check=_azure_secret),
    Rule("github-token", re.compile(r"gh[pousr]_[A-Za-z0-9]{30,255}"), check=_starts_token),
    Rule("github-token", re.compile(r"github_pat_[A-Za-z0-9_]{22,255}")),
    Rule("gitlab-token", re.compile(r"gl(?:pat|dt|rt|ptt|soat)-[0-9A-Za-z_\-]{20,}"), check=_starts_token),
    Rule("gitlab-token", re.compile(r"GR1348941[0-9A-Za-z_\-]{20,}")),
    Rule("slack-token", re.compile(r"xox[abposre]-[0-9A-Za-z-]{10,}")),
    Rule("slack-token", re.compile(r"xapp-\d+-[0-9A-Za-z-]{10,}"), check=_starts_token),  # app-level
    Rule("slack-webhook", re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,}")),
    Rule("stripe-key", re.compile(r"k_(?:live|test)_[0-9A-Za-z]{16,}"), check=_stripe),
    Rule("stripe-key", re.compile(r"whsec_[0-9A-Za-z]{24,}")),
    Rule("anthropic-key", re.compile(r"sk-ant-[a-z0-9]{2,10}-[A-Za-z0-9_\-]{20,}")),
    Rule("openai-key", re.compile(r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}"), check=_generated),
    Rule(
        "mistral-key",
        re.compile(r"mistral[a-z0-9_-]{0,20}(?:key|token)" + _Q + r"\s*[:=]\s*" + _Q + r"([a-z0-9]{32})(?![a-z0-9])"),
        group=1,
        lower=True,
    ),
    Rule("huggingface-token", re.compile(r"hf_[A-Za-z0-9]{30,}"), check=_generated),
    Rule("npm-token", re.compile(r"npm_[A-Za-z0-9]{36}"), check=_generated),
    Rule("pypi-token", re.compile(r"pypi-AgE[A-Za-z0-9_\-]{50,}")),
    Rule("sendgrid-key", re.compile(r"SG\.[\w-]{16,32}\.[\w-]{30,64}")),
    Rule("digitalocean-token", re.compile(r"do[opr]_v1_[a-f0-9]{64}")),
    Rule("jwt", re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")),
    # Context rules: the secret is known by what stands before it.
    Rule(
        "url-password",
        re.compile(r"://([^\s:/?#@\"'<>\[\]\x00]{1,256}):([^\s/?#@\"'<>\x00]{1,256})@"),
        group=2,
        check=_value,
    ),
    Rule("auth-header", re.compile(r"bearer\s+([a-z0-9_\-.~+/]{8,}=*)"), group=1, lower=True, check=_bearer),
    Rule(
        "auth-header",
        re.compile(
            r"authorization" + _Q + r"\s*[:=]\s*" + _Q + r"(?:basic|bearer|token|digest)?\s*([a-z0-9_\-.~+/]{8,}=*)"
        ),
        group=1,
        lower=True,
        check=_value,
    ),
    *(
        Rule("auth-header", re.compile(h + _Q + r"\s*:\s*" + _Q + r"([a-z0-9_\-.~+/]{8,}=*)"), 1, True, _value)
        for h in ("api-key", "private-token", "auth-token")
    ),
    # A password on a command line (`mysql -pPASS`, `curl -u user:pass`) and in a .netrc: the
    # option must stand in the same command as the program's name; a .netrc's machine is a
    # host name (a dot, a port or a number in it, or localhost), so prose is left alone.
    Rule(
        "mysql-password",
        re.compile(r"(?:mysql|mariadb)[a-z_-]*[ \t](?:[^\n;&|]{0,300}?[ \t])?(?:-p|--password=)" + _ARG),
        group=1,
        check=_value,
    ),
    Rule(
        "curl-password",
        re.compile(r"curl[ \t](?:[^\n;&|]{0,300}?[ \t])?(?:-u[ \t]*|--user[ \t=]+)[\"']?[^\s:'\"]*:([^\s'\"]+)"),
        group=1,
        check=_value,
    ),
    Rule(
        "netrc-password",
        re.compile(
            r"(?:machine[ \t\r\n]+(?:\S*[.:0-9]\S*|localhost)|default)(?:[ \t\r\n]+(?:login|account|port)[ \t\r\n]+\S+)*"
            r"[ \t\r\n]+password[ \t\r\n]+(\S+)"
        ),
        group=1,
        check=_value,
    ),
    Rule(
        "env-secret",
        re.compile(
            r"(PASS(?:WORD|WD|PHRASE)?|SECRET|TOKEN|KEY|CREDENTIALS?|AUTH|DSN|PWD)[A-Z0-9_]{0,40}="
            r"(\"[^\"\n\x00]{4,}\"|'[^'\n\x00]{4,}'|[^\s\"'`;,)}\]\x00]{4,})"
        ),
        group=2,
        check=_env,
    ),
    _conf(
        "config-secret",
        r"pass(?:word|wd|phrase)?",
        lambda n: n.strip("'\"").endswith(("pass", "password", "passwd", "passphrase")),
    ),
    _conf("config-secret", r"secrets?", _name_is("secret", "secrets")),
    _conf("config-secret", r"token", _name_is("token")),
    _conf("config-secret", r"credentials?", _name_is("credential", "credentials")),
    _conf("config-secret", r"key", _name_is(*_KEY_NAMES)),
)
