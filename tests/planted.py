"""Fake secrets of every kind the redaction must catch, each in the kind of text it is
met in (an env dump, a config file, a curl command, a tool output). Shaped like the
real thing (prefixes, lengths, alphabets); none is a live credential.

PLANTED: (rule it must fall to, the secret itself, the text it sits in)."""

from __future__ import annotations

B64 = "Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Njc4OTBhYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3ODk"
PEM_BODY = "\n".join(
    [
        "MIIEowIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aozN3tihPmljnnudb9G3HECdnH",
        "lWu2/a1gB9JW5TBQ+AVpum9Okx7KfqkfBKL9mcHgSL0yWMdjMfNOqNtrQqKlN4kE",
        "p6RD++7sGbzbfZ9arwrlD/HSDAWGdGGJTSOBM6pHehyLmSC3DJoR/CTu0vTGTWXQ",
    ]
)

PLANTED: list[tuple[str, str, str]] = [
    ("aws-access-key", "AKIAQ3EGRT7PLANTED01", "aws configure set aws_access_key_id {s}"),
    ("aws-access-key", "ASIAY34FZKBOKMUTVV7A", "AWS_ACCESS_KEY_ID={s}"),
    (
        "aws-secret-key",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLANTED1KE",
        "[default]\naws_secret_access_key = {s}\nregion = eu-west-1",
    ),
    ("gcp-api-key", "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3naPLANTED", "curl 'https://maps.googleapis.com/x?key={s}'"),
    ("gcp-oauth-token", "ya29.a0AfH6SMBx3k9Lq2PLANTEDzzTokenValue_123", "access token: {s}"),
    ("gcp-oauth-secret", "GOCSPX-1a2b3c4d5e6f7g8h9i0jPLANTED", '"client_secret": "{s}"'),
    (
        "gcp-service-account",
        "0123456789abcdef0123456789abcdefplanted0"[:32] + "89abcdef",
        '{{"type": "service_account", "private_key_id": "{s}", "client_email": "x@p.iam.gserviceaccount.com"}}',
    ),
    (
        "private-key",
        "MIIEowIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aozN3tihPmljnnudb9G3HECdnH",
        '{{"private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + PEM_BODY.replace("\n", "\\n")
        + '\\n-----END PRIVATE KEY-----\\n"}}',
    ),
    (
        "private-key",
        "lWu2/a1gB9JW5TBQ+AVpum9Okx7KfqkfBKL9mcHgSL0yWMdjMfNOqNtrQqKlN4kE",
        "$ cat ~/.ssh/id_rsa\n-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY + "\n-----END RSA PRIVATE KEY-----\n",
    ),
    (
        "private-key",
        "p6RD++7sGbzbfZ9arwrlD/HSDAWGdGGJTSOBM6pHehyLmSC3DJoR/CTu0vTGTWXQ",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n" + PEM_BODY + "\n(the output was cut here)",
    ),
    (
        "azure-key",
        B64[:86] + "==",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={s};EndpointSuffix=core.windows.net",
    ),
    (
        "azure-key",
        "Xb4kPLANTEDsigVaLuE1234%2Bxyz%3D",
        "https://acct.blob.core.windows.net/c/f.txt?sv=2021-08-06&se=2030-01-01&sr=b&sp=r&sig={s}",
    ),
    ("azure-client-secret", "Ab18Q~PLANTEDazureClientSecretValue12", "AZURE_CLIENT_SECRET_VALUE is {s} ok"),
    ("github-token", "ghp_PLANTED0123456789abcdefghijklmnopqrs", "git clone https://x:{s}@github.com/o/r.git"),
    ("github-token", "gho_PLANTED0123456789abcdefghijklmnopqrs", "token {s}"),
    (
        "github-token",
        "github_pat_11ABCDEFG0PLANTED_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOP",
        "export GH_TOKEN_VALUE {s}",
    ),
    ("gitlab-token", "glpat-PLANTED0123456789abc", "curl --header 'PRIVATE-TOKEN: {s}' https://gitlab.com/api/v4"),
    ("slack-token", "xoxb-123456789012-1234567890123-PLANTEDslackTokenVal", "SLACK says {s} works"),
    (
        "slack-webhook",
        "hooks.slack.com/services/T00000000/B00000000/PLANTEDwebhookXXXXXXXX",
        "posting to https://{s}",
    ),
    ("stripe-key", "sk_live_51HPLANTEDstripeKey0123456789", "stripe.api_key = {s}"),
    ("stripe-key", "rk_test_PLANTED0123456789abcdef", "restricted {s}"),
    ("anthropic-key", "sk-ant-api03-PLANTED_anthropic-Key0123456789abcdefghijklmnopAA", "the key {s} was set"),
    ("openai-key", "sk-proj-PLANTEDopenaiKey0123456789abcdefghijklmnop", "client = OpenAI(api_key={s})"),
    ("openai-key", "sk-PLANTED0123456789T3BlbkFJabcdefghijklmnopqrst", "old key {s}"),
    ("mistral-key", "PLANTEDmistralKey0123456789abcde", "MISTRAL_API_KEY={s}"),
    ("mistral-key", "PLANTEDmistralKey0123456789abcdz", 'mistral_key: "{s}"'),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJQTEFOVEVEIn0.c2lnbmF0dXJlUExBTlRFRA", "cookie session={s}; path=/"),
    ("url-password", "S3cr3tPLANTEDpass", "DATABASE_URL=postgres://admin:{s}@db.example.com:5432/app"),
    ("url-password", "PLANTEDp4ss!word", "redis://default:{s}@cache:6379/0"),
    ("env-secret", "hunter2PLANTED", "HOME=/root\nDB_PASSWORD={s}\nPATH=/usr/bin"),
    ("env-secret", "django-insecure-PLANTED-abc123", "export SECRET_KEY='{s}'"),
    ("env-secret", "PLANTED0api0token0value", "API_TOKEN={s} ./run.sh"),
    ("auth-header", "PLANTEDbearerToken0123456789", "curl -H 'Authorization: Bearer {s}' https://api.example.com"),
    ("auth-header", "dXNlcjpQTEFOVEVEcGFzc3dvcmQ=", "Authorization: Basic {s}"),
    ("auth-header", "PLANTEDxApiKey0123456789", "-H 'x-api-key: {s}'"),
    ("config-secret", "correct-horse-PLANTED", '{{"user": "bob", "password": "{s}"}}'),
    ("config-secret", "PLANTED9f8e7d6c5b4a", "database:\n  api_key: {s}\n  host: db"),
    ("huggingface-token", "hf_PLANTEDhuggingface0123456789abcd", "HF says {s}"),
    ("npm-token", "npm_PLANTED0123456789abcdefghijklmnopqrs", "//registry.npmjs.org/:_authToken {s}"),
    # issue 34's gaps: a Slack app-level token, a MySQL password on the command line, curl's
    # basic auth, a .netrc's password
    ("slack-token", "xapp-1-A0PLANTED12-1234567890123-0123456789abcdefPLANTED", "SLACK_APP={s} node bot.js"),
    ("slack-token", "xapp-1-A0PLANTED34-9876543210987-fedcba9876543210PLANTED", "app token: {s}"),
    ("mysql-password", "PLANTEDmysqlPw9", "mysql -u root -p{s} -h db shop < dump.sql"),
    ("mysql-password", "PLANTED-dump-pw", "mysqldump --user=app --password={s} shop > shop.sql"),
    ("mysql-password", "PLANTEDmaria", "mariadb -uroot -p'{s}' -e 'show databases'"),
    ("curl-password", "PLANTEDcurlPw!", "curl -u admin:{s} https://ci.example.com/api/json"),
    ("curl-password", "PLANTEDcurl2", "curl -sS --user 'deploy:{s}' -X POST https://x.example.com"),
    ("netrc-password", "PLANTEDnetrcPw1", "$ cat ~/.netrc\nmachine api.github.com login me password {s}\n"),
    (
        "netrc-password",
        "PLANTEDnetrcPw2",
        "machine pypi.org\n  login deploy\n  password {s}\ndefault login x password y",
    ),
]


def planted_texts() -> list[str]:
    return [tpl.format(s=s) for _, s, tpl in PLANTED]


def all_secrets() -> list[str]:
    return [s for _, s, _ in PLANTED]
